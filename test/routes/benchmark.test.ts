import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openLedger } from "../../src/ledger/embedded.js";
import { PRICES } from "../../src/operations/prices.js";
import { requirementsV2 } from "../../src/payments/terms/requirements.js";
import { TEST_PAY_TO, type TestApp, testApp } from "../helpers/app.js";
import { b64, TEST_NETWORK, v2Proof } from "../helpers/proofs.js";

const terms = { payTo: TEST_PAY_TO, maxTimeoutSeconds: 300, network: TEST_NETWORK };
/** A proof of a new payer each time: one payer's second proof for the same request would re-read the first. */
const pay = () => {
  const proof = v2Proof(requirementsV2(PRICES.benchmark, terms));
  proof.payload.authorization.from = `0x${randomBytes(20).toString("hex")}`;
  return { "payment-signature": b64(proof) };
};
const body = { endpoint_url: "https://2s.io/api/crypto/token-price", category_hint: "data" };

const open: TestApp[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const t of open.splice(0)) await t.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function app(env: Record<string, string>, clock?: () => Date) {
  const t = await testApp(env, clock);
  open.push(t);
  return t;
}

const call = (t: TestApp, headers: Record<string, string> = {}, query = "") =>
  t.app.inject({
    method: "POST",
    url: `/v1/benchmark/endpoint${query}`,
    headers: { "content-type": "application/json", ...headers },
    payload: JSON.stringify(body),
  });

describe("POST /v1/benchmark/endpoint: the capped provisional phase", () => {
  it("serves paid calls with the provisional availability label until the daily cap, then 503 before any 402", async () => {
    const t = await app({ BENCHMARK_PROVISIONAL_CAP: "2" });
    for (let i = 0; i < 2; i++) {
      const res = await call(t, pay());
      expect(res.statusCode).toBe(200);
      expect(JSON.stringify(res.json())).toContain("available through capped provisional x402 metadata");
    }
    const unpaid = await call(t);
    expect(unpaid.statusCode).toBe(503);
    expect(unpaid.headers["payment-required"]).toBeUndefined();
    expect(unpaid.headers["content-type"]).toMatch(/problem\+json/);
    // 12:00 UTC in the test clock → the cap reopens in 12 h.
    expect(unpaid.headers["retry-after"]).toBe(String(12 * 3600));
    expect(unpaid.json().availability).toMatch(/cap/i);
    const verifiesBefore = t.gateway.calls.verify;
    const paidAnyway = await call(t, pay());
    expect(paidAnyway.statusCode).toBe(503);
    expect(t.gateway.calls.verify).toBe(verifiesBefore);
  });

  it("counts per UTC day, and the count survives a restart (ledger on disk)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cap-"));
    dirs.push(dir);
    const env = { BENCHMARK_PROVISIONAL_CAP: "1", LEDGER_PATH: join(dir, "l.sqlite") };
    const ledger = openLedger(env.LEDGER_PATH);
    const at = new Date("2026-11-22T01:00:00Z");
    const claim = await ledger.claimAuthorization({
      identity: { network: "eip155:8453", asset: PRICES.benchmark.route, payer: "0xb0b0", nonce: "0x01" },
      route: PRICES.benchmark.route,
      requestFingerprint: "r",
      x402Version: 2,
      amount: PRICES.benchmark.amount,
      payTo: TEST_PAY_TO,
      incarnation: "earlier",
      lockTtlMs: 1000,
      now: at,
    });
    if (claim.kind !== "claimed") throw new Error(claim.kind);
    await ledger.beginSettlement(claim.receipt.id, "earlier", at);
    await ledger.recordSettlement(claim.receipt.id, { status: "settled", transaction: "0x1", now: at });
    await ledger.close();
    const restart = async (now: Date) => {
      const t = await testApp(env, () => now);
      const res = await call(t);
      await t.close();
      return res.statusCode;
    };
    expect(await restart(new Date("2026-11-22T23:59:00Z"))).toBe(503);
    expect(await restart(new Date("2026-11-23T00:00:01Z"))).toBe(402);
  });

  it("BENCHMARK_PHASE=full has no cap", async () => {
    const t = await app({ BENCHMARK_PHASE: "full", BENCHMARK_PROVISIONAL_CAP: "0" });
    const res = await call(t, pay());
    expect(res.statusCode).toBe(200);
    expect(JSON.stringify(res.json())).not.toContain("provisional");
  });
});

describe("endpoint_url placeholders", () => {
  it.each([
    "https://api.vaults.fyi/v2/positions/:address",
    "https://api.vaults.fyi/v2/positions/{address}",
    "https://api.vaults.fyi/v2/positions/%7Baddress%7D",
    "HTTPS://API.Example.com:443/v1/items/{id}?x=1",
  ])("%s is a valid request (402 when unpaid)", async (endpoint_url) => {
    const t = await app({});
    const res = await t.app.inject({
      method: "POST",
      url: "/v1/benchmark/endpoint",
      headers: { "content-type": "application/json" },
      payload: JSON.stringify({ endpoint_url }),
    });
    expect(res.statusCode, res.body).toBe(402);
  });
});

describe("pp_ref", () => {
  it("is recorded with the paid call and never echoed", async () => {
    const t = await app({});
    const res = await call(t, pay(), "?pp_ref=partner.42:x-y_z");
    expect(res.statusCode).toBe(200);
    expect(res.body).not.toContain("partner.42");
    expect((await t.ledger.receipts())[0]?.ppRef).toBe("partner.42:x-y_z");
  });

  it("anything outside [A-Za-z0-9._:-]{1,128} is a 400 and is not reflected", async () => {
    const t = await app({});
    const res = await call(t, pay(), `?pp_ref=${encodeURIComponent("<script>alert(1)</script>")}`);
    expect(res.statusCode).toBe(400);
    expect(res.body).not.toContain("<script>");
  });
});

describe("the paid benchmark on the real market", () => {
  it("reports endpoint and service counts and the market's as-of date for 2s.io token-price", async () => {
    const t = await app({});
    const res = await t.app.inject({
      method: "POST",
      url: "/v1/benchmark/endpoint",
      headers: { "content-type": "application/json", ...pay() },
      payload: JSON.stringify({ endpoint_url: "https://2s.io/api/crypto/token-price" }),
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers["payment-response"]).toBeDefined();
    const r = res.json();
    expect(r.market.endpoint_count).toBeGreaterThan(r.market.service_count);
    expect(r.market.service_count).toBeGreaterThanOrEqual(8);
    expect(r.market.as_of).toMatch(/^\d{4}-\d{2}-\d{2}T/);
    expect(typeof r.market.age_days).toBe("number");
    expect(r.price_percentile_counts).toEqual({
      endpoint_count: r.market.endpoint_count,
      service_count: r.market.service_count,
    });
    expect(r.suggested_test_price_band.service_count).toBe(r.market.service_count);
    expect(r.route.price).toEqual({ usd: 0.0012, amount_atomic: "1200" });
  });
});

/** Anything that looks like a path of this machine or a repository file. */
const PATH_LIKE =
  /(\.\.\/|\/work\/|\/home\/|\/tmp\/|\/var\/|\/usr\/|file:|[A-Za-z]:\\\\|\.json\b|data\/|shared\/)/;

describe("no response contains a filesystem path", () => {
  it("holds for paid answers (matched, listed, templated, unknown), 402s and 400s", async () => {
    const t = await app({});
    const urls = [
      "https://2s.io/api/crypto/token-price",
      "https://api.carbon-cashmere.de/v1/strategy-performance",
      "https://api.vaults.fyi/v2/positions/:address",
      "https://unknown-seller.example/v1/thing",
    ];
    for (const endpoint_url of urls) {
      for (const headers of [pay(), {}]) {
        const res = await t.app.inject({
          method: "POST",
          url: "/v1/benchmark/endpoint",
          headers: { "content-type": "application/json", ...headers },
          payload: JSON.stringify({ endpoint_url }),
        });
        expect([200, 402]).toContain(res.statusCode);
        expect(res.body).not.toMatch(PATH_LIKE);
        for (const h of ["payment-required", "payment-response"]) {
          const v = res.headers[h];
          if (typeof v === "string") expect(Buffer.from(v, "base64").toString("utf8")).not.toMatch(PATH_LIKE);
        }
      }
    }
    const bad = await t.app.inject({
      method: "POST",
      url: "/v1/benchmark/endpoint",
      headers: { "content-type": "application/json" },
      payload: JSON.stringify({ endpoint_url: "http://127.0.0.1:22/" }),
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.body).not.toMatch(PATH_LIKE);
  });
});

describe("an endpoint_url the live probe would refuse", () => {
  it.each([
    "http://127.0.0.1/x",
    "http://127.0.0.1:22/",
    "http://localhost:8080/api",
    "http://metadata.google.internal/computeMetadata/v1/",
    "http://169.254.169.254/latest/meta-data/",
    "http://10.0.0.5/api/price",
    "http://192.168.1.1/",
    "http://[::1]/",
    "http://[fe80::1]/",
    "http://[::ffff:127.0.0.1]/",
    "http://2130706433/",
    "http://0x7f.1/",
    "http://intranet/price",
    "https://user:secret@api.example.com/x",
  ])("%s is a 400 before any 402, paid or not", async (endpoint_url) => {
    const t = await app({});
    for (const headers of [{}, pay()]) {
      const res = await t.app.inject({
        method: "POST",
        url: "/v1/benchmark/endpoint",
        headers: { "content-type": "application/json", ...headers },
        payload: JSON.stringify({ endpoint_url }),
      });
      expect(res.statusCode, res.body).toBe(400);
      expect(res.headers["content-type"]).toMatch(/problem\+json/);
      expect(res.headers["payment-required"]).toBeUndefined();
      expect(res.json().errors[0].pointer).toBe("/endpoint_url");
    }
    expect(t.gateway.calls.verify).toBe(0);
    expect(await t.ledger.receipts()).toEqual([]);
  });

  it("a public URL still gets its 402", async () => {
    const t = await app({});
    const res = await t.app.inject({
      method: "POST",
      url: "/v1/benchmark/endpoint",
      headers: { "content-type": "application/json" },
      payload: JSON.stringify({ endpoint_url: "https://93.184.215.14/api/price" }),
    });
    expect(res.statusCode).toBe(402);
  });
});
