import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkAgainstOtherVenue, MAX_VENUE_DISAGREEMENT } from "../../src/sources/candles/refresh.js";
import type { FetchLike } from "../../src/sources/http.js";
import { refreshSources, type SourcesRun } from "../../src/sources/runner.js";
import { applyOutcome, emptyStatus } from "../../src/sources/status.js";
import { formatDay, parseDay } from "../../src/unlocks/data/dates.js";
import { readUnlockSnapshot } from "../../src/unlocks/data/snapshot.js";
import type { PriceSeries, UnlockSnapshot } from "../../src/unlocks/data/types.js";
import { marketFromSeries } from "../../src/unlocks/market-snapshot.js";
import { cut } from "../helpers/market-standin.js";

/*
 * Binance and Bybit on 127.0.0.1, each answering its own recorded daily closes (the shipped Binance USDⓈ-M series and
 * data/market-history/alt/bybit-usdt-perp, which overlap until 2025-11-12). The snapshot is held back to 2025-11-09, so
 * a refresh on 2025-11-13 asks both venues for the same three new days. ARB's Binance answer is skewed 8 % above the
 * recording (small enough to pass the per-candle, total-move and CoinGecko bounds); JUP's is as recorded; Bybit does
 * not know TIA.
 */
const HELD_LAST = "2025-11-09";
const NOW = new Date("2025-11-13T12:00:00Z");
const SKEW = { ARB: 1.08 } as Record<string, number>;
const BYBIT_UNLISTED = new Set(["TIA"]);
const DAY = 86_400_000;

const full = readUnlockSnapshot(new URL("../../data/unlocks.snapshot.json", import.meta.url).pathname);
const pick = ["ARB", "JUP", "TIA"];

function bybitRecorded(symbol: string): Map<number, number> {
  const csv = readFileSync(
    new URL(`../../data/market-history/alt/bybit-usdt-perp/${symbol}.csv`, import.meta.url),
    "utf8",
  );
  const out = new Map<number, number>();
  for (const line of csv.trim().split("\n").slice(1)) {
    const [date, close] = line.split(",");
    out.set(parseDay(date as string), Number(close));
  }
  return out;
}

const heldBack = (s: PriceSeries): PriceSeries =>
  cut(s, parseDay(s.start) + s.close.length - 2 - parseDay(HELD_LAST));

let server: Server;
const asked: string[] = [];
let base: UnlockSnapshot;
let run: SourcesRun;
let dataDir: string;

beforeAll(async () => {
  const tokens = full.tokens.filter((t) => pick.includes(t.symbol));
  const bench = full.benchmark.symbol;
  const binance = new Map<string, PriceSeries>([
    ...tokens.map((t): [string, PriceSeries] => [`${t.symbol}USDT`, t.prices as PriceSeries]),
    [`${bench}USDT`, full.benchmark.prices],
  ]);
  const bybit = new Map(
    [...pick, bench].filter((s) => !BYBIT_UNLISTED.has(s)).map((s) => [`${s}USDT`, bybitRecorded(s)]),
  );
  server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    asked.push(`http://127.0.0.1:${(server.address() as AddressInfo).port}${req.url}`);
    const pair = url.searchParams.get("symbol") ?? "";
    const limit = Number(url.searchParams.get("limit"));
    const through = parseDay(NOW.toISOString().slice(0, 10)) - 1;
    if (url.pathname === "/bn/fapi/v1/klines" && binance.has(pair)) {
      const s = binance.get(pair) as PriceSeries;
      const rows: unknown[] = [];
      for (let d = through - limit + 1; d <= through; d++) {
        const held = s.close[d + 1 - parseDay(s.start)] as number;
        const close = d > parseDay(HELD_LAST) ? held * (SKEW[pair.replace(/USDT$/, "")] ?? 1) : held;
        rows.push([
          d * DAY,
          "0",
          "0",
          "0",
          String(close),
          "0",
          (d + 1) * DAY - 1,
          "1000000",
          0,
          "0",
          "0",
          "0",
        ]);
      }
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(rows));
      return;
    }
    if (url.pathname === "/by/v5/market/kline") {
      const closes = bybit.get(pair);
      if (!closes) {
        // Bybit's answer for a symbol it does not list: HTTP 200 with a non-zero retCode.
        res
          .writeHead(200, { "content-type": "application/json" })
          .end(
            '{"retCode":10001,"retMsg":"params error: symbol invalid","result":{},"retExtInfo":{},"time":0}',
          );
        return;
      }
      const list: string[][] = [];
      for (let d = through; d > through - limit; d--) {
        const c = closes.get(d);
        if (c !== undefined) list.push([String(d * DAY), "0", "0", "0", String(c), "0", "1000000"]);
      }
      res
        .writeHead(200, { "content-type": "application/json" })
        .end(
          JSON.stringify({ retCode: 0, retMsg: "OK", result: { category: "linear", symbol: pair, list } }),
        );
      return;
    }
    res.writeHead(400, { "content-type": "application/json" }).end('{"code":-1121,"msg":"Invalid symbol."}');
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const at = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  base = {
    ...full,
    benchmark: { ...full.benchmark, prices: heldBack(full.benchmark.prices) },
    tokens: tokens.map((t) => {
      const prices = heldBack(t.prices as PriceSeries);
      return { ...t, prices, market: marketFromSeries(prices) };
    }),
  };
  dataDir = mkdtempSync(join(tmpdir(), "p402-cross-venue-"));
  run = await refreshSources(
    base,
    ["binance"],
    {
      bases: { binance: `${at}/bn`, bybit: `${at}/by`, coingecko: `${at}/cg` },
      fetchImpl: globalThis.fetch as unknown as FetchLike,
      coinIds: new Map(),
      dataDir,
    },
    NOW,
  );
}, 60_000);

afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe("a venue's closes are checked against the other venue's", () => {
  it("refuses a close more than 5 % from the other venue's on the same day; passes one within, or nothing to compare", () => {
    const ours = [
      { day: 10, close: 1.049, volume: 1 },
      { day: 11, close: 1.0, volume: 1 },
    ];
    const theirs = [
      { day: 10, close: 1, volume: 1 },
      { day: 11, close: 1, volume: 1 },
    ];
    expect(MAX_VENUE_DISAGREEMENT).toBe(0.05);
    expect(() => checkAgainstOtherVenue("Binance", ours, "Bybit", theirs)).not.toThrow();
    expect(() =>
      checkAgainstOtherVenue("Binance", [{ day: 11, close: 0.94, volume: 1 }], "Bybit", theirs),
    ).toThrow(/Binance close 0\.94 on \S+ is -6\.0 % off Bybit's 1 \(bound 5 % between venues\)/);
    expect(() =>
      checkAgainstOtherVenue("Binance", [{ day: 12, close: 9, volume: 1 }], "Bybit", theirs),
    ).not.toThrow();
    expect(() => checkAgainstOtherVenue("Binance", ours, "Bybit", null)).not.toThrow();
  });

  it("the recorded venues agree: JUP is refreshed on Binance's closes, TIA (not on Bybit) on its own checks", () => {
    const bn = run.outcomes.find((o) => o.source === "binance");
    expect(bn?.updated).toEqual(expect.arrayContaining(["JUP", "TIA", full.benchmark.symbol]));
    const jup = run.snapshot?.tokens.find((t) => t.symbol === "JUP");
    // The last candle closed at NOW: 2025-11-12's.
    expect(jup?.market.as_of).toBe(formatDay(parseDay(NOW.toISOString().slice(0, 10)) - 1));
    expect(run.snapshot?.tokens.find((t) => t.symbol === "TIA")?.market.as_of).toBe(jup?.market.as_of);
    // The live segment names the endpoint the candles were read from (the same URL, less the count asked).
    const live = jup?.prices?.segments?.at(-1);
    expect(live?.source_url).toMatch(/\/bn\/fapi\/v1\/klines\?symbol=JUPUSDT&interval=1d$/);
    expect(asked).toContain(`${live?.source_url}&limit=4`);
    expect(
      asked.some((u) => u.endsWith("/by/v5/market/kline?category=linear&symbol=JUPUSDT&interval=D&limit=4")),
    ).toBe(true);
  });

  it("ARB's skewed Binance batch is refused whole: its series stays as it was, the refusal is quarantined and reported as implausible", () => {
    const bn = run.outcomes.find((o) => o.source === "binance");
    const arb = bn?.failed.find((f) => f.item === "ARB");
    expect(arb?.error).toMatch(
      /^implausible: Binance close [\d.]+ on 2025-11-1\d is 8\.0 % off Bybit's [\d.]+ \(bound 5 % between venues\)$/,
    );
    expect(arb?.kind).toBe("implausible");
    expect(bn?.updated).not.toContain("ARB");
    const before = base.tokens.find((t) => t.symbol === "ARB");
    const after = run.snapshot?.tokens.find((t) => t.symbol === "ARB");
    expect(after?.prices).toEqual(before?.prices);
    expect(after?.market).toEqual(before?.market);

    const file = join(dataDir, "quarantine", "binance", "ARB.json");
    expect(existsSync(file)).toBe(true);
    const q = JSON.parse(readFileSync(file, "utf8")) as {
      reason: string;
      refused: { candles: { day: number }[]; other_venue: string; other_candles: unknown[] };
    };
    expect(q.reason).toMatch(/off Bybit's/);
    expect(q.refused.other_venue).toBe("Bybit");
    expect(q.refused.other_candles.length).toBeGreaterThan(0);

    const status = applyOutcome(emptyStatus("binance"), bn!, NOW);
    expect(status.failure_kinds).toEqual(["implausible"]);
    expect(status.quarantined).toBe(1);
    expect(status.last_error).toMatch(/ARB \(implausible: Binance close .* off Bybit's/);
  });
});
