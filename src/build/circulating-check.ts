import type { CirculatingReport, ReportIndex } from "../unlocks/circulating-reported.js";
import { parseDay } from "../unlocks/data/dates.js";
import type { SupplyPiece, TokenRecord } from "../unlocks/data/types.js";
import { type CirculatingRule, circulatingAt, splitBefore, unlockedBefore } from "../unlocks/supply.js";
import { piecesFromDaily, type SixMvFile, tableName } from "./import-6mv.js";

/** Agreement is "within 10 %": |ours / reported − 1| ≤ 0.10 (the target). */
export const AGREEMENT_TOLERANCE = 0.1;

/**
 * Why a reported figure cannot check the rebuilt one (null: it can). Decided the same way for every token:
 * - `lower_bound`: the schedule has sections the adapter could not evaluate, so the rebuilt figure is only a lower
 *   bound; "within 10 %" cannot be asked of it (whether the bound holds is reported instead);
 * - `before_schedule`: the schedule releases nothing before that day, so the product answers null there (FIL: its
 *   adapter dates every piece from the day it was evaluated, 2024-10-17, not from the real genesis).
 */
export type NotCheckable = "lower_bound" | "before_schedule";

export interface CirculatingComparison {
  readonly source: string;
  readonly symbol: string;
  readonly date: string;
  /** true: the table records a one-off release that day (an unlock event), not only its daily stream. */
  readonly event: boolean;
  readonly reported: number;
  /** Everything the schedule has unlocked, reserves included: the product's circulating supply. */
  readonly unlocked: number;
  /** Unlocked minus the reserve sections (the alternative rule, measured beside it). */
  readonly excludingReserves: number;
  readonly notCheckable: NotCheckable | null;
}

const notCheckableOf = (t: TokenRecord, unlocked: number): NotCheckable | null =>
  !(unlocked > 0) ? "before_schedule" : t.supply_schedule?.complete ? null : "lower_bound";

/** Days of a 6MV table on which it records a one-off release: the event study's split of the table (cliffs). */
function eventDays(f: SixMvFile): Set<string> {
  const amounts = new Map<number, number>();
  for (const d of f.days)
    if (d.unlocked_tokens && d.unlocked_tokens > 0) amounts.set(parseDay(d.date), d.unlocked_tokens);
  return new Set(
    piecesFromDaily(amounts, "table", "other")
      .filter((p) => p.kind === "cliff")
      .map((p) => p.start),
  );
}

/**
 * Every reported circulating figure of a 6MV table on its unlock days (the days the table records a release), against
 * what the token's complete schedule has unlocked by the end of that day (and that minus reserves). 6MV's date D is
 * CoinGecko's 00:00 UTC snapshot of D+1, so the rebuilt figure is everything released before D+1. Tables of tokens
 * without a schedule are skipped (counted by the caller). A day is an event when the table's release that day is a
 * one-off (piecesFromDaily's cliff), not only its daily stream.
 */
export function compare6mv(
  files: readonly SixMvFile[],
  tokens: readonly TokenRecord[],
): CirculatingComparison[] {
  const byGecko = new Map(
    tokens.filter((t) => t.supply_schedule && t.coingecko_id).map((t) => [t.coingecko_id, t]),
  );
  const out: CirculatingComparison[] = [];
  for (const f of files) {
    const t = byGecko.get(f.coingecko_id);
    if (!t?.supply_schedule) continue;
    const events = eventDays(f);
    for (const d of f.days) {
      if (
        !(d.unlocked_tokens && d.unlocked_tokens > 0) ||
        !(d.circulating_supply && d.circulating_supply > 0)
      )
        continue;
      const s = splitBefore(t.supply_schedule.pieces, parseDay(d.date) + 1);
      out.push({
        source: `6MV ${tableName(f)}`,
        symbol: t.symbol,
        date: d.date,
        event: events.has(d.date),
        reported: d.circulating_supply,
        ...s,
        notCheckable: notCheckableOf(t, s.unlocked),
      });
    }
  }
  return out;
}

/** One CoinGecko /coins/markets row (the fields compared). */
export interface GeckoMarketRow {
  id: string;
  circulating_supply: number | null;
  last_updated: string;
}

/** A market snapshot is one reported figure on one day: it counts as one event. */
export function compareGecko(
  rows: readonly GeckoMarketRow[],
  tokens: readonly TokenRecord[],
  source: string,
): CirculatingComparison[] {
  const out: CirculatingComparison[] = [];
  for (const r of rows) {
    const t = tokens.find((x) => x.coingecko_id === r.id && x.supply_schedule);
    if (!t?.supply_schedule || !(r.circulating_supply && r.circulating_supply > 0)) continue;
    const date = r.last_updated.slice(0, 10);
    const s = splitBefore(t.supply_schedule.pieces, parseDay(date) + 1);
    out.push({
      source,
      symbol: t.symbol,
      date,
      event: true,
      reported: r.circulating_supply,
      ...s,
      notCheckable: notCheckableOf(t, s.unlocked),
    });
  }
  return out;
}

const median = (xs: readonly number[]): number | null => {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

export type Measure = "unlocked" | "excludingReserves";

export const ratioOf = (c: CirculatingComparison, m: Measure = "unlocked"): number => c[m] / c.reported;

export const within = (c: CirculatingComparison, m: Measure = "unlocked"): boolean =>
  Math.abs(ratioOf(c, m) - 1) <= AGREEMENT_TOLERANCE;

/** A lower bound holds when it does not exceed the reported figure by more than the tolerance. */
export const boundHolds = (c: CirculatingComparison, m: Measure = "unlocked"): boolean =>
  ratioOf(c, m) <= 1 + AGREEMENT_TOLERANCE;

export interface Tally {
  readonly n: number;
  /** Within 10 % with the product's figure (unlocked). */
  readonly within: number;
  /** Within 10 % with the reserve rule. */
  readonly withinExclReserves: number;
  readonly medianRatio: number | null;
  readonly medianRatioExclReserves: number | null;
}

export function tally(cs: readonly CirculatingComparison[]): Tally {
  return {
    n: cs.length,
    within: cs.filter((c) => within(c)).length,
    withinExclReserves: cs.filter((c) => within(c, "excludingReserves")).length,
    medianRatio: median(cs.map((c) => ratioOf(c))),
    medianRatioExclReserves: median(cs.map((c) => ratioOf(c, "excludingReserves"))),
  };
}

export interface AgreementRow {
  readonly source: string;
  readonly symbol: string;
  readonly notCheckable: NotCheckable | null;
  readonly events: Tally;
  readonly days: Tally;
  /** Of the events: how many rebuilt (unlocked) figures stay ≤ 110 % of the reported one (the lower-bound test). */
  readonly eventsBoundHolds: number;
}

/**
 * Per source, token and checkability: events (one-off release days, one per market snapshot) and token-days (every
 * day the table records a release), each with how many agree within 10 % — the product's figure and the reserve rule.
 */
export function agreementRows(cs: readonly CirculatingComparison[]): AgreementRow[] {
  const groups = new Map<string, CirculatingComparison[]>();
  for (const c of cs) {
    const k = `${c.source}\u0000${c.symbol}\u0000${c.notCheckable ?? ""}`;
    groups.set(k, [...(groups.get(k) ?? []), c]);
  }
  return [...groups.values()].map((g) => {
    const first = g[0] as CirculatingComparison;
    const events = g.filter((c) => c.event);
    return {
      source: first.source,
      symbol: first.symbol,
      notCheckable: first.notCheckable,
      events: tally(events),
      days: tally(g),
      eventsBoundHolds: events.filter((c) => boundHolds(c)).length,
    };
  });
}

/** The held-out check of the anchored rule: anchor on reports up to `anchorUntil`, predict the reports in [from, to]. */
export const HELD_OUT = { anchorUntil: "2025-04-01", from: "2025-05-01", to: "2025-10-01" } as const;

export interface HeldOutPoint {
  readonly symbol: string;
  readonly date: string;
  readonly reported: number;
  /** The service's figure at the end of `date` from reports up to the cutoff only (null: unknown). */
  readonly anchored: number | null;
  readonly rule: CirculatingRule;
  /** The date of the report it is anchored on (null: rule `schedule` or `unknown`). */
  readonly anchorDate: string | null;
  /** What the complete schedule alone has unlocked by then (null without one). */
  readonly rebuilt: number | null;
  /** The alternative measured beside it: the report plus pass-through × the schedule's releases since. */
  readonly passThrough: number | null;
}

/** Months of reports before the cutoff the pass-through alternative is measured over (two quarters, fixed a priori). */
export const PASS_THROUGH_MONTHS = 6;

/**
 * The share of the schedule's releases the reports took up over the PASS_THROUGH_MONTHS before the last known
 * report, clipped to [0, 1]; 1 when the schedule released under 2 % of the earlier report then (no evidence).
 */
export function passThroughOf(pieces: readonly SupplyPiece[], known: readonly CirculatingReport[]): number {
  const last = known[known.length - 1];
  if (!last || known.length < 2) return 1;
  const first =
    known.find((r) => r.day >= last.day - PASS_THROUGH_MONTHS * 30.5) ?? (known[0] as CirculatingReport);
  const scheduled = unlockedBefore(pieces, last.day + 1) - unlockedBefore(pieces, first.day + 1);
  if (!(scheduled > 0.02 * first.value)) return 1;
  return Math.max(0, Math.min(1, (last.value - first.value) / scheduled));
}

/**
 * Every report of a token in [from, to], predicted from the reports up to `anchorUntil` only, the way the service
 * projects circulating to a later day (circulatingAt, no curated lag), with the rebuilt figure beside it. A report
 * dated D is the supply at the end of D: it is predicted at 00:00 of D+1.
 */
export function heldOutPoints(
  tokens: readonly TokenRecord[],
  reports: ReportIndex,
  window: { anchorUntil: string; from: string; to: string } = HELD_OUT,
): HeldOutPoint[] {
  const cut = parseDay(window.anchorUntil);
  const from = parseDay(window.from);
  const to = parseDay(window.to);
  const out: HeldOutPoint[] = [];
  for (const t of tokens) {
    const list = reports.get(t.symbol.toLowerCase());
    if (!list) continue;
    const known = list.filter((r) => r.day <= cut);
    const pieces = t.supply_schedule?.pieces ?? t.schedules;
    const k = passThroughOf(pieces, known);
    for (const r of list) {
      if (r.day < from || r.day > to) continue;
      const c = circulatingAt(t, known, r.day + 1);
      const since =
        c.report === null ? 0 : unlockedBefore(pieces, r.day + 1) - unlockedBefore(pieces, c.report.day + 1);
      out.push({
        symbol: t.symbol,
        date: r.date,
        reported: r.value,
        anchored: c.value,
        rule: c.rule,
        anchorDate: c.report?.date ?? null,
        rebuilt: c.rebuilt,
        passThrough: c.report === null ? c.value : c.report.value + k * since,
      });
    }
  }
  return out;
}

const near = (x: number | null, reported: number): boolean =>
  x !== null && Math.abs(x / reported - 1) <= AGREEMENT_TOLERANCE;

export interface HeldOutTally {
  readonly symbol: string;
  /** Token-months predicted. */
  readonly n: number;
  /** Of them: anchored figure within 10 % of the report. */
  readonly anchoredWithin: number;
  /** Of them: the pass-through alternative within 10 %. */
  readonly passThroughWithin: number;
  /** Of them: a rebuilt figure exists, and how many are within 10 %. */
  readonly rebuiltN: number;
  readonly rebuiltWithin: number;
  readonly medianAnchoredRatio: number | null;
  readonly medianRebuiltRatio: number | null;
  /** The rule the predictions came from (the first point's; one per token in this window). */
  readonly rule: CirculatingRule;
}

/** Per token (sorted by symbol) and overall (symbol `all`): how many predictions land within 10 %. */
export function heldOutTallies(points: readonly HeldOutPoint[]): {
  all: HeldOutTally;
  tokens: HeldOutTally[];
} {
  const of = (symbol: string, ps: readonly HeldOutPoint[]): HeldOutTally => {
    const withRebuilt = ps.filter((p) => p.rebuilt !== null);
    return {
      symbol,
      n: ps.length,
      anchoredWithin: ps.filter((p) => near(p.anchored, p.reported)).length,
      passThroughWithin: ps.filter((p) => near(p.passThrough, p.reported)).length,
      rebuiltN: withRebuilt.length,
      rebuiltWithin: withRebuilt.filter((p) => near(p.rebuilt, p.reported)).length,
      medianAnchoredRatio: median(
        ps.filter((p) => p.anchored !== null).map((p) => (p.anchored as number) / p.reported),
      ),
      medianRebuiltRatio: median(withRebuilt.map((p) => (p.rebuilt as number) / p.reported)),
      rule: ps[0]?.rule ?? "unknown",
    };
  };
  const groups = new Map<string, HeldOutPoint[]>();
  for (const p of points) groups.set(p.symbol, [...(groups.get(p.symbol) ?? []), p]);
  return {
    all: of("all", points),
    tokens: [...groups.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([s, ps]) => of(s, ps)),
  };
}

/** Whole calendar months from an anchoring report's date to the date it predicts (both YYYY-MM-DD). */
export const monthsBetween = (a: string, b: string): number =>
  (Number(b.slice(0, 4)) - Number(a.slice(0, 4))) * 12 + Number(b.slice(5, 7)) - Number(a.slice(5, 7));

/** One point of the held-out curve: predictions anchored `months` before the report they predict. */
export interface HeldOutCurvePoint {
  readonly months: number;
  readonly n: number;
  readonly within: number;
}

/** A curve point needs this many token-months to be stated as an expected accuracy. */
export const CURVE_MIN_TOKEN_MONTHS = 20;

/**
 * The held-out curve by anchor age: of the predictions anchored on a report `months` earlier (rule
 * `reported+schedule`), how many land within 10 % of the report. Sorted by age.
 */
export function heldOutCurve(points: readonly HeldOutPoint[]): HeldOutCurvePoint[] {
  const by = new Map<number, { n: number; within: number }>();
  for (const p of points) {
    if (p.anchorDate === null) continue;
    const h = monthsBetween(p.anchorDate, p.date);
    const cur = by.get(h) ?? { n: 0, within: 0 };
    cur.n++;
    if (near(p.anchored, p.reported)) cur.within++;
    by.set(h, cur);
  }
  return [...by.entries()].sort(([a], [b]) => a - b).map(([months, c]) => ({ months, ...c }));
}

/** The longest age from one month up whose every month has at least CURVE_MIN_TOKEN_MONTHS predictions: the horizon. */
export function heldOutHorizon(curve: readonly HeldOutCurvePoint[]): number {
  let h = 0;
  for (const p of curve) {
    if (p.months !== h + 1 || p.n < CURVE_MIN_TOKEN_MONTHS) break;
    h = p.months;
  }
  return h;
}
