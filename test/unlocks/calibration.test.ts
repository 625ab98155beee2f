import { describe, expect, it } from "vitest";
import { dataPath } from "../../src/store/paths.js";
import {
  buildUnlockStore,
  loadUnlockStore,
  toDailySeries,
  validateUnlockSnapshot,
} from "../../src/store/unlocks-snapshot.js";
import { studyStore, yearOf } from "../../src/unlocks/calibration.js";
import { load6mv } from "../../src/unlocks/import-6mv.js";
import { buildBenchmarkSeries, readMarketIndex } from "../../src/unlocks/market-history.js";
import { createUnlockService } from "../../src/unlocks/service.js";

// The event sample of `npm run calibrate`, from shipped data only (the bootstrap itself runs in the script).
describe("calibration sample", () => {
  const market = dataPath("market-history");
  const btc = toDailySeries(buildBenchmarkSeries(market, readMarketIndex(market), "BTC"));
  const store = loadUnlockStore();
  const svc = createUnlockService(store, () => new Date("2026-11-22T00:00:00Z"));
  const shipped = studyStore(store, svc.events(), btc, (s) => {
    const y = yearOf(s.event.day);
    return y >= 2023 && y <= 2025 ? "fit" : y === 2026 ? "holdout-2026" : null;
  });
  const six = load6mv(dataPath("unlock-history-6mv"), market);
  const store6 = buildUnlockStore(validateUnlockSnapshot(six.snapshot, "6mv"));
  const sixSet = studyStore(store6, createUnlockService(store6).events(), btc, () => "holdout-6mv");
  const all = [...shipped.events, ...sixSet.events];

  it("has at least 300 measured events across at least 30 tokens, each sample non-empty", () => {
    expect(all.length).toBeGreaterThanOrEqual(300);
    expect(new Set(all.map((e) => e.token)).size).toBeGreaterThanOrEqual(30);
    for (const s of ["fit", "holdout-2026", "holdout-6mv"])
      expect(all.some((e) => e.sample === s)).toBe(true);
    // Holdouts never leak into the fit sample.
    expect(
      all.filter((e) => e.sample === "fit").every((e) => e.date >= "2023-01-01" && e.date < "2026-01-01"),
    ).toBe(true);
  });

  it("measures every event on real prices with a fitted beta to ETH and BTC", () => {
    for (const e of all) {
      expect(e.scored.context.synthetic).toBe(false);
      expect(Number.isFinite(e.study.betaEth)).toBe(true);
      expect(e.study.path).toHaveLength(61);
      // The path's day +14 (index 44) is the [−30,+14] sum: [−30,−1] plus [0,+14].
      expect(e.study.path[44]).toBeCloseTo(e.study.car.pre + e.study.car.d014, 8);
    }
    expect(all.filter((e) => e.study.carBtc !== null).length).toBeGreaterThan(all.length * 0.9);
  });
});
