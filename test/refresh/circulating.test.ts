import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { liveUnlockData, loadServedSnapshot, servedReports } from "../../src/refresh/boot.js";
import { checkCirculating } from "../../src/sources/coingecko/circulating.js";
import type { FetchLike } from "../../src/sources/http.js";
import { refreshSources } from "../../src/sources/runner.js";
import { buildUnlockStore, readUnlockSnapshot } from "../../src/unlocks/data/snapshot.js";
import { testConfig } from "../helpers/app.js";

/**
 * A CoinGecko stand-in: `GET /api/v3/coins/markets?vs_currency=usd&ids=…` answering the documented array of
 * `{id, symbol, name, current_price, circulating_supply, total_supply, max_supply, last_updated}` — the rows of
 * test/fixtures/unlocks/coingecko-markets.json (hand-written in CoinGecko's shape; provenance in its README) for the
 * ids asked that it has; ids it lacks are left out, as CoinGecko does.
 */
const rows = JSON.parse(
  readFileSync(new URL("../fixtures/unlocks/coingecko-markets.json", import.meta.url), "utf8"),
) as { id: string }[];
let server: Server;
let base = "";
const asked: string[] = [];
/** Rows the stand-in answers instead of the fixture's, by coin id (a first live report, hostile or not). */
const override = new Map<string, object>();

beforeAll(async () => {
  server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    asked.push(url.pathname + url.search);
    const ids = (url.searchParams.get("ids") ?? "").split(",");
    const answer = override.size > 0 ? [...override.values()] : rows.filter((r) => ids.includes(r.id));
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(answer));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v3`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe("reported circulating supply: fetched by coin id, written in the agreed shape, anchoring the served data", () => {
  it("writes live.json, keeps tokens the answer lacks as failed, and the next generation anchors on the new figure", async () => {
    const dataDir = join(mkdtempSync(join(tmpdir(), "p402-circ-")), "data");
    const config = testConfig({ DATA_DIR: dataDir, COINGECKO_BASE_URL: base });
    const loaded = loadServedSnapshot(config);
    const clock = () => new Date("2026-11-26T10:00:00Z");
    const data = liveUnlockData(config, buildUnlockStore(loaded.snapshot, servedReports(config)), { clock });
    const run = await data.refresh?.refresher.runOnce(["coingecko"]);
    expect(asked[0]).toMatch(/^\/api\/v3\/coins\/markets\?vs_currency=usd&ids=.*arbitrum/);
    const outcome = run?.outcomes.find((o) => o.source === "coingecko");
    expect(outcome?.updated).toEqual(["ARB"]);
    expect(outcome?.failed.length).toBe(loaded.snapshot.tokens.length - 1);
    const live = JSON.parse(readFileSync(join(dataDir, "circulating-reported/live.json"), "utf8"));
    expect(live).toEqual([
      {
        token: "ARB",
        date: "2026-11-22",
        circulating_supply: "5200000000",
        source: "coingecko",
        coin_id: "arbitrum",
        as_of: "2026-11-22T00:00:00.000Z",
        price_usd: 0.31,
      },
    ]);
    // Rebuilt with it (no new candle was needed): the store's reports for ARB now end with CoinGecko's figure.
    expect(run?.swapped).toBe(true);
    const reports = data.live.current().service.data().reports.get("arb") ?? [];
    expect(reports.at(-1)).toMatchObject({ source: "coingecko", value: 5_200_000_000 });
    expect(reports.some((r) => r.source === "coinmarketcap")).toBe(true);
  });
});

describe("the first live report is bounded by the shipped one", () => {
  const shippedTia = {
    date: "2025-10-01",
    circulating_supply: "800034617.488835",
    as_of: "2025-10-02T00:00:00.000Z",
    source: "coinmarketcap",
  };
  const at = new Date("2026-11-26T00:00:00Z");

  it("with no live report, the shipped report is the previous one; a newer live one takes its place", () => {
    const bounds = { maxSupply: null, schedule: [], shipped: shippedTia };
    expect(() => checkCirculating("TIA", 1.1e9, at, bounds, undefined)).not.toThrow();
    expect(() => checkCirculating("TIA", 1e10, at, bounds, undefined)).toThrow(
      /against 800034617\.488835 reported by coinmarketcap \(shipped\) on 2025-10-01 .*bound ×1\.5/,
    );
    expect(() => checkCirculating("TIA", 4e8, at, bounds, undefined)).toThrow(/reported by coinmarketcap/);
    // Without either report nothing bounds a token that has no max supply: the gap the shipped report closes.
    expect(() =>
      checkCirculating("TIA", 1e10, at, { ...bounds, shipped: undefined }, undefined),
    ).not.toThrow();
    const live = {
      ...shippedTia,
      date: "2026-11-01",
      circulating_supply: "8000000000",
      as_of: "2026-11-01T00:00:00Z",
    };
    expect(() => checkCirculating("TIA", 1e10, at, bounds, live)).not.toThrow();
  });

  it("a hostile first report is refused and quarantined, a plausible one is taken (CoinGecko stand-in on 127.0.0.1)", async () => {
    const snapshot = readUnlockSnapshot(
      new URL("../../data/unlocks.snapshot.json", import.meta.url).pathname,
    );
    const now = new Date("2026-11-26T10:00:00Z");
    const row = (id: string, symbol: string, circulating: number) => ({
      id,
      symbol,
      current_price: null,
      circulating_supply: circulating,
      total_supply: null,
      max_supply: null,
      last_updated: "2026-11-26T00:00:00.000Z",
    });
    // TIA has no max supply: 12.5× its last shipped report (800M on 2025-10-01, plus 141M the schedule released since).
    override.set("celestia", row("celestia", "tia", 1e10));
    // ZK: its shipped 8.05B of 2025-10-01 plus the 3.59B its schedule released since, and a little less.
    override.set("zksync", row("zksync", "zk", 1.1e10));
    try {
      const dataDir = mkdtempSync(join(tmpdir(), "p402-circ-first-"));
      const run = await refreshSources(
        { ...snapshot, tokens: snapshot.tokens.filter((t) => t.symbol === "TIA" || t.symbol === "ZK") },
        ["coingecko"],
        {
          bases: { binance: base, bybit: base, coingecko: base },
          fetchImpl: globalThis.fetch as unknown as FetchLike,
          coinIds: new Map([
            ["TIA", "celestia"],
            ["ZK", "zksync"],
          ]),
          dataDir,
        },
        now,
      );
      const cg = run.outcomes.find((o) => o.source === "coingecko");
      expect(cg?.updated).toEqual(["ZK"]);
      expect(cg?.failed).toEqual([
        {
          item: "TIA",
          kind: "implausible",
          refused: true,
          error: expect.stringMatching(
            /^implausible: circulating 10000000000 against 800034617\.488835 reported by coinmarketcap \(shipped\) on 2025-10-01 plus 1406\d{5} released/,
          ),
        },
      ]);
      expect(existsSync(join(dataDir, "quarantine", "coingecko", "TIA.json"))).toBe(true);
      const live = JSON.parse(readFileSync(join(dataDir, "circulating-reported/live.json"), "utf8")) as {
        token: string;
      }[];
      expect(live.map((r) => r.token)).toEqual(["ZK"]);
    } finally {
      override.clear();
    }
  });
});
