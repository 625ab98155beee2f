import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { RECIPIENT_CATEGORIES } from "../../src/unlocks/data/types.js";
import { type RiskInputs, riskLevel, scoreRisk } from "../../src/unlocks/risk-model.js";

const category = fc.constantFrom(...RECIPIENT_CATEGORIES);
const kind = fc.constantFrom("cliff" as const, "step" as const, "linear" as const);
const ratio = fc.option(fc.double({ min: 0, max: 1e4, noNaN: true }), { nil: null });
const inputs: fc.Arbitrary<RiskInputs> = fc.record({
  pctCirculating: fc.option(fc.double({ min: 0, max: 500, noNaN: true }), { nil: null }),
  pctMaxSupply: fc.option(fc.double({ min: 0, max: 100, noNaN: true }), { nil: null }),
  absorptionRatio: ratio,
  depthRatio: ratio,
  categories: fc.array(fc.record({ key: category, share: fc.double({ min: 0.01, max: 1, noNaN: true }) }), {
    minLength: 1,
    maxLength: 3,
  }),
  types: fc.array(fc.record({ key: kind, share: fc.double({ min: 0.01, max: 1, noNaN: true }) }), {
    minLength: 1,
    maxLength: 2,
  }),
  confidence: fc.double({ min: 0, max: 1, noNaN: true }),
});

describe("risk model properties", () => {
  it("is deterministic and bounded to 0..100 with a matching level", () => {
    fc.assert(
      fc.property(inputs, (x) => {
        const a = scoreRisk(x);
        expect(scoreRisk(structuredClone(x))).toEqual(a);
        expect(a.score).toBeGreaterThanOrEqual(0);
        expect(a.score).toBeLessThanOrEqual(100);
        expect(a.level).toBe(riskLevel(a.score));
      }),
    );
  });

  it("evidence contributions sum to the score within 0.5", () => {
    fc.assert(
      fc.property(inputs, (x) => {
        const r = scoreRisk(x);
        const sum = r.factors.reduce((s, f) => s + f.contribution, 0);
        expect(Math.abs(sum - r.score)).toBeLessThanOrEqual(0.5);
      }),
    );
  });

  it("is non-decreasing in unlock size, all else equal", () => {
    fc.assert(
      fc.property(
        inputs,
        fc.double({ min: 0, max: 500, noNaN: true }),
        fc.double({ min: 0, max: 500, noNaN: true }),
        (x, a, b) => {
          const [lo, hi] = a <= b ? [a, b] : [b, a];
          expect(scoreRisk({ ...x, pctCirculating: hi }).score).toBeGreaterThanOrEqual(
            scoreRisk({ ...x, pctCirculating: lo }).score,
          );
        },
      ),
    );
  });

  it("is non-decreasing in the absorption ratio, all else equal", () => {
    fc.assert(
      fc.property(
        inputs,
        fc.double({ min: 0, max: 1e4, noNaN: true }),
        fc.double({ min: 0, max: 1e4, noNaN: true }),
        (x, a, b) => {
          const [lo, hi] = a <= b ? [a, b] : [b, a];
          expect(scoreRisk({ ...x, absorptionRatio: hi }).score).toBeGreaterThanOrEqual(
            scoreRisk({ ...x, absorptionRatio: lo }).score,
          );
        },
      ),
    );
  });

  it("ranks cliffs above linear streams and confirmed above inferred schedules", () => {
    const base: RiskInputs = {
      pctCirculating: 2,
      pctMaxSupply: 0.5,
      absorptionRatio: 1,
      depthRatio: null,
      categories: [{ key: "investors", share: 1 }],
      types: [{ key: "cliff", share: 1 }],
      confidence: 1,
    };
    expect(scoreRisk(base).score).toBeGreaterThan(
      scoreRisk({ ...base, types: [{ key: "linear", share: 1 }] }).score,
    );
    expect(scoreRisk(base).score).toBeGreaterThan(scoreRisk({ ...base, confidence: 0.4 }).score);
    expect(scoreRisk(base).score).toBeGreaterThan(
      scoreRisk({ ...base, categories: [{ key: "treasury", share: 1 }] }).score,
    );
  });

  it("puts team above investors and ecosystem last (Keyrock's published ordering)", () => {
    const base: RiskInputs = {
      pctCirculating: 2,
      pctMaxSupply: 0.5,
      absorptionRatio: 1,
      depthRatio: null,
      categories: [{ key: "team", share: 1 }],
      types: [{ key: "cliff", share: 1 }],
      confidence: 1,
    };
    const at = (key: RiskInputs["categories"][number]["key"]) =>
      scoreRisk({ ...base, categories: [{ key, share: 1 }] }).score;
    expect(at("team")).toBeGreaterThan(at("investors"));
    expect(at("investors")).toBeGreaterThan(at("ecosystem"));
  });

  it("never scores unknown supply as maximum risk", () => {
    const unknown: RiskInputs = {
      pctCirculating: null,
      pctMaxSupply: null,
      absorptionRatio: null,
      depthRatio: null,
      categories: [{ key: "team", share: 1 }],
      types: [{ key: "cliff", share: 1 }],
      confidence: 1,
    };
    const r = scoreRisk(unknown);
    expect(r.score).toBe(0);
    expect(r.factors.find((f) => f.factor === "unlock_size")?.known).toBe(false);
    // With only % of max supply known, size is scored on it and its weight carries the magnitude.
    const small = scoreRisk({ ...unknown, pctMaxSupply: 0.1 });
    expect(small.score).toBeGreaterThan(0);
    expect(small.score).toBeLessThan(50);
  });

  it("level thresholds", () => {
    expect([0, 24.9, 25, 49.9, 50, 74.9, 75, 100].map(riskLevel)).toEqual([
      "low",
      "low",
      "medium",
      "medium",
      "high",
      "high",
      "critical",
      "critical",
    ]);
  });
});
