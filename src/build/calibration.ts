import { mean, selectNonOverlapping } from "../unlocks/backtest.js";
import { formatDay } from "../unlocks/data/dates.js";
import type { DailySeries, UnlockStore } from "../unlocks/data/snapshot.js";
import type { TokenRecord } from "../unlocks/data/types.js";
import {
  clusterBootstrap,
  type EventStudy,
  type Interval,
  PATH,
  studyEvent,
  WINDOWS,
  type WindowKey,
} from "../unlocks/event-study.js";
import { type ModelParams, SHIPPED_PARAMS, scoreRisk } from "../unlocks/risk-model.js";
import type { ScoredEvent } from "../unlocks/scoring.js";

/**
 * Releases of one token within this many days are one event (the higher-scored one kept): a release
 * split over consecutive days is one shock. Later overlapping windows stay in; the token-clustered
 * bootstrap carries their dependence.
 */
export const DEDUP_DAYS = 3;
/** Non-event days: sampled every STRIDE days, with no release of the token (any size) within ±QUIET days. */
export const NON_EVENT = { stride: 7, quiet: 30 } as const;
/** Smallest release studied: 0.1 % of the token's supply (max supply, else the complete schedule's total). */
export const MIN_SUPPLY_SHARE_PCT = 0.1;
/** Below this many tokens a bucket prints "too few tokens", not an interval (a token-cluster bootstrap needs them). */
export const MIN_TOKENS = 8;
/** The untouched holdout: the last six months of price data (182 days to the last benchmark day). */
export const HOLDOUT_DAYS = 182;
/** Leave-tokens-out holdout: every LEAVE_OUT_EVERY-th token in symbol order (deterministic, no fitted choice). */
export const LEAVE_OUT_EVERY = 4;
export const BOOT = { reps: 1000, seed: 402 } as const;
/** The window the skill figures are measured on. */
export const SKILL_WINDOW: WindowKey = "d014";

export interface StudiedEvent {
  readonly sample: string;
  readonly id: string;
  readonly token: string;
  readonly date: string;
  readonly category: string;
  readonly sizePct: number | null;
  /** Release as % of the token's supply (max supply, else the complete schedule's total). */
  readonly supplySharePct: number | null;
  readonly score: number;
  readonly scored: ScoredEvent;
  readonly study: EventStudy;
}

export interface StudySet {
  readonly considered: number;
  readonly uncovered: number;
  readonly overlapping: number;
  readonly events: StudiedEvent[];
}

/** The token's supply a release is measured against: max supply, else the complete schedule's total, else null. */
export function supplyTotal(t: TokenRecord): number | null {
  if (t.max_supply !== null && t.max_supply > 0) return t.max_supply;
  const pieces = t.supply_schedule?.pieces ?? [];
  const total = pieces.reduce((a, p) => a + p.amount_tokens, 0);
  return total > 0 ? total : null;
}

const supplySharePct = (s: ScoredEvent): number | null => {
  const total = supplyTotal(s.token);
  return total === null ? null : (s.event.amount / total) * 100;
};

/**
 * Every discrete unlock of the store of at least 0.1 % of supply whose estimation and event windows are covered by
 * real prices. Releases of one token-day are already one event (events.ts merges them).
 */
export function studyStore(
  store: UnlockStore,
  scored: readonly ScoredEvent[],
  btc: DailySeries | null,
  sample: (s: ScoredEvent) => string | null,
): StudySet {
  const discrete = scored.filter(
    (s) =>
      s.event.unlockType !== "linear" &&
      sample(s) !== null &&
      (supplySharePct(s) ?? Number.POSITIVE_INFINITY) >= MIN_SUPPLY_SHARE_PCT,
  );
  const studies = new Map<string, { s: ScoredEvent; study: EventStudy }>();
  for (const s of discrete) {
    const series = store.pricesBySymbol.get(s.token.symbol.toLowerCase());
    if (!series) continue;
    const study = studyEvent(series, store.benchmark.series, btc, s.event.day);
    if (study) studies.set(s.event.id, { s, study });
  }
  const subjects = [...studies.values()].map(({ s }) => ({
    id: s.event.id,
    symbol: s.event.symbol,
    day: s.event.day,
    recipientCategory: s.event.recipientCategory,
    unlockType: s.event.unlockType,
    riskScore: s.risk.score,
    pctCirculating: s.pctCirculating,
  }));
  const { kept, dropped } = selectNonOverlapping(subjects, DEDUP_DAYS);
  const events = kept.map((k) => {
    const { s, study } = studies.get(k.id) as { s: ScoredEvent; study: EventStudy };
    return {
      sample: sample(s) as string,
      id: s.event.id,
      token: s.token.symbol,
      date: s.event.date,
      category: s.event.recipientCategory,
      sizePct: s.pctCirculating ?? s.pctMaxSupply,
      supplySharePct: supplySharePct(s),
      score: s.risk.score,
      scored: s,
      study,
    };
  });
  return {
    considered: discrete.length,
    uncovered: discrete.length - studies.size,
    overlapping: dropped,
    events,
  };
}

export interface NonEvent {
  readonly token: string;
  readonly study: EventStudy;
}

/** The same tokens on days without unlocks, studied the same way: the drift an unlock effect must beat. */
export function nonEventStudies(
  store: UnlockStore,
  scored: readonly ScoredEvent[],
  tokens: ReadonlySet<string>,
  btc: DailySeries | null,
  inSample: (day: number) => boolean,
): NonEvent[] {
  // Releases that would be studied as events (discrete, ≥ 0.1 % of supply): linear streams and dust steps run most
  // days of many tokens and would leave no baseline at all.
  const unlockDays = new Map<string, number[]>();
  for (const s of scored)
    if (
      s.event.unlockType !== "linear" &&
      (supplySharePct(s) ?? Number.POSITIVE_INFINITY) >= MIN_SUPPLY_SHARE_PCT
    )
      unlockDays.set(s.token.symbol, [...(unlockDays.get(s.token.symbol) ?? []), s.event.day]);
  const out: NonEvent[] = [];
  for (const sym of [...tokens].sort()) {
    const series = store.pricesBySymbol.get(sym.toLowerCase());
    if (!series) continue;
    const days = unlockDays.get(sym) ?? [];
    const end = series.startDay + series.close.length;
    for (let d = series.startDay - PATH.from + 120; d < end - PATH.to; d += NON_EVENT.stride) {
      if (!inSample(d) || days.some((u) => Math.abs(u - d) <= NON_EVENT.quiet)) continue;
      const study = studyEvent(series, store.benchmark.series, btc, d);
      if (study) out.push({ token: sym, study });
    }
  }
  return out;
}

/** Average ranks (ties share the mean rank). */
export function ranks(xs: readonly number[]): number[] {
  const idx = xs.map((x, i) => [x, i] as const).sort((a, b) => a[0] - b[0]);
  const out = new Array<number>(xs.length);
  let i = 0;
  while (i < idx.length) {
    let j = i;
    while (
      j + 1 < idx.length &&
      (idx[j + 1] as readonly [number, number])[0] === (idx[i] as readonly [number, number])[0]
    )
      j++;
    const r = (i + j) / 2 + 1;
    for (let k = i; k <= j; k++) out[(idx[k] as readonly [number, number])[1]] = r;
    i = j + 1;
  }
  return out;
}

/** Spearman's rho: Pearson correlation of the ranks. */
export function spearman(a: readonly number[], b: readonly number[]): number | null {
  if (a.length !== b.length || a.length < 3) return null;
  const ra = ranks(a);
  const rb = ranks(b);
  const ma = mean(ra) as number;
  const mb = mean(rb) as number;
  let num = 0;
  let da = 0;
  let db = 0;
  for (let i = 0; i < ra.length; i++) {
    const x = (ra[i] as number) - ma;
    const y = (rb[i] as number) - mb;
    num += x * y;
    da += x * x;
    db += y * y;
  }
  return da === 0 || db === 0 ? null : num / Math.sqrt(da * db);
}

/** Mean CAR of the top fifth by score minus the bottom fifth (negative = higher scores fell more). */
export function quintileSpread(scores: readonly number[], cars: readonly number[]): number | null {
  const n = scores.length;
  if (n < 10) return null;
  const order = scores.map((s, i) => [s, i] as const).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const q = Math.floor(n / 5);
  const avg = (slice: readonly (readonly [number, number])[]) =>
    slice.reduce((s, [, i]) => s + (cars[i] as number), 0) / slice.length;
  return avg(order.slice(n - q)) - avg(order.slice(0, q));
}

export interface SkillFigures {
  readonly spearman: Interval;
  readonly quintile_spread_pp: Interval;
}

type Scorer = (e: StudiedEvent) => number | null;

export function skill(
  events: readonly StudiedEvent[],
  scorer: Scorer,
  w: WindowKey = SKILL_WINDOW,
): SkillFigures {
  const usable = events.filter((e) => scorer(e) !== null);
  const xs = (es: readonly StudiedEvent[]) => es.map((e) => scorer(e) as number);
  const ys = (es: readonly StudiedEvent[]) => es.map((e) => e.study.car[w]);
  return {
    spearman: clusterBootstrap(
      usable,
      (e) => e.token,
      (es) => spearman(xs(es), ys(es)),
      BOOT,
    ),
    quintile_spread_pp: clusterBootstrap(
      usable,
      (e) => e.token,
      (es) => quintileSpread(xs(es), ys(es)),
      BOOT,
    ),
  };
}

export const meanCar = <T extends { token: string; study: EventStudy }>(
  xs: readonly T[],
  w: WindowKey,
): Interval =>
  clusterBootstrap(
    xs,
    (x) => x.token,
    (es) => mean(es.map((e) => e.study.car[w])),
    BOOT,
  );

export const scoreWith =
  (params: ModelParams): Scorer =>
  (e) =>
    scoreRisk(e.scored.inputs, params).score;
export const sizeOnly: Scorer = (e) => e.sizePct;

export interface CandidateModel {
  readonly name: string;
  readonly params: ModelParams;
}

const FLAT_PRIOR = Object.fromEntries(
  Object.keys(SHIPPED_PARAMS.categoryPrior).map((k) => [k, 1]),
) as unknown as ModelParams["categoryPrior"];

/** The alternatives compared on the fit sample (2023–2025); the shipped one is the first. */
export const CANDIDATES: readonly CandidateModel[] = [
  {
    name: "shipped: size 0.45 / absorption 0.40 / depth 0.15, Keyrock recipient prior",
    params: SHIPPED_PARAMS,
  },
  {
    name: "size-heavy 0.70 / 0.15 / 0.15, Keyrock prior",
    params: {
      ...SHIPPED_PARAMS,
      weights: { unlock_size: 0.7, absorption_ratio: 0.15, order_book_depth: 0.15 },
    },
  },
  {
    name: "absorption-heavy 0.20 / 0.65 / 0.15, Keyrock prior",
    params: {
      ...SHIPPED_PARAMS,
      weights: { unlock_size: 0.2, absorption_ratio: 0.65, order_book_depth: 0.15 },
    },
  },
  { name: "shipped weights, flat recipient prior", params: { ...SHIPPED_PARAMS, categoryPrior: FLAT_PRIOR } },
];

export interface PathBand {
  readonly group: string;
  readonly day: number;
  readonly car: number;
  readonly lo: number;
  readonly hi: number;
  readonly n: number;
}

/** Average CAR path −30..+30 of each group with a token-clustered 95 % band. */
export function pathBands(
  events: readonly StudiedEvent[],
  groupOf: (e: StudiedEvent) => string,
  order: readonly string[],
): PathBand[] {
  const out: PathBand[] = [];
  for (const g of order) {
    const es = events.filter((e) => groupOf(e) === g);
    if (es.length === 0) continue;
    for (let k = PATH.from; k <= PATH.to; k++) {
      const i = k - PATH.from;
      const iv = clusterBootstrap(
        es,
        (e) => e.token,
        (xs) => mean(xs.map((e) => e.study.path[i] as number)),
        {
          reps: 200,
          seed: BOOT.seed + i,
        },
      );
      out.push(bandPoint(g, k, es.length, iv));
    }
  }
  return out;
}

export const SIZE_GROUPS = ["<0.5%", "0.5–2%", "2–5%", "≥5%"] as const;
export function sizeGroup(e: StudiedEvent): string {
  const p = e.sizePct ?? 0;
  return p < 0.5 ? "<0.5%" : p < 2 ? "0.5–2%" : p < 5 ? "2–5%" : "≥5%";
}
export const RECIPIENT_GROUPS = ["team", "investors", "ecosystem & community", "other"] as const;
export function recipientGroup(e: StudiedEvent): string {
  if (e.category === "team" || e.category === "investors") return e.category;
  if (e.category === "ecosystem" || e.category === "community" || e.category === "airdrop")
    return "ecosystem & community";
  return "other";
}

export const yearOf = (day: number): number => Number(formatDay(day).slice(0, 4));
export { WINDOWS };

/**
 * Which sample an event of the shipped store belongs to: the last six months of data are the time holdout (no fitted
 * or chosen number sees them); before that, every LEAVE_OUT_EVERY-th token is the token holdout; the rest is the fit.
 */
export function shippedSampler(store: UnlockStore): (s: ScoredEvent) => string | null {
  const b = store.benchmark.series;
  const holdoutFrom = b.startDay + b.close.length - 1 - HOLDOUT_DAYS;
  const symbols = store.tokens.map((t) => t.symbol).sort();
  const leftOut = new Set(symbols.filter((_, i) => i % LEAVE_OUT_EVERY === LEAVE_OUT_EVERY - 1));
  return (s) => {
    if (yearOf(s.event.day) < 2023) return null;
    if (s.event.day >= holdoutFrom) return "holdout-time";
    return leftOut.has(s.token.symbol) ? "holdout-tokens" : "fit";
  };
}

export const holdoutFromDay = (store: UnlockStore): number =>
  store.benchmark.series.startDay + store.benchmark.series.close.length - 1 - HOLDOUT_DAYS;

interface Matched {
  readonly token: string;
  readonly ev: boolean;
  readonly v: number;
}

/** Events and baseline days of the tokens that have both (a token without baseline days cannot be matched). */
function matchedItems(
  events: readonly { token: string; study: EventStudy }[],
  baseline: readonly { token: string; study: EventStudy }[],
  value: (s: EventStudy) => number,
): { items: Matched[]; events: number } {
  const withBase = new Set(baseline.map((b) => b.token));
  const ev = events.filter((e) => withBase.has(e.token));
  const tokens = new Set(ev.map((e) => e.token));
  const items = [
    ...ev.map((e) => ({ token: e.token, ev: true, v: value(e.study) })),
    ...baseline
      .filter((b) => tokens.has(b.token))
      .map((b) => ({ token: b.token, ev: false, v: value(b.study) })),
  ];
  return { items, events: ev.length };
}

/** Mean over events minus mean over baseline days, recomputed on every bootstrap draw of tokens. */
function differenceOfMeans(items: readonly Matched[], opts: { reps: number; seed: number }): Interval {
  return clusterBootstrap(
    items,
    (x) => x.token,
    (xs) => {
      const a = mean(xs.filter((x) => x.ev).map((x) => x.v));
      const b = mean(xs.filter((x) => !x.ev).map((x) => x.v));
      return a === null || b === null ? null : a - b;
    },
    opts,
  );
}

const bandPoint = (group: string, day: number, n: number, iv: Interval): PathBand => ({
  group: `${group} (n=${n})`,
  day,
  car: iv.estimate as number,
  lo: iv.lo ?? (iv.estimate as number),
  hi: iv.hi ?? (iv.estimate as number),
  n,
});

/**
 * Mean event CAR minus mean non-event CAR over the same tokens, with a token-cluster bootstrap: each draw resamples
 * tokens and takes both means over the draw, so the baseline moves with the events it is matched to.
 */
export function eventMinusBaseline(
  events: readonly { token: string; study: EventStudy }[],
  baseline: readonly { token: string; study: EventStudy }[],
  w: WindowKey,
  withAlpha = false,
): Interval {
  const { items } = matchedItems(events, baseline, (s) => (withAlpha ? s.carAlpha : s.car)[w]);
  return differenceOfMeans(items, BOOT);
}

/** The same difference along the −30..+30 path, with a token-clustered band. */
export function diffPathBand(
  events: readonly StudiedEvent[],
  baseline: readonly { token: string; study: EventStudy }[],
  group: string,
): PathBand[] {
  const out: PathBand[] = [];
  for (let k = PATH.from; k <= PATH.to; k++) {
    const i = k - PATH.from;
    const m = matchedItems(events, baseline, (s) => s.path[i] as number);
    out.push(bandPoint(group, k, m.events, differenceOfMeans(m.items, { reps: 200, seed: BOOT.seed + i })));
  }
  return out;
}
