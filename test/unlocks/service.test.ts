import { Value } from "typebox/value";
import { describe, expect, it } from "vitest";
import {
  BacktestResult,
  RiskItem,
  RiskSummary,
  UpcomingResponse,
} from "../../src/schemas/unlocks-responses.js";
import { parseDay } from "../../src/unlocks/data/dates.js";
import { loadUnlockStore } from "../../src/unlocks/data/snapshot.js";
import { releasedBefore } from "../../src/unlocks/events.js";
import { sizeSubscore } from "../../src/unlocks/risk-model.js";
import { createUnlockService, NoReactionsError, UnlockLookupError } from "../../src/unlocks/service.js";
import { backtestView, riskView, summaryView, upcomingView } from "../../src/unlocks/views.js";

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
    for (const view of ["compact", "full"] as const)
      expect(Value.Check(UpcomingResponse, upcomingView(all, view, null))).toBe(true);
    expect(all).toMatchObject({
      days: 30,
      minRisk: 0,
      synthetic: false,
      window_start: "2026-11-22",
      window_end: "2026-12-22",
    });
    expect(all.unlocks.length).toBeGreaterThan(0);
    expect(all.unlocks.map((u) => u.unlock_event_id)).toContain("unlock_mon_2026_11_24");
    for (const u of all.unlocks) {
      // A linear month that began before today is listed for its remaining days.
      if (u.unlock_type === "linear") expect(u.stream!.stream_end >= "2026-11-22").toBe(true);
      else expect(u.days_until).toBeGreaterThanOrEqual(0);
      expect(u.days_until).toBeLessThanOrEqual(30);
      expect(u.evidence).toBeUndefined();
      expect(u.synthetic).toBe(false);
      expect(u.market.depth_2pct_usd).toBeNull();
      // Future events are valued at the token's last real close, which says how old it is.
      const token = store.tokenBySymbol.get(u.token.toLowerCase())!;
      expect(u.market.price_as_of).toBe(token.market.as_of);
      expect(u.market.stale_days).toBe(parseDay("2026-11-22") - parseDay(token.market.as_of));
    }
    // Dated by the day the tokens release in the window: a stream under way by today.
    const dates = all.unlocks.map((u) => u.release_start as string);
    expect(dates.every((d) => d >= "2026-11-22" && d <= "2026-12-22")).toBe(true);
    expect([...dates].sort()).toEqual(dates);
    const risky = svc.upcoming(30, 40);
    expect(risky.unlocks.every((u) => u.risk_score >= 40)).toBe(true);
    expect(risky.unlocks.length).toBe(all.unlocks.filter((u) => u.risk_score >= 40).length);
    expect(svc.upcoming(365, 0).unlocks.length).toBeGreaterThan(all.unlocks.length);
  });

  it("scores one event with evidence whose contributions add up to the score", () => {
    const item = svc.score("arb", "unlock_arb_2026_12_16", true);
    for (const view of ["compact", "full"] as const)
      expect(Value.Check(RiskItem, riskView(item, view))).toBe(true);
    expect(item).toMatchObject({
      token: "ARB",
      unlock_date: "2026-12-16",
      days_until: 24,
      unlock_type: "step",
      recipient_category: "team",
      synthetic: false,
      as_of: "2026-11-22",
    });
    expect(item.market).toMatchObject({
      venue: "Binance",
      instrument: "USDT-margined perpetual futures (USDⓈ-M)",
      price_as_of: "2026-03-18",
      depth_2pct_usd: null,
    });
    // 92.65M ARB against 10B max supply.
    expect(item.pct_max_supply).toBeCloseTo(0.9265, 3);
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

  it("no event of the shipped snapshot is valued with a generated figure", () => {
    const events = svc.events();
    expect(events.length).toBeGreaterThan(2000);
    expect(events.every((s) => s.context.synthetic === false)).toBe(true);
    // Unknown circulating supply is not scored as a saturated maximum: size is scored on % of max supply.
    const unknown = events.filter((e) => e.pctCirculating === null);
    expect(unknown.length).toBeGreaterThan(0);
    for (const s of unknown) {
      const size = s.evidence.find((e) => e.factor === "unlock_size")!;
      expect(size.unit).toBe("% of max supply");
      expect(size.value).toBeCloseTo(s.pctMaxSupply!, 3);
      expect(s.risk.factors.find((f) => f.factor === "unlock_size")!.subscore).toBe(
        sizeSubscore(s.pctMaxSupply!) === 1 ? 1 : Number(sizeSubscore(s.pctMaxSupply!).toFixed(4)),
      );
    }
  });

  it("every precomputed event's evidence sums to its score", () => {
    for (const s of svc.events()) {
      const sum = s.evidence.reduce((a, e) => a + e.contribution, 0);
      expect(Math.abs(sum - s.risk.score)).toBeLessThanOrEqual(0.5);
    }
  });

  it("summarises a token over the next lookbackDays", () => {
    const s = svc.summary("arb", 90);
    for (const view of ["compact", "full"] as const)
      expect(Value.Check(RiskSummary, summaryView(s, view))).toBe(true);
    expect(s.windowDays).toBe(90);
    expect(s.window_end).toBe("2027-02-20");
    const events = svc.upcoming(90, 0).unlocks.filter((u) => u.token === "ARB");
    expect(s.eventCount).toBe(events.length);
    expect(s.maxRiskScore).toBe(Math.max(...events.map((u) => u.risk_score)));
    expect(s.tokens_unlocking).toBeCloseTo(
      events.reduce((a, u) => a + u.window_amount_tokens!, 0),
      2,
    );
    expect(s.synthetic).toBe(false);
    expect(s.market).toMatchObject({
      venue: "Binance",
      price_as_of: "2026-03-18",
      stale_days: 249,
      depth_2pct_usd: null,
    });
    // An ongoing month stream reads days_until 0 in the list; the next unlock is the first one starting today or later.
    expect(s.next_unlock?.unlock_event_id).toBe(
      events.find((u) => u.unlock_date >= s.window_start)!.unlock_event_id,
    );
    expect(s.top_events[0]!.risk_score).toBe(s.maxRiskScore);
  });

  it("summary with no events in the window: eventCount 0 and no maxRiskScore", () => {
    const late = createUnlockService(store, () => new Date("2046-01-01T00:00:00Z"));
    const s = late.summary("ARB", 30);
    for (const view of ["compact", "full"] as const)
      expect(Value.Check(RiskSummary, summaryView(s, view))).toBe(true);
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
    for (const view of ["compact", "full"] as const)
      expect(Value.Check(BacktestResult, backtestView(b, view))).toBe(true);
    expect(b.basis).toBe("token_history");
    expect(b.pooled_across_tokens).toBe(false);
    expect(b.reactions.every((r) => r.token === "ARB")).toBe(true);
    expect(b.synthetic).toBe(false);
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

  it("refuses, with a reason, a backtest with nothing measurable", () => {
    // APT's first unlock predates every shipped price series, and no earlier community unlock exists.
    expect(svc.backtestRefusal("APT", "unlock_apt_2022_10_12", 14)).toMatch(/No measurable reaction/);
    expect(() => svc.backtest("APT", "unlock_apt_2022_10_12", 14)).toThrow(NoReactionsError);
    expect(svc.backtestRefusal("ARB", "unlock_arb_2025_03_16", 14)).toBeNull();
  });
});

/** The schedule's integral over days [from, to): what every window total must equal. */
function scheduleIntegral(symbol: string, from: number, to: number): number {
  const t = store.tokenBySymbol.get(symbol.toLowerCase())!;
  return t.schedules.reduce((s, p) => s + releasedBefore(p, to) - releasedBefore(p, from), 0);
}

describe("windows prorated by day", () => {
  const t0 = parseDay("2026-11-22");
  it.each([1, 7, 10, 30, 45, 90, 365])(
    "%i-day totals equal the schedule integral within 0.1 %% for every token",
    (days) => {
      const up = svc.upcoming(days, 0);
      for (const token of store.tokens) {
        const want = scheduleIntegral(token.symbol, t0, t0 + days + 1);
        const sum = svc.summary(token.symbol, days).tokens_unlocking;
        const listed = up.window_amount_tokens_by_token[token.symbol] ?? 0;
        if (want === 0) {
          expect(sum).toBe(0);
          continue;
        }
        expect(Math.abs(sum / want - 1)).toBeLessThan(0.001);
        expect(Math.abs(listed / want - 1)).toBeLessThan(0.001);
      }
    },
  );

  it("shows the current month's remaining stream", () => {
    const up = svc.upcoming(7, 0);
    const arbStream = up.unlocks.find((u) => u.token === "ARB" && u.unlock_type === "linear")!;
    expect(arbStream.unlock_date).toBe("2026-11-01");
    expect(arbStream.stream!.stream_end).toBe("2026-11-30");
    // 8 of the month's 30 streaming days (Nov 22..29) fall in the 7-day window.
    expect(arbStream.window_amount_tokens! / arbStream.stream!.month_amount_tokens).toBeCloseTo(8 / 30, 6);
  });
});
