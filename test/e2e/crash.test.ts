import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { decodePaymentResponseHeader } from "@x402/core/http";
import { wrapFetchWithPayment } from "@x402/fetch";
import { afterAll, describe, expect, it } from "vitest";
import { buyerClient, fetchPayingV1 } from "../../scripts/buyer.js";
import { type ServerProcess, startServerProcess } from "../../scripts/server-process.js";
import { devnetKey } from "../../src/devnet/constants.js";
import { openLedger } from "../../src/store/ledger.js";

// The server as a separate process on the embedded devnet, paid concurrently by 9 buyers (v2 and v1), killed with
// SIGKILL mid-load, restarted on the same ledger file: every settlement a client received must have its receipt.

const dir = mkdtempSync(join(tmpdir(), "crash-"));
const ledgerPath = join(dir, "ledger.sqlite");
const servers: ServerProcess[] = [];
afterAll(async () => {
  for (const s of servers) await s.stop("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

const KILL_AFTER_SETTLEMENTS = 30;
const KILL_AFTER_MS = 8_000;
const MAX_CALLS_PER_WORKER = 40;
const MAX_PRICE = 1_000_000n;

interface Received {
  transaction: string;
  version: 1 | 2;
}

describe("crash safety", () => {
  it("after SIGKILL mid-load and a restart, every settlement a client received has a receipt", {
    timeout: 90_000,
  }, async () => {
    const started = Date.now();
    const env = { LEDGER_PATH: ledgerPath, LOG_LEVEL: "debug", RATE_LIMIT_MAX: "100000" };
    const first = await startServerProcess(env);
    servers.push(first);

    const received: Received[] = [];
    const proofsSent: string[] = [];
    let killed = false;
    let calls = 0;
    const spyFetch: typeof fetch = (input, init) => {
      const sig = new Headers((input instanceof Request ? input.headers : undefined) ?? init?.headers).get(
        "payment-signature",
      );
      if (sig) proofsSent.push(sig);
      return fetch(input, init);
    };

    async function worker(index: number): Promise<void> {
      const key = devnetKey(1 + (index % 9)).privateKey;
      const v1 = index % 3 === 2; // a third of the workers pay with x402 v1 (X-PAYMENT)
      const pay = wrapFetchWithPayment(spyFetch, buyerClient(key, MAX_PRICE)) as typeof fetch;
      for (let i = 0; i < MAX_CALLS_PER_WORKER && !killed && Date.now() - started < 60_000; i++) {
        const url = `${first.url}/v1/unlocks/upcoming?days=${1 + ((index * 37 + i) % 365)}`;
        try {
          calls += 1;
          if (v1) {
            const { response, paymentHeader } = await fetchPayingV1(url, {}, key, MAX_PRICE);
            if (paymentHeader) proofsSent.push(...Object.values(paymentHeader));
            const header = response.headers.get("x-payment-response");
            await response.arrayBuffer();
            if (response.status === 200 && header)
              received.push({
                transaction: JSON.parse(Buffer.from(header, "base64").toString("utf8")).transaction,
                version: 1,
              });
          } else {
            const response = await pay(url);
            const header = response.headers.get("payment-response");
            await response.arrayBuffer();
            if (response.status === 200 && header)
              received.push({ transaction: decodePaymentResponseHeader(header).transaction, version: 2 });
          }
        } catch {
          return; // the server is gone (killed mid-request): this client got nothing for this call
        }
      }
    }

    const workers = Array.from({ length: 18 }, (_, i) => worker(i));
    const deadline = Date.now() + KILL_AFTER_MS;
    while (received.length < KILL_AFTER_SETTLEMENTS && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    killed = true;
    first.child.kill("SIGKILL");
    expect(await first.exited).toBe("SIGKILL");
    await Promise.all(workers);
    const beforeRestart = [...received];
    expect(beforeRestart.length).toBeGreaterThanOrEqual(10);
    expect(beforeRestart.some((r) => r.version === 1)).toBe(true);
    expect(beforeRestart.some((r) => r.version === 2)).toBe(true);

    // Restart on the same ledger file (a fresh devnet chain; the ledger is what must survive).
    const second = await startServerProcess(env);
    servers.push(second);
    const after = await wrapFetchWithPayment(
      spyFetch,
      buyerClient(devnetKey(1).privateKey, MAX_PRICE),
    )(`${second.url}/v1/unlocks/upcoming?days=30`);
    expect(after.status).toBe(200);
    const afterTx = decodePaymentResponseHeader(after.headers.get("payment-response") as string).transaction;

    const ledger = openLedger(ledgerPath);
    const receipts = await ledger.receipts();
    ledger.close();
    const byTx = new Map(receipts.filter((r) => r.transaction).map((r) => [r.transaction, r]));
    const missing = beforeRestart.filter((r) => byTx.get(r.transaction)?.status !== "settled");
    expect(missing).toEqual([]);
    expect(byTx.get(afterTx)?.status).toBe("settled");
    // One receipt per transaction, and each received settlement is for the route's price.
    expect(byTx.size).toBe(receipts.filter((r) => r.transaction).length);
    for (const r of beforeRestart)
      expect(byTx.get(r.transaction)).toMatchObject({ amount: "20000", route: "GET /v1/unlocks/upcoming" });
    const orphans = receipts.filter((r) => r.status === "settling").length;

    // Graceful stop of the restarted server; neither process logged a proof, a settlement header or a devnet key.
    const how = await second.stop("SIGTERM");
    expect([0, "SIGTERM"]).toContain(how);
    const output = first.output() + second.output();
    expect(output).toContain("incoming request"); // request logging was on
    const keys = Array.from({ length: 11 }, (_, i) => devnetKey(i).privateKey);
    expect(keys.filter((k) => output.includes(k.slice(2)))).toEqual([]);
    expect(proofsSent.length).toBeGreaterThan(0);
    expect(proofsSent.filter((p) => output.includes(p))).toEqual([]);

    process.stdout.write(
      `crash test: ${calls} calls, ${beforeRestart.length} settlements received before SIGKILL, ${receipts.length} receipts ` +
        `(${orphans} left "settling" by the kill), ${Math.round((Date.now() - started) / 1000)} s\n`,
    );
  });
});
