import { mkdtempSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from "@x402/core/http";
import { generatePrivateKey } from "viem/accounts";
import { describe, expect, it } from "vitest";
import { openLedger } from "../../src/ledger/embedded.js";
import { PRICES } from "../../src/operations/prices.js";
import type { PaymentObserver, PaymentOutcome } from "../../src/payments/core/events.js";
import { requirementsV2 } from "../../src/payments/terms/requirements.js";
import {
  type HttpApp,
  signedUpcomingProof,
  startFaultFacilitator,
  startHttpApp,
  UPCOMING_PATH,
  upcomingProof,
} from "../helpers/fault-facilitator.js";
import { useFaultStack } from "../helpers/fault-stack.js";
import { junkProofs } from "../helpers/junk.js";
import { b64, signedV2Proof, TEST_NETWORK, v2Proof } from "../helpers/proofs.js";

// Paid exactly once, delivered at least once, against the real HTTP app, the real facilitator client and gateway, and a facilitator
// that models a chain (one transfer per nonce). Every wait is a barrier or a count, never a sleep.
const stack = useFaultStack();

const TERMS = {
  payTo: "0x00000000000000000000000000000000000000aa" as const,
  maxTimeoutSeconds: 300,
  network: TEST_NETWORK,
};
const pay = (app: HttpApp, proof: string, headers: Record<string, string> = {}, path = UPCOMING_PATH) =>
  fetch(`${app.url}${path}`, { headers: { "payment-signature": proof, ...headers } });

function recordingObserver() {
  const outcomes: PaymentOutcome[] = [];
  const circuit: string[] = [];
  const backlog: number[] = [];
  const calls: { operation: string; ok: boolean }[] = [];
  const observer: PaymentObserver = {
    paymentOutcome: (e) => outcomes.push(e.outcome),
    facilitatorCall: (e) => calls.push({ operation: e.operation, ok: e.ok }),
    circuitState: (s) => circuit.push(s),
    reconcilerBacklog: (n) => backlog.push(n),
  };
  return { observer, outcomes, circuit, backlog, calls };
}

/** At most `width` requests in flight at once. */
async function pool<T>(items: T[], width: number, run: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) await run(items[next++] as T);
    }),
  );
}

describe("1. junk never reaches the facilitator and never trips the breaker", () => {
  it("1,000 junk proofs of every kind, then an honest proof → 200", async () => {
    const rec = recordingObserver();
    stack.fac = await startFaultFacilitator();
    stack.http = await startHttpApp(
      stack.fac.url,
      { CIRCUIT_FAILURE_THRESHOLD: "5" },
      { paymentObserver: rec.observer },
    );
    const kinds = junkProofs(
      requirementsV2(PRICES.upcoming, {
        ...TERMS,
        maxTimeoutSeconds: stack.http.config.paymentTimeoutSeconds,
        network: stack.http.config.network,
      }),
    );
    const junk = Array.from({ length: 1000 }, (_, i) => kinds[i % kinds.length] as [string, string]);
    const statuses = new Map<number, number>();
    await pool(junk, 20, async ([, value]) => {
      const res = await pay(stack.http as HttpApp, value);
      await res.arrayBuffer();
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
    });
    expect(Object.fromEntries(statuses)).toEqual({ 400: 1000 });
    expect(stack.fac.calls).toMatchObject({ verify: 0, settle: 0 });
    expect(stack.http.gateway.circuit).toMatchObject({ failures: 0, openedAt: null });

    const honest = await pay(stack.http, upcomingProof(stack.http.config));
    expect(honest.status).toBe(200);
    expect(rec.outcomes.filter((o) => o === "refused")).toHaveLength(1000);
    expect(rec.outcomes.at(-1)).toBe("settled");
  });

  it("the facilitator's answers (invalid) and its 4xx never count; its 5xx do, and a half-open probe closes it", async () => {
    const rec = recordingObserver();
    let now = Date.now();
    stack.fac = await startFaultFacilitator();
    stack.http = await startHttpApp(
      stack.fac.url,
      { CIRCUIT_FAILURE_THRESHOLD: "3", CIRCUIT_COOLDOWN_MS: "1000" },
      { paymentObserver: rec.observer, paymentsClock: () => new Date(now) },
    );
    stack.fac.verify = "invalid";
    for (let i = 0; i < 10; i++)
      expect((await pay(stack.http, upcomingProof(stack.http.config))).status).toBe(402);
    stack.fac.verify = "http400";
    for (let i = 0; i < 10; i++)
      expect((await pay(stack.http, upcomingProof(stack.http.config))).status).toBe(502);
    expect(stack.http.gateway.circuit.openedAt).toBeNull();
    // 5xx met by three different payers' proven (EOA-signed) proofs: the facilitator's fault, not one payer's.
    stack.fac.verify = "http500";
    for (let i = 0; i < 3; i++)
      expect((await pay(stack.http, await signedUpcomingProof(stack.http.config))).status).toBe(502);
    expect(stack.http.gateway.circuit.openedAt).not.toBeNull();
    expect(rec.circuit).toEqual(["open"]);
    stack.fac.verify = "ok";
    now += 1000;
    expect((await pay(stack.http, upcomingProof(stack.http.config))).status).toBe(200);
    expect(stack.http.gateway.circuit.openedAt).toBeNull();
    expect(rec.circuit).toEqual(["open", "closed"]);
  });
});

describe("2. one authorization, one response", () => {
  it("K re-encodings of one authorization whose settle replies are lost → one settlement, one response", async () => {
    stack.fac = await startFaultFacilitator();
    stack.http = await startHttpApp(
      stack.fac.url,
      { FACILITATOR_TIMEOUT_MS: "2000" },
      { chain: stack.fac.chain },
    );
    const base = v2Proof(
      requirementsV2(PRICES.upcoming, {
        ...TERMS,
        maxTimeoutSeconds: stack.http.config.paymentTimeoutSeconds,
        network: stack.http.config.network,
      }),
    );
    const encodings = [
      base,
      { ...base, resource: { url: "https://elsewhere.example/a" } },
      {
        payload: { authorization: base.payload.authorization, signature: base.payload.signature },
        accepted: base.accepted,
        x402Version: 2,
      },
      { ...base, extensions: { note: { k: 4 } } },
    ].map(b64);
    stack.fac.settle = "transfer-then-hang"; // every settle reply is lost after the transfer
    const first = await pay(stack.http, encodings[0] as string);
    expect(first.status).toBe(409); // unknown, not failed: do not pay again
    const key = { "idempotency-key": first.headers.get("idempotency-key") as string };
    const answers = [];
    for (const e of encodings.slice(1)) {
      const r = await pay(stack.http, e, key);
      answers.push({ status: r.status, body: await r.text(), settlement: r.headers.get("payment-response") });
    }
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
    expect(new Set(answers.map((a) => a.body)).size).toBe(1); // one response, delivered again, not recomputed
    expect(new Set(answers.map((a) => a.settlement)).size).toBe(1);
    expect(stack.fac.calls.settle).toBe(1);
    expect(stack.fac.transfers.size).toBe(1);
    const receipts = await stack.http.ledger.receipts();
    expect(receipts).toHaveLength(1);
    expect(receipts[0]).toMatchObject({
      status: "settled",
      transaction: [...stack.fac.transfers.values()][0],
    });
  });
});

describe("3. what a dead incarnation left is recovered, and never blocks the buyer's retry", () => {
  it("claims and keys are released at start; its settling receipts are settled from the chain", async () => {
    const dir = mkdtempSync(join(tmpdir(), "incarnation-"));
    stack.dirs.push(dir);
    const ledgerPath = join(dir, "ledger.sqlite");
    stack.fac = await startFaultFacilitator();
    const config = { paymentTimeoutSeconds: 300 };
    const accepted = requirementsV2(PRICES.upcoming, {
      ...TERMS,
      maxTimeoutSeconds: config.paymentTimeoutSeconds,
    });
    const held = v2Proof(accepted); // was verifying when the process died, with an Idempotency-Key
    const settling = v2Proof(accepted); // was settling: the transfer happened, the reply died with the process

    // What a process killed mid-request leaves behind: a claim and a settling receipt under its incarnation.
    const dead = openLedger(ledgerPath);
    const now = new Date();
    await dead.startIncarnation("dead", now);
    const claim = (p: typeof held, key?: string) =>
      dead.claimAuthorization({
        identity: {
          network: "eip155:8453",
          asset: accepted.asset,
          payer: p.payload.authorization.from,
          nonce: p.payload.authorization.nonce,
        },
        route: "GET /v1/unlocks/upcoming",
        requestFingerprint: "set below",
        x402Version: 2,
        amount: PRICES.upcoming.amount,
        payTo: TERMS.payTo,
        idempotency: key ? { key, ttlMs: 86_400_000 } : undefined,
        incarnation: "dead",
        lockTtlMs: 300_000,
        now,
      });
    expect((await claim(held, "order-1")).kind).toBe("claimed");
    const s = await claim(settling);
    if (s.kind !== "claimed") throw new Error(s.kind);
    await dead.beginSettlement(s.receipt.id, "dead", now);
    await dead.close();

    // The reply that was lost with the process: the transfer is on the chain.
    stack.fac.settleGate = new Promise(() => {}); // never answered
    const lost = new AbortController();
    const sent = fetch(`${stack.fac.url}/settle`, {
      method: "POST",
      body: JSON.stringify({ paymentPayload: settling }),
      signal: lost.signal,
    }).catch(() => undefined);
    await stack.fac.untilCalls("settle", 1); // counted, and transferred in the same tick
    lost.abort();
    await sent;
    stack.fac.settleGate = undefined;
    expect(stack.fac.transfers.size).toBe(1);
    stack.fac.resetCounters();

    const rec = recordingObserver();
    stack.http = await startHttpApp(
      stack.fac.url,
      {},
      { ledgerPath, chain: stack.fac.chain, paymentObserver: rec.observer },
    );
    await stack.http.app.payments.reconcileNow();
    // The key's request retries at once: not 409 for the key's 24 h (the claim and key record were released).
    const retryHeld = await pay(stack.http, b64(held), { "idempotency-key": "order-1" });
    expect(retryHeld.status).toBe(200);
    // The settling one was settled from the chain in the background; it is paid, not charged again.
    const receipts = await stack.http.ledger.receipts();
    const recovered = receipts.find((r) => r.identity.nonce === settling.payload.authorization.nonce);
    expect(recovered).toMatchObject({ status: "settled", transaction: [...stack.fac.transfers.values()][0] });
    expect(rec.backlog.at(-1)).toBe(0);
    expect(stack.fac.calls.settle).toBe(1); // only the held request's own settlement
  });
});

describe("4. delivered at least once", () => {
  it("a connection dropped after settlement: the retry with the buyer's key gets the same 200; without one, nobody does", async () => {
    stack.fac = await startFaultFacilitator();
    stack.http = await startHttpApp(stack.fac.url);
    for (const headers of [{}, { "idempotency-key": "drop-1" }] as Record<string, string>[]) {
      const proof = upcomingProof(stack.http.config);
      const settlesBefore = stack.fac.calls.settle;
      let open: () => void = () => {};
      stack.fac.settleGate = new Promise<void>((r) => (open = r));
      const url = new URL(`${stack.http.url}${UPCOMING_PATH}`);
      const req = httpRequest(url, { headers: { "payment-signature": proof, ...headers } });
      req.on("error", () => undefined);
      req.end();
      await stack.fac.untilCalls("settle", settlesBefore + 1); // the server is settling…
      req.destroy(); // …and the client's connection is gone
      open();
      stack.fac.settleGate = undefined;
      // The settlement completes and is stored with its response; wait for the receipt (a count, not a sleep).
      for (let i = 0; i < 1000; i++) {
        const r = await stack.http.ledger.receipts();
        if (r.filter((x) => x.status === "settled").length > settlesBefore) break;
        await new Promise((res) => setImmediate(res));
      }
      const retry = await pay(stack.http, proof, headers);
      if (headers["idempotency-key"] === undefined) {
        // The answer that carried the issued retry key was lost with the connection, and the proof alone is public
        // once settled: the response goes to nobody, and the retry is told what anyone presenting the proof is told.
        expect(retry.status).toBe(402);
        expect(((await retry.json()) as { error: string }).error).toMatch(/^payment_already_used/);
        expect(stack.fac.calls.settle).toBe(settlesBefore + 1);
        continue;
      }
      expect(retry.status).toBe(200);
      expect(retry.headers.get("payment-required")).toBeNull();
      expect(retry.headers.get("idempotent-replayed")).toBe("true");
      const settlement = decodePaymentResponseHeader(retry.headers.get("payment-response") as string);
      expect(settlement.transaction).toBe(
        stack.fac.transfers.get(
          JSON.parse(Buffer.from(proof, "base64").toString()).payload.authorization.nonce,
        ),
      );
      expect(((await retry.json()) as { unlocks: unknown[] }).unlocks).toBeInstanceOf(Array);
      expect(stack.fac.calls.settle).toBe(settlesBefore + 1);
    }
  });
});

describe("5. the provisional cap is reserved atomically before verification", () => {
  it("cap 3 with 50 concurrent proofs → exactly 3 settlements", async () => {
    stack.fac = await startFaultFacilitator();
    stack.http = await startHttpApp(stack.fac.url, {
      BENCHMARK_PROVISIONAL_CAP: "3",
      BENCHMARK_PHASE: "provisional",
    });
    let open: () => void = () => {};
    stack.fac.verifyGate = new Promise<void>((r) => (open = r)); // all 50 pass the route's pre-check before any settles
    const accepted = requirementsV2(PRICES.benchmark, {
      ...TERMS,
      maxTimeoutSeconds: stack.http.config.paymentTimeoutSeconds,
      network: stack.http.config.network,
    });
    // Each buyer signs with its own key (an EOA): unsigned proofs would share the non-EOA lane's 2 verifies per sender.
    const calls = Array.from({ length: 50 }, async () =>
      fetch(`${(stack.http as HttpApp).url}/v1/benchmark/endpoint`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "payment-signature": b64(await signedV2Proof(accepted, undefined, generatePrivateKey())),
        },
        body: JSON.stringify({ endpoint_url: "https://2s.io/api/crypto/token-price" }),
      }).then((r) => r.status),
    );
    await stack.fac.untilCalls("verify", 3);
    open();
    const statuses = await Promise.all(calls);
    const tally: Record<number, number> = {};
    for (const s of statuses) tally[s] = (tally[s] ?? 0) + 1;
    expect(tally).toEqual({ 200: 3, 503: 47 });
    expect(stack.fac.calls).toMatchObject({ verify: 3, settle: 3 });
    expect(stack.fac.transfers.size).toBe(3);
  });
});

describe("5. every error is problem+json; the 402 resource comes from PUBLIC_BASE_URL", () => {
  const raw = (url: string, text: string) =>
    new Promise<string>((resolve, reject) => {
      const { hostname, port } = new URL(url);
      import("node:net").then(({ connect }) => {
        const socket = connect(Number(port), hostname, () => socket.end(text));
        let out = "";
        socket.on("data", (c) => (out += c.toString("utf8")));
        socket.on("close", () => resolve(out));
        socket.on("error", reject);
      });
    });

  it("a bad request line and oversized headers (431) answer problem+json", async () => {
    stack.fac = await startFaultFacilitator();
    stack.http = await startHttpApp(stack.fac.url);
    const bad = await raw(stack.http.url, "NOT A REQUEST\r\n\r\n");
    expect(bad).toMatch(/^HTTP\/1\.1 400 /);
    expect(bad).toMatch(/content-type: application\/problem\+json/i);
    expect(JSON.parse(bad.split("\r\n\r\n")[1] as string)).toMatchObject({
      status: 400,
      type: expect.stringMatching(/bad-request$/),
    });
    const big = await raw(
      stack.http.url,
      `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`,
    );
    expect(big).toMatch(/^HTTP\/1\.1 431 /);
    expect(JSON.parse(big.split("\r\n\r\n")[1] as string)).toMatchObject({ status: 431 });
  });

  it("the 402 resource is PUBLIC_BASE_URL + path, whatever Host says; production refuses to start without it", async () => {
    stack.fac = await startFaultFacilitator();
    stack.http = await startHttpApp(stack.fac.url, { PUBLIC_BASE_URL: "https://api.pressure402.example" });
    const res = await fetch(`${stack.http.url}${UPCOMING_PATH}`, {
      headers: { host: "evil.example", "x-forwarded-host": "evil.example" },
    });
    expect(res.status).toBe(402);
    const required = decodePaymentRequiredHeader(res.headers.get("payment-required") as string);
    expect(required.resource.url).toBe(`https://api.pressure402.example${UPCOMING_PATH}`);
    await expect(
      startHttpApp(stack.fac.url, { NODE_ENV: "production", PAY_TO: TERMS.payTo }),
    ).rejects.toThrow(/PUBLIC_BASE_URL/);
  });
});

describe("settlement log", () => {
  it("one structured line per settlement: receipt, route, payer, amount, transaction, pp_ref", async () => {
    const lines: Record<string, unknown>[] = [];
    const stream = { write: (l: string) => void lines.push(JSON.parse(l)) };
    stack.fac = await startFaultFacilitator();
    stack.http = await startHttpApp(stack.fac.url, {}, { logger: { level: "info", stream } });
    const res = await pay(
      stack.http,
      upcomingProof(stack.http.config),
      {},
      `${UPCOMING_PATH}&pp_ref=agent-9`,
    );
    expect(res.status).toBe(200);
    const settled = lines.filter((l) => l.msg === "payment settled");
    expect(settled).toHaveLength(1);
    const [receipt] = await stack.http.ledger.receipts();
    expect(settled[0]).toMatchObject({
      receipt: receipt?.id,
      route: "GET /v1/unlocks/upcoming",
      payer: "0x000000000000000000000000000000000000b0b0",
      amount: "20000",
      transaction: receipt?.transaction,
      pp_ref: "agent-9",
    });
  });
});
