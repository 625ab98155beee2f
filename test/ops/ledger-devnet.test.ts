import { execFile } from "node:child_process";
import { copyFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { createPublicClient, http } from "viem";
import { describe, expect, it } from "vitest";
import { payingFetch } from "../../scripts/buyer.js";
import { jsonInit, useDevnetServer } from "../helpers/devnet-server.js";

/*
 * The ledger's life against real money movement on the embedded devnet: pay N calls, back the live ledger up with
 * `npm run ledger -- backup`, pay M more, restore the backup (as on a new disk), and bring it back to the chain with
 * `npm run ledger -- reconcile`: the receipts export then equals what PAY_TO gained on chain, and a second reconcile
 * changes nothing. `verify` fails on the restored ledger and passes after the reconcile.
 */
const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const MAX = 1_000_000n;
const srv = useDevnetServer("p402-ledger-e2e-");
const { devnet, url } = srv;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}
async function npmRun(script: string, args: string[]): Promise<Run> {
  const env: Record<string, string | undefined> = { ...process.env, LEDGER_PATH: srv.ledgerPath };
  delete env.FACILITATOR_URL;
  delete env.CDP_API_KEY_ID;
  delete env.LEDGER_URL;
  try {
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      ["--import", "tsx", `scripts/${script}.ts`, ...args],
      { cwd: ROOT, env },
    );
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? -1, stdout: e.stdout ?? "", stderr: e.stderr ?? "" };
  }
}

const exportTotal = async (ledger: string) => {
  const run = await npmRun("receipts", ["--ledger", ledger]);
  expect(run.code, run.stderr).toBe(0);
  return (JSON.parse(run.stdout) as { total: { amountAtomic: string; calls: number } }).total;
};

describe("npm run ledger on the devnet: backup, restore, reconcile", () => {
  it("a restored backup is brought back to the chain's total, and a second reconcile changes nothing", async () => {
    const d = devnet();
    const chain = createPublicClient({ transport: http(d.rpcUrl) });
    const fromBlock = (await chain.getBlockNumber()) + 1n;
    const before = await d.balanceOf(d.payTo);
    const pay = payingFetch(d.buyers[6]!.privateKey, MAX);
    // Each call a request of its own: the same payer's new payment for a request it bought re-reads it, unbilled.
    const TOKENS = ["ARB", "APT", "STRK", "TIA"];
    let calls = 0;
    const paid = async (n: number) => {
      for (let i = 0; i < n; i++) {
        calls += 1;
        const res =
          i % 2 === 0
            ? await pay(url(`/v1/unlocks/upcoming?days=${10 + calls}`))
            : await pay(url("/v1/token/risk-summary"), jsonInit({ token: TOKENS[calls % TOKENS.length] }));
        expect(res.status, await res.clone().text()).toBe(200);
      }
    };

    // N paid calls, then a backup of the live ledger (the server keeps running and writing).
    const N = 3;
    await paid(N);
    const backupFile = join(srv.ledgerPath, "..", "backup.sqlite");
    // README: "N = a block from before the backup was taken"; the N paid calls settled seconds before it.
    const backupBlock = await chain.getBlockNumber({ cacheTime: 0 });
    const backup = await npmRun("ledger", ["backup", backupFile]);
    expect(backup.code, backup.stderr).toBe(0);
    const made = JSON.parse(backup.stdout) as { receipts: number; billed_atomic: string; integrity: string };
    expect(made.receipts).toBe(N);
    expect(made.integrity).toBe("ok");
    // A backup never overwrites.
    expect((await npmRun("ledger", ["backup", backupFile])).code).toBe(1);

    // M more, then the disk is lost: the backup is restored on a new one.
    const M = 4;
    await paid(M);
    const gained = (await d.balanceOf(d.payTo)) - before;
    expect(gained).toBe(BigInt(made.billed_atomic) + 2n * 20_000n + 2n * 250_000n);
    const live = await exportTotal(srv.ledgerPath);
    expect(live.amountAtomic).toBe(gained.toString());
    const restored = join(srv.ledgerPath, "..", "restored.sqlite");
    copyFileSync(backupFile, restored);
    expect(existsSync(restored)).toBe(true);
    const stale = await exportTotal(restored);
    expect(stale.calls).toBe(N);
    expect(BigInt(stale.amountAtomic)).toBeLessThan(gained);

    const chainArgs = [
      "--ledger",
      restored,
      "--rpc",
      d.rpcUrl,
      "--pay-to",
      d.payTo,
      "--from-block",
      String(fromBlock),
      // The devnet mines a block per transaction: the last payment has only its own block behind it.
      "--confirmations",
      "1",
    ];
    const verifyBefore = await npmRun("ledger", ["verify", ...chainArgs]);
    expect(verifyBefore.code, verifyBefore.stderr).toBe(1);
    const vb = JSON.parse(verifyBefore.stdout) as {
      chain: { payments: number };
      missingFromLedger: unknown[];
    };
    expect(vb.chain.payments).toBe(N + M);
    expect(vb.missingFromLedger).toHaveLength(M);

    const first = await npmRun("ledger", ["reconcile", ...chainArgs]);
    expect(first.code, first.stderr).toBe(0);
    const r1 = JSON.parse(first.stdout) as {
      chainPayments: number;
      alreadyBilled: number;
      restored: { route: string; amount: string }[];
      restoredAtomic: string;
    };
    expect(r1.chainPayments).toBe(N + M);
    expect(r1.alreadyBilled).toBe(N);
    expect(r1.restored).toHaveLength(M);
    // Each restored receipt is filed under the route whose price it paid.
    expect(r1.restored.map((r) => r.route).sort()).toEqual([
      "GET /v1/unlocks/upcoming",
      "GET /v1/unlocks/upcoming",
      "POST /v1/token/risk-summary",
      "POST /v1/token/risk-summary",
    ]);
    const after = await exportTotal(restored);
    expect(after.amountAtomic).toBe(gained.toString());
    expect(after.calls).toBe(N + M);

    const second = await npmRun("ledger", ["reconcile", ...chainArgs]);
    expect(second.code, second.stderr).toBe(0);
    const r2 = JSON.parse(second.stdout) as {
      alreadyBilled: number;
      restored: unknown[];
      settled: unknown[];
    };
    expect(r2.alreadyBilled).toBe(N + M);
    expect(r2.restored).toHaveLength(0);
    expect(r2.settled).toHaveLength(0);
    expect((await exportTotal(restored)).amountAtomic).toBe(gained.toString());

    const verifyAfter = await npmRun("ledger", ["verify", ...chainArgs]);
    expect(verifyAfter.code, verifyAfter.stdout).toBe(0);
    // The live ledger was never behind the chain.
    expect((await npmRun("ledger", ["verify", ...chainArgs.slice(2)])).code).toBe(0);
    // Run as README's restore recipe says, from the block the backup was taken at: the receipts settled just before
    // it are outside the range, not "missing on chain".
    const fromBackup = chainArgs.map((a, i) =>
      chainArgs[i - 1] === "--from-block" ? String(backupBlock) : a,
    );
    const recipe = await npmRun("ledger", ["verify", ...fromBackup]);
    expect(recipe.code, recipe.stdout).toBe(0);
    expect((JSON.parse(recipe.stdout) as { chain: { payments: number } }).chain.payments).toBe(M + 1);
    process.stdout.write(
      `ledger e2e: paid ${N}, backup (${made.receipts} receipts, ${made.billed_atomic} atomic), paid ${M} more; chain gained ${gained}; restored backup exported ${stale.amountAtomic} (${stale.calls} calls); reconcile restored ${r1.restored.length} (${r1.restoredAtomic} atomic) → export ${after.amountAtomic} (${after.calls} calls); second reconcile restored ${r2.restored.length}\n`,
    );
  }, 300_000); // a dozen CLI runs, each a fresh tsx process, on a shared machine
});
