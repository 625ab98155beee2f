import { describe, expect, it } from "vitest";
import { holdoutFromDay, shippedSampler, studyStore } from "../../src/build/calibration.js";
import { load6mv } from "../../src/build/import-6mv.js";
import { dataPath } from "../../src/files/paths.js";
import { formatDay } from "../../src/unlocks/data/dates.js";
import {
  buildUnlockStore,
  loadUnlockStore,
  toDailySeries,
  validateUnlockSnapshot,
} from "../../src/unlocks/data/snapshot.js";
import { buildBenchmarkSeries, readMarketIndex } from "../../src/unlocks/market-history.js";
import { createUnlockService } from "../../src/unlocks/service.js";

// The event sample of `npm run calibrate`, from shipped data only (the bootstrap itself runs in the script).
describe("calibration sample", () => {
  const market = dataPath("market-history");
  const btc = toDailySeries(buildBenchmarkSeries(market, readMarketIndex(market), "BTC"));
  const store = loadUnlockStore();
  const svc = createUnlockService(store, () => new Date("2026-11-22T00:00:00Z"));
  const shipped = studyStore(store, svc.events(), btc, shippedSampler(store));
  const six = load6mv(dataPath("unlock-history-6mv"), market);
  const store6 = buildUnlockStore(validateUnlockSnapshot(six.snapshot, "6mv"));
  const sixSet = studyStore(store6, createUnlockService(store6).events(), btc, () => "holdout-6mv");
  const all = [...shipped.events, ...sixSet.events];
  const holdoutFrom = formatDay(holdoutFromDay(store));

  it("has at least 500 measured events across at least 55 tokens, each sample non-empty", () => {
    expect(all.length).toBeGreaterThanOrEqual(500);
    expect(new Set(all.map((e) => e.token)).size).toBeGreaterThanOrEqual(55);
    for (const s of ["fit", "holdout-time", "holdout-tokens", "holdout-6mv"])
      expect(all.some((e) => e.sample === s)).toBe(true);
    // Every studied release is at least 0.1 % of its token's supply.
    expect(shipped.events.every((e) => e.supplySharePct === null || e.supplySharePct >= 0.1)).toBe(true);
  });

  it("keeps the last six months (≥ 150 events) and the left-out tokens out of the fit sample", () => {
    expect(holdoutFrom).toBe("2025-09-18");
    const time = all.filter((e) => e.sample === "holdout-time");
    expect(time.length).toBeGreaterThanOrEqual(150);
    expect(time.every((e) => e.date >= holdoutFrom)).toBe(true);
    const fit = all.filter((e) => e.sample === "fit");
    expect(fit.every((e) => e.date >= "2023-01-01" && e.date < holdoutFrom)).toBe(true);
    const leftOut = new Set(all.filter((e) => e.sample === "holdout-tokens").map((e) => e.token));
    expect(leftOut.size).toBeGreaterThan(0);
    expect(fit.some((e) => leftOut.has(e.token))).toBe(false);
  });

  it("measures every event on real prices with a fitted beta to ETH and BTC", () => {
    for (const e of all) {
      expect(e.scored.context.synthetic).toBe(false);
      expect(Number.isFinite(e.study.betaEth)).toBe(true);
      expect(e.study.path).toHaveLength(61);
      // The path's day +14 (index 44) is the [−30,+14] sum: [−30,−1] plus [0,+14].
      expect(e.study.path[44]).toBeCloseTo(e.study.car.pre + e.study.car.d014, 8);
      expect(Number.isFinite(e.study.carAlpha.d030)).toBe(true);
    }
    expect(all.filter((e) => e.study.carBtc !== null).length).toBeGreaterThan(all.length * 0.9);
  });
});
