import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadUnlockStore, parseUnlockSnapshot } from "../../../src/store/unlocks-snapshot.js";
import type { UnlockSnapshot } from "../../../src/store/unlocks-types.js";
import { runIngest } from "../../../src/unlocks/ingest/run.js";

const fixtures = new URL("../../fixtures/unlocks/", import.meta.url);
const fixture = (name: string): string => readFileSync(new URL(name, fixtures), "utf8");

let server: Server;
let baseUrl = "";
const seen: string[] = [];
let marketsBody = fixture("coingecko-markets.json");

beforeAll(async () => {
  server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    seen.push(`${url.pathname}${url.search}`);
    const routes: Record<string, () => string> = {
      "/llama/emission/arbitrum": () => fixture("defillama-emission-arbitrum.json"),
      "/cg/coins/markets": () => marketsBody,
      "/cg/coins/arbitrum/market_chart": () => fixture("coingecko-chart-arbitrum.json"),
      "/cg/coins/ethereum/market_chart": () => fixture("coingecko-chart-ethereum.json"),
      "/cg/coins/arbitrum/tickers": () => fixture("coingecko-tickers-arbitrum.json"),
    };
    const route = routes[url.pathname];
    if (!route) {
      res.writeHead(404, { "content-type": "application/json" }).end('{"error":"not found"}');
      return;
    }
    res.writeHead(200, { "content-type": "application/json" }).end(route());
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

/** A two-token base snapshot cut from the shipped one (ARB is served by the fixtures, JUP is not). */
function smallBase(): UnlockSnapshot {
  const snap = loadUnlockStore().snapshot;
  return { ...snap, tokens: snap.tokens.filter((t) => t.symbol === "ARB" || t.symbol === "JUP") };
}

function tmpOut(base: UnlockSnapshot): string {
  const dir = mkdtempSync(join(tmpdir(), "ingest-"));
  const out = join(dir, "unlocks.snapshot.json");
  writeFileSync(out, JSON.stringify(base));
  return out;
}

const common = (out: string, base: UnlockSnapshot) => ({
  base,
  out,
  defillamaBase: `${baseUrl}/llama`,
  coingeckoBase: `${baseUrl}/cg`,
  schedules: "defillama" as const,
  historyDays: 120,
  depth: true,
  benchmarkId: "ethereum",
  clock: () => new Date("2026-11-22T12:00:00Z"),
  progress: false,
});

describe("runIngest against a local fixture server", () => {
  it("converts DefiLlama unlockEvents and CoinGecko daily history into a valid snapshot", async () => {
    const base = smallBase();
    const out = tmpOut(base);
    const report = await runIngest(common(out, base));
    const snap = parseUnlockSnapshot(readFileSync(out, "utf8"), out);
    const arb = snap.tokens.find((t) => t.symbol === "ARB")!;

    expect(report.schedulesUpdated).toEqual(["ARB"]);
    expect(report.marketsUpdated).toEqual(["ARB"]);
    expect(report.kept).toEqual(["JUP"]);
    // Foundation: 7M/week from 2026-01-01 to 2026-03-01 (59 days), then 3.5M/week to 2026-04-01 (31 days).
    const foundation = arb.schedules.filter((p) => p.recipient === "Foundation");
    expect(foundation.map((p) => [p.kind, p.start, p.end, p.category])).toEqual([
      ["linear", "2026-01-01", "2026-03-01", "foundation"],
      ["linear", "2026-03-01", "2026-04-01", "foundation"],
    ]);
    expect(foundation[0]!.amount_tokens).toBeCloseTo(59_000_000, 3);
    expect(foundation[1]!.amount_tokens).toBeCloseTo(15_500_000, 3);
    const cliffs = arb.schedules.filter((p) => p.kind === "cliff");
    expect(cliffs.map((p) => [p.recipient, p.category, p.start, p.amount_tokens])).toEqual([
      ["Investors", "investors", "2026-03-16", 36520833.33],
      ["Team", "team", "2026-03-16", 56125000],
    ]);
    expect(cliffs.every((p) => p.source_type === "aggregator")).toBe(true);

    expect(arb.market).toMatchObject({
      price_usd: 0.31,
      synthetic: false,
      as_of: "2026-11-22",
      depth_2pct_usd: 1_150_000,
    });
    expect(arb.supply).toMatchObject({ circulating: 5.2e9, synthetic: false });
    expect(arb.prices!.synthetic).toBe(false);
    const chart = JSON.parse(fixture("coingecko-chart-arbitrum.json")) as { prices: [number, number][] };
    // Last day's value is the 00:00 UTC point, not the intraday "now" point appended after it.
    expect(arb.prices!.close.at(-1)).toBe(chart.prices[119]![1]);
    expect(arb.prices!.close).toHaveLength(120);
    expect(snap.benchmark.prices.synthetic).toBe(false);
    // JUP could not be refreshed: it keeps its synthetic data and the snapshot says so.
    expect(snap.tokens.find((t) => t.symbol === "JUP")!.market.synthetic).toBe(true);
    expect(snap.synthetic).toBe(true);
    expect(report.warnings.some((w) => w.startsWith("JUP"))).toBe(true);
    expect(
      seen.some((s) =>
        s.startsWith("/cg/coins/arbitrum/market_chart?vs_currency=usd&days=120&interval=daily"),
      ),
    ).toBe(true);
  });

  it("leaves the previous snapshot intact when the refreshed one would be invalid", async () => {
    const base = smallBase();
    const out = tmpOut(base);
    const before = readFileSync(out, "utf8");
    marketsBody = JSON.stringify([
      { ...JSON.parse(fixture("coingecko-markets.json"))[0], circulating_supply: -5 },
    ]);
    try {
      await expect(runIngest(common(out, base))).rejects.toThrow(/tokens\[0\] \(ARB\)\.supply\.circulating/);
    } finally {
      marketsBody = fixture("coingecko-markets.json");
    }
    expect(readFileSync(out, "utf8")).toBe(before);
    // No temp files left behind either.
    expect(readdirSync(join(out, "..")).filter((f) => f.endsWith(".tmp"))).toEqual([]);
  });
});
