import { createHash } from "node:crypto";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import type { PaymentPayloadV1 } from "@x402/core/types/v1";
import { isValidPaymentId, PAYMENT_IDENTIFIER } from "@x402/extensions/payment-identifier";

/** The exact scheme's EIP-3009 authorization, as signed. Every field is validated text (address, uint256, bytes32). */
export interface Authorization {
  from: `0x${string}`;
  to: `0x${string}`;
  value: string;
  validAfter: string;
  validBefore: string;
  nonce: `0x${string}`;
}

export interface ExactPayload {
  signature: `0x${string}`;
  authorization: Authorization;
}

export type Proof =
  | { version: 2; header: "payment-signature"; payload: PaymentPayload; exact: ExactPayload }
  | { version: 1; header: "x-payment"; payload: PaymentPayloadV1; exact: ExactPayload };

export type DecodeResult = { ok: true; proof: Proof } | { ok: false; detail: string };

/** Standard base64 alphabet with correct padding; the x402 headers use it. */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
export const MAX_PROOF_HEADER_LENGTH = 8192;

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const BYTES32 = /^0x[0-9a-fA-F]{64}$/;
/** uint256 in decimal: at most 78 digits, no leading zeros. */
const UINT256 = /^(?:0|[1-9][0-9]{0,77})$/;
const HEX_BYTES = /^0x(?:[0-9a-fA-F]{2})+$/;
/** ERC-6492 wraps a counterfactual wallet's signature with deployment data and ends with this magic. */
const ERC6492_SUFFIX = "6492649264926492649264926492649264926492649264926492649264926492";
/** A 65-byte ECDSA signature, or a smart-wallet (ERC-1271) one up to this many bytes. */
const MAX_SIGNATURE_BYTES = 1024;
const MAX_STRING = 2048;
/** The proof itself: the exact scheme's envelope is at most 4 levels deep and a few dozen values. */
const PROOF_BOUNDS = { depth: 6, nodes: 256 } as const;
/**
 * `extensions` echoes our own PaymentRequired's (the Bazaar discovery schema and example, which a Bazaar-enabled facilitator reads
 * from the payment): deeper and larger than the proof, still bounded (the header length bounds it further).
 */
const EXTENSION_BOUNDS = { depth: 24, nodes: 2048 } as const;
const UINT256_MAX = (1n << 256n) - 1n;

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * Depth and size, checked without recursion: a payload nested thousands of levels deep must be refused here, before
 * any recursive code (encoders, hashers, the facilitator client) can overflow the stack on it.
 */
function boundedJson(value: unknown, bounds: { depth: number; nodes: number }): string | undefined {
  const stack: [unknown, number][] = [[value, 1]];
  let nodes = 0;
  while (stack.length > 0) {
    const [v, depth] = stack.pop() as [unknown, number];
    if (++nodes > bounds.nodes) return `has more than ${bounds.nodes} values`;
    if (typeof v === "string" && v.length > MAX_STRING) return `has a string longer than ${MAX_STRING}`;
    if (typeof v !== "object" || v === null) continue;
    if (depth > bounds.depth) return `is nested deeper than ${bounds.depth} levels`;
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, depth + 1]);
  }
  return undefined;
}

function onlyKeys(o: Json, allowed: readonly string[], where: string): string | undefined {
  const extra = Object.keys(o).filter((k) => !allowed.includes(k));
  return extra.length ? `${where} has unknown field(s) ${extra.slice(0, 3).join(", ")}` : undefined;
}

function str(o: Json, key: string, where: string, pattern?: RegExp, max = 256): string | undefined {
  const v = o[key];
  if (typeof v !== "string") return `${where}.${key} must be a string`;
  if (v.length === 0 || v.length > max) return `${where}.${key} must be 1–${max} characters`;
  if (pattern && !pattern.test(v)) return `${where}.${key} is not in the expected format`;
  return undefined;
}

function uint256(o: Json, key: string, where: string): string | undefined {
  const e = str(o, key, where, UINT256, 78);
  if (e) return e;
  return BigInt(o[key] as string) > UINT256_MAX ? `${where}.${key} exceeds uint256` : undefined;
}

/** The exact scheme's payload: a signature and an EIP-3009 authorization, nothing else. */
function exactPayload(p: unknown): { ok: true; exact: ExactPayload } | { ok: false; detail: string } {
  if (!isObject(p)) return { ok: false, detail: "payload must be an object" };
  const fail = (detail: string) => ({ ok: false as const, detail });
  const e1 = onlyKeys(p, ["signature", "authorization"], "payload");
  if (e1) return fail(e1);
  const sig = p.signature;
  if (typeof sig !== "string" || !HEX_BYTES.test(sig))
    return fail("payload.signature must be 0x-prefixed hex bytes");
  if (sig.toLowerCase().endsWith(ERC6492_SUFFIX))
    return fail("payload.signature is an ERC-6492 (counterfactual wallet) signature; these are not accepted");
  const bytes = (sig.length - 2) / 2;
  if (bytes < 65 || bytes > MAX_SIGNATURE_BYTES)
    return fail(`payload.signature must be 65–${MAX_SIGNATURE_BYTES} bytes`);
  const a = p.authorization;
  if (!isObject(a)) return fail("payload.authorization must be an object");
  const fields = ["from", "to", "value", "validAfter", "validBefore", "nonce"] as const;
  const e2 =
    onlyKeys(a, fields, "payload.authorization") ??
    str(a, "from", "payload.authorization", ADDRESS, 42) ??
    str(a, "to", "payload.authorization", ADDRESS, 42) ??
    uint256(a, "value", "payload.authorization") ??
    uint256(a, "validAfter", "payload.authorization") ??
    uint256(a, "validBefore", "payload.authorization") ??
    str(a, "nonce", "payload.authorization", BYTES32, 66);
  if (e2) return fail(e2);
  const auth = a as unknown as Authorization;
  return {
    ok: true,
    exact: {
      signature: sig as `0x${string}`,
      authorization: {
        from: auth.from,
        to: auth.to,
        value: auth.value,
        validAfter: auth.validAfter,
        validBefore: auth.validBefore,
        nonce: auth.nonce,
      },
    },
  };
}

function acceptedShape(a: unknown): string | undefined {
  if (!isObject(a)) return "accepted must be an object";
  return (
    onlyKeys(
      a,
      ["scheme", "network", "asset", "amount", "payTo", "maxTimeoutSeconds", "extra"],
      "accepted",
    ) ??
    str(a, "scheme", "accepted", undefined, 32) ??
    str(a, "network", "accepted", undefined, 64) ??
    str(a, "asset", "accepted", undefined, 128) ??
    str(a, "amount", "accepted", undefined, 78) ??
    str(a, "payTo", "accepted", undefined, 128) ??
    (Number.isSafeInteger(a.maxTimeoutSeconds)
      ? undefined
      : "accepted.maxTimeoutSeconds must be an integer") ??
    (a.extra === undefined || isObject(a.extra) ? undefined : "accepted.extra must be an object")
  );
}

/**
 * Validates a decoded header against the exact shape x402 allows for the `exact` EVM scheme (types, lengths, depth,
 * hex formats) and returns a payload rebuilt from the validated fields only. Anything that fails is a malformed request
 * (a bad request): it never reaches the facilitator, so it can neither crash a client library nor count against the circuit.
 */
export function validateProof(json: unknown): DecodeResult {
  if (!isObject(json)) return { ok: false, detail: "must be a JSON object" };
  const { extensions, ...envelope } = json;
  const bound = boundedJson(envelope, PROOF_BOUNDS);
  if (bound) return { ok: false, detail: bound };
  const extBound = extensions === undefined ? undefined : boundedJson(extensions, EXTENSION_BOUNDS);
  if (extBound) return { ok: false, detail: `extensions ${extBound}` };
  const fail = (detail: string): DecodeResult => ({ ok: false, detail });
  if (json.x402Version === 2) {
    const e =
      onlyKeys(json, ["x402Version", "accepted", "payload", "resource", "extensions"], "the payload") ??
      acceptedShape(json.accepted) ??
      (json.resource === undefined || isObject(json.resource) ? undefined : "resource must be an object") ??
      (json.extensions === undefined || isObject(json.extensions)
        ? undefined
        : "extensions must be an object");
    if (e) return fail(e);
    const p = exactPayload(json.payload);
    if (!p.ok) return fail(p.detail);
    const payload = {
      x402Version: 2,
      accepted: json.accepted as PaymentRequirements,
      payload: { signature: p.exact.signature, authorization: { ...p.exact.authorization } },
      ...(json.resource ? { resource: json.resource } : {}),
      ...(json.extensions ? { extensions: json.extensions } : {}),
    } as PaymentPayload;
    return { ok: true, proof: { version: 2, header: "payment-signature", payload, exact: p.exact } };
  }
  if (json.x402Version === 1) {
    const e =
      onlyKeys(json, ["x402Version", "scheme", "network", "payload"], "the payload") ??
      str(json, "scheme", "the payload", undefined, 32) ??
      str(json, "network", "the payload", undefined, 64);
    if (e) return fail(e);
    const p = exactPayload(json.payload);
    if (!p.ok) return fail(p.detail);
    const payload = {
      x402Version: 1,
      scheme: json.scheme,
      network: json.network,
      payload: { signature: p.exact.signature, authorization: { ...p.exact.authorization } },
    } as PaymentPayloadV1;
    return { ok: true, proof: { version: 1, header: "x-payment", payload, exact: p.exact } };
  }
  return fail("x402Version must be 1 or 2");
}

/**
 * Decodes a payment header into a typed payload, or says precisely why it cannot be one. Anything that fails here is a
 * malformed request, never a payment attempt: it does not reach the facilitator.
 */
export function decodeProof(
  header: "payment-signature" | "x-payment",
  value: string,
  /** How the caller sent it, for the refusal's text (the header's name over HTTP). */
  name: string = header.toUpperCase(),
): DecodeResult {
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
  return proofObject(json, name);
}

/** A payment payload a transport carries as a JSON value (MCP's `_meta`), validated as a decoded header is. */
export function proofObject(json: unknown, name: string): DecodeResult {
  const result = validateProof(json);
  return result.ok
    ? result
    : { ok: false, detail: `${name} is not an x402 exact payment payload: ${result.detail}` };
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

/** Identity of a request for idempotency: method, route path, validated query (minus attribution) and body. */
export function requestFingerprint(method: string, path: string, query: unknown, body: unknown): string {
  const q = { ...(query as Record<string, unknown> | undefined) };
  delete q.pp_ref;
  return sha256(`${method.toUpperCase()} ${path}\n${canonicalJson(q)}\n${canonicalJson(body ?? null)}`);
}

export type PaymentIdResult = { ok: true; id: string | undefined } | { ok: false; detail: string };

/**
 * The x402 `payment-identifier` id of a v2 proof (`extensions["payment-identifier"].info.id`): absent, or 16–128
 * characters of [A-Za-z0-9_-] as the extension's schema says; anything else is refused, never silently ignored.
 */
export function paymentIdOf(proof: Proof): PaymentIdResult {
  if (proof.version !== 2) return { ok: true, id: undefined };
  const ext = (proof.payload.extensions as Record<string, unknown> | undefined)?.[PAYMENT_IDENTIFIER];
  if (ext === undefined) return { ok: true, id: undefined };
  const info = isObject(ext) ? ext.info : undefined;
  const id = isObject(info) ? info.id : undefined;
  if (id === undefined) return { ok: true, id: undefined };
  if (typeof id !== "string" || !isValidPaymentId(id))
    return {
      ok: false,
      detail: `extensions["${PAYMENT_IDENTIFIER}"].info.id must be 16–128 characters of A–Z, a–z, 0–9, _ and -.`,
    };
  return { ok: true, id };
}
