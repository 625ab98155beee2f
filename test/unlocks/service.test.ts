import { Value } from "typebox/value";
import { describe, expect, it } from "vitest";
import {
  BacktestResult,
  RiskItem,
  RiskSummary,
  UpcomingResponse,
} from "../../src/schemas/unlocks-responses.js";
import { loadUnlockStore } from "../../src/store/unlocks-snapshot.js";
import { createUnlockService, UnlockLookupError } from "../../src/unlocks/service.js";

const NOW = new Date("2026-11-22T00:00:00Z");
const store = loadUnlockStore();
const svc = createUnlockService(store, () => NOW);

describe("unlock service on the shipped snapshot", () => {
  it("looks events up case-insensitively and refuses another token's event", () => {
    expect(svc.lookupEvent("arb", "unlock_arb_2026_12_16")).toBe("ok");
    expect(svc.lookupEvent("ARB", "unlock_arb_2026_12_16")).toBe("ok");
    expect(svc.lookupEvent("ZK", "unlock_arb_2026_12_16")).toBe("unknown_event");
    expect(svc.lookupEvent("NOPE", "unlock_arb_2026_12_16")).toBe("unknown_token");
    expect(svc.lookupEvent("ARB", "unlock_arb_1999_01_01")).toBe("unknown_event");
    expect(svc.hasToken("jup")).toBe(true);
    expect(svc.hasToken("xyz")).toBe(false);
    expect(() => svc.score("ZK", "unlock_arb_2026_12_16", true)).toThrow(UnlockLookupError);
  });

  it("lists upcoming unlocks inside the window, by date, filtered by minRisk", () => {
    const all = svc.upcoming(30, 0);
    expect(Value.Check(UpcomingResponse, all)).toBe(true);
    expect(all).toMatchObject({
      days: 30,
      minRisk: 0,
      synthetic: true,
      window_start: "2026-11-22",
      window_end: "2026-12-22",
    });
    expect(all.unlocks.length).toBeGreaterThan(0);
    expect(all.unlocks.map((u) => u.unlock_event_id)).toContain("unlock_mon_2026_11_24");
    for (const u of all.unlocks) {
      expect(u.days_until).toBeGreaterThanOrEqual(0);
      expect(u.days_until).toBeLessThanOrEqual(30);
      expect(u.evidence).toBeUndefined();
    }
    const dates = all.unlocks.map((u) => u.unlock_date);
    expect([...dates].sort()).toEqual(dates);
    const risky = svc.upcoming(30, 40);
    expect(risky.unlocks.every((u) => u.risk_score >= 40)).toBe(true);
    expect(risky.unlocks.length).toBe(all.unlocks.filter((u) => u.risk_score >= 40).length);
    expect(svc.upcoming(365, 0).unlocks.length).toBeGreaterThan(all.unlocks.length);
  });

  it("scores one event with evidence whose contributions add up to the score", () => {
    const item = svc.score("arb", "unlock_arb_2026_12_16", true);
    expect(Value.Check(RiskItem, item)).toBe(true);
    expect(item).toMatchObject({
      token: "ARB",
      unlock_date: "2026-12-16",
      days_until: 24,
      unlock_type: "step",
      recipient_category: "team",
      synthetic: true,
      as_of: "2026-11-22",
    });
    expect(item.evidence).toHaveLength(6);
    const sum = item.evidence!.reduce((s, e) => s + e.contribution, 0);
    expect(Math.abs(sum - item.risk_score)).toBeLessThanOrEqual(0.5);
    for (const e of item.evidence!)
      expect(Object.keys(e).sort()).toEqual(
        [
          "assumptions",
          "confidence",
          "contribution",
          "factor",
          "observed_at",
          "source_url",
          "unit",
          "value",
          "weight",
        ].sort(),
      );
    expect(svc.score("arb", "unlock_arb_2026_12_16", false).evidence).toBeUndefined();
    // pct_circulating is consistent with the amount and the evidence value.
    expect(item.evidence!.find((e) => e.factor === "unlock_size")!.value).toBeCloseTo(
      item.pct_circulating!,
      3,
    );
  });

  it("every precomputed event's evidence sums to its score", () => {
    for (const s of svc.events()) {
      const sum = s.evidence.reduce((a, e) => a + e.contribution, 0);
      expect(Math.abs(sum - s.risk.score)).toBeLessThanOrEqual(0.5);
    }
  });

  it("summarises a token over the next lookbackDays", () => {
    const s = svc.summary("arb", 90);
    expect(Value.Check(RiskSummary, s)).toBe(true);
    expect(s.windowDays).toBe(90);
    expect(s.window_end).toBe("2027-02-20");
    const events = svc.upcoming(90, 0).unlocks.filter((u) => u.token === "ARB");
    expect(s.eventCount).toBe(events.length);
    expect(s.maxRiskScore).toBe(Math.max(...events.map((u) => u.risk_score)));
    expect(s.tokens_unlocking).toBeCloseTo(
      events.reduce((a, u) => a + u.amount_tokens, 0),
      2,
    );
    expect(s.next_unlock?.unlock_event_id).toBe(events[0]!.unlock_event_id);
    expect(s.top_events[0]!.risk_score).toBe(s.maxRiskScore);
  });

  it("summary with no events in the window: eventCount 0 and no maxRiskScore", () => {
    const late = createUnlockService(store, () => new Date("2046-01-01T00:00:00Z"));
    const s = late.summary("ARB", 30);
    expect(Value.Check(RiskSummary, s)).toBe(true);
    expect(s.eventCount).toBe(0);
    expect(s).not.toHaveProperty("maxRiskScore");
    expect(s).not.toHaveProperty("riskLevel");
    expect(s.next_unlock).toBeNull();
    expect(s.top_events).toEqual([]);
    // One-day window before the next unlock: none inside, but the next one is reported out of window.
    const s2 = svc.summary("ONDO", 1);
    expect(s2.eventCount).toBe(0);
    expect(s2.next_unlock?.in_window).toBe(false);
  });

  it("backtests a future event on the token's own earlier unlocks, without overlaps", () => {
    const b = svc.backtest("ARB", "unlock_arb_2026_12_16", 60);
    expect(Value.Check(BacktestResult, b)).toBe(true);
    expect(b.basis).toBe("token_history");
    expect(b.synthetic).toBe(true);
    expect(b.reactions.length).toBeGreaterThan(3);
    const days = b.reactions.map((r) => Date.parse(r.unlock_date) / 86_400_000);
    for (let i = 1; i < days.length; i++) expect(days[i]! - days[i - 1]!).toBeGreaterThanOrEqual(60);
    expect(b.excluded_overlapping).toBeGreaterThan(0);
    expect(b.summary.sample_size).toBe(b.reactions.length);
  });

  it("backtests a past event on itself", () => {
    const b = svc.backtest("ARB", "unlock_arb_2025_03_16", 14);
    expect(b.basis).toBe("event");
    expect(b.reactions.map((r) => r.unlock_event_id)).toEqual(["unlock_arb_2025_03_16"]);
  });
});
