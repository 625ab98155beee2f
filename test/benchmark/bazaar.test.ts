import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readRecordings } from "../../scripts/market-files.js";
import { bazaarItemToEntry, fetchBazaarListing, resourceKey } from "../../src/benchmark/bazaar.js";
import { repoRoot } from "../../src/benchmark/catalog/snapshot.js";
import { buildMarketSnapshot } from "../../src/benchmark/market-build.js";
import { compactItem, recordingFromListing } from "../../src/benchmark/recording.js";

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
  listing_url: "https://facilitator.example/discovery/resources",
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
    if (!("entry" in out)) throw new Error(out.dropped);
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
    if (!("entry" in out)) throw new Error(out.dropped);
    expect(out.entry.amount_atomic).toBe("8000");
    expect(out.entry.network).toBe("eip155:8453");
    expect(out.entry.service).toBe("Multi Quotes");
    expect(out.entry.tags).toContain("method-inferred");
  });

  it("drops testnet-only, non-http and unpriced items with a named reason", () => {
    expect(convert(3)).toEqual({ dropped: "testnet_only" });
    expect(convert(4)).toEqual({ dropped: "not_http_resource" });
    expect(convert(5)).toEqual({ dropped: "no_atomic_amount" });
  });
});

describe("the shipped recordings through the live parser (real, dirty shapes)", () => {
  const recordings = readRecordings();
  const items = recordings.flatMap((r) =>
    r.items.map((item) => ({ item: item as Record<string, unknown>, rec: r })),
  );
  const parse = (i: (typeof items)[number]) =>
    bazaarItemToEntry(i.item, {
      source_id: `bazaar:${i.rec.name}`,
      compiled_on: i.rec.recorded_at.slice(0, 10),
      listing_url: i.rec.facilitator_discovery_url,
    });
  type Acc = { network?: string; asset?: string; amount?: string; maxAmountRequired?: string };
  const accepts = (i: (typeof items)[number]) => (i.item.accepts ?? []) as Acc[];

  it("ships both recordings, compacted, with their provenance", () => {
    expect(recordings.map((r) => [r.name, r.items.length])).toEqual([
      ["cdp-bazaar-crawl_2025-12-31_oops402", 1400],
      ["cdp-bazaar-discovery-resources_2026-03-17_402pub", 1000],
    ]);
    for (const r of recordings) {
      expect(r.provenance.commit).toMatch(/^[0-9a-f]{40}$/);
      expect(r.provenance.license).toBe("MIT");
    }
  });

  it("drops the two type:object items", () => {
    const objects = items.filter((i) => i.item.type === "object");
    expect(objects.length).toBe(2);
    for (const o of objects) expect(parse(o)).toEqual({ dropped: "not_http_resource" });
  });

  it("reads v2 `amount` items inside a mostly-v1 (`maxAmountRequired`) listing", () => {
    const dec = items.filter((i) => i.rec.name.includes("2025-12-31"));
    const v2 = dec.filter((i) => i.item.x402Version === 2 && accepts(i).some((a) => a.amount !== undefined));
    const v1 = dec.filter(
      (i) => i.item.x402Version === 1 && accepts(i).some((a) => a.maxAmountRequired !== undefined),
    );
    expect(v2.length).toBeGreaterThan(30);
    expect(v1.length).toBeGreaterThan(1000);
    for (const i of [v2[0], v1[0]]) {
      if (i === undefined) throw new Error("missing");
      const out = parse(i);
      if (!("entry" in out)) throw new Error(out.dropped);
      const a = accepts(i)[0] as Acc;
      expect(out.entry.amount_atomic).toBe(a.amount ?? a.maxAmountRequired);
    }
  });

  it("prices Base USDC whichever letter case the address is written in", () => {
    const lower = items.find((i) =>
      accepts(i).some(
        (a) => a.asset === "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913" && a.network === "base",
      ),
    );
    if (lower === undefined) throw new Error("no lower-case USDC address in the recordings");
    const out = parse(lower);
    if (!("entry" in out)) throw new Error(out.dropped);
    expect(out.entry.price_usd).not.toBeNull();
    expect(out.entry.network).toBe("eip155:8453");
  });

  it("keeps http:// resources, keyed like their https:// twin", () => {
    const plain = items.find(
      (i) => typeof i.item.resource === "string" && i.item.resource.startsWith("http://"),
    );
    if (plain === undefined) throw new Error("no http:// resource in the recordings");
    const out = parse(plain);
    if (!("entry" in out)) throw new Error(out.dropped);
    expect(resourceKey(out.entry.url)).toBe(resourceKey(out.entry.url.replace(/^http:/, "https:")));
  });

  it("chooses the Base USDC offer of a multi-accepts item", () => {
    const multi = items.find(
      (i) =>
        accepts(i).length > 1 &&
        accepts(i)[0]?.network !== "base" &&
        accepts(i)[0]?.network !== "eip155:8453" &&
        accepts(i).some((a) => a.network === "eip155:8453" || a.network === "base"),
    );
    if (multi === undefined) throw new Error("no multi-accepts item with Base second");
    const out = parse(multi);
    if (!("entry" in out)) throw new Error(out.dropped);
    expect(out.entry.network).toBe("eip155:8453");
  });

  it("drops base-sepolia offers as testnet_only", () => {
    const testnet = items.filter((i) => accepts(i).every((a) => a.network === "base-sepolia"));
    expect(testnet.length).toBeGreaterThan(300);
    for (const t of testnet) expect(parse(t)).toEqual({ dropped: "testnet_only" });
  });
});

describe("recording compaction", () => {
  it("keeps what the parser reads and cuts long descriptions", () => {
    const raw = {
      resource: "https://a.example/x",
      type: "http",
      x402Version: 1,
      lastUpdated: "2026-01-01T00:00:00Z",
      accepts: [
        {
          scheme: "exact",
          network: "base",
          maxAmountRequired: "10",
          asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
          payTo: "0x1",
          description: "x".repeat(1000),
          mimeType: "application/json",
          outputSchema: { input: { method: "POST", bodyFields: { a: 1 } }, output: { big: true } },
        },
      ],
    };
    const c = compactItem(raw) as { accepts: Record<string, unknown>[] };
    expect(c.accepts[0]).toEqual({
      scheme: "exact",
      network: "base",
      maxAmountRequired: "10",
      asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
      payTo: "0x1",
      description: "x".repeat(240),
      outputSchema: { input: { method: "POST" } },
    });
    const ctx2 = {
      source_id: "s",
      compiled_on: "2026-01-01",
      listing_url: "https://f.example/discovery/resources",
    };
    expect(bazaarItemToEntry(c, ctx2)).toEqual(bazaarItemToEntry(raw, ctx2));
  });
});

describe("a live listing, end to end (fetch → recording → market build)", () => {
  it("goes through the same parser and de-duplication as the shipped recordings", async () => {
    const listing = await fetchBazaarListing(fac.url, { pageSize: 2, type: "http" });
    const rec = recordingFromListing(listing, "live-test", new Date("2026-11-23T12:00:00Z"));
    expect(rec.facilitator_discovery_url).toBe(listing.listing_url);
    expect(rec.items.length).toBe(6);
    const compiled = JSON.parse(
      readFileSync(join(repoRoot(), "data", "x402-catalog", "catalog.json"), "utf8"),
    );
    const snap = buildMarketSnapshot(compiled, "x402-catalog test", [...readRecordings(), rec]);
    const live = snap.sources.find((s) => s.id === "bazaar:live-test");
    expect(live).toMatchObject({
      kind: "bazaar_recording",
      origin: "recording:live-test",
      read: 6,
      kept: 3,
      dropped: { testnet_only: 1, not_http_resource: 1, no_atomic_amount: 1 },
    });
    // api.exa.ai/search is hand-compiled with an exact price: the curated entry stays, once.
    expect(snap.endpoints.filter((e) => resourceKey(e.url) === "api.exa.ai/search").length).toBe(1);
    const weather = snap.endpoints.find((e) => e.url === "https://weather.fixture-seller.example/v1/current");
    expect(weather).toMatchObject({
      source_id: "bazaar:live-test",
      source_url: listing.listing_url,
      observed_at: "2025-11-20T00:53:20.000Z",
      calls_30d: 400,
      unique_payers_30d: 2,
    });
    expect(snap.build.kept - snap.build.duplicates_merged).toBe(snap.endpoints.length);
  });
});
