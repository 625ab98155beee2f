/**
 * Confidence, price position and decision rules (docs/benchmark.md states them in words; the
 * boundary tests in test/benchmark/rules.test.ts pin each threshold).
 */
import type { UsageFigure } from "./usage.js";

/** Below this many services (one vote each), percentiles are shown but not used for a position or decision. */
export const MIN_SERVICES = 5;
/** Below this many services a market is thin: confidence is at most medium. */
export const SOLID_SERVICES = 10;
/** A finer market is used only with at least this many services besides the endpoint's own. */
export const MIN_SUBMARKET_SERVICES = 8;
/** Observations older than this many days cap confidence at medium. */
export const FRESH_DAYS = 30;
/** Observations older than this many days cap confidence at low. */
export const STALE_DAYS = 180;

/** The finer grade the rules below compute: `medium` is a market too thin or observations too old for `high`. */
export type ConfidenceGrade = "high" | "medium" | "low" | "unknown";
/** The route descriptor's confidence label, exactly as the contract states it (seed, route descriptor). */
export type Confidence = "high" | "low" | "unknown";

/** The contract's label of a grade: anything short of `high` is `low`, so a `medium` never reads as high. */
export function contractConfidence(grade: ConfidenceGrade): Confidence {
  return grade === "medium" ? "low" : grade;
}
export type PricePosition = "below_market" | "at_market" | "above_market" | "unknown";
export type Decision =
  | "worth_testing"
  | "avoid_for_now"
  | "better_alternative_available"
  | "needs_more_history";

export interface MarketFigures {
  /** Services behind the figures (one vote each). */
  service_count: number;
  p10: number | null;
  p25: number | null;
  median: number | null;
  p75: number | null;
  p90: number | null;
}

export interface PriceEvidence {
  /** USD price of the endpoint, null when unknown. */
  usd: number | null;
  approximate: boolean;
  per_call: boolean;
  /** Network known and not a testnet. */
  mainnet_known: boolean;
  /** Matched observations disagree on the price. */
  ambiguous: boolean;
  /** When the price was observed (ISO 8601), null when the source is undated. */
  observed_at: string | null;
}

export interface FreshnessEvidence {
  /** Age in days of the endpoint's price observation, null when undated. */
  price_age_days: number | null;
  /** Age in days of the market's newest observation, null when the market is undated. */
  market_age_days: number | null;
}

const RANK: Record<Exclude<ConfidenceGrade, "unknown">, number> = { high: 2, medium: 1, low: 0 };

/** Confidence caps by age: fresh → none, up to STALE_DAYS → medium, older → low. */
function ageCap(
  days: number | null,
  what: string,
): { cap: Exclude<ConfidenceGrade, "unknown">; reason: string } | null {
  if (days === null) return { cap: "medium", reason: `${what} is undated` };
  if (days > STALE_DAYS)
    return { cap: "low", reason: `${what} is ${days} days old (more than ${STALE_DAYS})` };
  if (days > FRESH_DAYS)
    return { cap: "medium", reason: `${what} is ${days} days old (more than ${FRESH_DAYS})` };
  return null;
}

/**
 * The lowest cap any rule sets: price quality and too few services → low; a thin market or
 * ageing observations → medium; stale observations → low. No price → unknown.
 */
export function confidenceOf(
  price: PriceEvidence,
  market: Pick<MarketFigures, "service_count">,
  fresh: FreshnessEvidence,
): { grade: ConfidenceGrade; reasons: string[] } {
  if (price.usd === null) return { grade: "unknown", reasons: ["no observed price for this endpoint"] };
  const caps: { cap: Exclude<ConfidenceGrade, "unknown">; reason: string }[] = [];
  if (price.approximate)
    caps.push({ cap: "low", reason: "the observed price is tagged as an approximation" });
  if (!price.per_call) caps.push({ cap: "low", reason: "the observed price is not a per-call price" });
  if (!price.mainnet_known) caps.push({ cap: "low", reason: "the network is unknown or a testnet" });
  if (price.ambiguous) caps.push({ cap: "low", reason: "matching observations disagree on the price" });
  if (market.service_count < MIN_SERVICES) {
    caps.push({
      cap: "low",
      reason: `only ${market.service_count} comparable services (need ${MIN_SERVICES})`,
    });
  } else if (market.service_count < SOLID_SERVICES) {
    caps.push({
      cap: "medium",
      reason: `only ${market.service_count} comparable services (${SOLID_SERVICES} for high confidence)`,
    });
  }
  const p = ageCap(fresh.price_age_days, "the price observation");
  if (p !== null) caps.push(p);
  const m = ageCap(fresh.market_age_days, "the market's newest observation");
  if (m !== null) caps.push(m);
  if (caps.length === 0) {
    return {
      grade: "high",
      reasons: [
        `exact per-call mainnet price, ${market.service_count} comparable services, observations at most ${FRESH_DAYS} days old`,
      ],
    };
  }
  const lowest = caps.reduce(
    (acc, c) => (RANK[c.cap] < RANK[acc] ? c.cap : acc),
    "high" as Exclude<ConfidenceGrade, "unknown">,
  );
  return { grade: lowest, reasons: caps.map((c) => c.reason) };
}

/** Position of a per-call price; unknown without a price, a per-call price or enough comparables. */
export function pricePosition(
  price: Pick<PriceEvidence, "usd" | "per_call">,
  market: MarketFigures,
): PricePosition {
  const usd = price.usd;
  if (
    usd === null ||
    !price.per_call ||
    market.service_count < MIN_SERVICES ||
    market.p25 === null ||
    market.p75 === null
  ) {
    return "unknown";
  }
  if (usd < market.p25) return "below_market";
  if (usd > market.p75) return "above_market";
  return "at_market";
}

export function decide(
  price: Pick<PriceEvidence, "usd" | "per_call">,
  market: MarketFigures,
  usage: UsageFigure,
  alternativeCount: number,
  usageObserved: boolean,
): { decision: Decision; reasons: string[] } {
  const usd = price.usd;
  if (usd === null) return { decision: "needs_more_history", reasons: ["the endpoint's price is unknown"] };
  if (!price.per_call) {
    return {
      decision: "needs_more_history",
      reasons: [
        "the observed price is not a per-call price (bundle, top-up or purchase), so it cannot be placed in a per-call market",
      ],
    };
  }
  if (market.service_count < MIN_SERVICES || market.p75 === null || market.p90 === null) {
    return {
      decision: "needs_more_history",
      reasons: [`only ${market.service_count} comparable services in this market (need ${MIN_SERVICES})`],
    };
  }
  if (alternativeCount > 0) {
    return {
      decision: "better_alternative_available",
      reasons: [
        `${alternativeCount} same-category endpoint(s) at or below this price with stronger wash-adjusted usage`,
      ],
    };
  }
  if (usd > market.p90) {
    return {
      decision: "avoid_for_now",
      reasons: [
        "priced above the market's 90th percentile",
        ...(usageObserved
          ? []
          : ["no usage was observed in this market, so usage did not enter the decision"]),
      ],
    };
  }
  if (usd > market.p75 && usage.wash_check === "discounted") {
    return {
      decision: "avoid_for_now",
      reasons: ["priced above the market's 75th percentile while its usage comes from two payers or fewer"],
    };
  }
  return {
    decision: "worth_testing",
    reasons: usageObserved
      ? ["priced at or below the market's 90th percentile with no better-used cheaper alternative"]
      : [
          "priced at or below the market's 90th percentile",
          "no usage was observed in this market, so better-used cheaper alternatives and wash usage were not checked",
        ],
  };
}
