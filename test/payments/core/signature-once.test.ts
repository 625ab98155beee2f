import type { FacilitatorClient } from "@x402/core/server";
import type { PaymentPayload, SettleResponse, VerifyResponse } from "@x402/core/types";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { type Ledger, openLedger } from "../../../src/ledger/embedded.js";
import {
  type Attempt,
  admitPayment,
  completePayment,
  type PaymentCore,
} from "../../../src/payments/core/core.js";
import {
  createFacilitatorGateway,
  type FacilitatorGateway,
} from "../../../src/payments/facilitator/gateway.js";
import type { SmartWalletCheck } from "../../../src/payments/facilitator/smart-wallet.js";
import { recoverSigner } from "../../../src/payments/terms/ecrecover.js";
import { requirementsV2 } from "../../../src/payments/terms/requirements.js";
import {
  CORE_NOW,
  CORE_ROUTE,
  CORE_TERMS,
  coreAttempt,
  HANDLER_OK,
  silentLog,
  testCore,
} from "../../helpers/core.js";
import { fakeGateway } from "../../helpers/fake-gateway.js";
import { signedV2Proof, v2Proof } from "../../helpers/proofs.js";

/*
 * The signature of a paid call is recovered once, by the gateway, and its verdict says what it proved; the core
 * decides "the facilitator's chain is down" (503) or "a bad signature" (402) from that answer alone. Every call of
 * the secp256k1 recovery is counted, wherever it comes from.
 */
vi.mock("../../../src/payments/terms/ecrecover.js", async (importOriginal) => {
  const real = await importOriginal<typeof import("../../../src/payments/terms/ecrecover.js")>();
  return { ...real, recoverSigner: vi.fn(real.recoverSigner) };
});
const recoveries = () => vi.mocked(recoverSigner).mock.calls.length;

const terms = CORE_TERMS;
const route = CORE_ROUTE;
const requirements = () => requirementsV2(route, terms);
const log = silentLog;
const NOW = CORE_NOW;
const ok = HANDLER_OK;
const SIGNATURE_REFUSED: VerifyResponse = { isValid: false, invalidReason: "invalid_exact_evm_signature" };
const WALLET = "0x5100000000000000000000000000000000000001";

let ledger: Ledger;
/** What the facilitator answers verify with (its chain down: the signature "invalid"). */
let verifyAnswer: VerifyResponse;

/** The real gateway over a scripted facilitator. */
function realGateway(smartWallet?: SmartWalletCheck): FacilitatorGateway {
  const client = {
    verify: async () => verifyAnswer,
    settle: async (p: PaymentPayload): Promise<SettleResponse> => ({
      success: true,
      transaction: `0x${"ab".repeat(32)}`,
      network: p.accepted.network,
    }),
    getSupported: async () => ({ kinds: [], extensions: [], signers: {} }),
  } as unknown as FacilitatorClient;
  return createFacilitatorGateway(client, {
    failureThreshold: 5,
    cooldownMs: 1000,
    ...(smartWallet ? { smartWallet } : {}),
  });
}

function coreWith(gateway: FacilitatorGateway): PaymentCore {
  return testCore(gateway, ledger);
}

function attempt(proof: unknown): Attempt {
  return coreAttempt(proof, { idempotencyKey: "k-1", now: NOW, log });
}

beforeEach(async () => {
  ledger = openLedger(":memory:");
  await ledger.startIncarnation("test-incarnation", NOW);
  verifyAnswer = { isValid: true };
  vi.mocked(recoverSigner).mockClear();
});

afterEach(async () => {
  await ledger.close();
});

describe("the signature is recovered once per paid call", () => {
  it("the payer's own signature called invalid: one recovery, and a 503 facilitator_chain_unavailable", async () => {
    verifyAnswer = SIGNATURE_REFUSED;
    const gateway = realGateway();
    const proof = await signedV2Proof(requirements());
    const verdict = await gateway.verify(proof as PaymentPayload, requirements());
    expect(verdict).toMatchObject({ isValid: false, signature: "eoa" });
    vi.mocked(recoverSigner).mockClear();

    const admission = await admitPayment(coreWith(gateway), attempt(proof));
    expect(admission).toMatchObject({
      kind: "fault",
      reason: "facilitator_chain_unavailable",
    });
    expect(recoveries()).toBe(1);
  });

  it("a signature that is not the payer's called invalid: one recovery, and the buyer's 402", async () => {
    verifyAnswer = SIGNATURE_REFUSED;
    const admission = await admitPayment(coreWith(realGateway()), attempt(v2Proof(requirements())));
    expect(admission).toEqual({ kind: "payment_required", error: "invalid_exact_evm_signature" });
    expect(recoveries()).toBe(1);
  });

  it("a paid call verified and settled: one recovery in all, and delivered", async () => {
    const core = coreWith(realGateway());
    const admission = await admitPayment(core, attempt(await signedV2Proof(requirements())));
    if (admission.kind !== "proceed") throw new Error(admission.kind);
    expect((await completePayment(core, admission.payment, ok)).kind).toBe("delivered");
    expect(recoveries()).toBe(1);
  });

  it("a settle of a proof this gateway never verified still checks the signature itself (once)", async () => {
    const proof = (await signedV2Proof(requirements())) as PaymentPayload;
    const gateway = realGateway();
    expect(await gateway.settle(proof, requirements())).toMatchObject({ success: true });
    expect(recoveries()).toBe(1);
    // Verified, then settled with the same payload and requirements: verify's check is reused.
    const accepted = requirements();
    await gateway.verify(proof, accepted);
    await gateway.settle(proof, accepted);
    expect(recoveries()).toBe(2);
  });

  it("the facilitator cannot claim the signature proven: its own `signature` field is ignored", async () => {
    verifyAnswer = { ...SIGNATURE_REFUSED, signature: "eoa" } as VerifyResponse;
    const admission = await admitPayment(coreWith(realGateway()), attempt(v2Proof(requirements())));
    expect(admission).toEqual({ kind: "payment_required", error: "invalid_exact_evm_signature" });
  });

  it("a smart wallet vouched for on chain and then called invalid by the facilitator stays the buyer's 402", async () => {
    verifyAnswer = SIGNATURE_REFUSED;
    // An owner's 65-byte signature that does not recover to the wallet's address; the chain check vouches for it.
    const signed = await signedV2Proof(requirements());
    const proof = {
      ...signed,
      payload: { ...signed.payload, authorization: { ...signed.payload.authorization, from: WALLET } },
    };
    const checks: string[] = [];
    const gateway = realGateway(async (exact) => {
      checks.push(exact.authorization.from);
      return { kind: "valid" };
    });
    expect(await gateway.verify(proof as PaymentPayload, requirements())).toMatchObject({
      signature: "contract",
    });
    vi.mocked(recoverSigner).mockClear();

    const admission = await admitPayment(coreWith(gateway), attempt(proof));
    expect(admission).toEqual({ kind: "payment_required", error: "invalid_exact_evm_signature" });
    expect(checks).toEqual([WALLET, WALLET]);
    expect(recoveries()).toBe(1);
  });

  it("a gateway that does not say the signature is proven: the buyer's 402, and the core recovers nothing", async () => {
    const gateway = fakeGateway();
    gateway.verify = async () => SIGNATURE_REFUSED;
    const admission = await admitPayment(coreWith(gateway), attempt(await signedV2Proof(requirements())));
    expect(admission).toEqual({ kind: "payment_required", error: "invalid_exact_evm_signature" });
    expect(recoveries()).toBe(0);
  });

  it("the fake gateway proves the payer's own signature as the real one does: 503 for it, 402 for a forged one", async () => {
    const gateway = fakeGateway();
    gateway.verifyResult = async () => SIGNATURE_REFUSED;
    const core = coreWith(gateway);
    expect(await admitPayment(core, attempt(await signedV2Proof(requirements())))).toMatchObject({
      kind: "fault",
      reason: "facilitator_chain_unavailable",
    });
    expect(await admitPayment(core, attempt(v2Proof(requirements())))).toEqual({
      kind: "payment_required",
      error: "invalid_exact_evm_signature",
    });
    expect(recoveries()).toBe(2);
  });
});
