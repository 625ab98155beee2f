import { execFile } from "node:child_process";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openLedger } from "../../src/ledger/embedded.js";
import { appWith, TEST_PAY_TO, testConfig } from "../helpers/app.js";
import { type FakeGateway, fakeGateway } from "../helpers/fake-gateway.js";

/* The buyer CLI as a newcomer meets it: a real child process against a real HTTP server (fake facilitator). */
const ROOT = fileURLToPath(new URL("../..", import.meta.url));
let app: FastifyInstance;
let base: string;
let gateway: FakeGateway;
const ledger = openLedger(":memory:");

beforeAll(async () => {
  gateway = fakeGateway();
  app = await appWith({ config: testConfig(), gateway, ledger });
  base = await app.listen({ host: "127.0.0.1", port: 0 });
});
afterAll(async () => {
  await app.close();
  ledger.close();
});

const run = (args: string[], env: Record<string, string> = {}) =>
  new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      ["--import", "tsx", "scripts/pay.ts", ...args],
      { cwd: ROOT, env: { ...process.env, BASE_URL: base, ...env }, timeout: 60_000 },
      (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });

/** A port nothing listens on: bound by the OS, then released. */
async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const { port } = srv.address() as { port: number };
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

describe("npm run pay", () => {
  it("--help names every variable and exits 0 without calling anything", async () => {
    const before = gateway.calls.verify;
    const { code, stdout } = await run(["--help"]);
    expect(code).toBe(0);
    for (const v of ["BASE_URL", "BUYER_PRIVATE_KEY", "MAX_PRICE_USD", "X402_VERSION", "usage:"])
      expect(stdout).toContain(v);
    expect(gateway.calls.verify).toBe(before);
  }, 60_000);

  it("shows the price in USD and the payee before paying, then the answer and the settlement", async () => {
    const { code, stdout } = await run(["POST", "/v1/token/risk-summary", '{"token":"ARB"}']);
    expect(code, stdout).toBe(0);
    const price = stdout.indexOf("price: 0.25 USD (250000 atomic units of USDC");
    const payee = stdout.indexOf(`payee: ${TEST_PAY_TO}`);
    const status = stdout.indexOf("status: 200");
    expect(price).toBeGreaterThanOrEqual(0);
    expect(payee).toBeGreaterThan(price);
    expect(status).toBeGreaterThan(payee);
    expect(stdout).toMatch(/"transaction": "0x[0-9a-f]{64}"/);
  }, 60_000);

  it("refuses a price above MAX_PRICE_USD, saying both amounts, and signs nothing", async () => {
    const before = gateway.calls.verify;
    const { code, stdout, stderr } = await run(["GET", "/v1/unlocks/upcoming"], { MAX_PRICE_USD: "0.01" });
    expect(code).toBe(1);
    expect(stdout).toContain("price: 0.02 USD");
    expect(stderr).toContain(
      "refusing to pay 0.02 USD for GET /v1/unlocks/upcoming: above MAX_PRICE_USD=0.01",
    );
    expect(gateway.calls.verify).toBe(before);
  }, 60_000);

  it("says which URL it could not reach when the server is down", async () => {
    const down = `http://127.0.0.1:${await closedPort()}`;
    const { code, stderr } = await run(["GET", "/v1/unlocks/upcoming"], { BASE_URL: down });
    expect(code).toBe(1);
    expect(stderr).toContain(`cannot reach the server at ${down} (ECONNREFUSED)`);
    expect(stderr).not.toContain("fetch failed");
  }, 60_000);

  it("paying the v2-only benchmark with x402 v1 stops with the server's 'v2 only' reason", async () => {
    const before = gateway.calls.verify;
    const { code, stderr } = await run(
      ["POST", "/v1/benchmark/endpoint", '{"endpoint_url":"https://2s.io/api/crypto/token-price"}'],
      { X402_VERSION: "1" },
    );
    expect(code).toBe(1);
    expect(stderr).toMatch(
      /nothing to pay with x402 v1: x402_v2_only: this route accepts only x402 v2 payments/,
    );
    expect(gateway.calls.verify).toBe(before);
  }, 60_000);

  it("rejects an X402_VERSION other than 1 or 2 before calling anything", async () => {
    const before = gateway.calls.verify;
    const { code, stderr } = await run(["GET", "/v1/unlocks/upcoming"], { X402_VERSION: "3" });
    expect(code).toBe(2);
    expect(stderr).toContain("X402_VERSION must be 1 or 2, got 3");
    expect(gateway.calls.verify).toBe(before);
  }, 60_000);

  it("rejects bad usage with exit 2 and the help text", async () => {
    const { code, stderr } = await run(["DELETE", "/v1/unlocks/upcoming"]);
    expect(code).toBe(2);
    expect(stderr).toContain("unknown method DELETE");
    expect(stderr).toContain("usage:");
  }, 60_000);
});
