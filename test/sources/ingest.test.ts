import { mkdtempSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseDepth, parseKlines } from "../../src/sources/candles/binance.js";
import { emissionBody, emissionUrl, piecesFromDocumented } from "../../src/sources/defillama/emission.js";
import type { FetchLike } from "../../src/sources/http.js";
import { refreshSources } from "../../src/sources/runner.js";
import { loadUnlockStore } from "../../src/unlocks/data/snapshot.js";
import type { PriceSeries, UnlockSnapshot } from "../../src/unlocks/data/types.js";

// Provenance of every fixture: test/fixtures/unlocks/README.md.
const fixtures = new URL("../fixtures/unlocks/", import.meta.url);
const fixture = (name: string): string => readFileSync(new URL(name, fixtures), "utf8");

let server: Server;
let baseUrl = "";
const seen: string[] = [];
const marketsBody = fixture("coingecko-markets.json");

beforeAll(async () => {
  server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    seen.push(`${url.pathname}${url.search}`);
    const sym = url.searchParams.get("symbol");
    const routes: Record<string, () => string | null> = {
      "/bn/fapi/v1/klines": () =>
        sym === "ARBUSDT"
          ? fixture("binance-klines-ARBUSDT.hand-written.json")
          : sym === "ETHUSDT"
            ? fixture("binance-klines-ETHUSDT.hand-written.json")
            : null,
      "/bn/fapi/v1/depth": () =>
        sym === "ARBUSDT" ? fixture("binance-depth-ARBUSDT.hand-written.json") : null,
      "/llama/defillama-datasets/emissions/arbitrum": () => fixture("defillama-emission-arbitrum.json"),
      "/cg/coins/markets": () => marketsBody,
    };
    const body = routes[url.pathname]?.() ?? null;
    if (body === null) {
      // Binance's documented error body for an unknown symbol.
      res
        .writeHead(400, { "content-type": "application/json" })
        .end('{"code":-1121,"msg":"Invalid symbol."}');
      return;
    }
    res.writeHead(200, { "content-type": "application/json" }).end(body);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const cut = (s: PriceSeries, days: number): PriceSeries => ({
  ...s,
  close: s.close.slice(0, -days),
  volume_usd: s.volume_usd?.slice(0, -days) ?? null,
  segments: s.segments?.map((g, i, all) => (i === all.length - 1 ? { ...g, to: "2026-03-16" } : g)),
});

const shipped = loadUnlockStore().snapshot;
/** ARB and JUP cut from the shipped snapshot, ARB's and ETH's last 3 days removed (the fixtures bring them back). */
function smallBase(): UnlockSnapshot {
  const arb = shipped.tokens.find((t) => t.symbol === "ARB")!;
  const jup = shipped.tokens.find((t) => t.symbol === "JUP")!;
  return {
    ...shipped,
    benchmark: { ...shipped.benchmark, prices: cut(shipped.benchmark.prices, 3) },
    tokens: [{ ...arb, prices: cut(arb.prices!, 3) }, jup],
  };
}

/** The one runner, as `npm run ingest -- --depth` runs it: candles and depth from the stand-in Binance. */
const runOnce = (base: UnlockSnapshot) =>
  refreshSources(
    base,
    ["binance"],
    {
      bases: { binance: `${baseUrl}/bn`, bybit: `${baseUrl}/by`, coingecko: `${baseUrl}/cg` },
      fetchImpl: globalThis.fetch as unknown as FetchLike,
      coinIds: new Map(),
      dataDir: mkdtempSync(join(tmpdir(), "ingest-data-")),
      depth: true,
    },
    // Mid-day on 2026-03-19: that day's candle is still open and must be dropped.
    new Date("2026-03-19T12:00:00Z"),
  );

describe("Binance shapes (hand-written from the documented response)", () => {
  it("keeps closed candles only, with the quote volume", () => {
    const raw = JSON.parse(fixture("binance-klines-ARBUSDT.hand-written.json")) as unknown[][];
    const candles = parseKlines(raw, Date.parse("2026-03-19T12:00:00Z"));
    expect(candles).toHaveLength(5);
    expect(candles[4]).toEqual({
      day: Date.parse("2026-03-18T00:00:00Z") / 86_400_000,
      close: Number(raw[4]![4]),
      volume: Number(raw[4]![7]),
    });
    expect(parseKlines(raw, Date.parse("2026-03-20T00:00:00Z"))).toHaveLength(6);
    expect(() => parseKlines({ code: -1121 }, 0)).toThrow(/expected an array/);
    expect(() => parseKlines([[1, "0", "0", "0", "x", "0", 2, "1"]], 10)).toThrow(/not a number/);
  });

  it("sums ±2 % of mid on each side of the book", () => {
    const d = parseDepth(JSON.parse(fixture("binance-depth-ARBUSDT.hand-written.json")))!;
    expect(d.mid).toBeCloseTo(0.1001, 12);
    expect(d.bidUsd2pct).toBeCloseTo(10_000 + 19_800 + 4_905, 6);
    expect(d.askUsd2pct).toBeCloseTo(15_030 + 10_100 + 4_084, 6);
    expect(parseDepth({ bids: [], asks: [["1", "1"]] })).toBeNull();
  });
});

describe("DefiLlama shapes", () => {
  it("accepts body as an object (documented example), as a JSON string (legacy host) or bare", () => {
    const documented = JSON.parse(fixture("defillama-emission-hyperliquid.documented-example.json"));
    const asObject = emissionBody(documented, "x");
    const asString = emissionBody({ ...documented, body: JSON.stringify(documented.body) }, "x");
    const bare = emissionBody(documented.body, "x");
    expect(asString).toEqual(asObject);
    expect(bare).toEqual(asObject);
    expect(() => emissionBody({ body: "{not json" }, "x")).toThrow(/not JSON/);
    const pieces = piecesFromDocumented(
      asObject.documentedData!.data!,
      "https://defillama.com/unlocks/hyperliquid",
    );
    // The documented example's one point: 60M unlocked on 2024-11-29 for the Hyper Foundation Budget.
    expect(pieces.map((p) => [p.recipient, p.category, p.kind, p.start, p.amount_tokens])).toEqual([
      ["Hyper Foundation Budget", "foundation", "cliff", "2024-11-29", 60_000_000],
    ]);
  });

  it("reads a one-day jump in the cumulative series as a cliff on its own day, not a stream dated a day early", () => {
    const ts = (d: string) => Date.parse(`${d}T00:00:00Z`) / 1000;
    const data = [
      { timestamp: ts("2025-01-01"), unlocked: 100 },
      { timestamp: ts("2025-01-02"), unlocked: 101 },
      { timestamp: ts("2025-01-03"), unlocked: 102 },
      { timestamp: ts("2025-01-04"), unlocked: 602 },
      { timestamp: ts("2025-01-05"), unlocked: 603 },
      { timestamp: ts("2025-01-06"), unlocked: 604 },
    ];
    const pieces = piecesFromDocumented([{ label: "Investors", data }], "https://defillama.com/unlocks/x");
    expect(pieces.filter((p) => p.kind === "cliff").map((p) => [p.start, p.amount_tokens])).toEqual([
      ["2025-01-01", 100],
      ["2025-01-04", 500],
    ]);
    // The 1-a-day stream either side stays linear.
    expect(pieces.filter((p) => p.kind === "linear").reduce((a, p) => a + p.amount_tokens, 0)).toBe(4);
  });

  it("uses the keyless datasets host path", () => {
    expect(emissionUrl("https://defillama-datasets.llama.fi", "arbitrum")).toBe(
      "https://defillama-datasets.llama.fi/emissions/arbitrum",
    );
    expect(emissionUrl("https://api.llama.fi", "arbitrum")).toBe("https://api.llama.fi/emission/arbitrum");
  });
});

describe("the runner against a local fixture server", () => {
  it("extends the real series from Binance klines, adds depth, keeps what fails", async () => {
    const base = smallBase();
    const run = await runOnce(base);
    const snap = run.snapshot as UnlockSnapshot;
    const arb = snap.tokens.find((t) => t.symbol === "ARB")!;
    const shippedArb = shipped.tokens.find((t) => t.symbol === "ARB")!;
    const [candles, depth] = run.outcomes;
    // JUP's series already ends yesterday: nothing to ask for; its book is not in the stand-in.
    expect(candles).toMatchObject({ source: "binance", updated: ["JUP", "ETH", "ARB"], failed: [] });
    expect(depth?.updated).toEqual(["ARB depth"]);
    expect(depth?.failed.map((f) => f.item)).toEqual(["JUP depth"]);
    // The fixture's closes are the shipped CSV's last five rows: the refreshed series equals the shipped one.
    expect(arb.prices!.close).toEqual(shippedArb.prices!.close);
    expect(arb.prices!.volume_usd).toEqual(shippedArb.prices!.volume_usd);
    expect(arb.prices!.segments!.at(-1)).toMatchObject({ venue: "Binance", to: "2026-03-19" });
    expect(snap.benchmark.prices.close).toEqual(shipped.benchmark.prices.close);
    expect(arb.market).toMatchObject({
      price_usd: shippedArb.market.price_usd,
      adv_30d_usd: shippedArb.market.adv_30d_usd,
      as_of: "2026-03-18",
      synthetic: false,
    });
    expect(arb.market.depth_2pct_usd).toBeCloseTo(34_705, 6);
    const jup = snap.tokens.find((t) => t.symbol === "JUP")!;
    expect(jup.market).toEqual(shipped.tokens.find((t) => t.symbol === "JUP")!.market);
    expect(seen).toContain("/bn/fapi/v1/klines?symbol=ARBUSDT&interval=1d&limit=4");
    expect(seen.some((s) => s.startsWith("/cg/"))).toBe(false);
  });
});

describe("a refreshed schedule that lost a third of its supply", () => {
  it("is refused; one that kept it (or grew) is taken", async () => {
    const { scheduleLoss } = await import("../../src/sources/defillama/schedules.js");
    const piece = (amount: number) => ({
      recipient: "Team",
      category: "team" as const,
      kind: "cliff" as const,
      start: "2026-01-01",
      end: null,
      amount_tokens: amount,
      steps: null,
      step_days: null,
      source_type: "aggregator" as const,
      timing_precision: "day" as const,
      source_url: null,
    });
    expect(scheduleLoss([piece(600), piece(300)], [piece(500)])).toBe(
      "releases 500 tokens, under two thirds of the previous 900",
    );
    expect(scheduleLoss([piece(600), piece(300)], [piece(600)])).toBeNull();
    expect(scheduleLoss([piece(900)], [piece(1200)])).toBeNull();
  });
});
