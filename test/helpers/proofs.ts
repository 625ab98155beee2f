import { randomBytes } from "node:crypto";
import type { PaymentRequirements } from "@x402/core/types";

export const b64 = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString("base64");

/** A well-formed (unsigned-looking) v2 proof for `accepted`; the fake gateway decides whether it "verifies". */
export function v2Proof(accepted: PaymentRequirements, nonce = `0x${randomBytes(32).toString("hex")}`) {
  return {
    x402Version: 2,
    accepted,
    payload: {
      signature: `0x${"11".repeat(65)}`,
      authorization: {
        from: "0x000000000000000000000000000000000000b0b0",
        to: accepted.payTo,
        value: accepted.amount,
        validAfter: "0",
        validBefore: "9999999999",
        nonce,
      },
    },
  };
}

export function v1Proof(amount: string, payTo: string, nonce = `0x${randomBytes(32).toString("hex")}`) {
  return {
    x402Version: 1,
    scheme: "exact",
    network: "base",
    payload: {
      signature: `0x${"22".repeat(65)}`,
      authorization: {
        from: "0x000000000000000000000000000000000000b0b0",
        to: payTo,
        value: amount,
        validAfter: "0",
        validBefore: "9999999999",
        nonce,
      },
    },
  };
}
