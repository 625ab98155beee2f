import { brotliDecompressSync, gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type TestApp, testApp } from "../helpers/app.js";

let t: TestApp;
beforeAll(async () => {
  t = await testApp();
});
afterAll(() => t.close());

describe("GET /openapi.json", () => {
  it("is built once per origin and compressed once per encoding, and every encoding carries the same document", async () => {
    const built = vi.spyOn(t.app, "swagger");
    try {
      const get = (host: string, encoding?: string) =>
        t.app.inject({
          method: "GET",
          url: "/openapi.json",
          headers: { host, ...(encoding ? { "accept-encoding": encoding } : {}) },
        });
      const plain = await get("a.example");
      expect(plain.headers["content-type"]).toBe("application/json; charset=utf-8");
      expect(plain.headers["content-encoding"]).toBeUndefined();
      const doc = plain.json();
      expect(doc.openapi).toBe("3.1.0");
      const gz = await get("a.example", "gzip");
      expect(gz.headers["content-encoding"]).toBe("gzip");
      expect(gz.headers.vary).toMatch(/Accept-Encoding/);
      expect(JSON.parse(gunzipSync(gz.rawPayload).toString("utf8"))).toEqual(doc);
      const br = await get("a.example", "br");
      expect(br.headers["content-encoding"]).toBe("br");
      expect(JSON.parse(brotliDecompressSync(br.rawPayload).toString("utf8"))).toEqual(doc);
      for (let i = 0; i < 5; i++) expect((await get("a.example", "gzip")).rawPayload).toEqual(gz.rawPayload);
      expect(built).toHaveBeenCalledTimes(1);
      await get("b.example");
      expect(built).toHaveBeenCalledTimes(2);
    } finally {
      built.mockRestore();
    }
  });
});

describe("free routes", () => {
  it("GET / describes the paid routes with their atomic prices", async () => {
    const res = await t.app.inject({ method: "GET", url: "/" });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({
      network: "eip155:8453",
      asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
      openapi: "/openapi.json",
      docs: "/docs",
      llms: "/llms.txt",
      discovery: "/.well-known/x402",
      tokens: "/v1/tokens",
      mcp: "/mcp",
    });
    expect(body.retries).toMatch(/Idempotency-Key.*payment-identifier.*retry key/);
    expect(body.routes).toContainEqual({
      route: "POST /v1/unlock/backtest",
      price_usd: "0.5",
      amount_atomic: "500000",
      x402_versions: [2, 1],
    });
    expect(body.routes).toContainEqual({
      route: "POST /v1/benchmark/endpoint",
      price_usd: "0.05",
      amount_atomic: "50000",
      x402_versions: [2],
    });
  });

  it("GET /health and GET /openapi.json", async () => {
    expect((await t.app.inject({ method: "GET", url: "/health" })).json()).toEqual({ status: "ok" });
    const doc = (await t.app.inject({ method: "GET", url: "/openapi.json" })).json();
    expect(doc.openapi).toBe("3.1.0");
  });

  it("unknown routes are problem+json 404s", async () => {
    const res = await t.app.inject({ method: "GET", url: "/v2/nothing" });
    expect(res.statusCode).toBe(404);
    expect(res.headers["content-type"]).toMatch(/problem\+json/);
  });
});

describe("CORS for browser and agent clients", () => {
  it("preflight allows the payment headers", async () => {
    const res = await t.app.inject({
      method: "OPTIONS",
      url: "/v1/unlock-risk",
      headers: {
        origin: "https://agent.example",
        "access-control-request-method": "POST",
        "access-control-request-headers":
          "payment-signature,x-payment,idempotency-key,content-type,access-control-expose-headers",
      },
    });
    expect(res.statusCode).toBe(204);
    const allowed = String(res.headers["access-control-allow-headers"]).toLowerCase();
    for (const h of ["payment-signature", "x-payment", "idempotency-key", "access-control-expose-headers"])
      expect(allowed).toContain(h);
  });

  it("responses expose the payment headers", async () => {
    const res = await t.app.inject({
      method: "GET",
      url: "/v1/unlocks/upcoming",
      headers: { origin: "https://agent.example" },
    });
    expect(res.statusCode).toBe(402);
    const exposed = String(res.headers["access-control-expose-headers"]).toLowerCase();
    for (const h of ["payment-required", "payment-response", "x-payment-response"])
      expect(exposed).toContain(h);
  });

  it("reflects the caller's origin, and sends no Access-Control-* headers to a client that sent no Origin", async () => {
    const browser = await t.app.inject({
      method: "GET",
      url: "/v1/unlocks/upcoming",
      headers: { origin: "https://agent.example" },
    });
    expect(browser.headers["access-control-allow-origin"]).toBe("https://agent.example");
    expect(browser.headers.vary).toMatch(/origin/i);
    const agent = await t.app.inject({ method: "GET", url: "/v1/unlocks/upcoming" });
    expect(agent.statusCode).toBe(402);
    expect(Object.keys(agent.headers).filter((h) => h.startsWith("access-control-"))).toEqual([]);
    expect(agent.headers.vary).toMatch(/origin/i); // the answer still depends on Origin, for caches
  });

  it("exposes the RateLimit headers, so a browser client can pace itself", async () => {
    const res = await t.app.inject({ method: "GET", url: "/", headers: { origin: "https://agent.example" } });
    expect(res.headers["ratelimit-limit"]).toBeDefined();
    const exposed = String(res.headers["access-control-expose-headers"]).toLowerCase();
    for (const h of ["ratelimit-limit", "ratelimit-remaining", "ratelimit-reset"])
      expect(exposed).toContain(h);
  });
});

describe("the 402 bodies speak to the client that reads them", () => {
  it("the v1 body of an unlock route asks for X-PAYMENT, never PAYMENT-SIGNATURE", async () => {
    const res = await t.app.inject({ method: "GET", url: "/v1/unlocks/upcoming" });
    expect(res.statusCode).toBe(402);
    expect(res.json()).toMatchObject({ x402Version: 1, error: "X-PAYMENT header is required" });
    expect(res.body).not.toContain("PAYMENT-SIGNATURE");
  });

  it("the benchmark's body tells a v1-only client the route is v2 only, with nothing it could pay", async () => {
    const res = await t.app.inject({
      method: "POST",
      url: "/v1/benchmark/endpoint",
      payload: { endpoint_url: "https://2s.io/api/crypto/token-price" },
    });
    expect(res.statusCode).toBe(402);
    expect(res.headers["payment-required"]).toBeDefined();
    expect(res.json()).toMatchObject({
      x402Version: 1,
      accepts: [{ scheme: expect.stringMatching(/^x402_v2_only: /) }],
      error: expect.stringMatching(/^x402_v2_only: /),
    });
  });
});
