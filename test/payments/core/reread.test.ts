import { generatePaymentId } from "@x402/extensions/payment-identifier";
import { privateKeyToAccount } from "viem/accounts";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { PRICES } from "../../../src/operations/prices.js";
import { requirementsV2 } from "../../../src/payments/terms/requirements.js";
import { TEST_PAY_TO, type TestApp, testApp } from "../../helpers/app.js";
import { b64, signedV2Proof, TEST_BUYER_KEY, verifyBySignature } from "../../helpers/proofs.js";

/*
 * Bought once, read again free: the payer's own fresh proof for a request it already bought (same price, same data
 * generation, within PAID_REREAD_SECONDS) gets the answer it bought, and its own authorization is never settled. The
 * facilitator here checks signatures for real (EIP-712 recovery), as every facilitator does.
 */
const PAYER = privateKeyToAccount(TEST_BUYER_KEY).address;
/** Anvil's well-known test account 2: an observer with a wallet of its own. */
const OBSERVER_KEY = "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a" as const;

let t: TestApp;
/** Settlements held until the test releases them, in the order they are asked. */
let settleGate: Promise<void> | undefined;

beforeEach(async () => {
  t = await testApp();
  settleGate = undefined;
  t.gateway.verifyResult = verifyBySignature;
  const settle = t.gateway.settleResult;
  t.gateway.settleResult = async (p, r) => {
    await settleGate;
    return settle(p, r);
  };
});
afterEach(async () => {
  await t.close();
});

const accepted = () =>
  requirementsV2(PRICES.upcoming, {
    payTo: TEST_PAY_TO,
    maxTimeoutSeconds: t.config.paymentTimeoutSeconds,
    network: t.config.network,
  });

const get = (query: string, proof: unknown, headers: Record<string, string> = {}) =>
  t.app.inject({
    method: "GET",
    url: `/v1/unlocks/upcoming?${query}`,
    headers: { "payment-signature": b64(proof), ...headers },
  });

const withId = <P extends object>(proof: P, id: string) => ({
  ...proof,
  extensions: { "payment-identifier": { info: { required: false, id } } },
});

/** Which authorizations the ledger holds, by status: an unused one leaves no receipt. */
const statuses = async () => (await t.ledger.receipts()).map((r) => `${r.identity.payer} ${r.status}`);

describe("the payer's own fresh proof re-reads what it bought", () => {
  it("an answer lost on the way: a new proof of the same payer for the same request gets it, charged once", async () => {
    const first = await get("days=30", await signedV2Proof(accepted()));
    expect(first.statusCode).toBe(200);
    // The client never saw that answer; like every x402 client it signs a new payment and asks again.
    const again = await get("days=30", await signedV2Proof(accepted()));
    expect(again.statusCode).toBe(200);
    expect(again.headers["idempotent-replayed"]).toBe("true");
    expect(again.body).toBe(first.body);
    expect(again.headers["payment-response"]).toBe(first.headers["payment-response"]);
    expect(t.gateway.calls.settle).toBe(1);
    expect(await statuses()).toEqual([`${PAYER.toLowerCase()} settled`]);
  });

  it("another request, a changed data generation or re-reading off: a purchase like any other", async () => {
    expect((await get("days=30", await signedV2Proof(accepted()))).statusCode).toBe(200);
    const other = await get("days=31", await signedV2Proof(accepted()));
    expect(other.statusCode).toBe(200);
    expect(other.headers["idempotent-replayed"]).toBeUndefined();
    expect(t.gateway.calls.settle).toBe(2);

    // The data behind the answer changed (a refresh swapped it): the stored answer is not what it would buy now.
    const core = t.app.payments.core;
    core.dataGeneration = () => "after-refresh";
    const fresh = await get("days=30", await signedV2Proof(accepted()));
    expect(fresh.statusCode).toBe(200);
    expect(fresh.headers["idempotent-replayed"]).toBeUndefined();
    expect(t.gateway.calls.settle).toBe(3);

    core.rereadWindowMs = 0;
    expect(
      (await get("days=30", await signedV2Proof(accepted()))).headers["idempotent-replayed"],
    ).toBeUndefined();
    expect(t.gateway.calls.settle).toBe(4);
  });

  it("a chain observer with the public (from, nonce, signature) and any signature of its own gets nothing of the payer's", async () => {
    const paid = await signedV2Proof(accepted());
    expect((await get("days=30", paid)).statusCode).toBe(200);
    // The payer's settled proof, as read from the chain: public, never enough.
    const copied = await get("days=30", paid);
    expect(copied.statusCode).toBe(402);
    expect(copied.json().error).toMatch(/payment_already_used/);
    // A fresh authorization naming the payer, signed by the observer: not the payer's signature.
    const forged = await signedV2Proof(accepted(), undefined, OBSERVER_KEY);
    forged.payload.authorization.from = PAYER;
    const asPayer = await get("days=30", forged);
    expect(asPayer.statusCode).toBe(402);
    expect(asPayer.headers["idempotent-replayed"]).toBeUndefined();
    // The observer's own proof buys its own answer, never re-reads the payer's.
    const own = await get("days=30", await signedV2Proof(accepted(), undefined, OBSERVER_KEY));
    expect(own.statusCode).toBe(200);
    expect(own.headers["idempotent-replayed"]).toBeUndefined();
    expect(t.gateway.calls.settle).toBe(2);
  });
});

describe("a purchase still in flight", () => {
  /** Resolves once a fresh proof waits for an earlier purchase (the core's own waiter list, not a timer). */
  const waiting = async () => {
    while (t.app.payments.core.waiters.size === 0) await new Promise((r) => setImmediate(r));
  };

  it("a fresh proof waits for the payer's purchase being settled, then gets that answer; charged once", async () => {
    let release: () => void = () => {};
    settleGate = new Promise<void>((r) => {
      release = r;
    });
    const first = get("days=30", await signedV2Proof(accepted()));
    while (t.gateway.calls.settle < 1) await new Promise((r) => setImmediate(r));
    const second = get("days=30", await signedV2Proof(accepted()));
    await waiting();
    release();
    const [a, b] = await Promise.all([first, second]);
    expect(a.statusCode).toBe(200);
    expect(b.statusCode).toBe(200);
    expect(b.headers["idempotent-replayed"]).toBe("true");
    expect(b.body).toBe(a.body);
    expect(t.gateway.calls.settle).toBe(1);
    expect(await statuses()).toEqual([`${PAYER.toLowerCase()} settled`]);
  });

  it("when that purchase fails uncharged, the fresh proof is a purchase like any other", async () => {
    let release: () => void = () => {};
    settleGate = new Promise<void>((r) => {
      release = r;
    });
    const settle = t.gateway.settleResult;
    let n = 0;
    t.gateway.settleResult = async (p, r) => {
      n += 1;
      if (n === 1) {
        await settleGate;
        return { success: false, errorReason: "insufficient_funds", transaction: "", network: r.network };
      }
      return settle(p, r);
    };
    const first = get("days=30", await signedV2Proof(accepted()));
    while (t.gateway.calls.settle < 1) await new Promise((r) => setImmediate(r));
    const second = get("days=30", await signedV2Proof(accepted()));
    await waiting();
    release();
    const [a, b] = await Promise.all([first, second]);
    expect(a.statusCode).toBe(402);
    expect(b.statusCode).toBe(200);
    expect(b.headers["idempotent-replayed"]).toBeUndefined();
    expect(t.gateway.calls.settle).toBe(2);
    expect((await statuses()).sort()).toEqual([
      `${PAYER.toLowerCase()} failed`,
      `${PAYER.toLowerCase()} settled`,
    ]);
  });
});

describe("a purchase still inside its facilitator verify", () => {
  /** Holds the next facilitator verify until the test releases it; the ones after it run at once. */
  const holdNextVerify = () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const verify = t.gateway.verifyResult;
    let held = false;
    t.gateway.verifyResult = async (p, r) => {
      if (!held) {
        held = true;
        await gate;
      }
      return verify(p, r);
    };
    return () => release();
  };
  /** Resolves once a fresh proof waits for an earlier purchase (the core's own waiter list, not a timer). */
  const waiting = async () => {
    while (t.app.payments.core.waiters.size === 0) await new Promise((r) => setImmediate(r));
  };
  const verifyCalled = async (n: number) => {
    while (t.gateway.calls.verify < n) await new Promise((r) => setImmediate(r));
  };

  it("a fresh proof waits for the first payment's verify, then gets the answer it bought; charged once", async () => {
    const release = holdNextVerify();
    const first = get("days=30", await signedV2Proof(accepted()));
    await verifyCalled(1);
    const second = get("days=30", await signedV2Proof(accepted()));
    await waiting();
    // While it waits, a proof naming the payer that the payer did not sign gets nothing and is not held up.
    const forged = await signedV2Proof(accepted(), undefined, OBSERVER_KEY);
    forged.payload.authorization.from = PAYER;
    expect((await get("days=30", forged)).statusCode).toBe(402);
    release();
    const [a, b] = await Promise.all([first, second]);
    expect(a.statusCode).toBe(200);
    expect(b.statusCode).toBe(200);
    expect(b.headers["idempotent-replayed"]).toBe("true");
    expect(b.body).toBe(a.body);
    // The fresh proof was proven the payer's own without the facilitator, and its authorization is never settled.
    expect(t.gateway.calls).toEqual({ verify: 2, settle: 1 });
    expect(await statuses()).toEqual([`${PAYER.toLowerCase()} settled`]);
  });

  it("when the first is refused at verify, uncharged, the fresh proof is a purchase like any other", async () => {
    const verify = t.gateway.verifyResult;
    let n = 0;
    t.gateway.verifyResult = async (p, r) => {
      n += 1;
      return n === 1
        ? { isValid: false, invalidReason: "invalid_exact_evm_insufficient_balance" }
        : verify(p, r);
    };
    const release = holdNextVerify();
    const first = get("days=30", await signedV2Proof(accepted()));
    await verifyCalled(1);
    const second = get("days=30", await signedV2Proof(accepted()));
    await waiting();
    release();
    const [a, b] = await Promise.all([first, second]);
    expect(a.statusCode).toBe(402);
    expect(b.statusCode).toBe(200);
    expect(b.headers["idempotent-replayed"]).toBeUndefined();
    expect(t.gateway.calls).toEqual({ verify: 2, settle: 1 });
    expect(await statuses()).toEqual([`${PAYER.toLowerCase()} settled`]);
  });

  it("a proof naming the payer that the payer did not sign, inside its verify, only delays the payer's own", async () => {
    const release = holdNextVerify();
    const forged = await signedV2Proof(accepted(), undefined, OBSERVER_KEY);
    forged.payload.authorization.from = PAYER;
    const fake = get("days=30", forged);
    await verifyCalled(1);
    const own = get("days=30", await signedV2Proof(accepted()));
    await waiting();
    release();
    const [f, o] = await Promise.all([fake, own]);
    expect(f.statusCode).toBe(402);
    expect(o.statusCode).toBe(200);
    expect(o.headers["idempotent-replayed"]).toBeUndefined();
    expect(t.gateway.calls.settle).toBe(1);
  });
});

describe("payment-identifier as its authors use it (one id, a new payment per retry)", () => {
  it("same id, same payer, same request, new payment: the stored answer, the new authorization unused", async () => {
    const id = generatePaymentId();
    const first = await get("days=30", withId(await signedV2Proof(accepted()), id));
    expect(first.statusCode).toBe(200);
    const retry = await get("days=30", withId(await signedV2Proof(accepted()), id));
    expect(retry.statusCode).toBe(200);
    expect(retry.headers["idempotent-replayed"]).toBe("true");
    expect(retry.body).toBe(first.body);
    expect(t.gateway.calls.settle).toBe(1);
    expect(await statuses()).toEqual([`${PAYER.toLowerCase()} settled`]);
  });

  it("same id with another request: 409, nothing charged", async () => {
    const id = generatePaymentId();
    expect((await get("days=30", withId(await signedV2Proof(accepted()), id))).statusCode).toBe(200);
    const other = await get("days=31", withId(await signedV2Proof(accepted()), id));
    expect(other.statusCode).toBe(409);
    expect(other.json().type).toMatch(/payment-identifier-reused$/);
    expect(t.gateway.calls.settle).toBe(1);
    expect(await statuses()).toEqual([`${PAYER.toLowerCase()} settled`]);
  });
});
