import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from "@x402/core/http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buyerClient } from "../../scripts/buyer.js";
import { type ServerProcess, startServerProcess } from "../../scripts/server-process.js";
import { type Devnet, startDevnet } from "../../src/devnet/index.js";
import type { LedgerPort } from "../../src/ledger/port.js";
import { openPostgresLedger } from "../../src/ledger/postgres.js";
import { startTestPostgres, type TestPostgres } from "../helpers/postgres.js";
import { b64 } from "../helpers/proofs.js";

/*
 * Several instances, one ledger: server processes on one PostgreSQL (embedded, started here), one devnet chain, and
 * a facilitator proxy that lets the test hold settlements at a barrier. "Mid-settlement" is made by that barrier, never
 * by timing: the proxy forwards /settle only when the test opens the gate, or settles on chain and swallows the reply.
 */

interface Deferred {
  promise: Promise<void>;
  resolve: () => void;
}
const deferred = (): Deferred => {
  let resolve = () => {};
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
};

let pgServer: TestPostgres;
let ledgerUrl: string;
let ledger: LedgerPort;
let devnet: Devnet;
let proxy: Server;
const sockets = new Set<Socket>();
const servers: ServerProcess[] = [];
let a: ServerProcess;
let b: ServerProcess;

/** The facilitator proxy's controls. */
const facilitator = {
  /** /settle calls received (each one a settlement attempt by some instance). */
  settleCalls: 0,
  /** While set, /settle waits for it before going upstream. */
  gate: undefined as Promise<void> | undefined,
  /** While true, /settle goes upstream (the transfer happens) and the reply is swallowed. */
  swallow: false,
  /** Transactions the facilitator settled, in order. */
  settled: [] as string[],
  /** Waiters for `settled.length` to reach a count. */
  waiters: [] as { n: number; done: () => void }[],
  /** Waiters for `settleCalls` to reach a count. */
  callWaiters: [] as { n: number; done: () => void }[],
};
const untilSettleCalls = (n: number) =>
  new Promise<void>((resolve) => {
    if (facilitator.settleCalls >= n) resolve();
    else facilitator.callWaiters.push({ n, done: resolve });
  });
const untilSettled = (n: number) =>
  new Promise<void>((resolve) => {
    if (facilitator.settled.length >= n) resolve();
    else facilitator.waiters.push({ n, done: resolve });
  });

async function forward(req: IncomingMessage, res: ServerResponse) {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const isSettle = req.url === "/settle";
  if (isSettle) {
    facilitator.settleCalls += 1;
    for (const w of facilitator.callWaiters.filter((x) => facilitator.settleCalls >= x.n)) w.done();
    if (facilitator.gate) await facilitator.gate;
  }
  const swallow = isSettle && facilitator.swallow;
  const upstream = await fetch(`${devnet.facilitatorUrl}${req.url}`, {
    method: req.method,
    headers: { "content-type": "application/json" },
    ...(req.method === "POST" ? { body: Buffer.concat(chunks) } : {}),
  });
  const text = await upstream.text();
  if (isSettle) {
    const tx = (JSON.parse(text) as { transaction?: string }).transaction;
    if (tx) facilitator.settled.push(tx);
    for (const w of facilitator.waiters.filter((x) => facilitator.settled.length >= x.n)) w.done();
    if (swallow) return; // settled on chain; the instance waiting for this reply never gets it
  }
  res.writeHead(upstream.status, { "content-type": "application/json" }).end(text);
}

const PUBLIC = "http://pressure402.lb.test"; // both instances behind one load balancer: identical payment terms
const UNLOCKS = "/v1/unlocks/upcoming?days=30";
const BENCH = "/v1/benchmark/endpoint";
const benchBody = JSON.stringify({ endpoint_url: "https://2s.io/api/crypto/token-price" });

function instanceEnv(): Record<string, string> {
  return {
    LEDGER_URL: ledgerUrl,
    LEDGER_SECRET_KEY: "5e".repeat(32), // shared by both instances, as README asks
    FACILITATOR_URL: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
    // Long enough that a held settlement is never cut short by the client's own timeout.
    FACILITATOR_TIMEOUT_MS: "120000",
    PAY_TO: devnet.payTo,
    CHAIN_RPC_URL: devnet.rpcUrl,
    PUBLIC_BASE_URL: PUBLIC,
    RATE_LIMIT_MAX: "100000",
    CLIENT_MAX_IN_FLIGHT: "100000",
    MAX_EVENT_LOOP_DELAY_MS: "0", // load shedding off: this test is about the ledger, not about overload
    BENCHMARK_PROVISIONAL_CAP: "3",
    LOG_LEVEL: "info",
    RECONCILE_INTERVAL_MS: "500", // the survivor's background pass (dead-instance release, reconciler) runs often
  };
}

beforeAll(async () => {
  [pgServer, devnet] = await Promise.all([startTestPostgres(), startDevnet()]);
  ledgerUrl = await pgServer.freshSchema();
  ledger = await openPostgresLedger(ledgerUrl);
  proxy = createServer((req, res) => void forward(req, res).catch(() => res.destroy()));
  proxy.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", r));
  [a, b] = await Promise.all([startServerProcess(instanceEnv()), startServerProcess(instanceEnv())]);
  servers.push(a, b);
}, 180_000);

afterAll(async () => {
  for (const s of servers) await s.stop("SIGKILL");
  for (const s of sockets) s.destroy();
  await new Promise((r) => (proxy ? proxy.close(r) : r(undefined)));
  await ledger?.close();
  await devnet?.stop();
  await pgServer?.stop();
}, 60_000);

async function requiredFrom(s: ServerProcess, path: string, init: RequestInit = {}) {
  const res = await fetch(`${s.url}${path}`, init);
  expect(res.status).toBe(402);
  return decodePaymentRequiredHeader(res.headers.get("payment-required") as string);
}

async function proof(required: Awaited<ReturnType<typeof requiredFrom>>, key: `0x${string}`) {
  return b64(await buyerClient(key, 1_000_000n).createPaymentPayload(required));
}

const txOf = (res: Response) =>
  decodePaymentResponseHeader(res.headers.get("payment-response") as string).transaction;

describe("two instances on one PostgreSQL ledger", () => {
  it("100 concurrent requests with one proof, split across both instances → exactly one settlement", {
    timeout: 120_000,
  }, async () => {
    const key = devnet.buyers[0]?.privateKey as `0x${string}`;
    const signature = await proof(await requiredFrom(a, UNLOCKS), key);
    const before = await devnet.balanceOf(devnet.payTo);
    const calls0 = facilitator.settleCalls;

    // The winner's settlement waits at the gate until the 99 others have all been answered: true overlap.
    const gate = deferred();
    facilitator.gate = gate.promise;
    let answered = 0;
    const allButOne = deferred();
    const responses = Array.from({ length: 100 }, (_, i) =>
      fetch(`${(i % 2 === 0 ? a : b).url}${UNLOCKS}`, { headers: { "PAYMENT-SIGNATURE": signature } }).then(
        async (res) => {
          const body = await res.text();
          answered += 1;
          if (answered === 99) allButOne.resolve();
          return { res, body, instance: i % 2 === 0 ? "a" : "b" };
        },
      ),
    );
    // Barriers: the 99 were answered while the one claim that won is held at the facilitator's settle.
    await Promise.all([allButOne.promise, untilSettleCalls(calls0 + 1)]);
    expect(facilitator.settleCalls - calls0).toBe(1);
    facilitator.gate = undefined;
    gate.resolve();
    const results = await Promise.all(responses);

    const statuses = results.map((r) => r.res.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(99);
    const in_progress = results.filter((r) => r.res.status === 409);
    expect(new Set(in_progress.map((r) => r.instance))).toEqual(new Set(["a", "b"])); // both refused a double
    expect(in_progress.every((r) => r.body.includes("payment-in-progress"))).toBe(true);

    expect(facilitator.settleCalls - calls0).toBe(1);
    expect((await devnet.balanceOf(devnet.payTo)) - before).toBe(20_000n);
    const paid = results.find((r) => r.res.status === 200);
    const tx = txOf(paid?.res as Response);
    const receipts = (await ledger.receipts()).filter((r) => r.transaction === tx);
    expect(receipts).toHaveLength(1);
    expect(receipts[0]).toMatchObject({ status: "settled", amount: "20000" });

    // Delivered at least once, by either instance: the retry at the other one replays the same settlement.
    const other = paid?.instance === "a" ? b : a;
    // With the retry key the paying answer issued: the proof alone is public on chain once settled.
    const retryKey = paid?.res.headers.get("idempotency-key") as string;
    const replay = await fetch(`${other.url}${UNLOCKS}`, {
      headers: { "PAYMENT-SIGNATURE": signature, "Idempotency-Key": retryKey },
    });
    expect(replay.status).toBe(200);
    expect(txOf(replay)).toBe(tx);
    expect(facilitator.settleCalls - calls0).toBe(1);
  });

  it("the provisional cap holds across both: cap 3, 50 concurrent proofs split across both → 3 settlements", {
    timeout: 120_000,
  }, async () => {
    const init = { method: "POST", headers: { "content-type": "application/json" }, body: benchBody };
    const required = await requiredFrom(b, BENCH, init);
    const keys = devnet.buyers.map((x) => x.privateKey);
    const proofs = await Promise.all(
      Array.from({ length: 50 }, (_, i) => proof(required, keys[i % keys.length] as `0x${string}`)),
    );
    const before = await devnet.balanceOf(devnet.payTo);
    const calls0 = facilitator.settleCalls;

    // The three that reserve a slot wait at the gate until the other 47 were answered.
    const gate = deferred();
    facilitator.gate = gate.promise;
    let answered = 0;
    const allRefused = deferred();
    const responses = proofs.map((p, i) =>
      fetch(`${(i % 2 === 0 ? a : b).url}${BENCH}`, {
        ...init,
        headers: { ...init.headers, "PAYMENT-SIGNATURE": p },
      }).then(async (res) => {
        const body = await res.text();
        answered += 1;
        if (answered === 47) allRefused.resolve();
        return { status: res.status, body };
      }),
    );
    await Promise.all([allRefused.promise, untilSettleCalls(calls0 + 3)]);
    expect(facilitator.settleCalls - calls0).toBe(3); // the three slot holders, held at the gate
    facilitator.gate = undefined;
    gate.resolve();
    const results = await Promise.all(responses);

    expect(results.filter((r) => r.status === 200)).toHaveLength(3);
    const refused = results.filter((r) => r.status === 503);
    expect(refused).toHaveLength(47);
    expect(refused.every((r) => r.body.includes("provisional-cap-reached"))).toBe(true);
    expect(facilitator.settleCalls - calls0).toBe(3);
    expect((await devnet.balanceOf(devnet.payTo)) - before).toBe(3n * 50_000n);
    expect(
      await ledger.countPaidSince("POST /v1/benchmark/endpoint", new Date(Date.now() - 86_400_000)),
    ).toBe(3);
  });

  /** Waits, bounded, for a fact the database will show once PostgreSQL or an instance's background pass acts. */
  async function until(what: string, fact: () => Promise<boolean>, tries = 400, everyMs = 25): Promise<void> {
    for (let i = 0; i < tries; i++) {
      if (await fact()) return;
      await new Promise((r) => setTimeout(r, everyMs));
    }
    throw new Error(`not seen: ${what}`);
  }

  /**
   * Sends a proof (with the buyer's own Idempotency-Key, its secret for a retry) to `s`, settles it on chain and
   * swallows the reply: `s` is mid-settlement; returns the receipt.
   */
  async function midSettlement(s: ServerProcess, path: string, signature: string, secret: string) {
    const settled0 = facilitator.settled.length;
    const ids = new Set((await ledger.receipts()).map((r) => r.id));
    facilitator.swallow = true;
    const lost = fetch(`${s.url}${path}`, {
      headers: { "PAYMENT-SIGNATURE": signature, "Idempotency-Key": secret },
    }).then(
      (r) => r.status,
      () => "connection lost" as const,
    );
    await untilSettled(settled0 + 1);
    facilitator.swallow = false;
    const tx = facilitator.settled[settled0] as string;
    const receipt = (await ledger.receipts()).find((r) => !ids.has(r.id));
    expect(receipt?.status).toBe("settling");
    return { tx, receipt: receipt as NonNullable<typeof receipt>, lost };
  }

  it("the payer's fresh proof at the other instance, while its purchase settles or after its answer was lost → that answer, charged once", {
    timeout: 120_000,
  }, async () => {
    const key = devnet.buyers[7]?.privateKey as `0x${string}`;
    const path = "/v1/unlocks/upcoming?days=77";
    const before = await devnet.balanceOf(devnet.payTo);
    const calls0 = facilitator.settleCalls;
    // a settles the first purchase and is held at the facilitator's settle…
    const gate = deferred();
    facilitator.gate = gate.promise;
    const first = fetch(`${a.url}${path}`, {
      headers: { "PAYMENT-SIGNATURE": await proof(await requiredFrom(a, path), key) },
    });
    await untilSettleCalls(calls0 + 1);
    // …while the same payer's new proof for the same request reaches b, which finds it settling in the ledger.
    const second = fetch(`${b.url}${path}`, {
      headers: { "PAYMENT-SIGNATURE": await proof(await requiredFrom(b, path), key) },
    });
    facilitator.gate = undefined;
    gate.resolve();
    const [r1, r2] = await Promise.all([first, second]);
    expect(r1.status).toBe(200);
    expect(r2.status).toBe(200);
    expect(r2.headers.get("idempotent-replayed")).toBe("true");
    const body = await r1.text();
    expect(await r2.text()).toBe(body);
    expect(txOf(r2)).toBe(txOf(r1));
    // The answer a gave was lost too: a third proof, at b again, re-reads it.
    const third = await fetch(`${b.url}${path}`, {
      headers: { "PAYMENT-SIGNATURE": await proof(await requiredFrom(b, path), key) },
    });
    expect(third.status).toBe(200);
    expect(await third.text()).toBe(body);
    expect(facilitator.settleCalls - calls0).toBe(1);
    expect((await devnet.balanceOf(devnet.payTo)) - before).toBe(20_000n);
    // A changed request is a purchase of its own.
    const other = await fetch(`${b.url}/v1/unlocks/upcoming?days=78`, {
      headers: {
        "PAYMENT-SIGNATURE": await proof(await requiredFrom(b, "/v1/unlocks/upcoming?days=78"), key),
      },
    });
    expect(other.status).toBe(200);
    expect(other.headers.get("idempotent-replayed")).toBeNull();
    expect((await devnet.balanceOf(devnet.payTo)) - before).toBe(40_000n);
  });

  it("kill -9 of one instance mid-settlement → the buyer's first retry at the other gets what it paid for", {
    timeout: 120_000,
  }, async () => {
    const key = devnet.buyers[3]?.privateKey as `0x${string}`;
    const path = "/v1/unlocks/upcoming?days=90";
    const signature = await proof(await requiredFrom(a, path), key);
    const before = await devnet.balanceOf(devnet.payTo);
    const { tx, receipt, lost } = await midSettlement(a, path, signature, "buyer-4-order");
    expect((await devnet.balanceOf(devnet.payTo)) - before).toBe(20_000n); // the buyer has paid
    const deadId = receipt.incarnation as string;

    a.child.kill("SIGKILL");
    expect(await a.exited).toBe("SIGKILL");
    expect(await lost).toBe("connection lost");
    // PostgreSQL drops the dead process's session lock when it notices the closed connection.
    await until("a's incarnation dead", async () =>
      (await ledger.incarnations()).some((x) => x.id === deadId && x.alive === false),
    );

    const retry = await fetch(`${b.url}${path}`, {
      headers: { "PAYMENT-SIGNATURE": signature, "Idempotency-Key": "buyer-4-order" },
    });
    expect(retry.status).toBe(200);
    expect(txOf(retry)).toBe(tx);
    expect(((await retry.json()) as { days: number }).days).toBe(90);

    expect((await devnet.balanceOf(devnet.payTo)) - before).toBe(20_000n); // exactly once
    expect(await ledger.receipt(receipt.id)).toMatchObject({ status: "settled", transaction: tx });
    expect((await ledger.receipts()).filter((r) => r.transaction === tx)).toHaveLength(1);
    expect((await ledger.incarnations()).find((x) => x.id === deadId)?.endedAt).not.toBeNull();
  });

  it("kill -9 mid-settlement with nobody retrying → the survivor's background reconciler settles it from the chain", {
    timeout: 150_000,
  }, async () => {
    const c = await startServerProcess(instanceEnv());
    servers.push(c);
    const key = devnet.buyers[4]?.privateKey as `0x${string}`;
    const path = "/v1/unlocks/upcoming?days=60";
    const signature = await proof(await requiredFrom(c, path), key);
    const before = await devnet.balanceOf(devnet.payTo);
    const { tx, receipt, lost } = await midSettlement(c, path, signature, "buyer-5-retry");
    const deadId = receipt.incarnation as string;

    c.child.kill("SIGKILL");
    expect(await c.exited).toBe("SIGKILL");
    expect(await lost).toBe("connection lost");
    // No request arrives: b's maintenance pass (RECONCILE_INTERVAL_MS) finds c dead, releases it and asks the chain.
    await until(
      "the receipt settled by b's reconciler",
      async () => (await ledger.receipt(receipt.id))?.status === "settled",
      600,
      50,
    );
    expect(await ledger.receipt(receipt.id)).toMatchObject({ status: "settled", transaction: tx });
    expect((await ledger.incarnations()).find((x) => x.id === deadId)?.endedAt).not.toBeNull();

    // The buyer comes back later with the Idempotency-Key it paid with and gets the response it paid for.
    const retry = await fetch(`${b.url}${path}`, {
      headers: { "PAYMENT-SIGNATURE": signature, "Idempotency-Key": "buyer-5-retry" },
    });
    expect(retry.status).toBe(200);
    expect(txOf(retry)).toBe(tx);
    expect(((await retry.json()) as { days: number }).days).toBe(60);
    expect((await devnet.balanceOf(devnet.payTo)) - before).toBe(20_000n);
    const receipts = await ledger.receipts();
    expect(receipts.filter((r) => r.transaction === tx)).toHaveLength(1);
    expect(receipts.filter((r) => r.status === "settling" || r.status === "unknown")).toEqual([]);
  });
});
