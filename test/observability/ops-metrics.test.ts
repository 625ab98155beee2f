import { createServer, type Server } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config.js";
import { start as startServer } from "../../src/server.js";
import { TEST_PAY_TO, type TestApp, testApp } from "../helpers/app.js";
import { type FaultFacilitator, startFaultFacilitator } from "../helpers/fault-facilitator.js";

/** The value of one series in Prometheus text, or undefined when it is absent. */
function series(text: string, name: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

describe("operations metrics", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await testApp();
  });
  afterAll(() => t.close());

  it("counts requests no route matched: unknown paths and unknown methods, by method and status", async () => {
    const scrape = () => t.app.observability.metrics.scrape();
    const name = (method: string) =>
      `pressure402_http_unmatched_requests_total{method="${method}",status_code="404"}`;
    const before = await scrape();
    expect(series(before, name("GET")) ?? 0).toBe(0);
    expect((await t.app.inject({ method: "GET", url: "/wp-login.php" })).statusCode).toBe(404);
    expect((await t.app.inject({ method: "GET", url: "/nope?x=1" })).statusCode).toBe(404);
    expect((await t.app.inject({ method: "PUT", url: "/v1/unlocks/upcoming" })).statusCode).toBe(404);
    expect((await t.app.inject({ method: "GET", url: "/health" })).statusCode).toBe(200);
    const after = await scrape();
    expect(series(after, name("GET"))).toBe(2);
    expect(series(after, name("PUT"))).toBe(1);
    // Matched routes stay in the route histogram only; one series per method and status, never per path.
    expect(after).not.toContain("wp-login");
  });

  it("shows the ledger's in-flight receipts by state and the age of the oldest settlement begun", async () => {
    const name = 'pressure402_ledger_receipts{state="settling"}';
    const idle = await t.app.observability.metrics.scrape();
    expect(series(idle, name)).toBe(0);
    expect(series(idle, "pressure402_ledger_oldest_settling_age_seconds")).toBe(0);
    const began = new Date(Date.now() - 900_000);
    const claim = await t.ledger.claimAuthorization({
      identity: { network: "eip155:8453", asset: "0xa", payer: "0xb", nonce: `0x${"1".repeat(64)}` },
      route: "GET /v1/unlocks/upcoming",
      requestFingerprint: "rf",
      x402Version: 2,
      amount: "20000",
      payTo: TEST_PAY_TO,
      incarnation: "stuck-instance",
      lockTtlMs: 60_000,
      now: began,
    });
    if (claim.kind !== "claimed") throw new Error(claim.kind);
    expect(await t.ledger.beginSettlement(claim.receipt.id, "stuck-instance", began)).toBe(true);
    const text = await t.app.observability.metrics.scrape();
    expect(series(text, name)).toBe(1);
    expect(series(text, 'pressure402_ledger_receipts{state="claimed"}')).toBe(0);
    const age = series(text, "pressure402_ledger_oldest_settling_age_seconds") ?? 0;
    expect(age).toBeGreaterThanOrEqual(900);
    expect(age).toBeLessThan(900 + 600);
  });
});

describe("a metrics listener that cannot listen", () => {
  let fac: FaultFacilitator;
  let taken: Server;
  let port = 0;
  beforeAll(async () => {
    fac = await startFaultFacilitator();
    taken = createServer();
    await new Promise<void>((done) => taken.listen({ host: "127.0.0.1", port: 0 }, () => done()));
    port = (taken.address() as { port: number }).port;
  });
  afterAll(async () => {
    await fac.close();
    await new Promise((done) => taken.close(done));
  });

  it("keeps the instance ready, and says so in /ready's checks", async () => {
    const config = parseConfig({
      NODE_ENV: "test",
      PORT: "0",
      METRICS_PORT: String(port),
      LOG_LEVEL: "silent",
      LEDGER_PATH: ":memory:",
      REFRESH_INTERVAL_SECONDS: "0",
      FACILITATOR_URL: fac.url,
      PAY_TO: TEST_PAY_TO,
    });
    const served = await startServer(config);
    try {
      expect(served.metricsAddress).toBeUndefined();
      await served.app.observability.health.refresh();
      const res = await fetch(`${served.address}/ready`);
      const body = (await res.json()) as {
        status: string;
        checks: { metrics?: { ok: boolean; detail: string } };
      };
      expect(res.status).toBe(200);
      expect(body.checks.metrics?.ok).toBe(false);
      expect(body.checks.metrics?.detail).toMatch(/not listening/);
      expect(body.checks.metrics?.detail).not.toContain(String(port));
    } finally {
      await served.stop();
    }
  });

  it("a listening one is shown as listening", async () => {
    const served = await startServer(
      parseConfig({
        NODE_ENV: "test",
        PORT: "0",
        METRICS_PORT: "0",
        LOG_LEVEL: "silent",
        LEDGER_PATH: ":memory:",
        REFRESH_INTERVAL_SECONDS: "0",
        FACILITATOR_URL: fac.url,
        PAY_TO: TEST_PAY_TO,
      }),
    );
    try {
      const body = (await (await fetch(`${served.address}/ready`)).json()) as {
        checks: { metrics?: { ok: boolean } };
      };
      expect(body.checks.metrics?.ok).toBe(true);
    } finally {
      await served.stop();
    }
  });
});
