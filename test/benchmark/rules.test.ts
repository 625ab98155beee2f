import { describe, expect, it } from "vitest";
import {
  availabilityLabel,
  FULL_AVAILABLE,
  PROVISIONAL_AVAILABLE,
} from "../../src/benchmark/availability.js";
import {
  confidenceOf,
  contractConfidence,
  decide,
  FRESH_DAYS,
  type MarketFigures,
  MIN_SERVICES,
  pricePosition,
  SOLID_SERVICES,
  STALE_DAYS,
} from "../../src/benchmark/rules.js";
import { percentile, percentileRank } from "../../src/benchmark/stats.js";
import { WASH_MAX_PAYERS, washAdjust } from "../../src/benchmark/usage.js";

const MIN_COMPARABLES = MIN_SERVICES;
const market = (n: number): MarketFigures => ({
  service_count: n,
  p10: 0.001,
  p25: 0.005,
  median: 0.01,
  p75: 0.05,
  p90: 0.2,
});
const exact = {
  usd: 0.01 as number | null,
  approximate: false,
  per_call: true,
  mainnet_known: true,
  ambiguous: false,
  observed_at: "2026-11-01T00:00:00.000Z" as string | null,
};
const fresh = { price_age_days: 0, market_age_days: 0 };
const noUsage = washAdjust(null, null);

describe("statistics", () => {
  it("interpolates percentiles linearly (type 7)", () => {
    expect(percentile([1, 2, 3, 4, 5], 50)).toBe(3);
    expect(percentile([1, 2, 3, 4], 25)).toBe(1.75);
    expect(percentile([7], 90)).toBe(7);
    expect(percentile([], 50)).toBeNull();
  });
  it("ranks with mid-ranks for ties", () => {
    expect(percentileRank([1, 2, 3, 4], 0.5)).toBe(0);
    expect(percentileRank([1, 2, 3, 4], 9)).toBe(100);
    expect(percentileRank([1, 2, 2, 4], 2)).toBe(50);
  });
});

describe("wash adjustment", () => {
  it(`discounts usage from ${WASH_MAX_PAYERS} payers or fewer and counts 3 in full`, () => {
    expect(washAdjust(400, 2)).toMatchObject({
      adjusted_calls_30d: 2,
      wash_adjusted: true,
      wash_check: "discounted",
    });
    expect(washAdjust(400, 1)).toMatchObject({ adjusted_calls_30d: 1, wash_check: "discounted" });
    expect(washAdjust(1, 1)).toMatchObject({
      adjusted_calls_30d: 1,
      wash_adjusted: false,
      wash_check: "discounted",
    });
    expect(washAdjust(400, 3)).toMatchObject({
      adjusted_calls_30d: 400,
      wash_adjusted: false,
      wash_check: "passed",
    });
    expect(washAdjust(400, null)).toMatchObject({ adjusted_calls_30d: 400, wash_check: "payers_unknown" });
    expect(washAdjust(null, 5)).toMatchObject({ adjusted_calls_30d: null, wash_check: "no_usage_data" });
    expect(washAdjust(400, 2).note).toContain("2 payers");
  });
});

describe("confidence", () => {
  const level = (
    over: Partial<typeof exact> = {},
    services = 50,
    f: { price_age_days: number | null; market_age_days: number | null } = fresh,
  ) => confidenceOf({ ...exact, ...over }, market(services), f).grade;
  it("is unknown without a price", () => {
    expect(level({ usd: null })).toBe("unknown");
  });
  it(`is low below ${MIN_SERVICES} services, medium below ${SOLID_SERVICES}, high from ${SOLID_SERVICES}`, () => {
    expect(level({}, MIN_SERVICES - 1)).toBe("low");
    expect(level({}, MIN_SERVICES)).toBe("medium");
    expect(level({}, SOLID_SERVICES - 1)).toBe("medium");
    expect(level({}, SOLID_SERVICES)).toBe("high");
  });
  it(`drops to medium past ${FRESH_DAYS} days and to low past ${STALE_DAYS} days, for the price and for the market`, () => {
    for (const key of ["price_age_days", "market_age_days"] as const) {
      expect(level({}, 50, { ...fresh, [key]: FRESH_DAYS })).toBe("high");
      expect(level({}, 50, { ...fresh, [key]: FRESH_DAYS + 1 })).toBe("medium");
      expect(level({}, 50, { ...fresh, [key]: STALE_DAYS })).toBe("medium");
      expect(level({}, 50, { ...fresh, [key]: STALE_DAYS + 1 })).toBe("low");
      expect(level({}, 50, { ...fresh, [key]: null })).toBe("medium");
    }
    const c = confidenceOf(exact, market(50), { price_age_days: null, market_age_days: STALE_DAYS + 1 });
    expect(c.grade).toBe("low");
    expect(c.reasons).toEqual([
      "the price observation is undated",
      `the market's newest observation is ${STALE_DAYS + 1} days old (more than ${STALE_DAYS})`,
    ]);
  });
  it("is low for approximate, non-per-call, unknown-network or disputed prices", () => {
    for (const flaw of [
      { approximate: true },
      { per_call: false },
      { mainnet_known: false },
      { ambiguous: true },
    ]) {
      const c = confidenceOf({ ...exact, ...flaw }, market(50), fresh);
      expect(c.grade).toBe("low");
      expect(c.reasons.length).toBe(1);
    }
  });
  it("is labelled high, low or unknown on the route descriptor: a medium grade reads low, never high", () => {
    expect(contractConfidence("high")).toBe("high");
    expect(contractConfidence("medium")).toBe("low");
    expect(contractConfidence("low")).toBe("low");
    expect(contractConfidence("unknown")).toBe("unknown");
  });
});

describe("price position", () => {
  it("splits at p25 and p75 inclusive of at_market", () => {
    const m = market(50);
    expect(pricePosition({ usd: 0.004999, per_call: true }, m)).toBe("below_market");
    expect(pricePosition({ usd: 0.005, per_call: true }, m)).toBe("at_market");
    expect(pricePosition({ usd: 0.05, per_call: true }, m)).toBe("at_market");
    expect(pricePosition({ usd: 0.050001, per_call: true }, m)).toBe("above_market");
  });
  it("is unknown without a per-call price or with too few comparables", () => {
    expect(pricePosition({ usd: null, per_call: true }, market(50))).toBe("unknown");
    expect(pricePosition({ usd: 0.01, per_call: false }, market(50))).toBe("unknown");
    expect(pricePosition({ usd: 0.01, per_call: true }, market(MIN_COMPARABLES - 1))).toBe("unknown");
    expect(pricePosition({ usd: 0.01, per_call: true }, market(MIN_COMPARABLES))).toBe("at_market");
  });
});

describe("decision", () => {
  const d = (usd: number | null, n = 50, usage = noUsage, alts = 0, per_call = true) =>
    decide({ usd, per_call }, market(n), usage, alts, true).decision;
  it("needs more history without a price, a per-call price or enough comparables", () => {
    expect(d(null)).toBe("needs_more_history");
    expect(d(0.01, 50, noUsage, 0, false)).toBe("needs_more_history");
    expect(d(0.01, MIN_COMPARABLES - 1)).toBe("needs_more_history");
    expect(d(0.01, MIN_COMPARABLES)).toBe("worth_testing");
  });
  it("points to a better alternative before judging the price", () => {
    expect(d(0.01, 50, noUsage, 1)).toBe("better_alternative_available");
    expect(d(5, 50, noUsage, 1)).toBe("better_alternative_available");
  });
  it("avoids prices above p90", () => {
    expect(d(0.2)).toBe("worth_testing");
    expect(d(0.200001)).toBe("avoid_for_now");
  });
  it("avoids prices above p75 whose usage comes from two payers or fewer", () => {
    expect(d(0.06, 50, washAdjust(400, 2))).toBe("avoid_for_now");
    expect(d(0.06, 50, washAdjust(400, 3))).toBe("worth_testing");
    expect(d(0.05, 50, washAdjust(400, 2))).toBe("worth_testing");
  });
});

describe("decision without observed usage", () => {
  it("says plainly that the usage checks did not run", () => {
    const r = decide({ usd: 0.01, per_call: true }, market(50), noUsage, 0, false);
    expect(r.decision).toBe("worth_testing");
    expect(r.reasons.join(" ")).toContain("no usage was observed");
    const seen = decide({ usd: 0.01, per_call: true }, market(50), washAdjust(400, 5), 0, true);
    expect(seen.reasons.join(" ")).not.toContain("no usage was observed");
    expect(noUsage.note).toContain("did not run");
  });
});

describe("availability label", () => {
  it("reads exactly as specified in the provisional phase", () => {
    expect(availabilityLabel("provisional", false)).toBe(
      "available through capped provisional x402 metadata",
    );
    expect(PROVISIONAL_AVAILABLE).toBe("available through capped provisional x402 metadata");
    expect(availabilityLabel("provisional", true)).toMatch(/cap reached/);
    expect(availabilityLabel("full", false)).toBe(FULL_AVAILABLE);
    expect(availabilityLabel("full", true)).toBe(FULL_AVAILABLE);
  });
});
