/**
 * Micro-benchmarks of the hot paths: `npm run bench [-- --ms 2000]`. The real app through app.inject (no sockets)
 * with an in-memory ledger and a facilitator gateway that answers at once, so the figures are the server's own cost.
 * Prints ops/s and p50/p99 per case. Sequential ops: the figures are per core.
 */
import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import { buildApp } from "../src/app.js";
import { availabilityLabel } from "../src/benchmark/availability.js";
import { createBenchmarkService } from "../src/benchmark/service.js";
import { parseConfig } from "../src/config.js";
import { closedCircuit } from "../src/payments/circuit.js";
import type { FacilitatorGateway } from "../src/payments/facilitator.js";
import { requirementsV2 } from "../src/payments/requirements.js";
import { PRICES } from "../src/routes/prices.js";
import { loadCatalog } from "../src/store/catalog.js";
import { openLedger } from "../src/store/ledger.js";
import { loadUnlockStore } from "../src/store/unlocks-snapshot.js";
import { createUnlockService } from "../src/unlocks/service.js";

const { values } = parseArgs({ options: { ms: { type: "string", default: "2000" } } });
const RUN_MS = Math.min(Math.max(Number(values.ms) || 2000, 200), 60_000);
const PAY_TO = "0x00000000000000000000000000000000000000aa" as const;
const PAYER = "0x000000000000000000000000000000000000b0b0";

/** A gateway that verifies and settles instantly: the bench measures the server, not a facilitator. */
const instantGateway: FacilitatorGateway = {
  circuit: closedCircuit(),
  verify: async () => ({ isValid: true, payer: PAYER }),
  settle: async (_p, r) => ({
    success: true,
    transaction: `0x${randomBytes(32).toString("hex")}`,
    network: r.network,
    payer: PAYER,
  }),
};

function v2Header(nonce: string): string {
  const accepted = requirementsV2(PRICES.upcoming, { payTo: PAY_TO, maxTimeoutSeconds: 300 });
  const proof = {
    x402Version: 2,
    accepted,
    payload: {
      signature: `0x${"11".repeat(65)}`,
      authorization: {
        from: PAYER,
        to: PAY_TO,
        value: accepted.amount,
        validAfter: "0",
        validBefore: "9999999999",
        nonce,
      },
    },
  };
  return Buffer.from(JSON.stringify(proof)).toString("base64");
}

interface Result {
  name: string;
  ops: number;
  opsPerSec: number;
  p50: number;
  p99: number;
}

async function measure(
  name: string,
  op: (i: number) => Promise<unknown>,
  check: (v: unknown) => void,
): Promise<Result> {
  for (let i = 0; i < 200; i++) {
    check(await op(i)); // warm-up, and proof that the op does what its name says
    if (i % 16 === 0) await new Promise((r) => setImmediate(r));
  }
  const times: number[] = [];
  const start = performance.now();
  let i = 200;
  while (performance.now() - start < RUN_MS && times.length < 5_000_000) {
    const t0 = performance.now();
    await op(i++);
    times.push(performance.now() - t0);
    // inject resolves through microtasks: yield (outside the timed region) so timers such as under-pressure's event
    // loop sampler run, as they would between socket reads.
    if (i % 16 === 0) await new Promise((r) => setImmediate(r));
  }
  const elapsed = performance.now() - start;
  times.sort((a, b) => a - b);
  const at = (p: number) =>
    times[Math.min(times.length - 1, Math.ceil((p / 100) * times.length) - 1)] as number;
  return {
    name,
    ops: times.length,
    opsPerSec: times.length / (elapsed / 1000),
    p50: at(50) * 1000,
    p99: at(99) * 1000,
  };
}

async function main(): Promise<void> {
  const config = parseConfig({ NODE_ENV: "test", LOG_LEVEL: "silent", RATE_LIMIT_MAX: "1000000000" });
  const clock = () => new Date();
  const unlocks = createUnlockService(loadUnlockStore(), clock);
  const benchmark = createBenchmarkService(loadCatalog(), { clock });
  const ledger = openLedger(":memory:");
  const app = await buildApp({
    config,
    unlocks,
    benchmark,
    ledger,
    gateway: instantGateway,
    payTo: PAY_TO,
    facilitatorLabel: "bench",
    clock,
    logger: false,
  });
  await app.ready();

  const status = (code: number) => (v: unknown) => {
    const got = (v as { statusCode: number }).statusCode;
    if (got !== code)
      throw new Error(`expected ${code}, got ${got}: ${(v as { body: string }).body.slice(0, 200)}`);
  };
  const nonces = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;
  const results: Result[] = [];
  results.push(
    await measure(
      "unpaid 402 (GET /v1/unlocks/upcoming)",
      () => app.inject({ method: "GET", url: "/v1/unlocks/upcoming?days=30" }),
      status(402),
    ),
  );
  results.push(
    await measure(
      "invalid 400 (POST /v1/token/risk-summary)",
      () =>
        app.inject({
          method: "POST",
          url: "/v1/token/risk-summary",
          headers: { "content-type": "application/json" },
          payload: '{"token":""}',
        }),
      status(400),
    ),
  );
  results.push(
    await measure(
      "paid 200, instant facilitator (verify+handler+settle+receipt)",
      (i) =>
        app.inject({
          method: "GET",
          url: "/v1/unlocks/upcoming?days=30",
          headers: { "payment-signature": v2Header(nonces(i)) },
        }),
      status(200),
    ),
  );
  results.push(
    await measure(
      "service: unlocks.upcoming(30, 0)",
      async () => unlocks.upcoming(30, 0),
      (v) => {
        if (!Array.isArray((v as { unlocks?: unknown }).unlocks)) throw new Error("no unlocks");
      },
    ),
  );
  results.push(
    await measure(
      "service: benchmark.benchmark(endpoint_url)",
      (i) =>
        benchmark.benchmark(
          { endpoint_url: `https://api.example${i % 50}.com/v1/price/:address` },
          { availability: availabilityLabel("provisional", false) },
        ),
      (v) => {
        if (typeof v !== "object" || v === null) throw new Error("no benchmark result");
      },
    ),
  );
  await app.close();
  await ledger.close();

  const w = Math.max(...results.map((r) => r.name.length));
  process.stdout.write(`bench: ${RUN_MS} ms per case, sequential, Node ${process.version}\n`);
  for (const r of results)
    process.stdout.write(
      `${r.name.padEnd(w)}  ${r.opsPerSec.toFixed(0).padStart(8)} ops/s  p50 ${r.p50.toFixed(0).padStart(6)} µs  p99 ${r.p99.toFixed(0).padStart(6)} µs  (n=${r.ops})\n`,
    );
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
