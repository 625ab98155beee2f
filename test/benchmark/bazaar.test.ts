import { copyFileSync, mkdtempSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { catalogFromSnapshot, defaultSnapshotPath, repoRoot } from "../../src/store/catalog.js";
import { bazaarItemToEntry, fetchBazaarListing, ingestBazaar } from "../../src/benchmark/bazaar.js";

const fixture = JSON.parse(
  readFileSync(join(repoRoot(), "test", "fixtures", "benchmark", "bazaar-items.json"), "utf8"),
) as { items: unknown[] };

interface Seen {
  path: string;
  limit: number;
  offset: number;
  type: string | null;
}

/** A facilitator's discovery endpoint on 127.0.0.1 paging through the fixture items. */
function startFacilitator(
  opts: { failWith?: number; omitTotal?: boolean } = {},
): Promise<{ server: Server; url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    const u = new URL(req.url ?? "/", "http://127.0.0.1");
    if (u.pathname !== "/facilitator/discovery/resources") {
      res.writeHead(404).end();
      return;
    }
    const limit = Number(u.searchParams.get("limit") ?? "10");
    const offset = Number(u.searchParams.get("offset") ?? "0");
    seen.push({ path: u.pathname, limit, offset, type: u.searchParams.get("type") });
    if (opts.failWith !== undefined) {
      res.writeHead(opts.failWith, { "content-type": "application/json" }).end('{"error":"down"}');
      return;
    }
    const items = fixture.items.slice(offset, offset + limit);
    const pagination = opts.omitTotal ? { limit, offset } : { limit, offset, total: fixture.items.length };
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ x402Version: 2, items, pagination }));
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      resolve({ server, url: `http://127.0.0.1:${port}/facilitator/`, seen });
    }),
  );
}

let fac: Awaited<ReturnType<typeof startFacilitator>>;
beforeAll(async () => {
  fac = await startFacilitator();
});
afterAll(() => fac.server.close());

const ctx = {
  source_id: "bazaar:test",
  compiled_on: "2026-11-23",
  ingested_at: "2026-11-23T12:00:00.000Z",
  listing_url: "http://127.0.0.1/discovery/resources",
};

describe("Bazaar listing fetch", () => {
  it("follows limit/offset pagination to pagination.total", async () => {
    fac.seen.length = 0;
    const listing = await fetchBazaarListing(fac.url, { pageSize: 2, type: "http" });
    expect(listing.items.length).toBe(6);
    expect(listing.pages).toBe(3);
    expect(listing.complete).toBe(true);
    expect(listing.total).toBe(6);
    expect(fac.seen.map((s) => s.offset)).toEqual([0, 2, 4]);
    expect(fac.seen.every((s) => s.limit === 2 && s.type === "http")).toBe(true);
  });

  it("stops on a short page when the listing gives no total, and honours maxPages", async () => {
    const noTotal = await startFacilitator({ omitTotal: true });
    try {
      const listing = await fetchBazaarListing(noTotal.url, { pageSize: 4 });
      expect(listing.items.length).toBe(6);
      expect(noTotal.seen.map((s) => s.offset)).toEqual([0, 4]);
      const cut = await fetchBazaarListing(noTotal.url, { pageSize: 1, maxPages: 2 });
      expect(cut.items.length).toBe(2);
      expect(cut.complete).toBe(false);
    } finally {
      noTotal.server.close();
    }
  });
});

describe("Bazaar item conversion", () => {
  const convert = (i: number) => bazaarItemToEntry(fixture.items[i], ctx);

  it("reads v2 amount, usage, method and category", () => {
    const out = convert(0);
    expect("entry" in out).toBe(true);
    if (!("entry" in out)) return;
    expect(out.entry).toMatchObject({
      url: "https://api.exa.ai/search",
      method: "POST",
      amount_atomic: "7000",
      amount_basis: "observed",
      price_usd: 0.007,
      network: "eip155:8453",
      x402_version: 2,
      category: "search",
      calls_30d: 1840,
      unique_payers_30d: 57,
      observed_at: "2026-11-20T10:00:00.000Z",
      source_id: "bazaar:test",
    });
  });

  it("reads v1 maxAmountRequired, maps the v1 network name and unix lastUpdated, infers category from tags", () => {
    const out = convert(1);
    if (!("entry" in out)) throw new Error(out.skipped);
    expect(out.entry).toMatchObject({
      method: "GET",
      amount_atomic: "2500",
      price_usd: 0.0025,
      network: "eip155:8453",
      x402_version: 1,
      category: "data",
      calls_30d: 400,
      unique_payers_30d: 2,
      observed_at: "2025-11-20T00:53:20.000Z",
    });
  });

  it("prefers the Base USDC requirement among several", () => {
    const out = convert(2);
    if (!("entry" in out)) throw new Error(out.skipped);
    expect(out.entry.amount_atomic).toBe("8000");
    expect(out.entry.network).toBe("eip155:8453");
    expect(out.entry.service).toBe("Multi Quotes");
    expect(out.entry.tags).toContain("method-inferred");
  });

  it("keeps testnet items with their testnet id and skips non-http or unpriced items", () => {
    const t = convert(3);
    if (!("entry" in t)) throw new Error(t.skipped);
    expect(t.entry.network).toBe("eip155:84532");
    expect(t.entry.price_usd).toBe(0.001);
    expect(convert(4)).toEqual({ skipped: "resource type facilitator" });
    expect(convert(5)).toEqual({ skipped: "no accepts[] entry with an atomic amount" });
  });
});

describe("ingest into a snapshot", () => {
  function tempSnapshot(): string {
    const dir = mkdtempSync(join(tmpdir(), "bazaar-ingest-"));
    const path = join(dir, "catalog.snapshot.json");
    copyFileSync(defaultSnapshotPath(), path);
    return path;
  }

  it("merges listed endpoints, updating existing ones with usage, and validates the result", async () => {
    const path = tempSnapshot();
    const report = await ingestBazaar({
      facilitatorUrl: fac.url,
      snapshotPath: path,
      pageSize: 2,
      now: new Date("2026-11-23T12:00:00Z"),
    });
    expect(report).toMatchObject({ items: 6, converted: 4, updated: 1, added: 3, pages: 3, complete: true });
    const snap = JSON.parse(readFileSync(path, "utf8"));
    const catalog = catalogFromSnapshot(snap, path);
    expect(catalog.entries.length).toBe(312);
    expect(catalog.generated_at).toBe("2026-11-23T12:00:00.000Z");
    const exa = catalog.entries.filter((e) => e.url === "https://api.exa.ai/search");
    expect(exa.length).toBe(1);
    expect(exa[0]).toMatchObject({
      calls_30d: 1840,
      unique_payers_30d: 57,
      source_id: `bazaar:${new URL(fac.url).host}`,
    });
    expect(exa[0]?.tags).toEqual(expect.arrayContaining(["web-search", "neural", "bazaar"]));
    const source = catalog.sourceById.get(`bazaar:${new URL(fac.url).host}`);
    expect(source?.kind).toBe("bazaar_discovery");
    expect(source?.entry_count).toBe(4);
    expect(catalog.sourceById.get("x402-catalog")?.entry_count).toBe(308);

    // Re-ingesting the same listing is idempotent.
    const again = await ingestBazaar({
      facilitatorUrl: fac.url,
      snapshotPath: path,
      now: new Date("2026-11-23T12:00:00Z"),
    });
    expect(again).toMatchObject({ updated: 4, added: 0, removed_stale: 0, endpoints: 312 });
  });

  it("leaves the snapshot untouched when the facilitator fails", async () => {
    const down = await startFacilitator({ failWith: 503 });
    const path = tempSnapshot();
    const before = readFileSync(path, "utf8");
    try {
      await expect(ingestBazaar({ facilitatorUrl: down.url, snapshotPath: path })).rejects.toThrow(
        "HTTP 503",
      );
      expect(readFileSync(path, "utf8")).toBe(before);
    } finally {
      down.server.close();
    }
  });
});
