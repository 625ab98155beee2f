import { createHash } from "node:crypto";
import type { PaymentPayload, PaymentRequirements, SettleResponse, VerifyResponse } from "@x402/core/types";
import { circuitLabel, closedCircuit } from "../../src/payments/facilitator/circuit.js";
import { type FacilitatorGateway, localSignatureCheck } from "../../src/payments/facilitator/gateway.js";

export interface FakeGateway extends FacilitatorGateway {
  calls: { verify: number; settle: number };
  verifyResult: (p: PaymentPayload, r: PaymentRequirements) => Promise<VerifyResponse>;
  settleResult: (p: PaymentPayload, r: PaymentRequirements) => Promise<SettleResponse>;
}

const txOf = (p: PaymentPayload): string => {
  const nonce = (p.payload as { authorization?: { nonce?: string } }).authorization?.nonce ?? "";
  return `0x${createHash("sha256").update(`tx:${nonce.toLowerCase()}`).digest("hex")}`;
};

/** An in-memory facilitator gateway whose answers a test sets; it counts every call. */
export function fakeGateway(): FakeGateway {
  const g: FakeGateway = {
    circuit: closedCircuit(),
    // The fake's circuit never trips; its position follows whatever state a test puts in it.
    position: () => circuitLabel(g.circuit, 10_000, Date.now()),
    calls: { verify: 0, settle: 0 },
    verifyResult: async () => ({ isValid: true, payer: "0x000000000000000000000000000000000000b0b0" }),
    settleResult: async (p, r) => ({
      success: true,
      // One transaction per authorization, as on a chain (a transaction is credited to one receipt only).
      transaction: txOf(p),
      network: r.network,
      payer: "0x000000000000000000000000000000000000b0b0",
    }),
    verify: async (p, r) => {
      g.calls.verify += 1;
      const verdict = await g.verifyResult(p, r);
      // Like the real gateway, it says whether the signature is the payer's own; it checks only when its verdict calls
      // the signature invalid, the one case the core reads the answer (a valid one here is the facilitator's chain down).
      if (verdict.isValid || verdict.invalidReason !== "invalid_exact_evm_signature") return verdict;
      return { ...verdict, signature: await localSignatureCheck(p, r) };
    },
    settle: (p, r) => {
      g.calls.settle += 1;
      return g.settleResult(p, r);
    },
  };
  return g;
}
