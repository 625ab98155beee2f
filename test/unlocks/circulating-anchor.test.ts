import { describe, expect, it } from "vitest";
import {
  CURVE_MIN_TOKEN_MONTHS,
  heldOutCurve,
  heldOutHorizon,
  heldOutPoints,
} from "../../src/build/circulating-check.js";
import { reportIndexOf } from "../../src/unlocks/circulating-reported.js";
import { parseDay } from "../../src/unlocks/data/dates.js";
import { buildUnlockStore, loadUnlockStore } from "../../src/unlocks/data/snapshot.js";
import { createUnlockService } from "../../src/unlocks/service.js";
import {
  anchorAccuracyCode,
  anchorAccuracyLegend,
  anchorAccuracyText,
  circulatingAt,
  circulatingToday,
  HELD_OUT_CURVE,
  HELD_OUT_HORIZON_MONTHS,
} from "../../src/unlocks/supply.js";

const store = loadUnlockStore();
const arb = store.tokenBySymbol.get("arb");
if (!arb) throw new Error("no ARB in the shipped snapshot");
const TODAY = parseDay("2026-11-27");

describe("the held-out curve by anchor age", () => {
  it("the server's curve is the one the repository's check computes from the shipped data", () => {
    const curve = heldOutCurve(heldOutPoints(store.tokens, store.reports));
    const horizon = heldOutHorizon(curve);
    expect(horizon).toBe(HELD_OUT_HORIZON_MONTHS);
    expect(curve.filter((p) => p.months <= horizon)).toEqual(HELD_OUT_CURVE);
    for (const p of HELD_OUT_CURVE) expect(p.n).toBeGreaterThanOrEqual(CURVE_MIN_TOKEN_MONTHS);
    // One month out the anchored figure meets the 90 % target.
    const first = HELD_OUT_CURVE[0] as { n: number; within: number };
    expect(first.within / first.n).toBeGreaterThanOrEqual(0.9);
  });

  it("an anchor's age picks its point of the curve; older than the horizon is said", () => {
    expect(anchorAccuracyCode(0)).toBe("held_out_1m");
    expect(anchorAccuracyCode(30)).toBe("held_out_1m");
    expect(anchorAccuracyCode(61)).toBe("held_out_2m");
    expect(anchorAccuracyCode(183)).toBe("held_out_6m");
    expect(anchorAccuracyCode(200)).toBe("beyond_held_out_horizon");
    expect(anchorAccuracyText("held_out_1m")).toBe(
      "anchored on a report about 1 month old: in the held-out test 73 of 77 such figures (94.8 %) were within 10 % of the next report",
    );
    expect(anchorAccuracyText("beyond_held_out_horizon")).toContain("older than the 6 months");
    expect(anchorAccuracyText("beyond_held_out_horizon")).toContain("53 of 71 figures (74.6 %)");
    expect(anchorAccuracyText("held_out_9m")).toBeNull();
    expect(Object.keys(anchorAccuracyLegend())).toEqual([
      "held_out_1m",
      "held_out_2m",
      "held_out_3m",
      "held_out_4m",
      "held_out_5m",
      "held_out_6m",
      "beyond_held_out_horizon",
    ]);
  });
});

describe("the anchor in answers", () => {
  const service = createUnlockService(store, () => new Date("2026-11-27T12:00:00Z"));

  it("a summary anchored on a 14-month-old report flags its age and says so in code", () => {
    const s = service.summary("ARB", 90);
    expect(s.supply_coverage.circulating_rule).toBe("reported+schedule");
    expect(s.supply_coverage.circulating_report?.date).toBe("2025-10-01");
    expect(s.supply_coverage.circulating_anchor_age_days).toBe(TODAY - (parseDay("2025-10-01") + 1));
    expect(s.supply_coverage.circulating_anchor_accuracy).toBe("beyond_held_out_horizon");
  });

  it("the summary's own score_kind carries the STALE clause its items carry", () => {
    const s = service.summary("ARB", 365);
    const item = s.top_events[0];
    expect(item?.score_kind).toContain("STALE market inputs");
    expect(s.score_kind).toContain("STALE market inputs: price and volume are 253 days older");
  });

  it("today's figure anchors on a live report fetched today; an event never on a report of its own day", () => {
    const live = {
      token: "ARB",
      date: "2026-11-27",
      circulating_supply: "5400000000",
      source: "coingecko",
      coin_id: "arbitrum",
      as_of: "2026-11-27T09:00:00.000Z",
    };
    const shipped = [...(store.reports.get("arb") ?? [])].map((r) => ({ ...r, token: "ARB" }));
    const reports = reportIndexOf(shipped, [live]).get("arb");
    const today = circulatingToday(arb, reports, TODAY);
    expect(today.report?.source).toBe("coingecko");
    expect(today.value).toBe(5.4e9);
    expect(today.method).toContain("reported today");
    // The same day as an event's day: the report may already count the release, so the older one anchors.
    const event = circulatingAt(arb, reports, TODAY);
    expect(event.report?.source).toBe("coinmarketcap");
    // The next day, the live report is the freshest before it, for today's figure and an event alike.
    expect(circulatingAt(arb, reports, TODAY + 1).report?.source).toBe("coingecko");
    const liveStore = buildUnlockStore(store.snapshot, reportIndexOf(shipped, [live]));
    const s = createUnlockService(liveStore, () => new Date("2026-11-27T12:00:00Z")).summary("ARB", 90);
    expect(s.supply_coverage.circulating_report?.source).toBe("coingecko");
    expect(s.supply_coverage.circulating_anchor_age_days).toBe(0);
    expect(s.supply_coverage.circulating_anchor_accuracy).toBe("held_out_1m");
  });
});
