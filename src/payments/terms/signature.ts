import { type Hex, hashTypedData, type LocalAccount } from "viem";
import { paymentNetwork } from "../../chain/networks.js";
import { recoverSigner } from "./ecrecover.js";
import type { Authorization, ExactPayload } from "./proof.js";

/** EIP-3009's TransferWithAuthorization as EIP-712 types: the one definition production, tests and bench sign with. */
export const TRANSFER_WITH_AUTHORIZATION = {
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
 * Whether a 65-byte signature is the payer's own EIP-712 signature of the authorization, checked locally (no chain),
 * once per proof by the facilitator gateway, whose verdict carries the answer. When it is and the facilitator still
 * calls the signature invalid, the facilitator could not check it (its chain RPC is down): that is its outage,
 * answered as a facilitator fault, not the buyer's bad signature. Smart-wallet signatures need the chain, so they are never vouched for
 * here.
 */
export async function signedByPayer(exact: ExactPayload, domain: AuthorizationDomain): Promise<boolean> {
  if (exact.signature.length !== 132) return false;
  try {
    const signer = await authorizationSigner(exact, domain);
    return signer.toLowerCase() === exact.authorization.from.toLowerCase();
  } catch {
    return false;
  }
}

/** The EIP-712 domain of a token's EIP-3009 authorizations (for USDC: its name, version, chain and address). */
export interface AuthorizationDomain {
  name: string;
  version: string;
  chainId: number;
  verifyingContract: string;
}

/** The authorization as the EIP-712 message: the uint256 fields as bigints. */
function authorizationMessage(a: Authorization) {
  return {
    from: a.from,
    to: a.to,
    value: BigInt(a.value),
    validAfter: BigInt(a.validAfter),
    validBefore: BigInt(a.validBefore),
    nonce: a.nonce,
  };
}

/** The address whose EIP-712 signature `exact.signature` is (throws on a malformed signature). */
export async function authorizationSigner(exact: ExactPayload, domain: AuthorizationDomain): Promise<Hex> {
  const hash = hashTypedData({
    domain: { ...domain, verifyingContract: domain.verifyingContract as Hex },
    types: TRANSFER_WITH_AUTHORIZATION,
    primaryType: "TransferWithAuthorization",
    message: authorizationMessage(exact.authorization),
  });
  return recoverSigner(hash, exact.signature);
}

/** The account's EIP-712 signature of the authorization (tests and the bench sign real proofs with it). */
export function signAuthorization(
  account: LocalAccount,
  authorization: Authorization,
  domain: AuthorizationDomain,
): Promise<Hex> {
  return account.signTypedData({
    domain: { ...domain, verifyingContract: domain.verifyingContract as Hex },
    types: TRANSFER_WITH_AUTHORIZATION,
    primaryType: "TransferWithAuthorization",
    message: authorizationMessage(authorization),
  });
}

/**
 * The EIP-712 domain of the token that requirements name (for USDC: `extra.name`/`extra.version`, the chain, the asset),
 * for v2 (`eip155:8453`) and v1 (`base`, `base-sepolia`) requirements alike; undefined when they do not name one.
 */
export function authorizationDomainOf(requirements: {
  network: string;
  asset: string;
  extra?: Record<string, unknown>;
}): AuthorizationDomain | undefined {
  const { name, version } = (requirements.extra ?? {}) as { name?: unknown; version?: unknown };
  const chainId = evmChainId(requirements.network) ?? paymentNetwork(requirements.network)?.chainId;
  if (chainId === undefined || typeof name !== "string" || typeof version !== "string") return undefined;
  return { name, version, chainId, verifyingContract: requirements.asset };
}

/** eip155:8453 → 8453; undefined for other namespaces. */
export function evmChainId(caip2: string): number | undefined {
  const m = /^eip155:(\d{1,12})$/.exec(caip2);
  return m ? Number(m[1]) : undefined;
}
