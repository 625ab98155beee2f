/**
 * One market's figures with one vote per service: each service's price is the median of its
 * comparable endpoints' prices, and percentiles, the endpoint's rank and the test band are taken
 * over those service prices. How many endpoints and services stand behind each figure is kept.
 */
import type { IndexedEntry } from "./market-index.js";
import type { MarketFigures as PriceFigures } from "./rules.js";
import { harrellDavis, percentile, percentileRank, round1, roundUsd } from "./stats.js";

export interface ServiceVote {
  service: string;
  /** Median price of the service's comparable endpoints, USD. */
  usd: number;
  endpoints: number;
}

export interface Freshness {
  /** Newest observation date among the comparables (ISO 8601), null when none is dated. */
  as_of: string | null;
  oldest_observed_at: string | null;
  /** Whole days from as_of to now, null when undated. */
  age_days: number | null;
  dated_count: number;
  undated_count: number;
}

/** The figures the rules judge a price by, plus how many endpoints the services offer. */
export interface MarketFigures extends PriceFigures {
  endpoint_count: number;
}

const DAY_MS = 86_400_000;

/** Comparables grouped by service, each service's price its median; ascending by price. */
export function serviceVotes(entries: readonly IndexedEntry[]): ServiceVote[] {
  const byService = new Map<string, number[]>();
  for (const e of entries) {
    const list = byService.get(e.service);
    if (list === undefined) byService.set(e.service, [e.entry.price_usd as number]);
    else list.push(e.entry.price_usd as number);
  }
  const votes: ServiceVote[] = [];
  for (const [service, prices] of byService) {
    prices.sort((a, b) => a - b);
    votes.push({ service, usd: percentile(prices, 50) as number, endpoints: prices.length });
  }
  return votes.sort((a, b) => a.usd - b.usd || a.service.localeCompare(b.service));
}

export function figures(votes: readonly ServiceVote[]): MarketFigures {
  const prices = votes.map((v) => v.usd);
  // Prices span six orders of magnitude, so the estimator works on their logarithms: a seller
  // asking 10,000 USD weighs like one far-out price, not like ten thousand cheap ones.
  const logs = prices.map(Math.log);
  const q = (p: number) => {
    const l = harrellDavis(logs, p);
    const v = l === null ? null : Math.exp(l);
    return v === null ? null : roundUsd(v);
  };
  return {
    endpoint_count: votes.reduce((n, v) => n + v.endpoints, 0),
    service_count: votes.length,
    p10: q(10),
    p25: q(25),
    median: q(50),
    p75: q(75),
    p90: q(90),
  };
}

/** Mid-rank percentile of a price among the service prices (0–100, one decimal). */
export function servicePercentile(votes: readonly ServiceVote[], usd: number): number | null {
  const r = percentileRank(
    votes.map((v) => v.usd),
    usd,
  );
  return r === null ? null : round1(r);
}

export function freshness(entries: readonly IndexedEntry[], now: Date): Freshness {
  let newest: string | null = null;
  let oldest: string | null = null;
  let dated = 0;
  for (const e of entries) {
    const t = e.entry.observed_at;
    if (t === null) continue;
    dated++;
    if (newest === null || t > newest) newest = t;
    if (oldest === null || t < oldest) oldest = t;
  }
  return {
    as_of: newest,
    oldest_observed_at: oldest,
    age_days: newest === null ? null : ageDays(newest, now),
    dated_count: dated,
    undated_count: entries.length - dated,
  };
}

export function ageDays(iso: string, now: Date): number {
  return Math.max(0, Math.floor((now.getTime() - new Date(iso).getTime()) / DAY_MS));
}
