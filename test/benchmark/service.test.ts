import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import fastJson from "fast-json-stringify";
import { Value } from "typebox/value";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { availabilityLabel } from "../../src/benchmark/availability.js";
import type { CatalogEntry } from "../../src/benchmark/catalog/schema.js";
import {
  type Catalog,
  catalogFromSnapshot,
  defaultSnapshotPath,
  loadCatalog,
} from "../../src/benchmark/catalog/snapshot.js";
import { serviceVotes } from "../../src/benchmark/market.js";
import { buildMarketIndex } from "../../src/benchmark/market-index.js";
import { MIN_SUBMARKET_SERVICES } from "../../src/benchmark/rules.js";
import { createBenchmarkService, NO_PRICE_OBSERVED } from "../../src/benchmark/service.js";
import { BenchmarkResult } from "../../src/schemas/benchmark-response.js";

const catalog = loadCatalog();
const clock = () => new Date("2026-11-23T08:00:00Z");
const service = createBenchmarkService(catalog, { clock });
const ctx = { availability: availabilityLabel("provisional", false) };
const run = (
  endpoint_url: string,
  category_hint?: Parameters<typeof service.benchmark>[0]["category_hint"],
) => service.benchmark(category_hint === undefined ? { endpoint_url } : { endpoint_url, category_hint }, ctx);

describe("benchmark on the shipped market", () => {
  it("describes a matched endpoint with its provenance, counts and the market's as-of date", async () => {
    const r = await run("https://2s.io/api/crypto/token-price");
    expect(r.route).toMatchObject({
      method: "GET",
      generated_at: "2026-11-22T00:00:00.000Z",
      price: { usd: 0.0012, amount_atomic: "1200" },
      network: "eip155:8453",
      observed_at: null,
      availability: "available through capped provisional x402 metadata",
    });
    expect(r.match).toMatchObject({ type: "exact", service: "2s.io" });
    expect(r.market).toMatchObject({ category: "data", submarket: "token_price", scope: "submarket" });
    expect(r.market.service_count).toBeGreaterThanOrEqual(MIN_SUBMARKET_SERVICES);
    expect(r.market.endpoint_count).toBeGreaterThan(r.market.service_count);
    expect(r.price_percentile_counts).toEqual({
      endpoint_count: r.market.endpoint_count,
      service_count: r.market.service_count,
    });
    expect(r.suggested_test_price_band).toMatchObject({
      endpoint_count: r.market.endpoint_count,
      service_count: r.market.service_count,
    });
    expect(r.market.as_of).toMatch(/^2026-/);
    expect(r.market.age_days).toBe(
      Math.floor((clock().getTime() - new Date(r.market.as_of as string).getTime()) / 86_400_000),
    );
    expect(r.source_trail[0]).toMatchObject({
      kind: "catalog_entry",
      source_url: "https://2s.io/crypto/token-price",
      source: "compilation:x402-catalog 2026-11-22",
    });
    expect(r.source_trail.filter((t) => t.kind === "market_snapshot").map((t) => t.source)).toEqual([
      "compilation:x402-catalog 2026-11-22",
      "recording:cdp-bazaar-crawl_2025-12-31_oops402",
      "recording:cdp-bazaar-discovery-resources_2026-03-17_402pub",
    ]);
    expect(r.benchmarked_at).toBe("2026-11-23T08:00:00.000Z");
    expect(r.live_probe).toMatchObject({ attempted: false, outcome: "not_needed" });
  });

  it("gives a Bazaar-listed endpoint its listing's date, discovery URL and recording", async () => {
    const r = await run("https://api.carbon-cashmere.de/v1/strategy-performance");
    expect(r.route.observed_at).toBe("2026-03-17T19:00:51.788Z");
    expect(r.source_trail[0]).toMatchObject({
      kind: "bazaar_listing",
      source_url: "https://api.cdp.coinbase.com/platform/v2/x402/discovery/resources",
      source: "recording:cdp-bazaar-discovery-resources_2026-03-17_402pub",
      observed_at: "2026-03-17T19:00:51.788Z",
    });
    // 250 days before the benchmark: stale.
    expect(r.route.confidence).toBe("low");
    expect(r.route.confidence_detail.reasons.join(" ")).toContain("250 days old");
  });

  it("weights each service once: percentiles, the endpoint's rank and the band are over service prices", async () => {
    const r = await run("https://2s.io/api/crypto/token-price");
    const index = buildMarketIndex(catalog);
    const pool = index.pools.get("data/token_price")!;
    const others = pool.entries.filter((e) => e.service !== "2s.io");
    const votes = serviceVotes(others);
    expect(r.market.service_count).toBe(votes.length);
    expect(r.market.endpoint_count).toBe(others.length);
    expect(r.market.excluded.self).toBe(pool.entries.length - others.length);
    const below = votes.filter((v) => v.usd < 0.0012).length;
    const equal = votes.filter((v) => v.usd === 0.0012).length;
    expect(r.price_percentile).toBeCloseTo(((below + equal / 2) / votes.length) * 100, 1);
    // A service listing many endpoints at one price moves the market no more than one listing.
    const biggest = [...new Set(others.map((e) => e.service))]
      .map((s) => ({ s, n: others.filter((e) => e.service === s).length }))
      .sort((a, b) => b.n - a.n)[0]!;
    expect(biggest.n).toBeGreaterThan(5);
    const once = serviceVotes(
      others.filter(
        (e, i, all) => e.service !== biggest.s || all.findIndex((x) => x.service === biggest.s) === i,
      ),
    );
    expect(once.length).toBe(votes.length);
  });

  it("falls back to the category, saying why, when a finer market has too few services", async () => {
    const r = await run("https://2s.io/api/stocks/quote");
    expect(r.market).toMatchObject({ category: "data", scope: "category", submarket: null });
    expect(r.market.fallback_reason).toContain("traditional_markets");
    expect(r.market.fallback_reason).toContain(`need ${MIN_SUBMARKET_SERVICES}`);
  });

  it("keeps testnet, bundle and top-up prices out of every market", () => {
    const index = buildMarketIndex(catalog);
    const all = index.pools.get("uncategorized")!;
    const urls = new Set(all.entries.map((e) => e.entry.url));
    expect(urls.has("https://scrvo.com/api/crawl")).toBe(false); // base-sepolia
    expect(urls.has("https://stableemail.dev/api/inbox/topup")).toBe(false);
    expect(urls.has("http://api.compute3.ai/api/x402/top_up")).toBe(false);
    expect(urls.has("https://api.vectorway.io/v1/credits/purchase")).toBe(false);
    expect(urls.has("https://api.spider.cloud/crawl")).toBe(false); // estimated
    expect(urls.has("https://x402.erpc.global/v1/solana-mainnet")).toBe(false); // Solana
    expect(all.excluded.testnet).toBeGreaterThanOrEqual(5);
  });

  it("matches templated URLs", async () => {
    const t = await run(
      "https://api.vaults.fyi/v2/deposit-options/0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
    );
    expect(t.match).toMatchObject({
      type: "template",
      matched_urls: ["https://api.vaults.fyi/v2/deposit-options/{address}"],
    });
    expect(t.route.price).toEqual({ usd: 0.025, amount_atomic: "25000" });
  });

  it("gives approximate, testnet and non-per-call prices low confidence and no position for top-ups", async () => {
    expect((await run("https://api.spider.cloud/search")).route.confidence).toBe("low");
    const testnet = await run("https://scrvo.com/api/crawl");
    expect(testnet.route.confidence).toBe("low");
    expect(testnet.route.confidence_detail.reasons.join(" ")).toContain("testnet");
    const topup = await run("https://stableemail.dev/api/inbox/topup");
    expect(topup.route.confidence).toBe("low");
    expect(topup.price_position).toBe("unknown");
    expect(topup.decision).toBe("needs_more_history");
    const del = await run("https://stabletravel.dev/api/flights/orders/cancel");
    expect(del.route).toMatchObject({ method: "POST", method_observed: "DELETE" });
  });

  it("resolves the category from the hint, the catalog, inference or the default", async () => {
    const hinted = await run("https://api.exa.ai/search", "data");
    expect([hinted.category, hinted.category_source]).toEqual(["data", "hint"]);
    const byWords = await run("https://tts.unknown-seller.example/v1/speech");
    expect([byWords.category, byWords.category_source]).toEqual(["media", "inferred"]);
    expect(byWords.category_evidence.join(" ")).toContain("speech");
    const none = await run("https://qwerty.example/zxcv");
    expect([none.category, none.category_source, none.market.scope]).toEqual([
      "uncategorized",
      "default",
      "all",
    ]);
    expect(none.market.service_count).toBeGreaterThan(200);
  });

  it("says plainly that no usage was observed and no alternatives were checked", async () => {
    const r = await run("https://2s.io/api/crypto/token-price");
    expect(r.market.usage_observed_count).toBe(0);
    expect(r.usage).toMatchObject({ observed: false, wash_check: "no_usage_data" });
    expect(r.usage.note).toContain("did not run");
    expect(r.alternatives_check).toMatchObject({ ran: false });
    expect(r.alternatives_check.detail).toContain("no usage was observed");
    expect(r.decision_reasons.join(" ")).toContain("no usage was observed");
  });

  it("is honest about an unknown endpoint", async () => {
    const r = await run("https://unknown-seller.example/v1/weather/forecast?city=Lisbon");
    expect(r.route).toMatchObject({ price: null, confidence: "unknown", network: null, asset: null });
    expect(r.match.type).toBe("none");
    expect(r.price_percentile).toBeNull();
    expect(r.price_position).toBe("unknown");
    expect(r.decision).toBe("needs_more_history");
    expect(r.usage.wash_check).toBe("no_usage_data");
    expect(r.live_probe.outcome).toBe("disabled");
  });

  it("returns only fields declared by the response schema", async () => {
    const stringify = fastJson(BenchmarkResult as object);
    for (const url of [
      "https://api.exa.ai/search",
      "https://unknown-seller.example/x",
      "https://stableemail.dev/api/inbox/topup",
    ]) {
      const r = await run(url);
      expect(Value.Check(BenchmarkResult, r)).toBe(true);
      expect(JSON.parse(stringify(r))).toEqual(JSON.parse(JSON.stringify(r)));
    }
  });
});

/** A small market with usage, to exercise the wash adjustment and alternatives. */
function usageCatalog(): Catalog {
  const snap = JSON.parse(readFileSync(defaultSnapshotPath(), "utf8"));
  const base = (over: Partial<CatalogEntry>): CatalogEntry => ({
    url: "https://a.example/x",
    method: "GET",
    price_usd: 0.01,
    amount_atomic: "10000",
    amount_basis: "observed",
    network: "eip155:8453",
    asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
    pay_to: "0x1111111111111111111111111111111111111111",
    x402_version: 2,
    service: "fixture",
    category: "inference",
    submarket: null,
    tags: ["bazaar"],
    observed_at: "2026-11-20T00:00:00.000Z",
    calls_30d: null,
    unique_payers_30d: null,
    source_url: "https://facilitator.example/discovery/resources",
    source_id: "bazaar:fixture",
    compiled_on: "2026-11-20",
    ...over,
  });
  const entries: CatalogEntry[] = [
    base({
      url: "https://wash.example/v1/chat",
      pay_to: "0x2222222222222222222222222222222222222222",
      price_usd: 0.02,
      amount_atomic: "20000",
      calls_30d: 5000,
      unique_payers_30d: 1,
    }),
    base({
      url: "https://popular.example/v1/chat",
      pay_to: "0x3333333333333333333333333333333333333333",
      price_usd: 0.01,
      amount_atomic: "10000",
      calls_30d: 300,
      unique_payers_30d: 40,
    }),
    base({
      url: "https://cheap-wash.example/v1/chat",
      pay_to: "0x4444444444444444444444444444444444444444",
      price_usd: 0.005,
      amount_atomic: "5000",
      calls_30d: 9000,
      unique_payers_30d: 2,
    }),
    base({
      url: "https://dear.example/v1/chat",
      pay_to: "0x5555555555555555555555555555555555555555",
      price_usd: 0.05,
      amount_atomic: "50000",
      calls_30d: 10,
      unique_payers_30d: 5,
    }),
  ];
  snap.sources.push({
    id: "bazaar:fixture",
    kind: "bazaar_recording",
    compiled_on: "2026-11-20",
    method: "fixture listing",
    origin: "recording:fixture",
    listing_url: "https://facilitator.example/discovery/resources",
    entry_count: entries.length,
    read: entries.length,
    kept: entries.length,
    dropped: {},
  });
  snap.endpoints.push(...entries);
  return catalogFromSnapshot(snap, "usage fixture");
}

describe("usage, wash adjustment and alternatives", () => {
  const svc = createBenchmarkService(usageCatalog(), { clock });

  it("discounts one-payer usage and points to a better-used endpoint at a lower price", async () => {
    const r = await svc.benchmark({ endpoint_url: "https://wash.example/v1/chat" }, ctx);
    expect(r.usage).toMatchObject({
      calls_30d: 5000,
      unique_payers_30d: 1,
      adjusted_calls_30d: 1,
      wash_adjusted: true,
      wash_check: "discounted",
    });
    expect(r.usage.note).toContain("1 payer");
    expect(r.usage.source_url).toBe("https://facilitator.example/discovery/resources");
    expect(r.alternatives.map((a) => a.url)).toEqual(["https://popular.example/v1/chat"]);
    expect(r.alternatives[0]).toMatchObject({
      adjusted_calls_30d: 300,
      price_usd: 0.01,
      amount_atomic: "10000",
    });
    expect(r.decision).toBe("better_alternative_available");
    expect(r.source_trail[0]).toMatchObject({
      kind: "bazaar_listing",
      observed_at: "2026-11-20T00:00:00.000Z",
    });
  });

  it("does not offer the wash-heavy cheaper endpoint or a dearer one as alternatives", async () => {
    const r = await svc.benchmark({ endpoint_url: "https://popular.example/v1/chat" }, ctx);
    expect(r.usage.wash_check).toBe("passed");
    expect(r.alternatives).toEqual([]);
    expect(r.decision).toBe("worth_testing");
  });
});

describe("live probe through the service", () => {
  let server: Server;
  let base: string;
  beforeAll(async () => {
    server = createServer((_req, res) => {
      res.writeHead(402, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          x402Version: 1,
          accepts: [
            {
              scheme: "exact",
              network: "base",
              maxAmountRequired: "4000",
              resource: "",
              description: "",
              mimeType: "",
              payTo: "0x7777777777777777777777777777777777777777",
              maxTimeoutSeconds: 60,
              asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
              outputSchema: {},
              extra: {},
            },
          ],
        }),
      );
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => server.close());

  it("prices an unknown endpoint from its 402 when enabled and allow-listed", async () => {
    const svc = createBenchmarkService(catalog, {
      clock,
      liveProbe: { enabled: true, allowHosts: ["127.0.0.1"] },
    });
    const r = await svc.benchmark({ endpoint_url: `${base}/v1/search`, category_hint: "search" }, ctx);
    expect(r.live_probe).toMatchObject({ attempted: true, outcome: "ok" });
    expect(r.match.type).toBe("live_probe");
    expect(r.route).toMatchObject({
      price: { usd: 0.004, amount_atomic: "4000" },
      network: "eip155:8453",
      observed_at: "2026-11-23T08:00:00.000Z",
    });
    // The probe's price is fresh; only the market's age can lower the confidence.
    expect(r.route.confidence_detail.reasons.join(" ")).not.toContain("price observation");
    expect(r.source_trail).toContainEqual(
      expect.objectContaining({ kind: "live_probe", observed_at: "2026-11-23T08:00:00.000Z" }),
    );
    expect(r.price_position).toBe("below_market");
  });

  it("refuses the same server without the allow-list and stays unknown", async () => {
    const svc = createBenchmarkService(catalog, { clock, liveProbe: { enabled: true } });
    const r = await svc.benchmark({ endpoint_url: `${base}/v1/search` }, ctx);
    expect(r.live_probe).toMatchObject({ attempted: true, outcome: "refused_address" });
    expect(r.route.confidence).toBe("unknown");
  });

  it("does not probe when the catalog has the price or the probe is off", async () => {
    const svc = createBenchmarkService(catalog, {
      clock,
      liveProbe: { enabled: true, allowHosts: ["127.0.0.1"] },
    });
    expect((await svc.benchmark({ endpoint_url: "https://api.exa.ai/search" }, ctx)).live_probe.outcome).toBe(
      "not_needed",
    );
    expect((await service.benchmark({ endpoint_url: `${base}/v1/search` }, ctx)).live_probe.outcome).toBe(
      "disabled",
    );
  });
});

describe("refusals before payment (precheck)", () => {
  const resolveTo = (address: string) => async (): Promise<{ address: string; family: 4 | 6 }[]> => [
    { address, family: address.includes(":") ? 6 : 4 },
  ];

  it("refuses non-public literals, local names and user info whether or not the probe is on", async () => {
    for (const url of [
      "http://127.0.0.1/x",
      "http://[::1]/",
      "http://localhost/",
      "https://a:b@x.example/",
    ]) {
      expect(await service.precheck({ endpoint_url: url }), url).not.toBeNull();
    }
    expect(await service.precheck({ endpoint_url: "https://unknown-seller.example/x" })).toBeNull();
  });

  it("names the refused address class with the article its sound takes", async () => {
    const detail = async (url: string) => (await service.precheck({ endpoint_url: url }))?.detail;
    expect(await detail("http://[::ffff:127.0.0.1]/")).toBe("must not point at an ipv4-mapped address");
    expect(await detail("http://0.0.0.0/")).toBe("must not point at an unspecified address");
    expect(await detail("http://[fd00::1]/")).toBe("must not point at a unique-local address");
    expect(await detail("http://127.0.0.1/")).toBe("must not point at a loopback address");
  });

  it("refuses a name that resolves to a private address when the probe would run, and only then", async () => {
    const privateDns = createBenchmarkService(catalog, {
      clock,
      liveProbe: { enabled: true, resolve: resolveTo("10.1.2.3") },
    });
    expect(await privateDns.precheck({ endpoint_url: "https://sneaky.example/price" })).toMatchObject({
      detail: expect.stringContaining("non-public"),
    });
    // Listed with a price: the probe will not run, so there is nothing to refuse.
    expect(await privateDns.precheck({ endpoint_url: "https://2s.io/api/crypto/token-price" })).toBeNull();
    // Placeholders: nothing concrete to call.
    expect(await privateDns.precheck({ endpoint_url: "https://sneaky.example/price/{id}" })).toBeNull();
    const publicDns = createBenchmarkService(catalog, {
      clock,
      liveProbe: { enabled: true, resolve: resolveTo("93.184.215.14") },
    });
    expect(await publicDns.precheck({ endpoint_url: "https://sneaky.example/price" })).toBeNull();
  });
});

describe("the probe never tells whether a port is open", () => {
  let open200: Server;
  let closedPort: number;
  beforeAll(async () => {
    open200 = createServer((_req, res) => res.writeHead(200, { "content-type": "text/plain" }).end("hello"));
    await new Promise<void>((r) => open200.listen(0, "127.0.0.1", () => r()));
    // A port that was just free: bind, note it, close.
    const tmp = createServer();
    await new Promise<void>((r) => tmp.listen(0, "127.0.0.1", () => r()));
    closedPort = (tmp.address() as AddressInfo).port;
    await new Promise<void>((r) => tmp.close(() => r()));
  });
  afterAll(() => open200.close());

  it("answers a closed port and an open non-x402 port alike, each only at the probe's deadline", async () => {
    const timeoutMs = 300;
    const svc = createBenchmarkService(catalog, {
      clock,
      liveProbe: { enabled: true, allowHosts: ["127.0.0.1"], timeoutMs },
    });
    const answers = [];
    for (const port of [closedPort, (open200.address() as AddressInfo).port]) {
      const started = performance.now();
      const r = await svc.benchmark({ endpoint_url: `http://127.0.0.1:${port}/v1/price` }, ctx);
      // Timers never fire early, so this lower bound holds however loaded the machine is.
      expect(performance.now() - started).toBeGreaterThanOrEqual(timeoutMs - 1);
      answers.push(r.live_probe);
    }
    expect(answers[0]).toEqual({ attempted: true, outcome: "no_price_observed", detail: NO_PRICE_OBSERVED });
    expect(answers[1]).toEqual(answers[0]);
  });
});
