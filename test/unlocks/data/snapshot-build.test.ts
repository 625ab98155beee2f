import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { buildShippedSnapshot, shippedInputs } from "../../../scripts/build-snapshot.js";
import { dataPath } from "../../../src/files/paths.js";
import { loadUnlockStore } from "../../../src/unlocks/data/snapshot.js";

const shipped = loadUnlockStore().snapshot;

/** Straight from a shipped CSV, without the product's parser. */
function csv(file: string): { date: string; close: number; volume: number }[] {
  return readFileSync(dataPath(`market-history/${file}`), "utf8")
    .trim()
    .split("\n")
    .slice(1)
    .map((l) => {
      const [date, close, volume] = l.split(",");
      return { date: date!, close: Number(close), volume: Number(volume) };
    });
}

describe("shipped snapshot is built from shipped real data only", () => {
  it("npm run snapshot rebuilds the shipped file byte for byte", () => {
    const built = buildShippedSnapshot(shippedInputs());
    expect(`${JSON.stringify(built)}\n`).toBe(readFileSync(dataPath("unlocks.snapshot.json"), "utf8"));
  });

  it("ARB's price and 30-day ADV are the last close and the mean of the last 30 quote volumes", () => {
    const rows = csv("ARB.csv");
    const last = rows[rows.length - 1]!;
    const arb = shipped.tokens.find((t) => t.symbol === "ARB")!;
    expect(arb.market.price_usd).toBe(last.close);
    expect(arb.market.as_of).toBe(last.date);
    const adv = rows.slice(-30).reduce((s, r) => s + r.volume, 0) / 30;
    expect(arb.market.adv_30d_usd).toBeCloseTo(adv, 4);
    expect(arb.market.venue).toBe("Binance");
    // 00:00 UTC convention: the series value on day D is the close of candle D−1.
    // History starts at the listing: rows before the TGE (the complete schedule's first release) are dropped,
    // older rows come from spot.
    const first = arb.supply_schedule!.pieces.map((p) => p.start).sort()[0]!;
    expect(first).toBe("2023-03-23");
    expect(arb.listing_date).toBe("2023-03-23");
    const spotFirst = csv("alt/binance-spot/ARB.csv").find((r) => r.date >= first)!;
    expect(arb.prices!.close[0]).toBe(spotFirst.close);
    const next = new Date(Date.parse(`${spotFirst.date}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
    expect(arb.prices!.start).toBe(next);
    expect(arb.prices!.segments?.map((s) => s.venue)).toEqual(["Binance", "Binance"]);
  });

  it("drops pre-TGE pre-market rows (MON trades from 2025-10-10, TGE 2025-11-24)", () => {
    const mon = shipped.tokens.find((t) => t.symbol === "MON")!;
    expect(mon.prices!.start).toBe("2025-11-25");
    expect(mon.listing_basis).toContain("pre-market perp candles dropped");
  });

  it("keeps price history from the listing, not from the first vesting piece (TIA, PYTH, AVAX)", () => {
    const first = (s: string) => shipped.tokens.find((t) => t.symbol === s)!;
    // The first vesting pieces are 2024-10-31 (TIA), 2024-05-20 (PYTH) and 2024 (AVAX); the history reaches before.
    for (const [sym, vestingFrom] of [
      ["TIA", "2024-10-31"],
      ["PYTH", "2024-05-20"],
      ["AVAX", "2024-01-01"],
    ] as const) {
      const t = first(sym);
      expect(t.schedules.map((p) => p.start).sort()[0]! >= vestingFrom).toBe(true);
      expect(t.prices!.start < vestingFrom).toBe(true);
      expect(t.listing_date! < vestingFrom).toBe(true);
    }
    expect(first("TIA").listing_date).toBe("2023-10-31");
  });
});
