import { Writable } from "node:stream";
import type { FastifyInstance } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { buildApp } from "../../src/app.js";
import { loadCatalog } from "../../src/benchmark/catalog/snapshot.js";
import { createBenchmarkService } from "../../src/benchmark/service.js";
import type { Config } from "../../src/config.js";
import { type Ledger, openLedger } from "../../src/ledger/embedded.js";
import { createMetrics, metricsListener } from "../../src/observability/metrics.js";
import {
  createFacilitatorClient,
  createFacilitatorGateway,
  facilitatorTarget,
} from "../../src/payments/facilitator/gateway.js";
import { loadUnlockStore } from "../../src/unlocks/data/snapshot.js";
import { createUnlockService } from "../../src/unlocks/service.js";
import { TEST_NOW, TEST_PAY_TO, testConfig } from "../helpers/app.js";
import {
  type FaultFacilitator,
  signedUpcomingProof,
  startFaultFacilitator,
  UPCOMING_PATH,
  upcomingProof,
} from "../helpers/fault-facilitator.js";

/*
 * The app with the real facilitator client (HTTP, timeouts, circuit) against the fake facilitator, wired as
 * src/server.ts wires it (including the /supported probe), with a log stream the test can read.
 */
interface Running {
  app: FastifyInstance;
  config: Config;
  ledger: Ledger;
  logs: Record<string, unknown>[];
}

const unlockStore = loadUnlockStore();
const catalog = loadCatalog();
let running: Running | undefined;
let fac: FaultFacilitator | undefined;

afterEach(async () => {
  await running?.app.close();
  running?.ledger.close();
  await fac?.close();
  running = undefined;
  fac = undefined;
});

async function start(facilitatorUrl: string, env: Record<string, string> = {}): Promise<Running> {
  const config = testConfig({ FACILITATOR_URL: facilitatorUrl, PAY_TO: TEST_PAY_TO, ...env });
  const client = createFacilitatorClient(facilitatorTarget(config.facilitator, facilitatorUrl));
  const ledger = openLedger(":memory:");
  const logs: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString("utf8").split("\n").filter(Boolean)) logs.push(JSON.parse(line));
      done();
    },
  });
  const clock = () => TEST_NOW;
  const app = await buildApp({
    config,
    unlocks: createUnlockService(unlockStore, clock),
    benchmark: createBenchmarkService(catalog, { clock }),
    ledger,
    gateway: createFacilitatorGateway(client, config.circuit),
    supported: () => client.getSupported(),
    payTo: TEST_PAY_TO,
    facilitatorLabel: facilitatorUrl,
    clock,
    logger: { level: "info", stream },
  });
  await app.ready();
  running = { app, config, ledger, logs };
  return running;
}

/** The value of one sample in a Prometheus text exposition, or undefined when the series is absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const matches = Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`));
    if (matches) return Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return undefined;
}

/** A scrape of the metrics listener (METRICS_PORT), as Prometheus makes it. */
const scrape = async (app: FastifyInstance) => {
  const listener = await metricsListener(app.observability.metrics);
  const res = await listener.inject({ method: "GET", url: "/metrics" });
  await listener.close();
  expect(res.statusCode).toBe(200);
  expect(res.headers["content-type"]).toMatch(/^text\/plain/);
  return res.body;
};

const ROUTE = "GET /v1/unlocks/upcoming";

describe("GET /metrics", () => {
  it("shows the payment counters, revenue and facilitator latency moving after paid calls", async () => {
    fac = await startFaultFacilitator();
    const { app, config } = await start(fac.url);
    const before = await scrape(app);
    expect(sample(before, "pressure402_payments_total", { route: ROUTE })).toBeUndefined();
    expect(sample(before, "pressure402_facilitator_circuit_state", { state: "closed" })).toBe(1);
    // The reconciler's start-up pass has reported its backlog: nothing unresolved in a fresh ledger.
    expect(sample(before, "pressure402_reconciler_backlog")).toBe(0);

    // Two requests: one payer's second proof for the same request would re-read the first, not pay again.
    for (const url of [UPCOMING_PATH, "/v1/unlocks/upcoming?days=31"]) {
      const paid = await app.inject({
        method: "GET",
        url,
        headers: { "payment-signature": upcomingProof(config) },
      });
      expect(paid.statusCode).toBe(200);
    }
    fac.verify = "invalid";
    const refused = await app.inject({
      method: "GET",
      url: UPCOMING_PATH,
      headers: { "payment-signature": upcomingProof(config) },
    });
    expect(refused.statusCode).toBe(402);

    const after = await scrape(app);
    const settled = { route: ROUTE, x402_version: "2", outcome: "settled" };
    expect(sample(after, "pressure402_payments_total", settled)).toBe(2);
    expect(sample(after, "pressure402_payments_total", { ...settled, outcome: "invalid" })).toBe(1);
    expect(sample(after, "pressure402_revenue_usdc_atomic_total", { route: ROUTE })).toBe(40_000);
    const latency = "pressure402_facilitator_request_duration_seconds_count";
    expect(sample(after, latency, { operation: "verify", ok: "true" })).toBe(3);
    expect(sample(after, latency, { operation: "settle", ok: "true" })).toBe(2);
    // fastify-metrics' HTTP histogram, by route pattern and status.
    expect(
      sample(after, "http_request_duration_seconds_count", {
        method: "GET",
        route: "/v1/unlocks/upcoming",
        status_code: "200",
      }),
    ).toBe(2);
    expect(after).toMatch(/^pressure402_process_cpu_seconds_total /m);
  });

  it("reports a facilitator outage as facilitator_error and the opened circuit", async () => {
    fac = await startFaultFacilitator();
    const { app, config } = await start(fac.url, { CIRCUIT_FAILURE_THRESHOLD: "1" });
    fac.verify = "http500";
    const res = await app.inject({
      method: "GET",
      url: UPCOMING_PATH,
      headers: { "payment-signature": await signedUpcomingProof(config) }, // proven: evidence against the facilitator
    });
    expect(res.statusCode).toBe(502);
    const text = await scrape(app);
    expect(
      sample(text, "pressure402_payments_total", {
        route: ROUTE,
        x402_version: "2",
        outcome: "facilitator_error",
      }),
    ).toBe(1);
    expect(
      sample(text, "pressure402_facilitator_request_duration_seconds_count", {
        operation: "verify",
        ok: "false",
      }),
    ).toBe(1);
    expect(sample(text, "pressure402_facilitator_circuit_state", { state: "open" })).toBe(1);
    expect(sample(text, "pressure402_facilitator_circuit_state", { state: "closed" })).toBe(0);
  });
});

describe("the metrics observer", () => {
  it("exposes the reconciler backlog once reported, and the circuit state it is told", async () => {
    const metrics = createMetrics();
    metrics.observer.reconcilerBacklog(3);
    metrics.observer.circuitState("half_open");
    const text = await metrics.registry.metrics();
    expect(sample(text, "pressure402_reconciler_backlog")).toBe(3);
    expect(sample(text, "pressure402_facilitator_circuit_state", { state: "half_open" })).toBe(1);
    expect(sample(text, "pressure402_facilitator_circuit_state", { state: "closed" })).toBe(0);
    metrics.observer.paymentOutcome({ route: "R", x402Version: 1, outcome: "pending", amount: "5" });
    const after = await metrics.registry.metrics();
    expect(sample(after, "pressure402_payments_total", { route: "R", outcome: "pending" })).toBe(1);
    // Revenue counts settled payments only; a pending one may still fail.
    expect(sample(after, "pressure402_revenue_usdc_atomic_total", { route: "R" })).toBeUndefined();
  });
});

describe("settlement log line", () => {
  it("logs one line per settlement with receipt id, route, payer, amount, transaction and pp_ref", async () => {
    fac = await startFaultFacilitator();
    const { app, config, ledger, logs } = await start(fac.url);
    const res = await app.inject({
      method: "GET",
      url: `${UPCOMING_PATH}&pp_ref=campaign-7`,
      headers: { "payment-signature": upcomingProof(config) },
    });
    expect(res.statusCode).toBe(200);
    const lines = logs.filter((l) => l.msg === "payment settled");
    expect(lines).toHaveLength(1);
    const [receipt] = await ledger.receipts();
    expect(lines[0]).toMatchObject({
      receipt: receipt?.id,
      route: ROUTE,
      payer: "0x000000000000000000000000000000000000b0b0",
      amount: "20000",
      network: "eip155:8453",
      transaction: receipt?.transaction,
      status: "settled",
      pp_ref: "campaign-7",
      reqId: res.headers["x-request-id"],
    });
    expect(JSON.stringify(lines[0])).not.toMatch(/signature/i);
  });
});

describe("GET /ready", () => {
  it("turns 503 when the facilitator dies and 200 when it returns", async () => {
    fac = await startFaultFacilitator();
    const port = Number(new URL(fac.url).port);
    const { app } = await start(fac.url);

    const up = await app.inject({ method: "GET", url: "/ready" });
    expect(up.statusCode).toBe(200);
    expect(up.json()).toEqual({
      status: "ready",
      checks: {
        facilitator: { ok: true, detail: "supports exact on eip155:8453" },
        ledger: { ok: true, detail: "writable" },
        circuit: { ok: true, detail: "closed" },
      },
    });
    expect(fac.calls.supported).toBe(1);

    await fac.close();
    // Served from the cached state until the background refresh runs (here: now).
    expect((await app.inject({ method: "GET", url: "/ready" })).statusCode).toBe(200);
    await app.observability.health.refresh();
    const down = await app.inject({ method: "GET", url: "/ready" });
    expect(down.statusCode).toBe(503);
    expect(down.json().checks.facilitator).toEqual({
      ok: false,
      detail: "unreachable or answered with an error",
    });
    expect(down.body).not.toContain("127.0.0.1");
    // Liveness is unaffected: the process itself is fine.
    expect((await app.inject({ method: "GET", url: "/health" })).statusCode).toBe(200);

    fac = await startFaultFacilitator(port);
    await app.observability.health.refresh();
    const back = await app.inject({ method: "GET", url: "/ready" });
    expect(back.statusCode).toBe(200);
    expect(fac.calls.supported).toBe(1);
  });

  it("is 503 when the facilitator does not support exact on eip155:8453", async () => {
    const { createServer } = await import("node:http");
    const server = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          kinds: [{ x402Version: 2, scheme: "exact", network: "eip155:1" }],
          extensions: [],
          signers: {},
        }),
      );
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    try {
      const address = server.address() as { port: number };
      const { app } = await start(`http://127.0.0.1:${address.port}`);
      const res = await app.inject({ method: "GET", url: "/ready" });
      expect(res.statusCode).toBe(503);
      expect(res.json().checks.facilitator).toEqual({
        ok: false,
        detail: "does not support exact on eip155:8453",
      });
    } finally {
      await running?.app.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});

describe("GET /ready without a facilitator probe", () => {
  it("says the facilitator is unchecked and never counts that against the circuit (which would turn every paid call into a 503)", async () => {
    const config = testConfig({ CIRCUIT_FAILURE_THRESHOLD: "2" });
    const ledger = openLedger(":memory:");
    const clock = () => TEST_NOW;
    const gateway = createFacilitatorGateway(
      createFacilitatorClient(facilitatorTarget(config.facilitator, "http://127.0.0.1:9")),
      config.circuit,
    );
    const app = await buildApp({
      config,
      unlocks: createUnlockService(unlockStore, clock),
      benchmark: createBenchmarkService(catalog, { clock }),
      ledger,
      gateway,
      payTo: TEST_PAY_TO,
      facilitatorLabel: "none",
      clock,
      logger: false,
    });
    await app.ready();
    running = { app, config, ledger, logs: [] };
    // Many background refreshes, each without a probe to make: far past the circuit's threshold.
    for (let i = 0; i < 10; i++) await app.observability.health.refresh();
    expect(gateway.position()).toBe("closed");
    const res = await app.inject({ method: "GET", url: "/ready" });
    expect(res.statusCode).toBe(503);
    expect(res.json().checks.circuit).toEqual({ ok: true, detail: "closed" });
  });
});

describe("probes, metrics and rate limiting", () => {
  it("rate-limits /health and /ready like every route; the public port has no /metrics without a token", async () => {
    fac = await startFaultFacilitator();
    const { app } = await start(fac.url, { RATE_LIMIT_MAX: "4" });
    const get = (url: string) => app.inject({ method: "GET", url, remoteAddress: "10.0.0.9" });
    expect((await get("/metrics")).statusCode).toBe(404);
    expect((await get("/health")).statusCode).toBe(200);
    expect((await get("/ready")).statusCode).toBe(200);
    expect((await get("/")).statusCode).toBe(200); // the 4th, counting the 404: unknown paths are limited too
    expect((await get("/ready")).statusCode).toBe(429);
    expect((await get("/health")).statusCode).toBe(429);
    // Another client is not affected; the metrics listener has no limit.
    expect((await app.inject({ method: "GET", url: "/health", remoteAddress: "10.0.0.8" })).statusCode).toBe(
      200,
    );
    for (let i = 0; i < 6; i++) expect(await scrape(app)).toContain("pressure402_payments_total");
  });

  it("with METRICS_TOKEN, /metrics on the public port answers the bearer of that token only", async () => {
    fac = await startFaultFacilitator();
    const token = "s3cret-metrics-token-0123456789";
    const { app } = await start(fac.url, { METRICS_TOKEN: token });
    const get = (authorization?: string) =>
      app.inject({ method: "GET", url: "/metrics", headers: authorization ? { authorization } : {} });
    const none = await get();
    expect(none.statusCode).toBe(401);
    expect(none.headers["www-authenticate"]).toMatch(/^Bearer/);
    expect(none.body).not.toContain("pressure402_");
    expect((await get(`Bearer ${token}x`)).statusCode).toBe(401);
    expect((await get(`Basic ${token}`)).statusCode).toBe(401);
    const ok = await get(`Bearer ${token}`);
    expect(ok.statusCode).toBe(200);
    expect(ok.body).toContain("pressure402_facilitator_circuit_state");
  });

  it("GET / names the facilitator's kind, never FACILITATOR_URL", async () => {
    const { start: startServer } = await import("../../src/server.js");
    const { parseConfig } = await import("../../src/config.js");
    fac = await startFaultFacilitator();
    const served = await startServer(
      parseConfig({
        NODE_ENV: "test",
        PORT: "0",
        METRICS_PORT: "0",
        LOG_LEVEL: "silent",
        LEDGER_PATH: ":memory:",
        REFRESH_INTERVAL_SECONDS: "0",
        FACILITATOR_URL: `${fac.url}/internal-facilitator`,
        PAY_TO: TEST_PAY_TO,
      }),
    );
    try {
      const body = await (await fetch(`${served.address}/`)).text();
      expect(body).not.toContain(fac.url);
      expect(body).not.toContain("internal-facilitator");
      expect(JSON.parse(body).facilitator).toBe("configured");
      // The metrics listener is on loopback, apart from the public port.
      expect(served.metricsAddress).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(served.metricsAddress).not.toBe(served.address);
      expect(await (await fetch(`${served.metricsAddress}/metrics`)).text()).toContain(
        "pressure402_payments_total",
      );
      expect((await fetch(`${served.address}/metrics`)).status).toBe(404);
    } finally {
      await served.stop();
    }
  });
});

describe("X-Request-Id", () => {
  it("echoes a well-formed inbound id and uses it in the logs", async () => {
    fac = await startFaultFacilitator();
    const { app, logs } = await start(fac.url);
    const res = await app.inject({ method: "GET", url: "/nope", headers: { "x-request-id": "lb-4f2a:77" } });
    expect(res.statusCode).toBe(404);
    expect(res.headers["x-request-id"]).toBe("lb-4f2a:77");
    expect(logs.some((l) => l.reqId === "lb-4f2a:77")).toBe(true);
  });

  it.each([
    ["absent", undefined],
    ["empty", ""],
    ["with a space", "a b"],
    ["non-ASCII", "ünïcode"],
    ["too long", "x".repeat(129)],
  ])("replaces an id that is %s with a fresh UUID", async (_name, value) => {
    fac = await startFaultFacilitator();
    const { app } = await start(fac.url);
    const headers: Record<string, string> = value === undefined ? {} : { "x-request-id": value };
    const a = await app.inject({ method: "GET", url: "/health", headers });
    const b = await app.inject({ method: "GET", url: "/health", headers });
    expect(a.headers["x-request-id"]).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
    expect(a.headers["x-request-id"]).not.toBe(b.headers["x-request-id"]);
  });

  it("accepts exactly 128 visible ASCII characters", async () => {
    fac = await startFaultFacilitator();
    const { app } = await start(fac.url);
    const id = "!~".repeat(64);
    const res = await app.inject({ method: "GET", url: "/health", headers: { "x-request-id": id } });
    expect(res.headers["x-request-id"]).toBe(id);
  });
});
