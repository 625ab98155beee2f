/**
 * The endpoint price benchmark: match the URL to market data, place its price in the market of
 * comparable endpoints, adjust usage for wash calls, and decide — each figure with its source.
 */

import type { BenchmarkResult } from "../schemas/benchmark-response.js";
import type { Catalog } from "../store/catalog.js";
import { isTestnet, usdToAtomicRounded } from "./money.js";
import {
  PROBE_MAX_BYTES,
  PROBE_TIMEOUT_MS,
  type ProbeResult,
  probeEndpoint,
  type Resolver,
} from "./live-probe.js";
import {
  buildMarketIndex,
  type IndexedEntry,
  type MarketIndex,
  matchEntries,
  resolveCategory,
} from "./market-index.js";
import {
  confidenceOf,
  decide,
  type MarketFigures,
  MIN_COMPARABLES,
  type PriceEvidence,
  pricePosition,
} from "./rules.js";
import { percentile, percentileRank, round1, roundUsd } from "./stats.js";
import { normalizeUrl } from "./url.js";
import { washAdjust } from "./usage.js";

export type { BenchmarkResult } from "../schemas/benchmark-response.js";
export type Category = "data" | "search" | "inference" | "media" | "infra" | "uncategorized";

export interface BenchmarkInput {
  endpoint_url: string;
  category_hint?: Category;
}

export interface BenchmarkContext {
  /** Computed by availabilityLabel() and passed in by the route. */
  availability: string;
}

export interface BenchmarkService {
  benchmark(input: BenchmarkInput, ctx: BenchmarkContext): Promise<BenchmarkResult>;
}

export interface LiveProbeConfig {
  enabled: boolean;
  allowHosts?: string[];
  timeoutMs?: number;
  maxBytes?: number;
  /** DNS override (tests); the system resolver otherwise. */
  resolve?: Resolver;
}

export interface BenchmarkServiceOptions {
  clock?: () => Date;
  liveProbe?: LiveProbeConfig;
}

export const MAX_ALTERNATIVES = 5;

type LiveProbeReport = BenchmarkResult["live_probe"];
type TrailItem = BenchmarkResult["source_trail"][number];

function marketFigures(prices: readonly number[]): MarketFigures {
  const q = (p: number) => {
    const v = percentile(prices, p);
    return v === null ? null : roundUsd(v);
  };
  return { comparable_count: prices.length, p10: q(10), p25: q(25), median: q(50), p75: q(75), p90: q(90) };
}

function trailFor(catalog: Catalog, e: IndexedEntry): TrailItem {
  const source = catalog.sourceById.get(e.entry.source_id);
  return {
    source_url: e.entry.source_url,
    observed_at: e.entry.observed_at,
    kind: source?.kind === "bazaar_recording" ? "bazaar_listing" : "catalog_entry",
    compiled_on: e.entry.compiled_on,
  };
}

/** The benchmark given the match (and an optional probe result); pure apart from its inputs. */
export function computeBenchmark(
  catalog: Catalog,
  index: MarketIndex,
  input: BenchmarkInput,
  ctx: BenchmarkContext,
  now: Date,
  probe: { report: LiveProbeReport; result?: ProbeResult },
): BenchmarkResult {
  const norm = normalizeUrl(input.endpoint_url);
  const match = matchEntries(index, norm);
  const primary = match.matches[0];
  const selfSet = new Set(match.matches.map((m) => m.index));
  const cat = resolveCategory(index, norm, input.category_hint, primary);
  const pool = index.pools.get(cat.category) ?? {
    entries: [],
    excluded: { other_network: 0, testnet: 0, not_per_call: 0, approximate_price: 0, no_price: 0 },
  };
  const comparables = pool.entries.filter((e) => !selfSet.has(e.index));
  const prices = comparables.map((e) => e.entry.price_usd as number);
  const market = marketFigures(prices);

  const observation = probe.result?.ok === true ? probe.result.observation : undefined;
  const primaryPriced =
    primary !== undefined && (primary.entry.price_usd !== null || primary.entry.amount_atomic !== null);
  let evidence: PriceEvidence;
  let price: BenchmarkResult["route"]["price"] = null;
  let network: string | null = null;
  let asset: string | null = null;
  let methodObserved: string | null = null;
  if (primaryPriced && primary !== undefined) {
    const e = primary.entry;
    const pricedMatches = match.matches.filter((m) => m.entry.price_usd !== null);
    const distinct = new Set(pricedMatches.map((m) => m.entry.price_usd));
    price = { usd: e.price_usd, amount_atomic: e.amount_atomic };
    network = e.network;
    asset = e.asset;
    methodObserved = e.method;
    evidence = {
      usd: e.price_usd,
      approximate: primary.quality.approximate,
      per_call: primary.quality.per_call,
      mainnet_known: e.network !== null && !primary.quality.testnet,
      ambiguous: distinct.size > 1,
    };
  } else if (observation !== undefined) {
    price = { usd: observation.usd, amount_atomic: observation.amount_atomic };
    network = observation.network;
    asset = observation.asset;
    methodObserved = "GET";
    evidence = {
      usd: observation.usd,
      approximate: false,
      per_call: true,
      mainnet_known: observation.network !== null && !isTestnet(observation.network),
      ambiguous: false,
    };
  } else {
    if (primary !== undefined) methodObserved = primary.entry.method;
    evidence = { usd: null, approximate: false, per_call: true, mainnet_known: false, ambiguous: false };
  }
  const usd = evidence.usd;
  const confidence = confidenceOf(evidence, market);
  const usage = primary !== undefined ? primary.usage : washAdjust(null, null);

  const ownAdjusted = usage.adjusted_calls_30d ?? 0;
  const alternatives =
    usd === null || !evidence.per_call
      ? []
      : comparables
          .filter(
            // An alternative's usage must have passed the wash check: spread over more than two payers.
            (e) =>
              (e.entry.price_usd as number) <= usd &&
              e.usage.wash_check === "passed" &&
              (e.usage.adjusted_calls_30d as number) > ownAdjusted,
          )
          .sort(
            (a, b) =>
              (b.usage.adjusted_calls_30d as number) - (a.usage.adjusted_calls_30d as number) ||
              (a.entry.price_usd as number) - (b.entry.price_usd as number) ||
              a.index - b.index,
          )
          .slice(0, MAX_ALTERNATIVES);
  const decision = decide(evidence, market, usage, alternatives.length);

  const trail: TrailItem[] = [];
  const seen = new Set<string>();
  for (const m of match.matches) {
    const t = trailFor(catalog, m);
    const key = `${t.source_url}|${t.observed_at}`;
    if (seen.has(key)) continue;
    seen.add(key);
    trail.push(t);
  }
  if (observation !== undefined) {
    trail.push({
      source_url: norm.normalized_url,
      observed_at: observation.observed_at,
      kind: "live_probe",
      compiled_on: null,
    });
  }
  for (const s of catalog.sources) {
    trail.push({
      source_url: s.origin,
      observed_at: null,
      kind: "market_snapshot",
      compiled_on: s.compiled_on,
    });
  }

  const band =
    market.comparable_count >= MIN_COMPARABLES && market.p25 !== null && market.median !== null
      ? {
          min_usd: market.p25,
          max_usd: market.median,
          min_amount_atomic: usdToAtomicRounded(market.p25, 6),
          max_amount_atomic: usdToAtomicRounded(market.median, 6),
          basis: `25th percentile to median of ${market.comparable_count} comparable ${cat.category === "uncategorized" ? "" : `${cat.category} `}endpoints on Base mainnet`,
        }
      : null;

  const matchType = primaryPriced ? match.type : observation !== undefined ? "live_probe" : match.type;
  return {
    endpoint_url: input.endpoint_url,
    normalized_url: norm.normalized_url,
    category: cat.category,
    category_source: cat.source,
    category_evidence: cat.evidence,
    route: {
      method: methodObserved === null || methodObserved === "GET" ? "GET" : "POST",
      method_observed: methodObserved,
      generated_at: catalog.generated_at,
      price,
      network,
      asset,
      availability: ctx.availability,
      confidence: confidence.confidence,
      confidence_reasons: confidence.reasons,
    },
    match: {
      type: matchType,
      matched_count: match.matches.length,
      template: norm.match_key,
      service: primary?.entry.service ?? null,
      matched_urls: match.matches.map((m) => m.entry.url),
    },
    market: {
      category: cat.category,
      network: "eip155:8453",
      ...market,
      excluded: { ...pool.excluded, self: pool.entries.length - comparables.length },
      basis:
        cat.category === "uncategorized"
          ? "all priced per-call Base-mainnet endpoints in the catalog (no category), excluding testnets, bundles/top-ups, approximate prices and the endpoint itself"
          : `priced per-call Base-mainnet ${cat.category} endpoints, excluding testnets, bundles/top-ups, approximate prices and the endpoint itself`,
    },
    price_percentile:
      usd === null || !evidence.per_call || prices.length === 0
        ? null
        : round1(percentileRank(prices, usd) as number),
    price_position: pricePosition(evidence, market),
    usage: {
      ...usage,
      source_url: usage.calls_30d !== null && primary !== undefined ? primary.entry.source_url : null,
    },
    decision: decision.decision,
    decision_reasons: decision.reasons,
    alternatives: alternatives.map((a) => ({
      url: a.entry.url,
      method: a.entry.method,
      service: a.entry.service,
      price_usd: a.entry.price_usd as number,
      amount_atomic: a.entry.amount_atomic,
      calls_30d: a.usage.calls_30d,
      unique_payers_30d: a.usage.unique_payers_30d,
      adjusted_calls_30d: a.usage.adjusted_calls_30d as number,
      source_url: a.entry.source_url,
    })),
    suggested_test_price_band: band,
    source_trail: trail,
    live_probe: probe.report,
    benchmarked_at: now.toISOString(),
    synthetic: false,
  };
}

export function createBenchmarkService(
  catalog: Catalog,
  opts: BenchmarkServiceOptions = {},
): BenchmarkService {
  const index = buildMarketIndex(catalog);
  const clock = opts.clock ?? (() => new Date());
  const live = opts.liveProbe;
  return {
    async benchmark(input, ctx) {
      const norm = normalizeUrl(input.endpoint_url);
      const match = matchEntries(index, norm);
      const primary = match.matches[0];
      const priced =
        primary !== undefined && (primary.entry.price_usd !== null || primary.entry.amount_atomic !== null);
      let report: LiveProbeReport;
      let result: ProbeResult | undefined;
      if (priced) {
        report = {
          attempted: false,
          outcome: "not_needed",
          detail: "the catalog has a price for this endpoint",
        };
      } else if (live?.enabled !== true) {
        report = {
          attempted: false,
          outcome: "disabled",
          detail: "live probing is off (BENCHMARK_LIVE_PROBE=true enables it)",
        };
      } else {
        result = await probeEndpoint(input.endpoint_url, {
          allowHosts: live.allowHosts ?? [],
          timeoutMs: live.timeoutMs ?? PROBE_TIMEOUT_MS,
          maxBytes: live.maxBytes ?? PROBE_MAX_BYTES,
          resolve: live.resolve,
          clock,
        });
        report = result.ok
          ? {
              attempted: true,
              outcome: "ok",
              detail: `402 answer read (x402 v${result.observation.x402_version})`,
            }
          : { attempted: result.reason !== "template_url", outcome: result.reason, detail: result.detail };
      }
      return computeBenchmark(catalog, index, input, ctx, clock(), { report, result });
    },
  };
}
