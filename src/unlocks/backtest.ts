import { formatDay } from "./data/dates.js";
import { type DailySeries, seriesAt } from "./data/snapshot.js";
import { fitMarketModel } from "./event-study.js";

export interface Reaction {
  unlock_event_id: string;
  token: string;
  unlock_date: string;
  recipient_category: string;
  unlock_type: string;
  risk_score: number;
  pct_circulating: number | null;
  window_days: number;
  pre_return_pct: number;
  post_return_pct: number;
  benchmark: string;
  benchmark_pre_return_pct: number;
  benchmark_post_return_pct: number;
  /** β of the token's daily log returns on the benchmark's, fitted on days −120..−31. */
  beta: number;
  pre_abnormal_return_pct: number;
  abnormal_return_pct: number;
  max_drawdown_pct: number;
  volume_change_pct: number | null;
  synthetic: boolean;
}

export interface ReactionSummary {
  sample_size: number;
  mean_abnormal_return_pct: number | null;
  median_abnormal_return_pct: number | null;
  mean_post_return_pct: number | null;
  median_post_return_pct: number | null;
  share_negative_abnormal: number | null;
  mean_max_drawdown_pct: number | null;
}

export interface PriceWindow {
  readonly pre: number;
  readonly zero: number;
  readonly post: number;
}

const r4 = (x: number): number => Math.round(x * 1e4) / 1e4;

/** Prices at day−w, day and day+w (00:00 UTC snapshots), or null when any is missing. */
export function priceWindow(series: DailySeries, day: number, w: number): PriceWindow | null {
  const pre = seriesAt(series.close, series.startDay, day - w);
  const zero = seriesAt(series.close, series.startDay, day);
  const post = seriesAt(series.close, series.startDay, day + w);
  if (pre === null || zero === null || post === null) return null;
  return { pre, zero, post };
}

/** Worst peak-to-trough fall (in %, ≤ 0) on days day..day+w, the peak starting at day 0. */
export function maxDrawdownPct(series: DailySeries, day: number, w: number): number {
  let peak = Number.NEGATIVE_INFINITY;
  let worst = 0;
  for (let d = day; d <= day + w; d++) {
    const p = seriesAt(series.close, series.startDay, d);
    if (p === null) continue;
    if (p > peak) peak = p;
    worst = Math.min(worst, (p / peak - 1) * 100);
  }
  return worst;
}

/** Mean volume on days day..day+w−1 against days day−w..day−1, in %; null when volume is unknown. */
export function volumeChangePct(series: DailySeries, day: number, w: number): number | null {
  if (series.volume === null) return null;
  const mean = (from: number, to: number): number | null => {
    let s = 0;
    let n = 0;
    for (let d = from; d <= to; d++) {
      const v = seriesAt(series.volume, series.startDay, d);
      if (v !== null) {
        s += v;
        n++;
      }
    }
    return n * 2 >= to - from + 1 && n > 0 ? s / n : null;
  };
  const before = mean(day - w, day - 1);
  const after = mean(day, day + w - 1);
  if (before === null || after === null || before <= 0) return null;
  return (after / before - 1) * 100;
}

export interface ReactionSubject {
  readonly id: string;
  readonly symbol: string;
  readonly day: number;
  readonly recipientCategory: string;
  readonly unlockType: string;
  readonly riskScore: number;
  readonly pctCirculating: number | null;
}

/** ln(b/a) × 100: a log return in %. */
const logPct = (a: number, b: number): number => Math.log(b / a) * 100;

/**
 * Market reaction of one unlock: returns over −w..0 and 0..+w, and abnormal returns with the event study's definition
 * (docs/risk-model.md): token log return − β·benchmark log return over the same days, β fitted on the estimation
 * window (days −120..−31) and no intercept. Null when prices are missing at any end or β cannot be fitted.
 */
export function computeReaction(
  subject: ReactionSubject,
  series: DailySeries,
  benchmark: { symbol: string; series: DailySeries },
  w: number,
): Reaction | null {
  const tok = priceWindow(series, subject.day, w);
  // A token recorded with its own benchmark column (the 6MV tables) is measured against that column.
  const bmSeries: DailySeries = series.benchmarkClose
    ? { ...series, close: series.benchmarkClose }
    : benchmark.series;
  const bm = priceWindow(bmSeries, subject.day, w);
  if (tok === null || bm === null) return null;
  const model = fitMarketModel(series, bmSeries, subject.day);
  if (model === null) return null;
  const pre = (tok.zero / tok.pre - 1) * 100;
  const post = (tok.post / tok.zero - 1) * 100;
  const bPre = (bm.zero / bm.pre - 1) * 100;
  const bPost = (bm.post / bm.zero - 1) * 100;
  const vol = volumeChangePct(series, subject.day, w);
  return {
    unlock_event_id: subject.id,
    token: subject.symbol,
    unlock_date: formatDay(subject.day),
    recipient_category: subject.recipientCategory,
    unlock_type: subject.unlockType,
    risk_score: subject.riskScore,
    pct_circulating: subject.pctCirculating === null ? null : r4(subject.pctCirculating),
    window_days: w,
    pre_return_pct: r4(pre),
    post_return_pct: r4(post),
    benchmark: benchmark.symbol,
    benchmark_pre_return_pct: r4(bPre),
    benchmark_post_return_pct: r4(bPost),
    beta: r4(model.beta),
    pre_abnormal_return_pct: r4(logPct(tok.pre, tok.zero) - model.beta * logPct(bm.pre, bm.zero)),
    abnormal_return_pct: r4(logPct(tok.zero, tok.post) - model.beta * logPct(bm.zero, bm.post)),
    max_drawdown_pct: r4(maxDrawdownPct(series, subject.day, w)),
    volume_change_pct: vol === null ? null : r4(vol),
    synthetic: series.synthetic || bmSeries.synthetic,
  };
}

/**
 * Keeps unlocks whose windows do not overlap within a token: the most significant first (risk score,
 * then earlier date), dropping any later pick closer than `w` days to one already kept.
 */
export function selectNonOverlapping<T extends ReactionSubject>(
  candidates: readonly T[],
  w: number,
): { kept: T[]; dropped: number } {
  const order = [...candidates].sort(
    (a, b) => b.riskScore - a.riskScore || a.day - b.day || a.id.localeCompare(b.id),
  );
  const keptDays = new Map<string, number[]>();
  const kept: T[] = [];
  for (const c of order) {
    const days = keptDays.get(c.symbol) ?? [];
    if (days.some((d) => Math.abs(d - c.day) < w)) continue;
    days.push(c.day);
    keptDays.set(c.symbol, days);
    kept.push(c);
  }
  kept.sort((a, b) => a.day - b.day || a.symbol.localeCompare(b.symbol));
  return { kept, dropped: candidates.length - kept.length };
}

export function median(xs: readonly number[]): number | null {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}

export function mean(xs: readonly number[]): number | null {
  return xs.length === 0 ? null : xs.reduce((a, b) => a + b, 0) / xs.length;
}

export function summarizeReactions(reactions: readonly Reaction[]): ReactionSummary {
  const ab = reactions.map((r) => r.abnormal_return_pct);
  const post = reactions.map((r) => r.post_return_pct);
  const dd = reactions.map((r) => r.max_drawdown_pct);
  const opt = (x: number | null) => (x === null ? null : r4(x));
  return {
    sample_size: reactions.length,
    mean_abnormal_return_pct: opt(mean(ab)),
    median_abnormal_return_pct: opt(median(ab)),
    mean_post_return_pct: opt(mean(post)),
    median_post_return_pct: opt(median(post)),
    share_negative_abnormal: reactions.length === 0 ? null : r4(ab.filter((x) => x < 0).length / ab.length),
    mean_max_drawdown_pct: opt(mean(dd)),
  };
}
