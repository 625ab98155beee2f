/**
 * Confidence, price position and decision rules (docs/benchmark.md states them in words; the
 * boundary tests in test/benchmark/rules.test.ts pin each threshold).
 */
import type { UsageFigure } from "./usage.js";

/** Below this many comparables, percentiles are shown but not used for a position or decision. */
export const MIN_COMPARABLES = 5;

export type Confidence = "high" | "low" | "unknown";
export type PricePosition = "below_market" | "at_market" | "above_market" | "unknown";
export type Decision =
  | "worth_testing"
  | "avoid_for_now"
  | "better_alternative_available"
  | "needs_more_history";

export interface MarketFigures {
  comparable_count: number;
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
}

export function confidenceOf(
  price: PriceEvidence,
  market: MarketFigures,
): { confidence: Confidence; reasons: string[] } {
  if (price.usd === null) return { confidence: "unknown", reasons: ["no observed price for this endpoint"] };
  const reasons: string[] = [];
  if (price.approximate) reasons.push("the observed price is tagged as an approximation");
  if (!price.per_call) reasons.push("the observed price is not a per-call price");
  if (!price.mainnet_known) reasons.push("the network is unknown or a testnet");
  if (price.ambiguous) reasons.push("matching observations disagree on the price");
  if (market.comparable_count < MIN_COMPARABLES) {
    reasons.push(`only ${market.comparable_count} comparable endpoints (need ${MIN_COMPARABLES})`);
  }
  return reasons.length === 0
    ? { confidence: "high", reasons: ["exact per-call mainnet price and enough comparables"] }
    : { confidence: "low", reasons };
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
    market.comparable_count < MIN_COMPARABLES ||
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
  if (market.comparable_count < MIN_COMPARABLES || market.p75 === null || market.p90 === null) {
    return {
      decision: "needs_more_history",
      reasons: [
        `only ${market.comparable_count} comparable endpoints in this market (need ${MIN_COMPARABLES})`,
      ],
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
    return { decision: "avoid_for_now", reasons: ["priced above the market's 90th percentile"] };
  }
  if (usd > market.p75 && usage.wash_check === "discounted") {
    return {
      decision: "avoid_for_now",
      reasons: ["priced above the market's 75th percentile while its usage comes from two payers or fewer"],
    };
  }
  return {
    decision: "worth_testing",
    reasons: ["priced at or below the market's 90th percentile with no better-used cheaper alternative"],
  };
}
