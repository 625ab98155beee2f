import { type CirculatingReport, latestReportBefore } from "./circulating-reported.js";
import { formatDay, parseDay } from "./data/dates.js";
import type { SupplyPiece, SupplySchedule, TokenRecord } from "./data/types.js";
import { releasedBefore } from "./events.js";

/** Tokens the pieces have released on days strictly before `day` (the circulating supply at 00:00 UTC of `day`). */
export function unlockedBefore(pieces: readonly SupplyPiece[], day: number): number {
  let sum = 0;
  for (const p of pieces) sum += releasedBefore(p, day);
  return sum;
}

/** What has unlocked before `day`: the total, and the part outside reserve sections (`reserve` pieces). */
export interface UnlockedSplit {
  readonly unlocked: number;
  readonly excludingReserves: number;
}

/**
 * The alternative the model card measures beside the product's figure: unlocked minus what the sections the adapter
 * categorises `noncirculating` (foundation, ecosystem, treasury, community reserves) have unlocked.
 */
export function splitBefore(pieces: readonly SupplyPiece[], day: number): UnlockedSplit {
  let unlocked = 0;
  let reserve = 0;
  for (const p of pieces) {
    const r = releasedBefore(p, day);
    unlocked += r;
    if (p.reserve) reserve += r;
  }
  return { unlocked, excludingReserves: unlocked - reserve };
}

/** The product's rule, as the card and every response state it. */
export const CIRCULATING_RULE =
  "tokens the complete schedule (every allocation the adapter models: genesis, sales, airdrops, community, " +
  "emissions and the vesting ones) has unlocked before the day; burns and unscheduled transfers are not counted";

/** The rule measured beside it and not adopted (docs/risk-model.md says why). */
export const RESERVE_RULE =
  "unlocked minus what the sections the adapter categorises `noncirculating` (foundation, ecosystem, treasury and " +
  "community reserves) have unlocked";

/** How far apart the adapter and the curated set may date one release (data/unlocks-wide/README.md, trap 3). */
export const CURATED_DATE_TOLERANCE_DAYS = 2;

const CIRCULATING_UNKNOWN_NO_SCHEDULE =
  "unknown: no complete schedule for this token (its curated schedule lists only the locked allocations, so what it " +
  "has released is not the circulating supply); size is scored on % of max supply";

/** How a point-in-time figure from the complete schedule was obtained, and whether it is a lower bound. */
function circulatingMethodOf(s: SupplySchedule): string {
  const base = CIRCULATING_RULE;
  if (s.complete) return base;
  const missing = s.unevaluated_sections.map((u) => u.name).join(", ");
  return (
    `${base}. LOWER BOUND: the adapter's sections ${missing} could not be evaluated and are left out, ` +
    "so the true circulating supply may be higher and % of circulating lower"
  );
}

/** Which rule gave a circulating figure. */
export type CirculatingRule = "reported+schedule" | "schedule" | "unknown";

/** A point-in-time circulating supply, how it was obtained, and the schedule-only figure beside it. */
export interface CirculatingFigure {
  readonly value: number | null;
  readonly rule: CirculatingRule;
  /** The figure is the supply at 00:00 UTC of this day (releases counted to the end of the day before). */
  readonly observedAt: string;
  readonly source: string;
  readonly method: string;
  /** true when releases the schedule could not evaluate are missing from it; null when unknown. */
  readonly lowerBound: boolean | null;
  /** The report it is anchored on (rule `reported+schedule`). */
  readonly report: CirculatingReport | null;
  /** What the complete schedule alone has unlocked by then (the rebuilt figure); null without one. */
  readonly rebuilt: number | null;
}

const big = (x: number): string =>
  x >= 1e9 ? `${(x / 1e9).toFixed(3)}B` : x >= 1e6 ? `${(x / 1e6).toFixed(3)}M` : x.toFixed(0);

/** The anchored rule, as the card and responses state it. */
export const ANCHORED_RULE =
  "the latest reported circulating supply before the day, plus what the complete schedule releases between that " +
  "report and the day";

/**
 * Circulating supply at 00:00 UTC of `day`, counting releases before `day - lagDays`:
 * - `reported+schedule`: the latest report before then (a report counts releases to the end of its own day), plus
 *   what the complete schedule releases after the report's day and before then (for a token without one, its
 *   vesting pieces: a lower bound);
 * - `schedule`: no report yet: what the complete schedule has unlocked;
 * - `unknown`: neither (no complete schedule, or nothing released yet).
 * The rebuilt (schedule-only) figure is kept beside it. `lagDays` is the curated tokens' dating tolerance, for an
 * event's own denominator only (never "today").
 */
export function circulatingAt(
  token: TokenRecord,
  reports: readonly CirculatingReport[] | undefined,
  day: number,
  lagDays = 0,
  /** Today's figure only: a live report dated `day` itself is fresher than any before it, and anchors it. */
  sameDayLive = false,
): CirculatingFigure {
  const to = day - lagDays;
  const sched = token.supply_schedule;
  const unlocked = sched ? unlockedBefore(sched.pieces, to) : 0;
  const rebuilt = unlocked > 0 ? unlocked : null;
  const lagNote =
    lagDays === 0
      ? ""
      : `. Counted to ${formatDay(to - 1)}: the adapter dates releases up to ±${lagDays} days from the curated schedule, so the ${lagDays} days before are left out`;
  const report = (sameDayLive ? liveReportOn(reports, to) : null) ?? latestReportBefore(reports, to);
  if (report !== null) {
    const pieces = sched?.pieces ?? token.schedules;
    const upTo = sched ? unlocked : unlockedBefore(pieces, to);
    const since = Math.max(0, upTo - unlockedBefore(pieces, report.day + 1));
    const lower = !(sched?.complete ?? false);
    const what = sched
      ? "the complete schedule"
      : "the vesting schedule (no complete schedule: a lower bound)";
    return {
      value: report.value + since,
      rule: "reported+schedule",
      observedAt: formatDay(day),
      source: report.source,
      method:
        report.day >= to
          ? `${report.attribution}: ${big(report.value)}, reported today (nothing is added)`
          : `${report.attribution}: ${big(report.value)}, plus ${big(since)} ${what} releases from ${formatDay(report.day + 1)} ` +
            `to ${formatDay(to - 1)}${sched && !sched.complete ? " (sections the adapter could not evaluate are left out: a lower bound)" : ""}${lagNote}`,
      lowerBound: lower,
      report,
      rebuilt,
    };
  }
  if (!sched)
    return {
      value: null,
      rule: "unknown",
      observedAt: formatDay(day),
      source: "none",
      method: CIRCULATING_UNKNOWN_NO_SCHEDULE,
      lowerBound: null,
      report: null,
      rebuilt: null,
    };
  if (rebuilt === null)
    return {
      value: null,
      rule: "unknown",
      observedAt: formatDay(day),
      source: sched.source,
      method:
        "unknown: no report yet and the complete schedule releases nothing before this day (before the TGE)",
      lowerBound: null,
      report: null,
      rebuilt: null,
    };
  return {
    value: rebuilt,
    rule: "schedule",
    observedAt: formatDay(day),
    source: sched.source,
    method: `no reported figure before this day: ${circulatingMethodOf(sched)}${lagNote}`,
    lowerBound: !sched.complete,
    report: null,
    rebuilt,
  };
}

/** A live (not CoinMarketCap's monthly) report dated `day`, or null. */
function liveReportOn(
  reports: readonly CirculatingReport[] | undefined,
  day: number,
): CirculatingReport | null {
  return reports?.find((r) => r.day === day && r.source !== "coinmarketcap") ?? null;
}

/**
 * Circulating supply today (00:00 UTC of `t`, releases counted to the end of yesterday): the anchored figure, where a
 * live report fetched today anchors it in preference to any older report (the shipped monthly snapshots end months
 * earlier). An event's own figure never takes a report of its own day (it could already count the release).
 */
export function circulatingToday(
  token: TokenRecord,
  reports: readonly CirculatingReport[] | undefined,
  t: number,
): CirculatingFigure {
  return circulatingAt(token, reports, t, 0, true);
}

/**
 * The held-out curve by anchor age (docs/risk-model.md, "Circulating supply, held out"): of the figures anchored on a
 * report `months` old, how many landed within 10 % of the report they predicted. Produced by `npm run calibrate`
 * (heldOutCurve in src/build/circulating-check.ts); test/unlocks/circulating-curve.test.ts recomputes it from the
 * shipped data and fails when these differ. Only ages with at least 20 token-months are kept.
 */
export const HELD_OUT_CURVE: readonly { months: number; n: number; within: number }[] = [
  { months: 1, n: 77, within: 73 },
  { months: 2, n: 73, within: 67 },
  { months: 3, n: 73, within: 65 },
  { months: 4, n: 71, within: 59 },
  { months: 5, n: 71, within: 55 },
  { months: 6, n: 71, within: 53 },
];

/** The oldest anchor the held-out test measured, in months. */
export const HELD_OUT_HORIZON_MONTHS = HELD_OUT_CURVE[HELD_OUT_CURVE.length - 1]?.months ?? 0;

const DAYS_PER_MONTH = 30.44;

/** An anchor's age bucket: `held_out_<n>m` (n = its age in whole months, at least 1), or beyond what was measured. */
export type AnchorAccuracyCode = `held_out_${number}m` | "beyond_held_out_horizon";

/** The held-out accuracy code of an anchor `ageDays` old: the curve's point at its age in months (1 at least). */
export function anchorAccuracyCode(ageDays: number): AnchorAccuracyCode {
  const months = Math.max(1, Math.round(ageDays / DAYS_PER_MONTH));
  return months > HELD_OUT_HORIZON_MONTHS ? "beyond_held_out_horizon" : `held_out_${months}m`;
}

const pctOf = (p: { n: number; within: number }) => `${((p.within / p.n) * 100).toFixed(1)} %`;

/**
 * What accuracy to expect of a circulating figure whose anchor has the given code, from the held-out curve: one
 * sentence per code, for a response's legend. Null for an unknown code.
 */
export function anchorAccuracyText(code: string): string | null {
  const last = HELD_OUT_CURVE[HELD_OUT_CURVE.length - 1];
  if (code === "beyond_held_out_horizon")
    return last
      ? `anchored on a report older than the ${HELD_OUT_HORIZON_MONTHS} months the held-out test measured: accuracy unknown; at ${last.months} months ${last.within} of ${last.n} figures (${pctOf(last)}) were within 10 % of the next report, and it fell with every month`
      : null;
  const m = /^held_out_(\d+)m$/.exec(code);
  const p = m ? HELD_OUT_CURVE.find((c) => c.months === Number(m[1])) : undefined;
  if (!p) return null;
  return `anchored on a report about ${p.months} month${p.months === 1 ? "" : "s"} old: in the held-out test ${p.within} of ${p.n} such figures (${pctOf(p)}) were within 10 % of the next report`;
}

/** Every code and its sentence (the legend's entries). */
export function anchorAccuracyLegend(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const p of HELD_OUT_CURVE)
    out[`held_out_${p.months}m`] = anchorAccuracyText(`held_out_${p.months}m`) as string;
  out.beyond_held_out_horizon = anchorAccuracyText("beyond_held_out_horizon") as string;
  return out;
}

/** Reported and rebuilt circulating supply more than this far apart (either way) are called out on the token. */
export const DISAGREEMENT_RATIO = 1.25;

export interface ReportedVsRebuilt {
  report_date: string;
  report_source: string;
  reported: number;
  rebuilt: number | null;
  /** rebuilt ÷ reported; null when the schedule releases nothing by then. */
  ratio: number | null;
  cause: string;
}

const disagreementMemo = new WeakMap<
  readonly CirculatingReport[],
  WeakMap<TokenRecord, ReportedVsRebuilt | null>
>();

/**
 * The token's latest report against what its complete schedule has unlocked by the end of the report's day, when
 * they differ by more than 25 % either way (else null), with the cause where the schedule shows it.
 */
export function reportedVsRebuilt(
  token: TokenRecord,
  reports: readonly CirculatingReport[] | undefined,
): ReportedVsRebuilt | null {
  const sched = token.supply_schedule;
  if (!sched || !reports || reports.length === 0) return null;
  let memo = disagreementMemo.get(reports);
  if (!memo) {
    memo = new WeakMap();
    disagreementMemo.set(reports, memo);
  }
  if (memo.has(token)) return memo.get(token) ?? null;
  const r = reports[reports.length - 1] as CirculatingReport;
  const split = splitBefore(sched.pieces, r.day + 1);
  const rebuilt = split.unlocked > 0 ? split.unlocked : null;
  const ratio = rebuilt === null ? null : rebuilt / r.value;
  let out: ReportedVsRebuilt | null = null;
  if (ratio === null || ratio > DISAGREEMENT_RATIO || ratio < 1 / DISAGREEMENT_RATIO)
    out = {
      report_date: r.date,
      report_source: r.source,
      reported: r.value,
      rebuilt,
      ratio: ratio === null ? null : Math.round(ratio * 1e4) / 1e4,
      cause: disagreementCause(sched, r, split),
    };
  memo.set(token, out);
  return out;
}

function disagreementCause(sched: SupplySchedule, r: CirculatingReport, split: UnlockedSplit): string {
  const total = sched.pieces.reduce((s, p) => s + p.amount_tokens, 0);
  if (!(split.unlocked > 0))
    return `the complete schedule releases nothing before ${formatDay(r.day + 1)} although ${big(r.value)} were reported: its dates are not the token's`;
  if (split.unlocked > r.value) {
    const held = split.unlocked - split.excludingReserves;
    if (Math.abs(split.excludingReserves / r.value - 1) <= DISAGREEMENT_RATIO - 1)
      return `unlocked but held: the reserve sections (foundation, treasury, ecosystem, community reserves) have unlocked ${big(held)}, which the aggregator does not count as circulating; without them the schedule gives ${big(split.excludingReserves)}`;
    return `unlocked but not counted as circulating (held by treasuries or never claimed): the schedule has unlocked ${big(split.unlocked - r.value)} more than reported; the data does not show which section holds it${held > 0 ? ` (its reserve sections account for ${big(held)})` : ""}`;
  }
  if (!sched.complete)
    return `sections the adapter could not evaluate are missing from the schedule (${sched.unevaluated_sections.map((u) => u.name).join(", ")})`;
  if (total < r.value)
    return `the schedule's whole modelled supply (${big(total)}) is below the reported figure: emissions or allocations the schedule lacks`;
  return "the schedule releases later than the aggregator counts (emissions, staking rewards or allocations dated or counted differently); the data does not show which";
}

/** Two consecutive reports whose change the schedule does not explain (a redefinition, or releases it lacks). */
export interface ReportRevision {
  from: string;
  to: string;
  reported_change: number;
  scheduled_change: number;
}

/** A change between two reports further than this share of the earlier report from the schedule's is called out. */
export const REVISION_SHARE = 0.25;
/** How many of the latest unexplained changes a response lists. */
const REVISIONS_SHOWN = 3;

const revisionMemo = new WeakMap<readonly CirculatingReport[], WeakMap<TokenRecord, ReportRevision[]>>();

/**
 * Consecutive reports of one source whose change differs from what the complete schedule releases between them by
 * more than 25 % of the earlier report: said, not silently picked (an aggregator redefining what circulates, or
 * releases the schedule lacks). The latest few; none without a complete schedule.
 */
export function reportRevisions(
  token: TokenRecord,
  reports: readonly CirculatingReport[] | undefined,
): ReportRevision[] {
  const sched = token.supply_schedule;
  if (!sched || !reports || reports.length < 2) return [];
  let memo = revisionMemo.get(reports);
  if (!memo) {
    memo = new WeakMap();
    revisionMemo.set(reports, memo);
  }
  const hit = memo.get(token);
  if (hit) return hit;
  const out: ReportRevision[] = [];
  const lastBySource = new Map<string, CirculatingReport>();
  for (const r of reports) {
    const prev = lastBySource.get(r.source);
    lastBySource.set(r.source, r);
    if (!prev) continue;
    const scheduled = unlockedBefore(sched.pieces, r.day + 1) - unlockedBefore(sched.pieces, prev.day + 1);
    const reported = r.value - prev.value;
    if (Math.abs(reported - scheduled) > REVISION_SHARE * prev.value)
      out.push({
        from: prev.date,
        to: r.date,
        reported_change: Math.round(reported),
        scheduled_change: Math.round(scheduled),
      });
  }
  const latest = out.slice(-REVISIONS_SHOWN);
  memo.set(token, latest);
  return latest;
}

/** What a response says about how completely a token's supply is known, and how its circulating figure was got. */
export interface Coverage {
  supply_model: "vesting" | "emission";
  schedule_set: "curated" | "wide";
  /** false: some allocations could not be evaluated (circulating is a lower bound); null: no complete schedule. */
  schedule_complete: boolean | null;
  unevaluated_sections: string[];
  /** true when the circulating figure used is a lower bound (unevaluated sections); null when it is unknown. */
  circulating_is_lower_bound: boolean | null;
  circulating_rule: CirculatingRule;
  circulating_report: {
    source: string;
    date: string;
    circulating_supply: number;
    attribution: string;
  } | null;
  circulating_rebuilt: number | null;
  /** Days from the end of the anchoring report's day to the figure's day; null without a report. */
  circulating_anchor_age_days: number | null;
  /** The held-out accuracy to expect at that age (anchorAccuracyText says it); null without a report. */
  circulating_anchor_accuracy: AnchorAccuracyCode | null;
  reported_vs_rebuilt: ReportedVsRebuilt | null;
  /** The latest changes between two reports the schedule does not explain (by more than 25 % of the earlier). */
  unexplained_report_changes: ReportRevision[];
  /** What the complete schedule models ÷ max supply (HYPE 0.61: the rest is not scheduled); null when either is unknown. */
  schedule_share_of_max_supply: number | null;
  /** Says how much of max supply is unscheduled when the schedule covers less than 99 % of it; null otherwise. */
  schedule_coverage_note: string | null;
}

const shareMemo = new WeakMap<TokenRecord, number | null>();

/** The complete schedule's modelled total as a share of max supply (null without either). */
export function scheduleShareOfMax(t: TokenRecord): number | null {
  if (shareMemo.has(t)) return shareMemo.get(t) ?? null;
  const s = t.supply_schedule;
  const share =
    s && t.max_supply !== null && t.max_supply > 0
      ? s.pieces.reduce((sum, p) => sum + p.amount_tokens, 0) / t.max_supply
      : null;
  shareMemo.set(t, share);
  return share;
}

function coverageNote(t: TokenRecord, share: number | null): string | null {
  if (share === null || share >= 0.99) return null;
  const modelled = share * (t.max_supply as number);
  return (
    `the complete schedule models ${(share * 100).toFixed(1)} % of max supply (${big(modelled)} of ${big(t.max_supply as number)}); ` +
    `${big((t.max_supply as number) - modelled)} is in no schedule${t.supply_schedule?.complete === false ? " (partly the sections the adapter could not evaluate)" : ""}, so it is never counted as released`
  );
}

/** How old a figure's anchoring report is, in days, and the held-out accuracy code at that age (nulls without one). */
export function anchorOf(fig: CirculatingFigure): {
  circulating_anchor_age_days: number | null;
  circulating_anchor_accuracy: AnchorAccuracyCode | null;
} {
  if (fig.report === null) return { circulating_anchor_age_days: null, circulating_anchor_accuracy: null };
  const age = Math.max(0, parseDay(fig.observedAt) - (fig.report.day + 1));
  return { circulating_anchor_age_days: age, circulating_anchor_accuracy: anchorAccuracyCode(age) };
}

export function coverageOf(
  t: TokenRecord,
  fig: CirculatingFigure,
  reports: readonly CirculatingReport[] | undefined,
): Coverage {
  const { circulating_anchor_age_days: anchorAge } = anchorOf(fig);
  return {
    circulating_is_lower_bound: fig.lowerBound,
    supply_model: t.supply_model ?? "vesting",
    schedule_set: t.schedule_set ?? "curated",
    schedule_complete: t.supply_schedule ? t.supply_schedule.complete : null,
    unevaluated_sections: t.supply_schedule?.unevaluated_sections.map((u) => `${u.name}: ${u.reason}`) ?? [],
    circulating_rule: fig.rule,
    circulating_report:
      fig.report === null
        ? null
        : {
            source: fig.report.source,
            date: fig.report.date,
            circulating_supply: fig.report.value,
            attribution: fig.report.attribution,
          },
    circulating_rebuilt: fig.rebuilt === null ? null : Math.round(fig.rebuilt * 100) / 100,
    circulating_anchor_age_days: anchorAge,
    circulating_anchor_accuracy: anchorAge === null ? null : anchorAccuracyCode(anchorAge),
    reported_vs_rebuilt: reportedVsRebuilt(t, reports),
    unexplained_report_changes: reportRevisions(t, reports),
    schedule_share_of_max_supply: (() => {
      const share = scheduleShareOfMax(t);
      return share === null ? null : Math.round(share * 1e4) / 1e4;
    })(),
    schedule_coverage_note: coverageNote(t, scheduleShareOfMax(t)),
  };
}

/** Confidence of fresh liquidity evidence (one venue's perp volume, not an all-exchange aggregate). */
export const FRESH_LIQUIDITY_CONFIDENCE = 0.8;
/** Days after which liquidity evidence counts half: 30 days, one ADV window. */
export const LIQUIDITY_HALF_LIFE_DAYS = 30;
/** Market inputs older than this (a week) are called stale in score_kind. */
export const STALE_AFTER_DAYS = 7;

/**
 * Age of the market figures an event is valued with, in days, at request day `t`: from the day after the candle
 * whose close is the price to the event's day, or to today when the event is still ahead (its market is unknown).
 * A past event valued with its own day's market has age 0, however long ago it was.
 */
export function marketAgeDays(priceCandleDay: number, eventDay: number, t: number): number {
  return Math.max(0, Math.min(t, eventDay) - (priceCandleDay + 1));
}

/** Liquidity confidence as its evidence ages: 0.8 · 0.5^(age / 30). Documented in docs/risk-model.md. */
export function liquidityConfidence(ageDays: number): number {
  return FRESH_LIQUIDITY_CONFIDENCE * 0.5 ** (Math.max(0, ageDays) / LIQUIDITY_HALF_LIFE_DAYS);
}

/**
 * The score's kind with the STALE clause when the market inputs are older than a week: the same sentence on an item
 * and on the answer that carries it.
 */
export function scoreKindWithAge(base: string, ageDays: number): string {
  return ageDays > STALE_AFTER_DAYS
    ? `${base}; STALE market inputs: price and volume are ${ageDays} days older than the event or today (liquidity confidence ${Math.round(liquidityConfidence(ageDays) * 1e4) / 1e4})`
    : base;
}
