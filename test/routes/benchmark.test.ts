import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { requirementsV2 } from "../../src/payments/requirements.js";
import { PRICES } from "../../src/routes/prices.js";
import { openLedger } from "../../src/store/ledger.js";
import { TEST_PAY_TO, type TestApp, testApp } from "../helpers/app.js";
import { b64, v2Proof } from "../helpers/proofs.js";

const terms = { payTo: TEST_PAY_TO, maxTimeoutSeconds: 300 };
const pay = () => ({ "payment-signature": b64(v2Proof(requirementsV2(PRICES.benchmark, terms))) });
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
