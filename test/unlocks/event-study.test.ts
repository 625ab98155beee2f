import { describe, expect, it } from "vitest";
import { quintileSpread, spearman } from "../../src/build/calibration.js";
import type { DailySeries } from "../../src/unlocks/data/snapshot.js";
import { clusterBootstrap, fitMarketModel, mulberry32, studyEvent } from "../../src/unlocks/event-study.js";

/** A dense price series from daily log returns, starting at 100 on day 0. */
function series(returns: readonly number[]): DailySeries {
  const close = [100];
  for (const r of returns) close.push((close[close.length - 1] as number) * Math.exp(r));
  return {
    startDay: 0,
    close,
    volume: null,
    circulating: null,
    benchmarkClose: null,
    source: "test",
    sourceUrl: null,
    synthetic: false,
    segments: [],
  };
}

describe("market-model event study", () => {
  const rand = mulberry32(7);
  const market = Array.from({ length: 400 }, () => (rand() - 0.5) * 0.06);
  const EVENT = 250;

  it("recovers alpha and beta exactly when the token is a linear function of the market", () => {
    const token = market.map((m) => 0.001 + 1.7 * m);
    const m = fitMarketModel(series(token), series(market), EVENT)!;
    expect(m.beta).toBeCloseTo(1.7, 10);
    expect(m.alpha).toBeCloseTo(0.001, 10);
    expect(m.n).toBe(90);
    // With its alpha the market model leaves no abnormal return: every robustness CAR is zero.
    const s = studyEvent(series(token), series(market), null, EVENT)!;
    for (const v of Object.values(s.carAlpha)) expect(v).toBeCloseTo(0, 8);
    // The primary CAR (token − β·market, no intercept) keeps the drift: 0.1 % a day, in %, over each window's days.
    expect(s.car.pre).toBeCloseTo(0.1 * 30, 8);
    expect(s.car.d014).toBeCloseTo(0.1 * 15, 8);
    expect(s.car.d030).toBeCloseTo(0.1 * 31, 8);
  });

  it("puts a −10 % shock on day 0 into [0,+1], [0,+14] and [0,+30] and not into [−30,−1]", () => {
    const token = market.map((m, d) => 1.2 * m + (d === EVENT ? Math.log(0.9) : 0));
    const s = studyEvent(series(token), series(market), series(market), EVENT)!;
    const shock = Math.log(0.9) * 100;
    expect(s.car.pre).toBeCloseTo(0, 8);
    expect(s.car.d01).toBeCloseTo(shock, 8);
    expect(s.car.d014).toBeCloseTo(shock, 8);
    expect(s.car.d030).toBeCloseTo(shock, 8);
    expect(s.path[30]).toBeCloseTo(shock, 8); // day 0 is index 30 of the −30..+30 path
    expect(s.path[29]).toBeCloseTo(0, 8);
  });

  it("refuses an event whose estimation window is not covered", () => {
    expect(studyEvent(series(market.slice(0, 100)), series(market), null, 80)).toBeNull();
  });
});

describe("statistics", () => {
  it("cluster bootstrap is reproducible from its seed and resamples whole clusters", () => {
    const items = Array.from({ length: 60 }, (_, i) => ({ token: `T${i % 6}`, v: i % 6 }));
    const stat = (xs: readonly { v: number }[]) => xs.reduce((a, x) => a + x.v, 0) / xs.length;
    const a = clusterBootstrap(items, (x) => x.token, stat, { reps: 500, seed: 1 });
    const b = clusterBootstrap(items, (x) => x.token, stat, { reps: 500, seed: 1 });
    expect(a).toEqual(b);
    expect(a.estimate).toBeCloseTo(2.5, 12);
    expect(a.clusters).toBe(6);
    expect(a.lo!).toBeLessThan(2.5);
    expect(a.hi!).toBeGreaterThan(2.5);
    // Identical clusters: every resample gives the same value, so the interval collapses.
    const same = clusterBootstrap(
      items.map((x) => ({ ...x, v: 1 })),
      (x) => x.token,
      stat,
      { reps: 200, seed: 3 },
    );
    expect([same.lo, same.hi]).toEqual([1, 1]);
  });

  it("spearman and the quintile spread on known data", () => {
    expect(spearman([1, 2, 3, 4, 5], [2, 1, 4, 3, 5])).toBeCloseTo(0.8, 12);
    const scores = Array.from({ length: 20 }, (_, i) => i);
    const cars = scores.map((s) => -s);
    // Top fifth (16..19) averages −17.5, bottom fifth (0..3) −1.5: a spread of −16.
    expect(quintileSpread(scores, cars)).toBeCloseTo(-16, 12);
  });
});
