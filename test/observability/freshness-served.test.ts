import { describe, expect, it } from "vitest";
import { dataTimeSeconds, servedDataAsOf } from "../../src/observability/freshness.js";
import { loadUnlockStore } from "../../src/unlocks/data/snapshot.js";

describe("the served data's as-of per source (the age alert's base before any refresh)", () => {
  const store = loadUnlockStore();

  it("is the newest candle each venue's series end on, and the schedules' date, from the shipped data", () => {
    const asOf = servedDataAsOf(store);
    expect(asOf.binance).toBe("2026-03-18");
    expect(asOf.bybit).toBe("2025-11-12");
    expect(asOf.defillama).toBe(store.snapshot.as_of);
    // Only CoinMarketCap's shipped reports: the live source has given nothing.
    expect(asOf.coingecko).toBeUndefined();
  });

  it("a UTC day counts to its end, an ISO time is itself", () => {
    expect(dataTimeSeconds("2026-03-18")).toBe(Date.parse("2026-03-19T00:00:00Z") / 1000);
    expect(dataTimeSeconds("2026-03-18T10:00:00.000Z")).toBe(Date.parse("2026-03-18T10:00:00Z") / 1000);
    expect(dataTimeSeconds(null)).toBeNull();
    expect(dataTimeSeconds("not a date")).toBeNull();
  });
});
