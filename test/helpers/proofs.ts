import { randomBytes } from "node:crypto";
import type { PaymentPayload, PaymentRequirements, VerifyResponse } from "@x402/core/types";
import { privateKeyToAccount } from "viem/accounts";
import { type PaymentNetwork, paymentNetwork } from "../../src/chain/networks.js";
import { DEFAULT_NETWORK } from "../../src/config.js";
import type { ExactPayload } from "../../src/payments/terms/proof.js";
import { signAuthorization, signedByPayer } from "../../src/payments/terms/signature.js";

/** The network the tests pay on: the one the configuration takes when NETWORK is unset. */
export const TEST_NETWORK: PaymentNetwork = (() => {
  const network = paymentNetwork(DEFAULT_NETWORK);
  if (!network) throw new Error(`the default network ${DEFAULT_NETWORK} is not a payment network`);
  return network;
})();

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

/** Anvil's well-known test account 1 (a public test key): signs real EIP-3009 authorizations in tests. */
export const TEST_BUYER_KEY = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d" as const;

/** A v2 proof whose signature really is the payer's EIP-712 signature of the authorization (Base USDC domain). */
export async function signedV2Proof(
  accepted: PaymentRequirements,
  nonce = `0x${randomBytes(32).toString("hex")}`,
  key: `0x${string}` = TEST_BUYER_KEY,
) {
  const account = privateKeyToAccount(key);
  const authorization = {
    from: account.address,
    to: accepted.payTo as `0x${string}`,
    value: accepted.amount,
    validAfter: "0",
    validBefore: "9999999999",
    nonce: nonce as `0x${string}`,
  };
  const extra = accepted.extra as { name: string; version: string };
  const signature = await signAuthorization(account, authorization, {
    name: extra.name,
    version: extra.version,
    chainId: 8453,
    verifyingContract: accepted.asset,
  });
  return { x402Version: 2, accepted, payload: { signature, authorization } };
}

/**
 * A facilitator's verify that checks the EIP-3009 signature for real (as a facilitator would) instead of trusting the
 * proof: valid only when `from` signed it.
 */
export async function verifyBySignature(p: PaymentPayload, r: PaymentRequirements): Promise<VerifyResponse> {
  const exact = p.payload as unknown as ExactPayload;
  const extra = r.extra as { name: string; version: string };
  const valid = await signedByPayer(exact, {
    name: extra.name,
    version: extra.version,
    chainId: 8453,
    verifyingContract: r.asset as `0x${string}`,
  });
  return valid
    ? { isValid: true, payer: exact.authorization.from }
    : { isValid: false, invalidReason: "invalid_exact_evm_signature", payer: exact.authorization.from };
}
