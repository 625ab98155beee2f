import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { decodePaymentResponseHeader } from "@x402/core/http";
import { afterEach, describe, expect, it } from "vitest";
import type { LedgerPort } from "../../src/ledger/port.js";
import { openLedger } from "../../src/ledger/embedded.js";
import {
  type FaultFacilitator,
  type HttpApp,
  startFaultFacilitator,
  startHttpApp,
  UPCOMING_PATH,
  upcomingProof,
} from "../helpers/fault-facilitator.js";

/*
 * The ledger cannot write after a settlement (a full disk): the buyer still gets what it paid for, the write waits in
 * memory and is counted as backlog, and once the ledger can write again — in this process, or at the next start after
 * a clean stop that could not record it — the receipts say what the chain says: exported, they equal the transfers.
 */
const WRITES = [
  "claimAuthorization",
  "bindIdempotencyKey",
  "releaseClaim",
  "beginSettlement",
  "recordSettlement",
  "recordFailure",
  "storeResponse",
  "reclaimUnresolved",
  "startIncarnation",
  "heartbeat",
  "endIncarnation",
  "releaseIncarnation",
  "purgeExpired",
] as const;

/** A ledger whose writes fail with SQLite's disk-full error while `full` is set; `fillAfterBegin` sets it at settle. */
function failingLedger(inner: LedgerPort) {
  const state = { full: false, fillAfterBegin: false };
  const wrapped = { ...inner } as LedgerPort;
  for (const name of WRITES) {
    const original = (inner[name] as (...args: unknown[]) => Promise<unknown>).bind(inner);
    (wrapped as unknown as Record<string, unknown>)[name] = async (...args: unknown[]) => {
      if (state.full) throw Object.assign(new Error("database or disk is full"), { code: "SQLITE_FULL" });
      const result = await original(...args);
      if (name === "beginSettlement" && state.fillAfterBegin) state.full = true;
      return result;
    };
  }
  return { ledger: wrapped, state };
}

let fac: FaultFacilitator | undefined;
const apps: HttpApp[] = [];
afterEach(async () => {
  for (const a of apps.splice(0)) await a.app.close().catch(() => undefined);
  await fac?.close();
  fac = undefined;
});

/** What an export of the ledger says was paid: the transactions of its settled receipts. */
const exported = async (ledger: LedgerPort) =>
  new Set((await ledger.receipts()).filter((r) => r.status === "settled").map((r) => r.transaction));

describe("a ledger that cannot write after settlement", () => {
  it("4 buyers charged while the disk is full get their responses; the receipts catch up once it can write", async () => {
    fac = await startFaultFacilitator();
    const { ledger, state } = failingLedger(openLedger(":memory:"));
    const http = await startHttpApp(fac.url, {}, { ledger, ledgerShared: true, chain: fac.chain });
    apps.push(http);
    state.fillAfterBegin = true;
    for (let i = 0; i < 4; i++) {
      const res = await fetch(`${http.url}${UPCOMING_PATH}`, {
        headers: { "payment-signature": upcomingProof(http.config) },
      });
      expect(res.status).toBe(200);
      const settlement = decodePaymentResponseHeader(res.headers.get("payment-response") as string);
      expect(settlement.success).toBe(true);
      expect([...fac.transfers.values()]).toContain(settlement.transaction);
      expect(((await res.json()) as { unlocks: unknown[] }).unlocks).toBeInstanceOf(Array);
      state.full = false; // the next buyer's claim can be written; its settlement fills the disk again
    }
    state.full = true;
    expect(fac.transfers.size).toBe(4);
    expect((await ledger.receipts()).map((r) => r.status)).toEqual(Array(4).fill("settling"));
    // Still full: the backlog counts the four unrecorded settlements.
    expect(await http.app.payments.reconcileNow()).toMatchObject({ remaining: 4 });

    state.full = false;
    state.fillAfterBegin = false;
    expect(await http.app.payments.reconcileNow()).toEqual({ resolved: 0, remaining: 0 });
    expect(await exported(ledger)).toEqual(new Set(fac.transfers.values()));
    await http.app.close();
    await ledger.close();
  });

  it("a clean stop while still full: the next start settles them from the chain", async () => {
    fac = await startFaultFacilitator();
    const { ledger, state } = failingLedger(openLedger(":memory:"));
    const first = await startHttpApp(fac.url, {}, { ledger, ledgerShared: true, chain: fac.chain });
    apps.push(first);
    state.fillAfterBegin = true;
    for (let i = 0; i < 2; i++) {
      const res = await fetch(`${first.url}${UPCOMING_PATH}`, {
        headers: { "payment-signature": upcomingProof(first.config) },
      });
      expect(res.status).toBe(200);
      await res.text();
      state.full = false;
    }
    state.full = true;
    await first.app.close(); // SIGTERM's path: the incarnation cannot be recorded as ended
    apps.splice(0);
    expect((await ledger.receipts()).map((r) => r.status)).toEqual(["settling", "settling"]);

    state.full = false;
    state.fillAfterBegin = false;
    // The same ledger, one process again: the unended incarnation is dead, its settling receipts go to the chain.
    const second = await startHttpApp(fac.url, {}, { ledger, chain: fac.chain });
    apps.push(second);
    await second.app.payments.reconcileNow();
    expect((await ledger.receipts()).map((r) => r.status)).toEqual(["settled", "settled"]);
    expect(await exported(ledger)).toEqual(new Set(fac.transfers.values()));
    apps.splice(0);
    await second.close();
  });

  it("a clean stop with a working ledger leaves nothing settling: the unrecorded write becomes unknown first", async () => {
    fac = await startFaultFacilitator();
    const { ledger, state } = failingLedger(openLedger(":memory:"));
    const http = await startHttpApp(fac.url, {}, { ledger, ledgerShared: true, chain: fac.chain });
    state.fillAfterBegin = true;
    const res = await fetch(`${http.url}${UPCOMING_PATH}`, {
      headers: { "payment-signature": upcomingProof(http.config) },
    });
    expect(res.status).toBe(200);
    await res.text();
    state.full = false;
    state.fillAfterBegin = false;
    await http.app.close();
    const receipts = await ledger.receipts();
    expect(receipts.map((r) => r.status)).toEqual(["settled"]);
    expect((await ledger.incarnations()).every((i) => i.endedAt !== null)).toBe(true);
    await ledger.close();
  });
});

/** A real full filesystem: a 1 MiB tmpfs (root only). Skipped, with the reason, where it cannot be mounted. */
function mountTinyTmpfs(): { dir: string; unmount: () => void } | string {
  const dir = mkdtempSync(join(tmpdir(), "ledger-tmpfs-"));
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", dir], { stdio: "pipe" });
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    return `cannot mount a tmpfs here (${(err as Error).message.split("\n")[0]})`;
  }
  return {
    dir,
    unmount: () => {
      execFileSync("umount", [dir], { stdio: "pipe" });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

describe("a ledger on a full filesystem (tmpfs)", () => {
  const mounted = mountTinyTmpfs();
  const skip = typeof mounted === "string" ? mounted : undefined;
  if (skip) process.stdout.write(`full-disk tmpfs test skipped: ${skip}\n`);
  it.skipIf(skip !== undefined)(
    "charged buyers get responses; after space returns the export equals the chain",
    async () => {
      const { dir, unmount } = mounted as { dir: string; unmount: () => void };
      try {
        fac = await startFaultFacilitator();
        const path = join(dir, "ledger.sqlite");
        mkdirSync(dir, { recursive: true });
        const ledger = openLedger(path);
        const http = await startHttpApp(fac.url, {}, { ledger, ledgerShared: true, chain: fac.chain });
        apps.push(http);
        // Fill what is left of the filesystem, so the ledger's next pages have nowhere to go.
        const filler = join(dir, "filler");
        let size = 512 * 1024;
        for (;;) {
          try {
            writeFileSync(filler, Buffer.alloc(size), { flag: "a" });
          } catch {
            if (size <= 1024) break;
            size = Math.floor(size / 2);
          }
        }
        const answers: number[] = [];
        for (let i = 0; i < 4; i++) {
          const res = await fetch(`${http.url}${UPCOMING_PATH}`, {
            headers: { "payment-signature": upcomingProof(http.config) },
          });
          answers.push(res.status);
          if (res.status !== 200) expect(res.headers.get("retry-after")).toBeTruthy(); // retryable, never a 500
          const body = await res.text();
          if (res.status === 200) expect(body).toContain('"unlocks"');
          else expect(body).not.toContain('"unlocks":');
        }
        // Nobody was charged without a response: every transfer on chain went with a 200; the rest are 503s.
        expect(answers.filter((s) => s === 200).length).toBe(fac.transfers.size);
        expect(answers.every((s) => s === 200 || s === 503)).toBe(true);
        rmSync(filler);
        const after = await http.app.payments.reconcileNow();
        expect(after.remaining).toBe(0);
        expect(await exported(ledger)).toEqual(new Set(fac.transfers.values()));
        process.stdout.write(
          `full-disk tmpfs: answers ${JSON.stringify(answers)}, ${fac.transfers.size} transfers, export = chain\n`,
        );
        await http.app.close();
        apps.splice(0);
        await ledger.close();
      } finally {
        unmount();
      }
    },
  );
});
