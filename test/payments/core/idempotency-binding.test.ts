import type { PaymentPayload } from "@x402/core/types";
import { privateKeyToAccount } from "viem/accounts";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Receipt } from "../../../src/ledger/port.js";
import { PRICES } from "../../../src/operations/prices.js";
import type { ExactPayload } from "../../../src/payments/terms/proof.js";
import { requirementsV2 } from "../../../src/payments/terms/requirements.js";
import { TEST_PAY_TO, type TestApp, testApp } from "../../helpers/app.js";
import { b64, signedV2Proof, TEST_BUYER_KEY, v2Proof, verifyBySignature } from "../../helpers/proofs.js";

/*
 * An Idempotency-Key is bound only once the proof's signature has checked out. The facilitator here
 * checks signatures for real (EIP-712 recovery), so a proof that only *names* the victim as its payer is refused by it.
 */
const VICTIM = privateKeyToAccount(TEST_BUYER_KEY).address;
let t: TestApp;
const holds = new Map<string, Promise<void>>();

beforeEach(async () => {
  t = await testApp();
  holds.clear();
  t.gateway.verifyResult = async (p: PaymentPayload, r) => {
    const exact = p.payload as unknown as ExactPayload;
    await holds.get(exact.authorization.nonce);
    return verifyBySignature(p, r);
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

/** A proof that claims to be the victim's, with a signature that is not: what anyone can build. */
function forged() {
  const p = v2Proof(accepted());
  p.payload.authorization.from = VICTIM;
  return p;
}

const get = (query: string, proof: unknown, key: string) =>
  t.app.inject({
    method: "GET",
    url: `/v1/unlocks/upcoming?${query}`,
    headers: { "payment-signature": b64(proof), "idempotency-key": key },
  });

/** What a client can tell two answers apart by: status, problem type / 402 error, PAYMENT-REQUIRED's presence. */
const visible = (res: Awaited<ReturnType<typeof get>>) => {
  const body = res.json() as { type?: string; error?: string };
  return {
    status: res.statusCode,
    type: body.type,
    error: body.error,
    challenge: Boolean(res.headers["payment-required"]),
  };
};

describe("Idempotency-Keys bind after the signature", () => {
  it("oracle: a forged proof naming the victim gets the same answer whether or not the victim used the key", async () => {
    const paid = await get("days=30", await signedV2Proof(accepted()), "victim-order-1");
    expect(paid.statusCode).toBe(200);

    for (const query of ["days=30", "days=7"]) {
      const used = visible(await get(query, forged(), "victim-order-1"));
      const unused = visible(await get(query, forged(), "never-used-key"));
      expect(used).toEqual(unused);
      expect(used).toMatchObject({ status: 402, error: "invalid_exact_evm_signature", challenge: true });
    }
    // Nothing the forgeries sent was kept: the victim's key still replays the victim's response.
    expect(await t.ledger.receipts()).toHaveLength(1);
  });

  it("squat: a forged proof sent just before the victim's, with the victim's key, does not make the victim's request fail", async () => {
    const squat = forged();
    let release: () => void = () => {};
    holds.set(
      squat.payload.authorization.nonce,
      new Promise<void>((r) => {
        release = r;
      }),
    );
    const squatting = get("days=30", squat, "victim-order-2");
    while (t.gateway.calls.verify < 1) await new Promise((r) => setImmediate(r)); // the squatter is in verify

    const victim = await get("days=30", await signedV2Proof(accepted()), "victim-order-2");
    expect(victim.statusCode).toBe(200);
    release();
    expect(visible(await squatting)).toMatchObject({ status: 402, error: "invalid_exact_evm_signature" });
    // The key stands for the victim's payment: the victim's retry replays it.
    const receipts = await t.ledger.receipts();
    expect(receipts).toMatchObject([{ status: "settled" }]);
    expect(t.ledger.boundSecret(receipts[0] as Receipt, { key: "victim-order-2" })).toBe("key");
  });

  it("a verified proof with a key already bound to another payment is still a 422 (on another request)", async () => {
    expect((await get("days=30", await signedV2Proof(accepted()), "k-422")).statusCode).toBe(200);
    // The same request: the payer's own fresh proof re-reads what it bought (its authorization unused).
    const same = await get("days=30", await signedV2Proof(accepted()), "k-422");
    expect(same.statusCode).toBe(200);
    expect(same.headers["idempotent-replayed"]).toBe("true");
    const other = await get("days=31", await signedV2Proof(accepted()), "k-422");
    expect(other.statusCode).toBe(422);
    expect(other.json().type).toMatch(/idempotency-key-reused$/);
    expect(t.gateway.calls.settle).toBe(1);
  });
});
