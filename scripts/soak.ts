/**
 * Soak: `npm run soak -- --seconds N [--concurrency C]`. Starts the server as its own process on the embedded devnet,
 * runs mixed paid (x402 v2 and v1, nine buyer keys) and unpaid load for N seconds, and prints errors by status,
 * p50/p99 latency, settlements per second and the server's RSS drift. Loopback only; bounded in time and count.
 */

import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { devnetKey } from "../src/devnet/constants.js";
import { openLedger } from "../src/ledger/embedded.js";
import { fetchPayingV1, payingFetch } from "./buyer.js";
import { startServerProcess } from "./server-process.js";

const { values } = parseArgs({
  options: {
    seconds: { type: "string", default: "30" },
    concurrency: { type: "string", default: "16" },
    "max-requests": { type: "string", default: "2000000" },
  },
});
const SECONDS = Math.min(Math.max(Number(values.seconds) || 30, 1), 3600);
const CONCURRENCY = Math.min(Math.max(Number(values.concurrency) || 16, 1), 256);
const MAX_REQUESTS = Math.max(Number(values["max-requests"]) || 2_000_000, 1);
const MAX_PRICE = 1_000_000n;
const _ROOT = fileURLToPath(new URL("..", import.meta.url));

type Kind = "paid-v2" | "paid-v1" | "unpaid-402" | "invalid-400" | "health-200";
const EXPECTED: Record<Kind, number> = {
  "paid-v2": 200,
  "paid-v1": 200,
  "unpaid-402": 402,
  "invalid-400": 400,
  "health-200": 200,
};
/** Out of 10 requests: 4 paid v2, 2 paid v1, 2 unpaid, 1 invalid, 1 health. */
const MIX: Kind[] = [
  "paid-v2",
  "unpaid-402",
  "paid-v2",
  "paid-v1",
  "invalid-400",
  "paid-v2",
  "unpaid-402",
  "paid-v1",
  "health-200",
  "paid-v2",
];

interface Sample {
  kind: Kind;
  status: number | "network-error";
  ms: number;
  settled: boolean;
}

/** Resident set size of a process in MiB (Linux /proc). */
function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m?.[1] ? Number(m[1]) / 1024 : Number.NaN;
}

const percentile = (sorted: number[], p: number): number =>
  sorted.length === 0
    ? Number.NaN
    : (sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number);

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "soak-"));
  const ledgerPath = join(dir, "ledger.sqlite");
  process.stdout.write(`soak: starting the server on the embedded devnet (ledger ${ledgerPath})…\n`);
  // The soak measures the payment path, not the per-client limiter (one client IP sends everything).
  const server = await startServerProcess({ LEDGER_PATH: ledgerPath, RATE_LIMIT_MAX: "100000000" });
  const { url, child } = server;
  const pid = child.pid as number;
  const buyers = Array.from({ length: 9 }, (_, i) => devnetKey(i + 1).privateKey);
  const payers = buyers.map((k) => payingFetch(k, MAX_PRICE));

  const samples: Sample[] = [];
  let issued = 0;
  async function one(kind: Kind, n: number): Promise<Sample> {
    const days = 1 + (n % 365);
    const t0 = performance.now();
    try {
      let res: Response;
      let settled = false;
      if (kind === "paid-v2") {
        res = await (payers[n % 9] as typeof fetch)(`${url}/v1/unlocks/upcoming?days=${days}`);
        settled = res.status === 200 && res.headers.has("payment-response");
      } else if (kind === "paid-v1") {
        res = (
          await fetchPayingV1(
            `${url}/v1/unlocks/upcoming?days=${days}`,
            {},
            buyers[n % 9] as `0x${string}`,
            MAX_PRICE,
          )
        ).response;
        settled = res.status === 200 && res.headers.has("x-payment-response");
      } else if (kind === "unpaid-402") {
        res = await fetch(`${url}/v1/unlocks/upcoming?days=${days}`);
      } else if (kind === "invalid-400") {
        res = await fetch(`${url}/v1/token/risk-summary`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: '{"token":""}',
        });
      } else {
        res = await fetch(`${url}/health`);
      }
      await res.arrayBuffer();
      return { kind, status: res.status, ms: performance.now() - t0, settled };
    } catch {
      return { kind, status: "network-error", ms: performance.now() - t0, settled: false };
    }
  }

  // Warm-up (JIT, SQLite pages, connections), then the RSS baseline.
  await Promise.all(Array.from({ length: 20 }, (_, i) => one(MIX[i % MIX.length] as Kind, i)));
  const rssStart = rssMiB(pid);
  const rssSeries: number[] = [rssStart];
  const sampler = setInterval(() => rssSeries.push(rssMiB(pid)), 1000);

  const started = performance.now();
  const deadline = started + SECONDS * 1000;
  process.stdout.write(`soak: ${SECONDS} s, ${CONCURRENCY} concurrent clients against ${url}\n`);
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < deadline && issued < MAX_REQUESTS) {
        const n = issued++;
        samples.push(await one(MIX[n % MIX.length] as Kind, n));
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  clearInterval(sampler);
  const rssEnd = rssMiB(pid);

  await server.stop("SIGTERM");
  const ledger = openLedger(ledgerPath);
  const receipts = await ledger.receipts();
  await ledger.close();
  rmSync(dir, { recursive: true, force: true });

  const byStatus = new Map<string, number>();
  const errors = new Map<string, number>();
  for (const s of samples) {
    byStatus.set(String(s.status), (byStatus.get(String(s.status)) ?? 0) + 1);
    if (s.status !== EXPECTED[s.kind])
      errors.set(`${s.kind} → ${s.status}`, (errors.get(`${s.kind} → ${s.status}`) ?? 0) + 1);
  }
  const settled = samples.filter((s) => s.settled).length;
  const lat = (pred: (s: Sample) => boolean) => {
    const ms = samples
      .filter(pred)
      .map((s) => s.ms)
      .sort((a, b) => a - b);
    return `p50 ${percentile(ms, 50).toFixed(1)} ms, p99 ${percentile(ms, 99).toFixed(1)} ms (n=${ms.length})`;
  };
  const settledReceipts = receipts.filter((r) => r.status === "settled").length;
  const lines = [
    "",
    `requests:        ${samples.length} in ${elapsed.toFixed(1)} s (${(samples.length / elapsed).toFixed(1)} req/s)`,
    `by status:       ${[...byStatus.entries()]
      .sort()
      .map(([k, v]) => `${k}: ${v}`)
      .join(", ")}`,
    `errors:          ${errors.size === 0 ? "none" : [...errors.entries()].map(([k, v]) => `${k}: ${v}`).join(", ")}`,
    `latency all:     ${lat(() => true)}`,
    `latency paid:    ${lat((s) => s.kind === "paid-v2" || s.kind === "paid-v1")}  (402 + sign + paid retry + settle)`,
    `latency unpaid:  ${lat((s) => s.kind === "unpaid-402" || s.kind === "invalid-400" || s.kind === "health-200")}`,
    `settlements:     ${settled} (${(settled / elapsed).toFixed(2)}/s); ledger: ${settledReceipts} settled receipts of ${receipts.length}`,
    `server RSS:      ${rssStart.toFixed(1)} → ${rssEnd.toFixed(1)} MiB (drift ${rssEnd - rssStart >= 0 ? "+" : ""}${(rssEnd - rssStart).toFixed(1)} MiB, ${(((rssEnd - rssStart) / rssStart) * 100).toFixed(1)}%; max ${Math.max(...rssSeries).toFixed(1)} MiB)`,
    "",
  ];
  process.stdout.write(lines.join("\n"));
  if (errors.size > 0 || settledReceipts < settled) process.exitCode = 1;
}

main().catch((err: unknown) => {
  process.stderr.write(`soak failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
