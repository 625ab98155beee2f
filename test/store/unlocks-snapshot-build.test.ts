import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { buildShippedSnapshot } from "../../scripts/build-snapshot.js";
import { dataPath } from "../../src/store/paths.js";
import { loadUnlockStore } from "../../src/store/unlocks-snapshot.js";
import type { CompiledSchedules } from "../../src/unlocks/import-schedules.js";

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
    const compiled = JSON.parse(
      readFileSync(dataPath("unlock-schedules/schedules.json"), "utf8"),
    ) as CompiledSchedules;
    const built = buildShippedSnapshot(compiled, dataPath("market-history"));
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
    // Rows before the first scheduled release are dropped (pre-TGE filter), older rows come from spot.
    const first = arb.schedules.map((p) => p.start).sort()[0]!;
    const spotFirst = csv("alt/binance-spot/ARB.csv").find((r) => r.date >= first)!;
    expect(arb.prices!.close[0]).toBe(spotFirst.close);
    const next = new Date(Date.parse(`${spotFirst.date}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
    expect(arb.prices!.start).toBe(next);
    expect(arb.prices!.segments?.map((s) => s.venue)).toEqual(["Binance", "Binance"]);
  });

  it("drops pre-TGE pre-market rows (MON trades from 2025-10-10, TGE 2025-11-24)", () => {
    const mon = shipped.tokens.find((t) => t.symbol === "MON")!;
    expect(mon.prices!.start).toBe("2025-11-25");
  });
});
