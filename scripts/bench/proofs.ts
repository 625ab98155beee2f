/**
 * Paid-path proofs for the bench: real EIP-3009 TransferWithAuthorization signatures (viem, anvil test account 1),
 * signed before a round so signing never competes with the servers. One signed authorization can be wrapped into any
 * seller's `accepted` requirements: the signature covers only the authorization and the USDC domain.
 */
import { randomBytes } from "node:crypto";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import type { PaymentRequirements } from "@x402/core/types";
import { privateKeyToAccount } from "viem/accounts";
import {
  BASE_USDC_ADDRESS,
  DEVNET_CHAIN_ID,
  devnetKey,
  USDC_EIP712_NAME,
  USDC_EIP712_VERSION,
} from "../../src/devnet/constants.js";

export interface SignedAuthorization {
  authorization: {
    from: `0x${string}`;
    to: `0x${string}`;
    value: string;
    validAfter: string;
    validBefore: string;
    nonce: `0x${string}`;
  };
  signature: `0x${string}`;
}

const TYPES = {
  TransferWithAuthorization: [
    { name: "from", type: "address" },
    { name: "to", type: "address" },
    { name: "value", type: "uint256" },
    { name: "validAfter", type: "uint256" },
    { name: "validBefore", type: "uint256" },
    { name: "nonce", type: "bytes32" },
  ],
} as const;

export async function signAuthorizations(
  count: number,
  payTo: `0x${string}`,
  value: string,
): Promise<SignedAuthorization[]> {
  const account = privateKeyToAccount(devnetKey(1).privateKey);
  const validBefore = String(Math.floor(Date.now() / 1000) + 3600);
  const out: SignedAuthorization[] = [];
  for (let i = 0; i < count; i++) {
    const authorization = {
      from: account.address,
      to: payTo,
      value,
      validAfter: "0",
      validBefore,
      nonce: `0x${randomBytes(32).toString("hex")}` as `0x${string}`,
    };
    const signature = await account.signTypedData({
      domain: {
        name: USDC_EIP712_NAME,
        version: USDC_EIP712_VERSION,
        chainId: DEVNET_CHAIN_ID,
        verifyingContract: BASE_USDC_ADDRESS,
      },
      types: TYPES,
      primaryType: "TransferWithAuthorization",
      message: {
        ...authorization,
        value: BigInt(authorization.value),
        validAfter: 0n,
        validBefore: BigInt(validBefore),
      },
    });
    out.push({ authorization, signature });
  }
  return out;
}

/** The seller's own v2 requirements for the route, read from its 402 (so each proof matches what it asks for). */
export async function requirementsOf(
  url: string,
): Promise<{ accepted: PaymentRequirements; resource: unknown }> {
  const res = await fetch(url);
  const header = res.headers.get("payment-required");
  await res.arrayBuffer();
  if (res.status !== 402 || !header)
    throw new Error(`${url}: expected a 402 with PAYMENT-REQUIRED, got ${res.status}`);
  const required = decodePaymentRequiredHeader(header);
  const accepted = required.accepts.find((a) => a.scheme === "exact" && a.network === "eip155:8453");
  if (!accepted) throw new Error(`${url}: no exact eip155:8453 requirement in its 402`);
  return { accepted, resource: required.resource };
}

/** PAYMENT-SIGNATURE header values: one fresh authorization each, wrapped for this seller. */
export function paymentHeaders(
  signed: readonly SignedAuthorization[],
  seller: { accepted: PaymentRequirements; resource: unknown },
): string[] {
  return signed.map((s) =>
    Buffer.from(
      JSON.stringify({
        x402Version: 2,
        resource: seller.resource,
        accepted: seller.accepted,
        payload: { signature: s.signature, authorization: s.authorization },
      }),
    ).toString("base64"),
  );
}
