import { describe, expect, it } from "vitest";
import {
  loadUnlockStore,
  seriesAt,
  toDailySeries,
  toSeriesValues,
} from "../../../src/unlocks/data/snapshot.js";
import type { PriceSeries } from "../../../src/unlocks/data/types.js";

const store = loadUnlockStore();
const shippedSeries: [string, PriceSeries][] = [
  ["benchmark", store.snapshot.benchmark.prices],
  ...store.snapshot.tokens.flatMap((t): [string, PriceSeries][] => (t.prices ? [[t.symbol, t.prices]] : [])),
];

describe("typed-array daily series", () => {
  it("toSeriesValues keeps every value and turns null into NaN", () => {
    const values = toSeriesValues([1.5, null, 0, 2e-9, null, 123456789.125]);
    expect(values).toBeInstanceOf(Float64Array);
    expect(Array.from(values)).toEqual([1.5, Number.NaN, 0, 2e-9, Number.NaN, 123456789.125]);
    expect(toSeriesValues([])).toHaveLength(0);
  });

  it("seriesAt answers the same from a Float64Array as from the plain array, null where missing", () => {
    const plain = [null, 3, null, 4.25, 0];
    const typed = toSeriesValues(plain);
    for (let day = 8; day <= 16; day++) expect(seriesAt(typed, 10, day)).toBe(seriesAt(plain, 10, day));
    expect(seriesAt(typed, 10, 10)).toBeNull();
    expect(seriesAt(typed, 10, 13)).toBe(4.25);
    expect(seriesAt(typed, 10, 14)).toBe(0);
    expect(seriesAt(typed, 10, 15)).toBeNull();
    expect(seriesAt(null, 10, 12)).toBeNull();
  });

  it("every shipped series gives the same value on every day as the snapshot's arrays", () => {
    expect(shippedSeries.length).toBeGreaterThan(10);
    let compared = 0;
    for (const [symbol, raw] of shippedSeries) {
      const s = toDailySeries(raw);
      const pairs = [
        [s.close, raw.close],
        [s.volume, raw.volume_usd],
        [s.circulating, raw.circulating ?? null],
        [s.benchmarkClose, raw.benchmark_close ?? null],
      ] as const;
      for (const [typed, plain] of pairs) {
        if (plain === null) {
          expect(typed, symbol).toBeNull();
          continue;
        }
        expect(typed, symbol).toBeInstanceOf(Float64Array);
        expect(typed?.length, symbol).toBe(plain.length);
        for (let day = s.startDay - 2; day < s.startDay + plain.length + 2; day++) {
          expect(seriesAt(typed, s.startDay, day)).toBe(seriesAt(plain, s.startDay, day));
          compared++;
        }
      }
    }
    expect(compared).toBeGreaterThan(10_000);
  });

  it("the store's series are the typed ones, and the snapshot keeps its arrays", () => {
    const [symbol, raw] = shippedSeries[1] as [string, PriceSeries];
    const s = store.pricesBySymbol.get(symbol.toLowerCase());
    expect(s?.close).toBeInstanceOf(Float64Array);
    expect(store.benchmark.series.close).toBeInstanceOf(Float64Array);
    expect(Array.isArray(raw.close)).toBe(true);
  });
});
