import { type DailySeries, seriesAt } from "./data/snapshot.js";

/**
 * Market-model event study on daily 00:00 UTC prices. Day d's return is the move from 00:00 of d to
 * 00:00 of d+1 (the UTC day d traded), so day 0's return starts at the last close before the unlock.
 */
export const ESTIMATION = { from: -120, to: -31, minReturns: 60 } as const;
export const PATH = { from: -30, to: 30 } as const;
export const WINDOWS = [
  { key: "pre", label: "[−30,−1]", from: -30, to: -1 },
  { key: "d01", label: "[0,+1]", from: 0, to: 1 },
  { key: "d014", label: "[0,+14]", from: 0, to: 14 },
  { key: "d030", label: "[0,+30]", from: 0, to: 30 },
] as const;
export type WindowKey = (typeof WINDOWS)[number]["key"];

export interface MarketModel {
  readonly alpha: number;
  readonly beta: number;
  readonly n: number;
}

export interface EventStudy {
  readonly betaEth: number;
  readonly betaBtc: number | null;
  /**
   * Cumulative abnormal return (sum of daily abnormal log returns) per window, in %: token − β·ETH, β from the
   * estimation window, no intercept (an estimation-window alpha extrapolated over 31 days drove earlier results).
   */
  readonly car: Readonly<Record<WindowKey, number>>;
  /** The market model with its fitted alpha (token − α − β·ETH): the robustness column. */
  readonly carAlpha: Readonly<Record<WindowKey, number>>;
  /** The same with BTC as the market (a robustness check); null when BTC cannot be fitted. */
  readonly carBtc: Readonly<Record<WindowKey, number>> | null;
  /** Cumulative abnormal return from day −30 through day k, k = −30..+30, in %. */
  readonly path: readonly number[];
}

/** Log return of day d: ln(P(d+1) / P(d)); null when either price is missing. */
export function logReturn(s: DailySeries, d: number): number | null {
  const a = seriesAt(s.close, s.startDay, d);
  const b = seriesAt(s.close, s.startDay, d + 1);
  return a !== null && b !== null && a > 0 && b > 0 ? Math.log(b / a) : null;
}

/** OLS of token on market returns over event days [from, to]; null with fewer than minReturns pairs. */
export function fitMarketModel(
  token: DailySeries,
  market: DailySeries,
  eventDay: number,
  est: { from: number; to: number; minReturns: number } = ESTIMATION,
): MarketModel | null {
  const xs: number[] = [];
  const ys: number[] = [];
  for (let k = est.from; k <= est.to; k++) {
    const y = logReturn(token, eventDay + k);
    const x = logReturn(market, eventDay + k);
    if (x === null || y === null) continue;
    xs.push(x);
    ys.push(y);
  }
  const n = xs.length;
  if (n < est.minReturns) return null;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let sxy = 0;
  let sxx = 0;
  for (let i = 0; i < n; i++) {
    sxy += ((xs[i] as number) - mx) * ((ys[i] as number) - my);
    sxx += ((xs[i] as number) - mx) ** 2;
  }
  if (sxx === 0) return null;
  const beta = sxy / sxx;
  return { alpha: my - beta * mx, beta, n };
}

/** Daily abnormal returns on days PATH.from..PATH.to (r − alpha − β·x); null when any day is missing. */
function abnormal(
  token: DailySeries,
  market: DailySeries,
  day: number,
  m: MarketModel,
  withAlpha: boolean,
): number[] | null {
  const out: number[] = [];
  const alpha = withAlpha ? m.alpha : 0;
  for (let k = PATH.from; k <= PATH.to; k++) {
    const r = logReturn(token, day + k);
    const x = logReturn(market, day + k);
    if (r === null || x === null) return null;
    out.push(r - (alpha + m.beta * x));
  }
  return out;
}

function cars(ar: readonly number[]): Record<WindowKey, number> {
  const sum = (from: number, to: number) => {
    let s = 0;
    for (let k = from; k <= to; k++) s += ar[k - PATH.from] as number;
    return s * 100;
  };
  return Object.fromEntries(WINDOWS.map((w) => [w.key, sum(w.from, w.to)])) as Record<WindowKey, number>;
}

/** The event study of one event, or null when the estimation or event window is not covered. */
export function studyEvent(
  token: DailySeries,
  eth: DailySeries,
  btc: DailySeries | null,
  day: number,
): EventStudy | null {
  const m = fitMarketModel(token, eth, day);
  if (!m) return null;
  const ar = abnormal(token, eth, day, m, false);
  const arAlpha = abnormal(token, eth, day, m, true);
  if (!ar || !arAlpha) return null;
  const mb = btc ? fitMarketModel(token, btc, day) : null;
  const arb = btc && mb ? abnormal(token, btc, day, mb, false) : null;
  const path: number[] = [];
  let c = 0;
  for (const a of ar) {
    c += a;
    path.push(c * 100);
  }
  return {
    betaEth: m.beta,
    betaBtc: mb?.beta ?? null,
    car: cars(ar),
    carAlpha: cars(arAlpha),
    carBtc: arb ? cars(arb) : null,
    path,
  };
}

/** Deterministic PRNG (mulberry32): the same seed gives the same bootstrap intervals. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface Interval {
  readonly estimate: number | null;
  readonly lo: number | null;
  readonly hi: number | null;
  readonly n: number;
  readonly clusters: number;
}

function quantile(sorted: readonly number[], q: number): number {
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return (sorted[lo] as number) + ((sorted[hi] as number) - (sorted[lo] as number)) * (pos - lo);
}

/**
 * A statistic with a 95 % percentile interval from a cluster bootstrap: whole tokens are resampled
 * with replacement, so events of one token (correlated with each other) move together.
 */
export function clusterBootstrap<T>(
  items: readonly T[],
  cluster: (x: T) => string,
  stat: (xs: readonly T[]) => number | null,
  opts: { reps: number; seed: number },
): Interval {
  const groups = new Map<string, T[]>();
  for (const x of items) {
    const k = cluster(x);
    const g = groups.get(k);
    if (g) g.push(x);
    else groups.set(k, [x]);
  }
  const keys = [...groups.keys()].sort();
  const estimate = stat(items);
  const rand = mulberry32(opts.seed);
  const draws: number[] = [];
  for (let r = 0; r < opts.reps && keys.length > 1; r++) {
    const sample: T[] = [];
    for (let i = 0; i < keys.length; i++)
      sample.push(...(groups.get(keys[Math.floor(rand() * keys.length)] as string) as T[]));
    const v = stat(sample);
    if (v !== null && Number.isFinite(v)) draws.push(v);
  }
  draws.sort((a, b) => a - b);
  return {
    estimate,
    lo: draws.length > 20 ? quantile(draws, 0.025) : null,
    hi: draws.length > 20 ? quantile(draws, 0.975) : null,
    n: items.length,
    clusters: keys.length,
  };
}
