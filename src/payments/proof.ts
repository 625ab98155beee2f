import { createHash } from "node:crypto";
import { parsePaymentPayload } from "@x402/core/schemas";
import type { PaymentPayload } from "@x402/core/types";
import type { PaymentPayloadV1 } from "@x402/core/types/v1";

export type Proof =
  | { version: 2; header: "payment-signature"; payload: PaymentPayload }
  | { version: 1; header: "x-payment"; payload: PaymentPayloadV1 };

export type DecodeResult = { ok: true; proof: Proof } | { ok: false; detail: string };

/** Standard base64 alphabet with correct padding; the x402 headers use it (DESIGN.md). */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
export const MAX_PROOF_HEADER_LENGTH = 8192;

/**
 * Decodes a payment header into a typed payload, or says precisely why it cannot be one. Anything that fails here is a
 * malformed request (400), never a payment attempt: it does not reach the facilitator.
 */
export function decodeProof(header: "payment-signature" | "x-payment", value: string): DecodeResult {
  const name = header.toUpperCase();
  if (value.length === 0) return { ok: false, detail: `${name} is empty` };
  if (value.length > MAX_PROOF_HEADER_LENGTH)
    return { ok: false, detail: `${name} is longer than ${MAX_PROOF_HEADER_LENGTH} characters` };
  if (!BASE64.test(value)) return { ok: false, detail: `${name} is not standard base64` };
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(value, "base64").toString("utf8"));
  } catch {
    return { ok: false, detail: `${name} does not decode to JSON` };
  }
  const parsed = parsePaymentPayload(json);
  if (!parsed.success) {
    const issues = parsed.error.issues
      .slice(0, 5)
      .map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`)
      .join("; ");
    return { ok: false, detail: `${name} is not an x402 payment payload (${issues})` };
  }
  const payload = parsed.data as PaymentPayload | PaymentPayloadV1;
  if (typeof payload.payload !== "object" || payload.payload === null || Array.isArray(payload.payload))
    return { ok: false, detail: `${name} payload must be an object` };
  return payload.x402Version === 1
    ? { ok: true, proof: { version: 1, header: "x-payment", payload: payload as PaymentPayloadV1 } }
    : { ok: true, proof: { version: 2, header: "payment-signature", payload: payload as PaymentPayload } };
}

/** JSON with sorted keys, so that equal objects hash equally whatever the client's key order. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.keys(value as Record<string, unknown>)
      .sort()
      .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

export const sha256 = (text: string): string => createHash("sha256").update(text).digest("hex");

/**
 * Identity of a payment proof: the signed authorisation itself (for `exact`, signature + EIP-3009 authorization with
 * its nonce), independent of the v1/v2 envelope it arrived in. One proof buys one response.
 */
export function proofFingerprint(proof: Proof): string {
  return sha256(canonicalJson(proof.payload.payload));
}

/** Identity of a request for idempotency: method, route path, validated query (minus attribution) and body. */
export function requestFingerprint(method: string, path: string, query: unknown, body: unknown): string {
  const q = { ...(query as Record<string, unknown> | undefined) };
  delete q.pp_ref;
  return sha256(`${method.toUpperCase()} ${path}\n${canonicalJson(q)}\n${canonicalJson(body ?? null)}`);
}
