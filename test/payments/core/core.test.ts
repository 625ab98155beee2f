import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type Ledger, openLedger } from "../../../src/ledger/embedded.js";
import {
  ALREADY_USED,
  type Attempt,
  admitPayment,
  completePayment,
  type PaymentCore,
} from "../../../src/payments/core/core.js";
import { decodeProof, requestFingerprint } from "../../../src/payments/terms/proof.js";
import { requirementsV2 } from "../../../src/payments/terms/requirements.js";
import { CORE_NOW, CORE_ROUTE, CORE_TERMS, HANDLER_OK, silentLog, testCore } from "../../helpers/core.js";
import { type FakeGateway, fakeGateway } from "../../helpers/fake-gateway.js";
import { b64, v2Proof } from "../../helpers/proofs.js";

// The payment core on its own: no HTTP, no Fastify; a fake facilitator gateway and an in-memory SQLite ledger.

const terms = CORE_TERMS;
const route = CORE_ROUTE;
const log = silentLog;
const NOW = CORE_NOW;
const ok = HANDLER_OK;

let gateway: FakeGateway;
let ledger: Ledger;
let core: PaymentCore;

beforeEach(async () => {
  gateway = fakeGateway();
  ledger = openLedger(":memory:");
  core = testCore(gateway, ledger);
  await ledger.startIncarnation(core.incarnation, NOW);
});

afterEach(async () => {
  await ledger.close();
});

/** One request's attempt, as a transport would hand it to the core after decoding and matching the proof. */
function attempt(header: string, secret: { idempotencyKey?: string } = {}): Attempt {
  const decoded = decodeProof("payment-signature", header);
  if (!decoded.ok) throw new Error(decoded.detail);
  return {
    route,
    proof: decoded.proof,
    requirements: requirementsV2(route, terms),
    requestFingerprint: requestFingerprint("POST", route.route, {}, { token: "ARB" }),
    idempotencyKey: secret.idempotencyKey,
    paymentId: undefined,
    ppRef: undefined,
    now: NOW,
    log,
  };
}

const freshProof = () => b64(v2Proof(requirementsV2(route, terms)));

describe("payment core, without HTTP", () => {
  it("a paid call is verified and settled exactly once, and delivered with a successful settlement header", async () => {
    const admission = await admitPayment(core, attempt(freshProof(), { idempotencyKey: "k-1" }));
    expect(admission.kind).toBe("proceed");
    if (admission.kind !== "proceed") return;
    const completion = await completePayment(core, admission.payment, ok);
    expect(completion.kind).toBe("delivered");
    if (completion.kind !== "delivered") return;
    expect(completion.settlement).toMatchObject({ version: 2, response: { success: true } });
    expect(gateway.calls).toEqual({ verify: 1, settle: 1 });
    const receipt = await ledger.receipt(admission.payment.receiptId);
    expect(receipt?.status).toBe("settled");
  });

  it("a replay of a paid proof gets the stored response only with the secret it paid with; never a second settlement", async () => {
    const proof = freshProof();
    const first = await admitPayment(core, attempt(proof, { idempotencyKey: "k-secret" }));
    if (first.kind !== "proceed") throw new Error(first.kind);
    await completePayment(core, first.payment, ok);

    const withoutSecret = await admitPayment(core, attempt(proof));
    expect(withoutSecret).toEqual({ kind: "payment_required", error: ALREADY_USED });

    const withSecret = await admitPayment(core, attempt(proof, { idempotencyKey: "k-secret" }));
    expect(withSecret.kind).toBe("replay");
    if (withSecret.kind !== "replay") return;
    expect(withSecret.response.statusCode).toBe(200);
    expect(withSecret.response.body).toBe(ok.body);
    expect(gateway.calls).toEqual({ verify: 1, settle: 1 });
  });

  it("a proof the facilitator refuses at verify is never settled: a fresh PAYMENT-REQUIRED names the reason", async () => {
    gateway.verifyResult = async () => ({
      isValid: false,
      invalidReason: "invalid_exact_evm_insufficient_balance",
    });
    const proof = freshProof();
    const admission = await admitPayment(core, attempt(proof, { idempotencyKey: "k-2" }));
    expect(admission).toEqual({ kind: "payment_required", error: "invalid_exact_evm_insufficient_balance" });
    expect(gateway.calls).toEqual({ verify: 1, settle: 0 });
    // Given back, not spent: the same authorization pays once the payer can.
    gateway.verifyResult = async () => ({
      isValid: true,
      payer: "0x000000000000000000000000000000000000b0b0",
    });
    expect((await admitPayment(core, attempt(proof, { idempotencyKey: "k-2" }))).kind).toBe("proceed");
  });

  it("a settlement the facilitator refuses answers success:false with the reason, and the body is withheld", async () => {
    gateway.settleResult = async (_p, r) => ({
      success: false,
      errorReason: "insufficient_funds",
      transaction: "",
      network: r.network,
    });
    const admission = await admitPayment(core, attempt(freshProof(), { idempotencyKey: "k-3" }));
    if (admission.kind !== "proceed") throw new Error(admission.kind);
    const completion = await completePayment(core, admission.payment, ok);
    expect(completion.kind).toBe("payment_required");
    if (completion.kind !== "payment_required") return;
    expect(completion.error).toBe("settlement_failed: insufficient_funds");
    expect(completion.settlement?.version).toBe(2);
    const settlement = completion.settlement?.response;
    expect(settlement?.success).toBe(false);
    expect(settlement?.errorReason).toBe("insufficient_funds");
    expect(gateway.calls).toEqual({ verify: 1, settle: 1 });
    expect((await ledger.receipt(admission.payment.receiptId))?.status).toBe("failed");
  });

  it("a handler that fails is not charged: nothing is settled", async () => {
    const admission = await admitPayment(core, attempt(freshProof(), { idempotencyKey: "k-4" }));
    if (admission.kind !== "proceed") throw new Error(admission.kind);
    const completion = await completePayment(core, admission.payment, {
      statusCode: 500,
      contentType: "application/problem+json",
      body: "{}",
    });
    expect(completion).toEqual({ kind: "unpaid" });
    expect(gateway.calls).toEqual({ verify: 1, settle: 0 });
  });
});

describe("a full disk and unknown outcomes, without HTTP", () => {
  /** The ledger refuses every write from now on, as a full disk does. */
  const diskFull = () => {
    const full = () => Promise.reject(new Error("SqliteError: database or disk is full"));
    ledger.recordFailure = full;
    ledger.releaseClaim = full;
    ledger.recordSettlement = full;
    ledger.storeResponse = full;
  };

  it("a settlement refused while the disk is full: the buyer's 402 with its reason, the write kept to retry; never a throw", async () => {
    const admission = await admitPayment(core, attempt(freshProof()));
    if (admission.kind !== "proceed") throw new Error(admission.kind);
    gateway.settleResult = async (_p, r) => ({
      success: false,
      errorReason: "invalid_exact_evm_insufficient_balance",
      transaction: "",
      network: r.network,
    });
    diskFull();
    const completion = await completePayment(core, admission.payment, ok);
    expect(completion.kind).toBe("payment_required");
    if (completion.kind !== "payment_required") return;
    expect(completion.settlement?.response).toMatchObject({
      success: false,
      errorReason: "invalid_exact_evm_insufficient_balance",
    });
    expect(core.unwritten.size).toBe(1);
  });

  it("a handler error while the disk is full: its answer goes out unpaid; never a throw", async () => {
    const admission = await admitPayment(core, attempt(freshProof()));
    if (admission.kind !== "proceed") throw new Error(admission.kind);
    diskFull();
    const completion = await completePayment(core, admission.payment, { ...ok, statusCode: 500 });
    expect(completion).toMatchObject({ kind: "unpaid" });
  });

  it("a settle that times out is unknown: no `success: false`, nothing that invites paying again", async () => {
    const admission = await admitPayment(core, attempt(freshProof()));
    if (admission.kind !== "proceed") throw new Error(admission.kind);
    gateway.settleResult = async () => {
      throw new Error("socket hang up");
    };
    const completion = await completePayment(core, admission.payment, ok);
    expect(completion).toMatchObject({ kind: "unconfirmed", retryAfterSeconds: 5 });
    expect("settlement" in completion).toBe(false);
    expect((await ledger.receipt(admission.payment.receiptId))?.status).toBe("unknown");
  });
});
