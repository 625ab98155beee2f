/**
 * The ledger's share of a paid call, alone: the calls the payment core makes for one fresh purchase (claim, the
 * re-read and undelivered look-ups, binding the issued retry key, beginning and recording the settlement with its
 * response), one purchase at a time on a SQLite ledger in a temp directory, each from a payer of its own.
 *
 *   npx tsx scripts/bench/ledger-calls.ts [--calls 2000]
 *
 * Prints the CPU per purchase of the event loop's thread (process.cpuUsage is the process's; /proc splits it by
 * thread: the WAL syncs run on libuv's pool, checkpoints in their worker) and the wall time per purchase.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { openLedger } from "../../src/ledger/embedded.js";

const { values } = parseArgs({ options: { calls: { type: "string", default: "2000" } } });
const CALLS = Math.max(100, Number(values.calls) || 2000);
const dir = mkdtempSync(join(tmpdir(), "p402-ledger-calls-"));
const ledger = openLedger(join(dir, "ledger.sqlite"));
const incarnation = "bench";
await ledger.startIncarnation(incarnation, new Date());
const body = JSON.stringify({ token: "ARB", risk: 71.2, notes: "x".repeat(4000) });
const hex = (n: number) => `0x${randomBytes(n).toString("hex")}`;

async function purchase(): Promise<void> {
  const now = new Date();
  const identity = { network: "eip155:8453", asset: hex(20), payer: hex(20), nonce: hex(32) };
  const fingerprint = "POST /v1/unlock-risk {\"token\":\"ARB\"}";
  const claim = await ledger.claimAuthorization({
    identity,
    route: "POST /v1/unlock-risk",
    requestFingerprint: fingerprint,
    x402Version: 2,
    amount: "100000",
    payTo: hex(20),
    validBefore: String(Math.floor(now.getTime() / 1000) + 3600),
    incarnation,
    lockTtlMs: 60_000,
    now,
  });
  if (claim.kind !== "claimed") throw new Error(`claim: ${claim.kind}`);
  const id = claim.receipt.id;
  await ledger.purchasesOf(identity.payer, fingerprint, new Date(now.getTime() - 3600_000), 16);
  await ledger.undeliveredFor(identity.payer, fingerprint);
  const bound = await ledger.bindIdempotencyKey({
    receiptId: id,
    identity,
    key: randomBytes(24).toString("base64url"),
    requestFingerprint: fingerprint,
    ttlMs: 86_400_000,
    incarnation,
    now,
  });
  if (!bound.ok) throw new Error("bind refused");
  if (!(await ledger.beginSettlement(id, incarnation, now))) throw new Error("settlement not begun");
  const settled = await ledger.recordSettlement(id, {
    status: "settled",
    transaction: hex(32),
    response: {
      value: { statusCode: 200, headers: { "content-type": "application/json" }, body, generation: "g" },
      expiresAt: new Date(now.getTime() + 86_400_000),
    },
    now,
  });
  if (!settled.ok) throw new Error(`settle: ${settled.reason}`);
}

function threads(): Map<string, number> {
  const out = new Map<string, number>();
  for (const task of readdirSync(`/proc/${process.pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${process.pid}/task/${task}/stat`, "utf8");
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      const key = task === String(process.pid) ? "main" : "others";
      out.set(key, (out.get(key) ?? 0) + (Number(f[11]) + Number(f[12])) * 10);
    } catch {
      // ended meanwhile
    }
  }
  return out;
}

for (let i = 0; i < 200; i++) await purchase(); // warm-up
const t0 = threads();
const w0 = performance.now();
for (let i = 0; i < CALLS; i++) await purchase();
const wall = performance.now() - w0;
const t1 = threads();
const per = (k: string) => (((t1.get(k) ?? 0) - (t0.get(k) ?? 0)) * 1000) / CALLS;
process.stdout.write(
  `${CALLS} purchases: main thread ${per("main").toFixed(0)} µs, other threads ${per("others").toFixed(0)} µs CPU each; wall ${((wall * 1000) / CALLS).toFixed(0)} µs each\n`,
);
await ledger.close();
rmSync(dir, { recursive: true, force: true });
