import { type Hex, recoverTypedDataAddress } from "viem";
import type { ExactPayload } from "./proof.js";

const TRANSFER_WITH_AUTHORIZATION = {
  TransferWithAuthorization: [
    { name: "from", type: "address" },
    { name: "to", type: "address" },
    { name: "value", type: "uint256" },
    { name: "validAfter", type: "uint256" },
    { name: "validBefore", type: "uint256" },
    { name: "nonce", type: "bytes32" },
  ],
} as const;

/**
 * Whether a 65-byte signature is the payer's own EIP-712 signature of the authorization, checked locally (no chain).
 * When it is and the facilitator still calls the signature invalid, the facilitator could not check it (its chain
 * RPC is down): that is its outage, answered 503, not the buyer's bad signature. Smart-wallet signatures need the
 * chain, so they are never vouched for here.
 */
export async function signedByPayer(
  exact: ExactPayload,
  domain: { name: string; version: string; chainId: number; verifyingContract: string },
): Promise<boolean> {
  if (exact.signature.length !== 132) return false;
  const a = exact.authorization;
  try {
    const signer = await recoverTypedDataAddress({
      domain: { ...domain, verifyingContract: domain.verifyingContract as Hex },
      types: TRANSFER_WITH_AUTHORIZATION,
      primaryType: "TransferWithAuthorization",
      message: {
        from: a.from,
        to: a.to,
        value: BigInt(a.value),
        validAfter: BigInt(a.validAfter),
        validBefore: BigInt(a.validBefore),
        nonce: a.nonce,
      },
      signature: exact.signature,
    });
    return signer.toLowerCase() === a.from.toLowerCase();
  } catch {
    return false;
  }
}

/** eip155:8453 → 8453; undefined for other namespaces. */
export function evmChainId(caip2: string): number | undefined {
  const m = /^eip155:(\d{1,12})$/.exec(caip2);
  return m ? Number(m[1]) : undefined;
}
