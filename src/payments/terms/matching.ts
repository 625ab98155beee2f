import type { PaymentRequirements } from "@x402/core/types";
import type { ExactPayload, Proof } from "./proof.js";
import { type PaymentTerms, type RoutePrice, requirementsV1, requirementsV2 } from "./requirements.js";

export const HEADER_V2 = "payment-signature";
export const HEADER_V1 = "x-payment";

/** Which payment header a request pays with, or why it does not pay at all. */
export type HeaderChoice =
  | { kind: "pay"; name: typeof HEADER_V2 | typeof HEADER_V1; value: string }
  | { kind: "none" }
  | { kind: "both" }
  | { kind: "v1_not_accepted" };

export function chooseProofHeader(
  v2: string | undefined,
  v1: string | undefined,
  acceptsV1: boolean,
): HeaderChoice {
  if (v2 !== undefined && v1 !== undefined && acceptsV1) return { kind: "both" };
  if (v2 !== undefined) return { kind: "pay", name: HEADER_V2, value: v2 };
  if (v1 === undefined) return { kind: "none" };
  return acceptsV1 ? { kind: "pay", name: HEADER_V1, value: v1 } : { kind: "v1_not_accepted" };
}

function mismatchV2(accepted: PaymentRequirements, ours: PaymentRequirements): string | undefined {
  const checks: [string, unknown, unknown][] = [
    ["scheme", accepted.scheme, ours.scheme],
    ["network", accepted.network, ours.network],
    ["asset", accepted.asset?.toLowerCase(), ours.asset.toLowerCase()],
    ["amount", accepted.amount, ours.amount],
    ["payTo", accepted.payTo?.toLowerCase(), ours.payTo.toLowerCase()],
  ];
  const wrong = checks
    .filter(([, a, b]) => a !== b)
    .map(([field, a, b]) => `${field} ${String(a)} ≠ ${String(b)}`);
  return wrong.length ? `payment does not match the requirements (${wrong.join(", ")})` : undefined;
}

/**
 * The requirements a decoded proof is checked against, or the reason it cannot pay for this route. Only what the
 * payload declares is compared here; that the signed authorisation matches is the facilitator's verification.
 */
export function requirementsFor(
  proof: Proof,
  header: { name: typeof HEADER_V2 | typeof HEADER_V1 },
  route: RoutePrice,
  terms: PaymentTerms,
  resourceUrl: string,
): { ok: true; requirements: PaymentRequirements } | { ok: false; error: string } {
  if (proof.header !== header.name)
    return {
      ok: false,
      error:
        proof.version === 1 && !route.acceptsV1
          ? "x402 v1 proofs are not accepted on this route; pay with x402 v2"
          : `${header.name.toUpperCase()} must carry an x402 v${header.name === HEADER_V2 ? 2 : 1} payload`,
    };
  if (proof.version === 2) {
    const requirements = requirementsV2(route, terms);
    const mismatch = mismatchV2(proof.payload.accepted, requirements);
    return mismatch ? { ok: false, error: mismatch } : { ok: true, requirements };
  }
  const v1Name = terms.network.v1Name;
  if (proof.payload.scheme !== "exact" || String(proof.payload.network) !== v1Name)
    return {
      ok: false,
      error: `unsupported scheme/network ${proof.payload.scheme}/${proof.payload.network}; use exact on ${v1Name}`,
    };
  // The facilitator client sends whichever shape it is given; v1 requirements travel as v1.
  return {
    ok: true,
    requirements: requirementsV1(route, terms, resourceUrl) as unknown as PaymentRequirements,
  };
}

/**
 * What the signed authorization itself must say to pay `requirements`, checked locally so that a proof the facilitator
 * would refuse anyway never costs it a call. Answers with the exact scheme's reason code (as the facilitator would).
 * validBefore keeps the facilitator's 6 s margin.
 */
export function authorizationMismatch(
  exact: ExactPayload,
  requirements: { payTo: string; amount: string },
  nowSeconds: number,
): string | undefined {
  const a = exact.authorization;
  if (a.to.toLowerCase() !== requirements.payTo.toLowerCase()) return "invalid_exact_evm_recipient_mismatch";
  if (BigInt(a.value) !== BigInt(requirements.amount)) return "invalid_exact_evm_authorization_value";
  if (BigInt(a.validBefore) < BigInt(nowSeconds + 6))
    return "invalid_exact_evm_payload_authorization_valid_before";
  if (BigInt(a.validAfter) > BigInt(nowSeconds)) return "invalid_exact_evm_payload_authorization_valid_after";
  return undefined;
}
