/**
 * Paid-path proofs for the bench: real EIP-3009 TransferWithAuthorization signatures (viem, anvil test account 1),
 * signed before a round so signing never competes with the servers. One signed authorization can be wrapped into any
 * seller's `accepted` requirements: the signature covers only the authorization and the USDC domain.
 */
import { randomBytes } from "node:crypto";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import type { PaymentRequirements } from "@x402/core/types";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import {
  BASE_USDC_ADDRESS,
  DEVNET_CHAIN_ID,
  devnetKey,
  USDC_EIP712_NAME,
  USDC_EIP712_VERSION,
} from "../../src/devnet/constants.js";
import type { ExactPayload } from "../../src/payments/terms/proof.js";
import { signAuthorization } from "../../src/payments/terms/signature.js";

/** One pre-signed authorization: exactly the exact scheme's payload. */
export type SignedAuthorization = ExactPayload;

/**
 * `distinctPayers`: each authorization from a fresh key of its own. One payer buying the same request again within
 * PAID_REREAD_SECONDS is re-served the answer it bought (its new authorization is given back, nothing is verified or
 * settled), and one payer's calls share its verify lane: a paid-path measure of one payer measures those, not a
 * purchase. The reference sellers settle every proof whoever signed it.
 */
export async function signAuthorizations(
  count: number,
  payTo: `0x${string}`,
  value: string,
  { distinctPayers = false }: { distinctPayers?: boolean } = {},
): Promise<SignedAuthorization[]> {
  const one = privateKeyToAccount(devnetKey(1).privateKey);
  const validBefore = String(Math.floor(Date.now() / 1000) + 3600);
  const out: SignedAuthorization[] = [];
  for (let i = 0; i < count; i++) {
    const account = distinctPayers ? privateKeyToAccount(generatePrivateKey()) : one;
    const authorization = {
      from: account.address,
      to: payTo,
      value,
      validAfter: "0",
      validBefore,
      nonce: `0x${randomBytes(32).toString("hex")}` as `0x${string}`,
    };
    const signature = await signAuthorization(account, authorization, {
      name: USDC_EIP712_NAME,
      version: USDC_EIP712_VERSION,
      chainId: DEVNET_CHAIN_ID,
      verifyingContract: BASE_USDC_ADDRESS,
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
