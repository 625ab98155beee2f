import { request } from "node:http";
import { decodePaymentResponseHeader } from "@x402/core/http";
import { afterEach, describe, expect, it } from "vitest";
import { type TestApp, testApp } from "../helpers/app.js";
import {
  type FaultFacilitator,
  type HttpApp,
  startFaultFacilitator,
  startHttpApp,
  UPCOMING_PATH,
  upcomingProof,
} from "../helpers/fault-facilitator.js";

let t: TestApp | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

describe("rate limiting", () => {
  it("answers 429 problem+json with RateLimit headers past RATE_LIMIT_MAX, per client", async () => {
    t = await testApp({ RATE_LIMIT_MAX: "3", RATE_LIMIT_WINDOW_MS: "60000" });
    const from = (remoteAddress: string) => t?.app.inject({ method: "GET", url: "/", remoteAddress });
    for (let i = 0; i < 3; i++) {
      const ok = await from("10.0.0.1");
      expect(ok?.statusCode).toBe(200);
      expect(ok?.headers["ratelimit-limit"]).toBe("3");
      expect(ok?.headers["ratelimit-remaining"]).toBe(String(2 - i));
      expect(Number(ok?.headers["ratelimit-reset"])).toBeGreaterThan(0);
    }
    const limited = await from("10.0.0.1");
    expect(limited?.statusCode).toBe(429);
    expect(limited?.headers["content-type"]).toMatch(/application\/problem\+json/);
    expect(limited?.json()).toMatchObject({ status: 429, title: "Too Many Requests" });
    expect(limited?.json().type).toMatch(/rate-limited$/);
    expect(Number(limited?.headers["retry-after"])).toBeGreaterThan(0);
    expect(limited?.headers["ratelimit-remaining"]).toBe("0");
    // Another client is not affected, and paid routes are limited too (before any payment work).
    expect((await from("10.0.0.2"))?.statusCode).toBe(200);
    const paid = await t.app.inject({ method: "GET", url: UPCOMING_PATH, remoteAddress: "10.0.0.1" });
    expect(paid.statusCode).toBe(429);
    expect(t.gateway.calls.verify).toBe(0);
  });
});

describe("security headers (helmet, computed once)", () => {
  it("are on free, unpaid (402) and error answers: the JSON API set", async () => {
    t = await testApp();
    const answers = await Promise.all([
      t.app.inject({ method: "GET", url: "/health" }),
      t.app.inject({ method: "GET", url: UPCOMING_PATH }),
      t.app.inject({ method: "GET", url: "/v1/unlocks/upcoming?days=0" }),
      t.app.inject({ method: "GET", url: "/nope" }),
    ]);
    expect(answers.map((a) => a.statusCode)).toEqual([200, 402, 400, 404]);
    for (const a of answers) {
      expect(a.headers["x-content-type-options"]).toBe("nosniff");
      expect(a.headers["strict-transport-security"]).toMatch(/max-age=\d+/);
      expect(a.headers["x-frame-options"]).toBe("DENY");
      expect(a.headers["content-security-policy"]).toBe("default-src 'none';frame-ancestors 'none'");
      expect(a.headers["referrer-policy"]).toBe("no-referrer");
      expect(a.headers["x-powered-by"]).toBeUndefined();
      // Document-isolation headers are for HTML pages, not JSON answers.
      expect(a.headers["cross-origin-opener-policy"]).toBeUndefined();
    }
  });

  it("HTML pages carry helmet's document set (Swagger UI its own CSP)", async () => {
    t = await testApp();
    const problems = await t.app.inject({ method: "GET", url: "/problems" });
    expect(problems.statusCode).toBe(200);
    expect(problems.headers["content-security-policy"]).toMatch(/default-src 'self'/);
    expect(problems.headers["content-security-policy"]).toMatch(/style-src [^;]*'unsafe-inline'/);
    expect(problems.headers["cross-origin-opener-policy"]).toBe("same-origin");
    expect(problems.headers["x-frame-options"]).toBe("SAMEORIGIN");
    const docs = await t.app.inject({ method: "GET", url: "/docs" });
    expect(docs.statusCode).toBe(200);
    expect(docs.headers["content-security-policy"]).toMatch(/script-src 'self'/);
    expect(docs.headers["content-security-policy"]).toMatch(/validator\.swagger\.io/); // Swagger UI's own policy
    expect(docs.headers["x-content-type-options"]).toBe("nosniff");
  });
});

describe("upgrade-insecure-requests only behind TLS", () => {
  const upgrades = (csp: string | number | string[] | undefined) =>
    String(csp)
      .split(";")
      .map((d) => d.trim())
      .includes("upgrade-insecure-requests");

  it("is left out over plain http and kept when a trusted proxy says the client came over https", async () => {
    t = await testApp({ TRUST_PROXY: "127.0.0.1" });
    for (const url of [
      "/docs",
      "/docs/static/swagger-initializer.js",
      "/problems",
      "/problems/unknown-token",
    ]) {
      const plain = await t.app.inject({ method: "GET", url });
      expect(plain.statusCode, url).toBe(200);
      expect(plain.headers["content-security-policy"], url).toMatch(/default-src 'self'/);
      expect(upgrades(plain.headers["content-security-policy"]), url).toBe(false);
      const tls = await t.app.inject({ method: "GET", url, headers: { "x-forwarded-proto": "https" } });
      expect(upgrades(tls.headers["content-security-policy"]), url).toBe(true);
    }
  });

  it("ignores X-Forwarded-Proto from a proxy that is not trusted", async () => {
    t = await testApp();
    const forged = await t.app.inject({
      method: "GET",
      url: "/docs",
      headers: { "x-forwarded-proto": "https" },
    });
    expect(upgrades(forged.headers["content-security-policy"])).toBe(false);
  });
});

describe("load shedding (under-pressure)", () => {
  it("answers 503 with Retry-After while the event loop lags, and recovers", async () => {
    t = await testApp({ MAX_EVENT_LOOP_DELAY_MS: "50" });
    expect((await t.app.inject({ method: "GET", url: "/health" })).statusCode).toBe(200);
    // Block the loop past the sampling interval (1 s) so the next sample sees the lag.
    const until = Date.now() + 1200;
    while (Date.now() < until) {
      /* busy: simulates a CPU-bound stall */
    }
    await new Promise((r) => setTimeout(r, 20));
    const shed = await t.app.inject({ method: "GET", url: UPCOMING_PATH });
    expect(shed.statusCode).toBe(503);
    expect(shed.headers["retry-after"]).toBe("5");
    expect(shed.headers["content-type"]).toMatch(/application\/problem\+json/);
    expect(shed.json().type).toMatch(/overloaded$/);
    expect(t.gateway.calls.verify).toBe(0);
    // Liveness is not shed while the service is.
    expect((await t.app.inject({ method: "GET", url: "/health" })).statusCode).toBe(200);

    const deadline = Date.now() + 30_000; // recovery is bounded generously: a loaded machine samples late
    let status = 503;
    while (status === 503 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      status = (await t.app.inject({ method: "GET", url: UPCOMING_PATH })).statusCode;
    }
    expect(status).toBe(402);
  });
});

describe("graceful shutdown", () => {
  let fac: FaultFacilitator | undefined;
  afterEach(async () => {
    await fac?.close();
    fac = undefined;
  });

  /** One GET on its own connection ("Connection: close"), as a client without keep-alive sends it. */
  function oneShotGet(url: string, headers: Record<string, string>) {
    return new Promise<{ status: number; settlement: string | undefined; body: string }>(
      (resolve, reject) => {
        const req = request(url, { agent: false, headers }, (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () =>
            resolve({
              status: res.statusCode ?? 0,
              settlement: res.headers["payment-response"] as string | undefined,
              body: Buffer.concat(chunks).toString("utf8"),
            }),
          );
        });
        req.on("error", reject);
        req.end();
      },
    );
  }

  async function startSettling(headersFor: (http: HttpApp) => Record<string, string>) {
    fac = await startFaultFacilitator();
    const http = await startHttpApp(fac.url, { FACILITATOR_TIMEOUT_MS: "30000" });
    let open: () => void = () => {};
    fac.settleGate = new Promise<void>((r) => (open = r)); // the settlement is held until the test lets it finish
    return { http, headers: headersFor(http), finishSettlement: () => open() };
  }

  async function untilSettling(f: FaultFacilitator) {
    await f.untilCalls("settle", 1); // the handler ran; settlement is under way (a count, not a sleep)
    expect(f.calls.settle).toBe(1);
  }

  it("a paid request in flight finishes and settles before app.close() resolves; new requests are refused", async () => {
    const { http, finishSettlement } = await startSettling(() => ({}));
    const inFlight = oneShotGet(`${http.url}${UPCOMING_PATH}`, {
      "payment-signature": upcomingProof(http.config),
    });
    await untilSettling(fac as FaultFacilitator);

    // What the ledger and the chain hold at the moment close() resolves (the process would exit right after).
    const closing = http.app.close().then(async () => ({
      receipts: (await http.ledger.receipts()).map((r) => r.status),
      transfers: fac?.transfers.size,
    }));
    // A new request while the paid one is still held in settlement: refused or 503.
    const late = await fetch(`${http.url}/health`).then(
      (r) => r.status,
      () => "refused" as const,
    );
    finishSettlement();
    const res = await inFlight;
    const atClose = await closing;

    expect(res.status).toBe(200);
    expect(decodePaymentResponseHeader(res.settlement as string).success).toBe(true);
    expect(JSON.parse(res.body).unlocks).toBeInstanceOf(Array);
    expect(atClose).toEqual({ receipts: ["settled"], transfers: 1 });
    expect([503, "refused"]).toContain(late);
    await http.ledger.close();
  });

  it("a keep-alive client does not hold app.close() open after its paid answer (no 72 s keepAliveTimeout wait)", async () => {
    const { http, finishSettlement } = await startSettling(() => ({}));
    // fetch (undici) keeps the connection alive, as most API clients and agents do.
    const inFlight = fetch(`${http.url}${UPCOMING_PATH}`, {
      headers: { "payment-signature": upcomingProof(http.config) },
    }).then(async (r) => ({ status: r.status, body: await r.text() }));
    await untilSettling(fac as FaultFacilitator);
    const closing = http.app.close().then(() => "closed" as const);
    finishSettlement();
    const res = await inFlight;
    expect(res.status).toBe(200);
    const outcome = await Promise.race([
      closing,
      // Without the fix close() waits keepAliveTimeout (72 s); 15 s is a bound a loaded machine still meets.
      new Promise((r) => setTimeout(() => r("still open 15 s after the answer"), 15_000)),
    ]);
    expect((await http.ledger.receipts()).map((r) => r.status)).toEqual(["settled"]);
    await http.ledger.close();
    expect(outcome).toBe("closed");
  });
});
