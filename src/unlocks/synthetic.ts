import { formatDay, parseDay } from "../store/unlocks-dates.js";
import type { MarketInfo, PriceSeries, SupplyInfo, TokenRecord } from "../store/unlocks-types.js";
import { scheduledReleasedBefore } from "./events.js";

/**
 * Seeded synthetic market generator. It exists because no offline source of prices, volumes or
 * circulating supplies is available for the shipped tokens; everything it makes is flagged
 * `synthetic: true` and every response built from it says so.
 *
 * Model (documented in data/README.md):
 *   benchmark  log r_t = μ_b + σ_b·z_t                      (μ_b = 0.0003, σ_b = 0.032)
 *   token      log r_t = α + β·r_bench,t + σ·ε_t             (α = −0.0004, β ~ U[0.8,1.5], σ ~ U[0.03,0.06])
 *   price path rescaled so the last close × circulating supply equals a market cap drawn log-uniform in [1e8, 2e10] USD
 *   volume     price·circ·τ·exp(0.4·η − 0.08)·(1 + 5|r_t|)    (τ daily turnover ~ log-U[0.02, 0.15])
 *   depth      ±2% depth = 30-day ADV × U[0.005, 0.03], published for about half the tokens
 * It contains NO unlock effect: backtests on it should average near zero abnormal return.
 */
export const GENERATOR_NAME = "pressure402-synthetic-market/1";

/** mulberry32: small, fast, good enough for demonstration data; deterministic across platforms. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** FNV-1a of seed and label, so each token gets its own stream independent of list order. */
export function subSeed(seed: number, label: string): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < label.length; i++) {
    h ^= label.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

export function normal(rand: () => number): number {
  const u = Math.max(rand(), 1e-12);
  const v = rand();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
}

const sig = (x: number, digits = 6): number => Number(x.toPrecision(digits));
const uniform = (rand: () => number, lo: number, hi: number): number => lo + (hi - lo) * rand();
const logUniform = (rand: () => number, lo: number, hi: number): number =>
  Math.exp(uniform(rand, Math.log(lo), Math.log(hi)));

export interface BenchmarkPath {
  readonly startDay: number;
  readonly logReturns: readonly number[];
  readonly series: PriceSeries;
}

export function generateBenchmark(
  seed: number,
  start: string,
  asOf: string,
  startPrice = 2000,
): BenchmarkPath {
  const rand = prng(subSeed(seed, "benchmark"));
  const startDay = parseDay(start);
  const n = parseDay(asOf) - startDay + 1;
  const logReturns: number[] = [0];
  const close: number[] = [startPrice];
  const volume: number[] = [];
  let p = startPrice;
  for (let i = 1; i < n; i++) {
    const r = 0.0003 + 0.032 * normal(rand);
    logReturns.push(r);
    p *= Math.exp(r);
    close.push(sig(p));
  }
  for (let i = 0; i < n; i++) volume.push(Math.round(1.2e10 * Math.exp(0.3 * normal(rand))));
  return {
    startDay,
    logReturns,
    series: { start, close, volume_usd: volume, source: GENERATOR_NAME, source_url: null, synthetic: true },
  };
}

export interface SyntheticMarket {
  readonly supply: SupplyInfo;
  readonly market: MarketInfo;
  readonly prices: PriceSeries;
}

/** Circulating supply estimate: scheduled releases to date plus a generated float for unscheduled allocations. */
function syntheticCirculating(token: TokenRecord, day: number, floatShare: number): number {
  const scheduledTotal = token.schedules.reduce((s, p) => s + p.amount_tokens, 0);
  const unscheduled = token.max_supply === null ? 0 : Math.max(0, token.max_supply - scheduledTotal);
  return scheduledReleasedBefore(token, day) + floatShare * unscheduled;
}

export function generateTokenMarket(
  token: TokenRecord,
  bench: BenchmarkPath,
  seed: number,
  asOf: string,
  historyFrom: string,
): SyntheticMarket {
  const rand = prng(subSeed(seed, token.symbol.toUpperCase()));
  const asOfDay = parseDay(asOf);
  const tge = Math.min(...token.schedules.map((p) => parseDay(p.start)));
  const startDay = Math.max(tge, parseDay(historyFrom), bench.startDay);
  const beta = uniform(rand, 0.8, 1.5);
  const sigma = uniform(rand, 0.03, 0.06);
  const floatShare = uniform(rand, 0.1, 0.5);
  const targetMcap = logUniform(rand, 1e8, 2e10);
  const turnover = logUniform(rand, 0.02, 0.15);
  const hasDepth = rand() < 0.5;
  const depthShare = uniform(rand, 0.005, 0.03);

  const n = asOfDay - startDay + 1;
  const logp: number[] = [0];
  const rets: number[] = [0];
  for (let i = 1; i < n; i++) {
    const rb = bench.logReturns[startDay - bench.startDay + i] ?? 0;
    const r = -0.0004 + beta * rb + sigma * normal(rand);
    rets.push(r);
    logp.push((logp[i - 1] as number) + r);
  }
  const circNow = syntheticCirculating(token, asOfDay + 1, floatShare);
  const targetPrice = targetMcap / Math.max(circNow, 1);
  const shift = Math.log(targetPrice) - (logp[n - 1] as number);
  const close: number[] = [];
  const volume: number[] = [];
  for (let i = 0; i < n; i++) {
    const price = Math.exp((logp[i] as number) + shift);
    close.push(sig(price));
    const circ = Math.max(syntheticCirculating(token, startDay + i + 1, floatShare), 1);
    const v =
      price * circ * turnover * Math.exp(0.4 * normal(rand) - 0.08) * (1 + 5 * Math.abs(rets[i] as number));
    volume.push(sig(v, 4));
  }
  const last30 = volume.slice(-30);
  const adv = last30.reduce((s, v) => s + v, 0) / last30.length;
  const scheduledTotal = token.schedules.reduce((s, p) => s + p.amount_tokens, 0);
  const assumptions = [
    "circulating supply = scheduled releases up to the as-of date (schedules.json) plus a generated float for allocations without a schedule",
    "pieces that ended before 2024-01-01 are not in the schedules, so early releases are only covered by the generated float",
  ];
  if (token.max_supply === null || token.max_supply <= scheduledTotal) assumptions.pop();
  return {
    supply: {
      circulating: sig(circNow, 9),
      total: token.max_supply,
      as_of: asOf,
      source: GENERATOR_NAME,
      source_url: null,
      synthetic: true,
      assumptions,
    },
    market: {
      price_usd: close[n - 1] as number,
      adv_30d_usd: Math.round(adv),
      depth_2pct_usd: hasDepth ? Math.round(adv * depthShare) : null,
      as_of: asOf,
      source: GENERATOR_NAME,
      source_url: null,
      synthetic: true,
      assumptions: ["SYNTHETIC: generated by a seeded random walk, not observed market data"],
    },
    prices: {
      start: formatDay(startDay),
      close,
      volume_usd: volume,
      source: GENERATOR_NAME,
      source_url: null,
      synthetic: true,
    },
  };
}
