import { mkdtempSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadCatalog } from "../../src/benchmark/catalog/snapshot.js";
import { createLiveBenchmark, type LiveBenchmark } from "../../src/sources/bazaar/bazaar.js";
import { createRefresher, type Refresher } from "../../src/refresh/refresher.js";
import { readUnlockSnapshot } from "../../src/unlocks/data/snapshot.js";

/**
 * A CDP Bazaar stand-in on 127.0.0.1: `GET /platform/v2/x402/discovery/resources?type=http&limit=&offset=` answering
 * `{x402Version, items, pagination: {limit, offset, total}}` (CDP's list-resources shape) with the items of the
 * recorded CDP listing shipped in data/bazaar (2026-03-17, 402pub), in their recorded order.
 */
const recorded = JSON.parse(
  readFileSync(
    new URL("../../data/bazaar/cdp-bazaar-discovery-resources_2026-03-17_402pub.json", import.meta.url),
    "utf8",
  ),
) as { items: unknown[] };
const stand = { items: recorded.items, htmlAtOffset: -1, requests: 0 };
let server: Server;
/** The production listing URL (the catalog records only https listings); the test's fetch takes it to the stand-in. */
const discoveryUrl = "https://api.cdp.coinbase.com/platform/v2/x402/discovery/resources";
let standInOrigin = "";
let dataDir: string;
let live: LiveBenchmark;
let refresher: Refresher;
const now = new Date("2026-11-26T09:00:00Z");

beforeAll(async () => {
  server = createServer((req, res) => {
    stand.requests++;
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    if (url.pathname !== "/platform/v2/x402/discovery/resources") {
      res.writeHead(404).end();
      return;
    }
    const limit = Math.min(Number(url.searchParams.get("limit") ?? 100), 100);
    const offset = Number(url.searchParams.get("offset") ?? 0);
    if (offset === stand.htmlAtOffset) {
      res.writeHead(502, { "content-type": "text/html" }).end("<html><body>502 Bad Gateway</body></html>");
      return;
    }
    res.writeHead(200, { "content-type": "application/json" }).end(
      JSON.stringify({
        x402Version: 1,
        items: stand.items.slice(offset, offset + limit),
        pagination: { limit, offset, total: stand.items.length },
      }),
    );
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  standInOrigin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  dataDir = mkdtempSync(join(tmpdir(), "p402-bazaar-"));
  live = createLiveBenchmark(loadCatalog(), { clock: () => now });
  refresher = createRefresher({
    dataDir,
    initial: readUnlockSnapshot(new URL("../../data/unlocks.snapshot.json", import.meta.url).pathname),
    bases: { binance: "http://127.0.0.1:9", bybit: "http://127.0.0.1:9", coingecko: "http://127.0.0.1:9" },
    coinIds: new Map(),
    clock: () => now,
    // Loopback only: the https origin is served by the stand-in.
    fetchImpl: ((url: string, init?: RequestInit) =>
      fetch(url.replace("https://api.cdp.coinbase.com", standInOrigin), init)) as never,
    sources: ["bazaar"],
    bazaar: { discoveryUrl, onCatalog: (c) => live.swap(c) },
  });
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const sourceStatus = () => refresher.status().find((s) => s.source === "bazaar");

describe("the x402 market refreshes from the Bazaar listing, every page, through the catalog's parser", () => {
  it("a poisoned page (HTML 502) keeps the market as it was", async () => {
    const before = live.catalog();
    stand.htmlAtOffset = 300;
    await refresher.runOnce(["bazaar"]);
    stand.htmlAtOffset = -1;
    expect(live.catalog()).toBe(before);
    expect(sourceStatus()?.last_error).toMatch(/listing \(.*HTTP 502/);
    expect(sourceStatus()?.last_success).toBeNull();
  });

  it("a complete listing moves the benchmark's market to the time of the fetch", async () => {
    const before = live.catalog();
    const pagesBefore = stand.requests;
    await refresher.runOnce(["bazaar"]);
    expect(stand.requests - pagesBefore).toBe(Math.ceil(stand.items.length / 100));
    const after = live.catalog();
    expect(sourceStatus()?.last_error ?? null).toBeNull();
    expect(after).not.toBe(before);
    expect(before.generated_at < now.toISOString()).toBe(true);
    expect(after.generated_at).toBe("2026-11-26T00:00:00.000Z");
    expect(after.sources.map((s) => s.id)).toEqual(
      expect.arrayContaining([expect.stringMatching(/live_2026-11-26/)]),
    );
    expect(sourceStatus()).toMatchObject({
      last_success: now.toISOString(),
      last_error: null,
      data_as_of: now.toISOString(),
    });
    // A paid answer's market date is the refreshed one.
    const entry = after.entries.find((e) => e.price_usd !== null);
    const result = await live.service.benchmark(
      { endpoint_url: entry?.url as string },
      { availability: "unknown" },
    );
    expect(result.route.generated_at).toBe("2026-11-26T00:00:00.000Z");
  });

  it("a listing that lost over a third of its items is refused: the last good market stays", async () => {
    const good = live.catalog();
    stand.items = recorded.items.slice(0, Math.floor(recorded.items.length / 2));
    await refresher.runOnce(["bazaar"]);
    stand.items = recorded.items;
    expect(live.catalog()).toBe(good);
    expect(sourceStatus()?.last_error).toMatch(/items, down from \d+/);
  });
});
