/**
 * The endpoint price benchmark: match the URL to market data, place its price in the market of
 * comparable endpoints, adjust usage for wash calls, and decide — each figure with its source.
 */

import { BASE_MAINNET } from "../chain/networks.js";
import type { BenchmarkResult } from "../schemas/benchmark-response.js";
import type { Catalog } from "./catalog/snapshot.js";
import { submarketOf } from "./categories.js";
import {
  PROBE_MAX_BYTES,
  PROBE_TIMEOUT_MS,
  type ProbeFailure,
  type ProbeObservation,
  type ProbeResult,
  probeEndpoint,
  type Resolver,
} from "./live-probe.js";
import {
  ageDays,
  type Freshness,
  figures,
  freshness,
  type ServiceVote,
  servicePercentile,
  serviceVotes,
} from "./market.js";
import {
  buildMarketIndex,
  type IndexedEntry,
  type MarketIndex,
  type MatchResult,
  matchEntries,
  type Pool,
  poolKey,
  resolveCategory,
} from "./market-index.js";
import { isTestnet, usdToAtomicRounded } from "./money.js";
import { type Refusal, refuseByDns, refuseByUrl } from "./probe-guard.js";
import {
  confidenceOf,
  contractConfidence,
  decide,
  MIN_SERVICES,
  MIN_SUBMARKET_SERVICES,
  type PriceEvidence,
  pricePosition,
} from "./rules.js";
import { serviceHost } from "./sellers.js";
import { type NormalizedUrl, normalizeUrl } from "./url.js";
import { type UsageFigure, washAdjust } from "./usage.js";

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
  /**
   * Refusals known before payment: an endpoint_url the live probe would refuse. Null when the
   * request may go on to the 402. Never contacts the endpoint (at most a DNS lookup).
   */
  precheck(input: BenchmarkInput): Promise<Refusal | null>;
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
type MarketReport = BenchmarkResult["market"];

/** The endpoint's own price and what is known about it, from the catalog match or the probe. */
interface PriceFinding {
  evidence: PriceEvidence;
  price: BenchmarkResult["route"]["price"];
  network: string | null;
  asset: string | null;
  methodObserved: string | null;
}

function findPrice(match: MatchResult, observation: ProbeObservation | undefined): PriceFinding {
  const primary = match.matches[0];
  if (primary !== undefined && (primary.entry.price_usd !== null || primary.entry.amount_atomic !== null)) {
    const e = primary.entry;
    const distinct = new Set(
      match.matches.filter((m) => m.entry.price_usd !== null).map((m) => m.entry.price_usd),
    );
    return {
      price: { usd: e.price_usd, amount_atomic: e.amount_atomic },
      network: e.network,
      asset: e.asset,
      methodObserved: e.method,
      evidence: {
        usd: e.price_usd,
        approximate: primary.quality.approximate,
        per_call: primary.quality.per_call,
        mainnet_known: e.network !== null && !primary.quality.testnet,
        ambiguous: distinct.size > 1,
        observed_at: e.observed_at,
      },
    };
  }
  if (observation !== undefined) {
    return {
      price: { usd: observation.usd, amount_atomic: observation.amount_atomic },
      network: observation.network,
      asset: observation.asset,
      methodObserved: "GET",
      evidence: {
        usd: observation.usd,
        approximate: false,
        per_call: true,
        mainnet_known: observation.network !== null && !isTestnet(observation.network),
        ambiguous: false,
        observed_at: observation.observed_at,
      },
    };
  }
  return {
    price: null,
    network: null,
    asset: null,
    methodObserved: primary?.entry.method ?? null,
    evidence: {
      usd: null,
      approximate: false,
      per_call: true,
      mainnet_known: false,
      ambiguous: false,
      observed_at: null,
    },
  };
}

/** The market the endpoint is compared in, without its own service. */
interface MarketSelection {
  /** Cache key: the pool, and the endpoint's own service when it has entries there. */
  key: string;
  scope: "submarket" | "category" | "all";
  submarket: string | null;
  fallback_reason: string | null;
  comparables: readonly IndexedEntry[];
  pool: Pool;
  selfCount: number;
}

const EMPTY_POOL: Pool = {
  entries: [],
  excluded: { other_network: 0, testnet: 0, not_per_call: 0, approximate_price: 0, no_price: 0 },
};

function withoutService(pool: Pool, self: string): IndexedEntry[] {
  return pool.entries.filter((e) => e.service !== self);
}

function countServices(entries: readonly IndexedEntry[]): number {
  return new Set(entries.map((e) => e.service)).size;
}

/** A finer market when it has enough other services; otherwise the category, saying why. */
export function selectMarket(
  index: MarketIndex,
  category: Category,
  submarket: string | null,
  selfService: string,
): MarketSelection {
  const pick = (scope: MarketSelection["scope"], pool: Pool, sub: string | null, reason: string | null) => {
    const comparables = withoutService(pool, selfService);
    const selfCount = pool.entries.length - comparables.length;
    return {
      key: `${sub === null ? (scope === "all" ? "uncategorized" : category) : poolKey(category, sub)}|${selfCount > 0 ? selfService : ""}`,
      scope,
      submarket: sub,
      fallback_reason: reason,
      comparables,
      pool,
      selfCount,
    };
  };
  if (category === "uncategorized")
    return pick("all", index.pools.get("uncategorized") ?? EMPTY_POOL, null, null);
  const categoryPool = index.pools.get(category) ?? EMPTY_POOL;
  if (submarket === null) {
    return pick(
      "category",
      categoryPool,
      null,
      "no finer market could be told from this endpoint's listing or URL",
    );
  }
  const sub = index.pools.get(poolKey(category, submarket));
  const subServices = sub === undefined ? 0 : countServices(withoutService(sub, selfService));
  if (sub !== undefined && subServices >= MIN_SUBMARKET_SERVICES)
    return pick("submarket", sub, submarket, null);
  return pick(
    "category",
    categoryPool,
    null,
    `the ${submarket} market has ${subServices} other services (need ${MIN_SUBMARKET_SERVICES}), so the whole ${category} category is used`,
  );
}

function submarketFor(
  norm: NormalizedUrl,
  category: Category,
  primary: IndexedEntry | undefined,
): string | null {
  // A listed endpoint keeps its listing's own decision, even "no finer market".
  if (primary !== undefined && primary.category === category) return primary.submarket;
  return submarketOf(category, {
    strong: norm.segments.filter((_, i) => norm.kinds[i] === "literal"),
    weak: [],
  });
}

function marketReport(
  category: Category,
  sel: MarketSelection,
  summary: MarketSummary,
  now: Date,
): MarketReport {
  const fig = summary.figures;
  const fresh = summary.fresh;
  const where =
    sel.scope === "all"
      ? "all priced per-call Base-mainnet endpoints in the market (no category)"
      : sel.scope === "submarket"
        ? `priced per-call Base-mainnet ${category} endpoints in the ${sel.submarket} market`
        : `priced per-call Base-mainnet ${category} endpoints`;
  return {
    category,
    submarket: sel.submarket,
    scope: sel.scope,
    fallback_reason: sel.fallback_reason,
    network: BASE_MAINNET.caip2,
    comparable_count: fig.endpoint_count,
    endpoint_count: fig.endpoint_count,
    service_count: fig.service_count,
    p10: fig.p10,
    p25: fig.p25,
    median: fig.median,
    p75: fig.p75,
    p90: fig.p90,
    weighting:
      "one vote per service: each service's price is the median of its comparable endpoints, and the percentiles are taken over those service prices",
    as_of: fresh.as_of,
    age_days: fresh.as_of === null ? null : ageDays(fresh.as_of, now),
    oldest_observed_at: fresh.oldest_observed_at,
    dated_count: fresh.dated_count,
    undated_count: fresh.undated_count,
    usage_observed_count: summary.usageObserved,
    excluded: { ...sel.pool.excluded, self: sel.selfCount },
    basis: `${where}, excluding testnets, bundles/top-ups, approximate prices and the endpoint's own service`,
  };
}

/** Better-used comparables at or below the price; only meaningful when usage was observed. */
function findAlternatives(
  comparables: readonly IndexedEntry[],
  usd: number | null,
  perCall: boolean,
  own: UsageFigure,
): IndexedEntry[] {
  if (usd === null || !perCall) return [];
  const ownAdjusted = own.adjusted_calls_30d ?? 0;
  return comparables
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
}

function sourceTrail(
  catalog: Catalog,
  match: MatchResult,
  observation: ProbeObservation | undefined,
  norm: NormalizedUrl,
): TrailItem[] {
  const trail: TrailItem[] = [];
  const seen = new Set<string>();
  for (const m of match.matches) {
    const source = catalog.sourceById.get(m.entry.source_id);
    const t: TrailItem = {
      source_url: m.entry.source_url,
      source: source?.origin ?? null,
      observed_at: m.entry.observed_at,
      kind: source?.kind === "bazaar_recording" ? "bazaar_listing" : "catalog_entry",
      compiled_on: m.entry.compiled_on,
    };
    const key = `${t.source_url}|${t.source}|${t.observed_at}`;
    if (seen.has(key)) continue;
    seen.add(key);
    trail.push(t);
  }
  if (observation !== undefined) {
    trail.push({
      source_url: norm.normalized_url,
      source: "live probe",
      observed_at: observation.observed_at,
      kind: "live_probe",
      compiled_on: null,
    });
  }
  for (const s of catalog.sources) {
    trail.push({
      source_url: s.listing_url,
      source: s.origin,
      observed_at: null,
      kind: "market_snapshot",
      compiled_on: s.compiled_on,
    });
  }
  return trail;
}

function testBand(market: MarketReport, category: Category): BenchmarkResult["suggested_test_price_band"] {
  if (market.service_count < MIN_SERVICES || market.p25 === null || market.median === null) return null;
  const what =
    market.scope === "submarket"
      ? `${market.submarket} `
      : category === "uncategorized"
        ? ""
        : `${category} `;
  return {
    min_usd: market.p25,
    max_usd: market.median,
    min_amount_atomic: usdToAtomicRounded(market.p25, 6),
    max_amount_atomic: usdToAtomicRounded(market.median, 6),
    endpoint_count: market.endpoint_count,
    service_count: market.service_count,
    basis: `25th percentile to median of ${market.service_count} ${what}services' prices (${market.endpoint_count} endpoints, one vote per service) on Base mainnet`,
  };
}

interface MarketSummary {
  votes: readonly ServiceVote[];
  figures: ReturnType<typeof figures>;
  /** Freshness without the age, which depends on the time of the call. */
  fresh: Omit<Freshness, "age_days">;
  usageObserved: number;
}

/**
 * Per market (pool and excluded service), the votes, figures and freshness never change after
 * load: computed on first use and kept, bounded by the catalog's (pool, service) pairs.
 */
const summaries = new WeakMap<MarketIndex, Map<string, MarketSummary>>();

function summarize(index: MarketIndex, sel: MarketSelection): MarketSummary {
  let cache = summaries.get(index);
  if (cache === undefined) {
    cache = new Map();
    summaries.set(index, cache);
  }
  const hit = cache.get(sel.key);
  if (hit !== undefined) return hit;
  const votes = serviceVotes(sel.comparables);
  const { age_days: _age, ...fresh } = freshness(sel.comparables, new Date(0));
  const summary: MarketSummary = {
    votes,
    figures: figures(votes),
    fresh,
    usageObserved: sel.comparables.filter((e) => e.entry.calls_30d !== null).length,
  };
  cache.set(sel.key, summary);
  return summary;
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
  const observation = probe.result?.ok === true ? probe.result.observation : undefined;
  const found = findPrice(match, observation);
  const usd = found.evidence.usd;

  const cat = resolveCategory(index, norm, input.category_hint, primary);
  const selfService =
    primary?.service ??
    index.serviceByHost.get(serviceHost(input.endpoint_url)) ??
    serviceHost(input.endpoint_url);
  const selection = selectMarket(index, cat.category, submarketFor(norm, cat.category, primary), selfService);
  const summary = summarize(index, selection);
  const votes = summary.votes;
  const market = marketReport(cat.category, selection, summary, now);

  const confidence = confidenceOf(found.evidence, market, {
    price_age_days: found.evidence.observed_at === null ? null : ageDays(found.evidence.observed_at, now),
    market_age_days: market.age_days,
  });
  const usage = primary !== undefined ? primary.usage : washAdjust(null, null);
  const usageObserved = market.usage_observed_count > 0;
  const alternatives = findAlternatives(selection.comparables, usd, found.evidence.per_call, usage);
  const decision = decide(found.evidence, market, usage, alternatives.length, usageObserved);
  const counts = { endpoint_count: market.endpoint_count, service_count: market.service_count };

  return {
    endpoint_url: input.endpoint_url,
    normalized_url: norm.normalized_url,
    category: cat.category,
    category_source: cat.source,
    category_evidence: cat.evidence,
    route: {
      method: found.methodObserved === null || found.methodObserved === "GET" ? "GET" : "POST",
      method_observed: found.methodObserved,
      generated_at: catalog.generated_at,
      price: found.price,
      network: found.network,
      asset: found.asset,
      observed_at: found.evidence.observed_at,
      availability: ctx.availability,
      confidence: contractConfidence(confidence.grade),
      confidence_detail: { grade: confidence.grade, reasons: confidence.reasons },
    },
    match: {
      // The probe runs only when the catalog has no price, so an observation means the probe priced it.
      type: observation !== undefined ? "live_probe" : match.type,
      matched_count: match.matches.length,
      template: norm.match_key,
      service: primary?.service ?? null,
      listed_service: primary?.entry.service ?? null,
      matched_urls: match.matches.map((m) => m.entry.url),
    },
    market,
    price_percentile:
      usd === null || !found.evidence.per_call || votes.length === 0 ? null : servicePercentile(votes, usd),
    price_percentile_counts: counts,
    price_position: pricePosition(found.evidence, market),
    usage: {
      ...usage,
      observed: usage.calls_30d !== null,
      source_url: usage.calls_30d !== null && primary !== undefined ? primary.entry.source_url : null,
    },
    decision: decision.decision,
    decision_reasons: decision.reasons,
    alternatives_check: usageObserved
      ? { ran: true, detail: `usage observed for ${market.usage_observed_count} comparable endpoints` }
      : {
          ran: false,
          detail:
            "no usage was observed in this market (its listings carry no call or payer counts), so no alternatives could be checked",
        },
    alternatives: alternatives.map((a) => ({
      url: a.entry.url,
      method: a.entry.method,
      service: a.service,
      price_usd: a.entry.price_usd as number,
      amount_atomic: a.entry.amount_atomic,
      calls_30d: a.usage.calls_30d,
      unique_payers_30d: a.usage.unique_payers_30d,
      adjusted_calls_30d: a.usage.adjusted_calls_30d as number,
      observed_at: a.entry.observed_at,
      source_url: a.entry.source_url,
    })),
    suggested_test_price_band: testBand(market, cat.category),
    source_trail: sourceTrail(catalog, match, observation, norm),
    live_probe: probe.report,
    benchmarked_at: now.toISOString(),
    synthetic: false,
  };
}

/** Probe failures that happen after a connection attempt: one public outcome, one timing class. */
const CONNECT_FAILURES: ReadonlySet<ProbeFailure> = new Set([
  "unresolvable",
  "network_error",
  "timeout",
  "not_402",
  "no_price_in_402",
  "too_large",
  "redirect_not_followed",
]);

export const NO_PRICE_OBSERVED =
  "the endpoint did not answer with a readable x402 402 Payment Required within the probe's time limit";

/**
 * The probe outcome a caller sees. Whether the port was closed, filtered or open but not an x402
 * seller is never told apart: all of them read "no_price_observed", and the probe answers them
 * only at its deadline (see probeEndpoint's uniformFailureTiming).
 */
export function publicProbeReport(result: ProbeResult): LiveProbeReport {
  if (result.ok) {
    return {
      attempted: true,
      outcome: "ok",
      detail: `402 answer read (x402 v${result.observation.x402_version})`,
    };
  }
  if (CONNECT_FAILURES.has(result.reason)) {
    return { attempted: true, outcome: "no_price_observed", detail: NO_PRICE_OBSERVED };
  }
  if (result.reason === "template_url")
    return { attempted: false, outcome: "template_url", detail: result.detail };
  return {
    attempted: true,
    outcome: "refused_address",
    detail: "the endpoint's address is not public, so it was not contacted",
  };
}

export function createBenchmarkService(
  catalog: Catalog,
  opts: BenchmarkServiceOptions = {},
): BenchmarkService {
  const index = buildMarketIndex(catalog);
  const clock = opts.clock ?? (() => new Date());
  const live = opts.liveProbe;
  const probeWouldRun = (input: BenchmarkInput): boolean => {
    if (live?.enabled !== true) return false;
    const primary = matchEntries(index, normalizeUrl(input.endpoint_url)).matches[0];
    const priced =
      primary !== undefined && (primary.entry.price_usd !== null || primary.entry.amount_atomic !== null);
    return !priced && !normalizeUrl(input.endpoint_url).has_placeholders;
  };
  return {
    async precheck(input) {
      const allowHosts = live?.allowHosts ?? [];
      const byUrl = refuseByUrl(input.endpoint_url, allowHosts);
      if (byUrl !== null) return byUrl;
      if (!probeWouldRun(input)) return null;
      return refuseByDns(input.endpoint_url, { allowHosts, resolve: live?.resolve });
    },
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
          uniformFailureTiming: true,
        });
        report = publicProbeReport(result);
      }
      return computeBenchmark(catalog, index, input, ctx, clock(), { report, result });
    },
  };
}
