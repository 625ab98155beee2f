import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PRICES } from "../../src/operations/prices.js";
import { requirementsV2 } from "../../src/payments/terms/requirements.js";
import { TEST_PAY_TO, type TestApp, testApp } from "../helpers/app.js";
import { b64, TEST_NETWORK, v2Proof } from "../helpers/proofs.js";

let t: TestApp;
beforeAll(async () => {
  t = await testApp();
});
afterAll(() => t.close());

type NextUnlock = {
  unlock_event_id: string;
  date: string;
  type: string;
  amount_tokens: number;
  amount_usd: number;
  pct_circulating: number | null;
} | null;
type Tokens = { today: string; tokens: { symbol: string; next_unlock: NextUnlock }[] };

describe("GET /v1/tokens: the free map", () => {
  it("gives each token its next unlock, the very event the paid list shows, without any payment", async () => {
    const before = { verify: t.gateway.calls.verify, settle: t.gateway.calls.settle };
    const res = await t.app.inject({ method: "GET", url: "/v1/tokens" });
    expect(res.statusCode).toBe(200);
    expect(t.gateway.calls).toMatchObject(before);
    const body = res.json() as Tokens;
    const withNext = body.tokens.filter((x) => x.next_unlock !== null);
    expect(withNext.length).toBeGreaterThan(10);
    const terms = { payTo: TEST_PAY_TO, maxTimeoutSeconds: 300, network: TEST_NETWORK };
    const list = await t.app.inject({
      method: "GET",
      url: "/v1/unlocks/upcoming?days=365&limit=500&view=full&tokens=ARB",
      headers: { "payment-signature": b64(v2Proof(requirementsV2(PRICES.upcoming, terms))) },
    });
    const items = (
      list.json() as {
        unlocks: {
          unlock_event_id: string;
          event_date: string;
          event_amount_tokens: number;
          event_amount_usd: number;
        }[];
      }
    ).unlocks;
    const arb = body.tokens.find((x) => x.symbol === "ARB")!.next_unlock!;
    expect(arb.date >= body.today).toBe(true);
    const same = items.find((u) => u.unlock_event_id === arb.unlock_event_id)!;
    expect(same).toBeDefined();
    expect(same.event_date).toBe(arb.date);
    expect(same.event_amount_tokens).toBe(arb.amount_tokens);
    expect(same.event_amount_usd).toBe(arb.amount_usd);
    // The first event ahead: nothing of ARB's dated from today on comes before it.
    expect(items.every((u) => u.event_date < body.today || u.event_date >= arb.date)).toBe(true);
  });

  it("carries a weak ETag and Cache-Control; If-None-Match answers 304 with no body", async () => {
    const first = await t.app.inject({ method: "GET", url: "/v1/tokens" });
    const etag = String(first.headers.etag);
    expect(etag).toMatch(/^W\/"[A-Za-z0-9_-]+"$/);
    expect(first.headers["cache-control"]).toBe("public, max-age=300");
    const again = await t.app.inject({ method: "GET", url: "/v1/tokens" });
    expect(again.headers.etag).toBe(etag);
    const cached = await t.app.inject({
      method: "GET",
      url: "/v1/tokens",
      headers: { "if-none-match": etag },
    });
    expect(cached.statusCode).toBe(304);
    expect(cached.body).toBe("");
    const listed = await t.app.inject({
      method: "GET",
      url: "/v1/tokens",
      headers: { "if-none-match": `"other", ${etag.slice(2)}` },
    });
    expect(listed.statusCode).toBe(304);
    const stale = await t.app.inject({
      method: "GET",
      url: "/v1/tokens",
      headers: { "if-none-match": 'W/"old"' },
    });
    expect(stale.statusCode).toBe(200);
  });

  it("a new UTC day is a new ETag (the next unlocks move with today)", async () => {
    let now = new Date("2026-11-22T12:00:00Z");
    const app = await testApp({}, () => now);
    try {
      const a = await app.app.inject({ method: "GET", url: "/v1/tokens" });
      now = new Date("2026-11-23T00:00:00Z");
      const b = await app.app.inject({ method: "GET", url: "/v1/tokens" });
      expect(b.headers.etag).not.toBe(a.headers.etag);
    } finally {
      await app.close();
    }
  });
});
