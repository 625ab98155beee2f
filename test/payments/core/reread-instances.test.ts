import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type Ledger, openLedger } from "../../../src/ledger/embedded.js";
import {
  type Attempt,
  admitPayment,
  completePayment,
  type PaymentCore,
} from "../../../src/payments/core/core.js";
import { createPaymentCore } from "../../../src/payments/core/create-core.js";
import { KEPT_AS_SENT } from "../../../src/payments/http/http-answers.js";
import { requirementsV2 } from "../../../src/payments/terms/requirements.js";
import { CORE_NOW, CORE_ROUTE, CORE_TERMS, coreAttempt, HANDLER_OK, silentLog } from "../../helpers/core.js";
import { type FakeGateway, fakeGateway } from "../../helpers/fake-gateway.js";
import { signedV2Proof } from "../../helpers/proofs.js";

/*
 * Two instances on one ledger (two payment cores, two incarnations): the payer's fresh proof for a request reaches
 * the second while its first payment for that request is still inside the facilitator's verify on the first. The
 * second cannot see the first's process, only its claim in the ledger, made earlier: it waits (asking the ledger),
 * then re-reads the answer the first bought, or buys on its own when the first was refused uncharged.
 */

const route = CORE_ROUTE;
const requirements = () => requirementsV2(route, CORE_TERMS);
const LATER = new Date(CORE_NOW.getTime() + 1);

let ledger: Ledger;
let gateway: FakeGateway;
let first: PaymentCore;
let second: PaymentCore;
/** Releases the verify held at the facilitator (the first one asked). */
let release: () => void;

const coreAt = (incarnation: string, now: Date) =>
  createPaymentCore(
    {
      answers: KEPT_AS_SENT,
      gateway,
      ledger,
      terms: CORE_TERMS,
      clock: () => now,
      incarnation,
      singleInstance: false,
      idempotencyTtlMs: 60_000,
      // How often the waiting instance asks the ledger again: its answer does not depend on it, only how soon.
      inFlightPollMs: 2,
    },
    silentLog,
  );

beforeEach(async () => {
  ledger = openLedger(":memory:");
  gateway = fakeGateway();
  const gate = new Promise<void>((r) => {
    release = r;
  });
  const verify = gateway.verifyResult;
  let held = false;
  gateway.verifyResult = async (p, r) => {
    if (!held) {
      held = true;
      await gate;
    }
    return verify(p, r);
  };
  first = coreAt("instance-a", CORE_NOW);
  second = coreAt("instance-b", LATER);
  await ledger.startIncarnation("instance-a", CORE_NOW);
  await ledger.startIncarnation("instance-b", LATER);
});

afterEach(async () => {
  await ledger.close();
});

async function attempt(now: Date): Promise<Attempt> {
  return coreAttempt(await signedV2Proof(requirements()), { now });
}

const until = async (done: () => boolean) => {
  while (!done()) await new Promise((r) => setImmediate(r));
};

describe("a fresh proof at another instance while the first payment is inside its verify", () => {
  it("waits, then re-reads the answer the first bought; its own authorization is never settled", async () => {
    const paying = admitPayment(first, await attempt(CORE_NOW));
    await until(() => gateway.calls.verify === 1);
    const fresh = admitPayment(second, await attempt(LATER));
    await until(() => second.waiters.size > 0);
    release();
    const admitted = await paying;
    if (admitted.kind !== "proceed") throw new Error(admitted.kind);
    expect((await completePayment(first, admitted.payment, HANDLER_OK)).kind).toBe("delivered");
    const reread = await fresh;
    expect(reread.kind).toBe("replay");
    if (reread.kind !== "replay") return;
    expect(reread.response.body).toBe(HANDLER_OK.body);
    expect(gateway.calls).toEqual({ verify: 1, settle: 1 });
    expect((await ledger.receipts()).map((r) => r.status)).toEqual(["settled"]);
  });

  it("when the first is refused at verify, uncharged, the fresh proof is bought on its own", async () => {
    const verify = gateway.verifyResult;
    gateway.verifyResult = async (p, r) => {
      const verdict = await verify(p, r);
      return gateway.calls.verify === 1
        ? { isValid: false, invalidReason: "invalid_exact_evm_insufficient_balance" }
        : verdict;
    };
    const paying = admitPayment(first, await attempt(CORE_NOW));
    await until(() => gateway.calls.verify === 1);
    const fresh = admitPayment(second, await attempt(LATER));
    await until(() => second.waiters.size > 0);
    release();
    expect(await paying).toMatchObject({ kind: "payment_required" });
    const bought = await fresh;
    expect(bought.kind).toBe("proceed");
    if (bought.kind !== "proceed") return;
    expect((await completePayment(second, bought.payment, HANDLER_OK)).kind).toBe("delivered");
    expect(gateway.calls).toEqual({ verify: 2, settle: 1 });
  });
});
