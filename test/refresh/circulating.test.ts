import { mkdtempSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { liveUnlockData, loadServedSnapshot, servedReports } from "../../src/refresh/boot.js";
import { buildUnlockStore } from "../../src/unlocks/data/snapshot.js";
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

beforeAll(async () => {
  server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    asked.push(url.pathname + url.search);
    const ids = (url.searchParams.get("ids") ?? "").split(",");
    res
      .writeHead(200, { "content-type": "application/json" })
      .end(JSON.stringify(rows.filter((r) => ids.includes(r.id))));
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
