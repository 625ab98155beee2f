import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from "@x402/core/http";
import type { PaymentRequired, SettleResponse } from "@x402/core/types";
import { type Problem, problem } from "../http/problem.js";
import { ascii, mcpBazaar } from "./discovery.js";
import { MCP_PATH, type PaidTool } from "./tools.js";

/** `_meta` keys of the x402 MCP transport (coinbase/x402 specs/transports-v2/mcp.md). */
export const META_PAYMENT = "x402/payment";
export const META_PAYMENT_RESPONSE = "x402/payment-response";
/**
 * Where Cloudflare's `agents` x402 client (`withX402Client`, the implementation the transport spec links) reads the
 * PaymentRequired of an `isError` result; its own server (`withX402`) writes it there, as this adapter does.
 */
export const META_ERROR = "x402/error";
/**
 * The retry key a paid call without a secret of its own (no payment-identifier id) is issued, as the HTTP route's
 * Idempotency-Key answer header; sent back in the same `_meta` key, it recovers what that payment bought.
 */
export const META_RETRY_KEY = "pressure402/idempotency-key";

/** The reason given when a call carried no payment (the route's own names its HTTP header). */
export const NO_PAYMENT = `payment required: send the signed x402 PaymentPayload in _meta["${META_PAYMENT}"]`;

/** What a tool call returns (the MCP CallToolResult fields this adapter sets). */
export interface ToolResult {
  [key: string]: unknown;
  content: { type: "text"; text: string }[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  _meta?: Record<string, unknown>;
}

/** A tool call as dispatched to its route. */
export interface Dispatched {
  tool: PaidTool;
  /** Path and query of the route request (its 402 `resource.url` ends with them). */
  url: string;
  /** Whether the call carried `_meta["x402/payment"]`. */
  paid: boolean;
}

/** The HTTP answer a tool call was dispatched to (status, headers, body text). */
export interface HttpAnswer {
  statusCode: number;
  headers: Record<string, string | string[] | number | undefined>;
  body: string;
}

const one = (v: HttpAnswer["headers"][string]): string | undefined =>
  Array.isArray(v) ? v[0] : v === undefined ? undefined : String(v);

function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === "object" && v !== null && !Array.isArray(v)
      ? (v as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** Structured and text forms carry identical data (the x402 MCP transport requires both). */
const structured = (value: Record<string, unknown>, isError: boolean): ToolResult => ({
  content: [{ type: "text", text: JSON.stringify(value) }],
  structuredContent: value,
  ...(isError ? { isError: true } : {}),
});

/** An error result carrying a problem (RFC 9457 fields), e.g. a refusal the adapter itself decides. */
export const problemResult = (p: Problem): ToolResult => structured(p, true);

/**
 * The route's PaymentRequired as the tool's: the same price, terms and reason, with the MCP endpoint as `resource.url`
 * (same origin and base path as the route's) and the tool's Bazaar extension in place of the route's HTTP one. What the
 * client echoes in its payment (resource, extensions) is ASCII.
 */
export function toolPaymentRequired(pr: PaymentRequired, call: Dispatched): PaymentRequired {
  const url = pr.resource.url;
  const base = url.endsWith(call.url) ? url.slice(0, url.length - call.url.length) : new URL(url).origin;
  return {
    ...pr,
    ...(call.paid ? {} : { error: NO_PAYMENT }),
    // Echoed by the client in its payment, like the extension: ASCII (see `ascii`).
    resource: ascii({ ...pr.resource, url: `${base}${MCP_PATH}` }),
    extensions: { ...pr.extensions, ...mcpBazaar(call.tool) },
  };
}

/**
 * x402 MCP transport, "Payment Required Signaling": `isError`, the PaymentRequired in `structuredContent` and, as
 * `JSON.stringify` of the same object, in `content[0].text`; the same object again in `_meta["x402/error"]`.
 */
export const paymentRequiredResult = (pr: PaymentRequired): ToolResult => ({
  ...structured(pr as unknown as Record<string, unknown>, true),
  _meta: { [META_ERROR]: pr },
});

/** A malformed proof's detail names the header the adapter used; the caller sent `_meta["x402/payment"]`. */
const PROOF_PROBLEM = /\/invalid-payment-header$/;
const asMeta = (p: Record<string, unknown>): Record<string, unknown> =>
  typeof p.type === "string" && PROOF_PROBLEM.test(p.type) && typeof p.detail === "string"
    ? { ...p, detail: p.detail.replace(/^PAYMENT-SIGNATURE\b/, `_meta["${META_PAYMENT}"]`) }
    : p;

/**
 * The tool result of one HTTP answer of a paid route:
 * - 2xx: the body as structured content, the decoded PAYMENT-RESPONSE in `_meta["x402/payment-response"]`;
 * - 402: the PaymentRequired of the PAYMENT-REQUIRED header as the tool's (fresh requirements, the reason in `error`);
 * - any other status: the route's problem+json (with `retryAfter` when the route said when to retry).
 */
export function toolResult(answer: HttpAnswer, call: Dispatched): ToolResult {
  const result = routeResult(answer, call);
  const meta: Record<string, unknown> = {};
  const issued = one(answer.headers["idempotency-key"]);
  if (issued) meta[META_RETRY_KEY] = issued;
  // A failed settlement's `success: false` and reason, as the x402 MCP transport carries it on an error result.
  const settlement = one(answer.headers["payment-response"]);
  if (settlement && (answer.statusCode < 200 || answer.statusCode >= 300))
    meta[META_PAYMENT_RESPONSE] = decodePaymentResponseHeader(settlement);
  return Object.keys(meta).length ? { ...result, _meta: { ...result._meta, ...meta } } : result;
}

function routeResult(answer: HttpAnswer, call: Dispatched): ToolResult {
  const { statusCode, headers } = answer;
  const instance = call.tool.path;
  if (statusCode >= 200 && statusCode < 300) {
    const body = parseObject(answer.body);
    if (!body)
      return problemResult(problem(502, "internal", "The route answered without a JSON object.", instance));
    const settlementHeader = one(headers["payment-response"]);
    const settlement: SettleResponse | undefined = settlementHeader
      ? decodePaymentResponseHeader(settlementHeader)
      : undefined;
    const meta: Record<string, unknown> = {};
    if (settlement) meta[META_PAYMENT_RESPONSE] = settlement;
    if (one(headers["idempotent-replayed"]) === "true") meta["pressure402/replayed"] = true;
    return {
      content: [{ type: "text", text: answer.body }],
      structuredContent: body,
      ...(Object.keys(meta).length ? { _meta: meta } : {}),
    };
  }
  const required = one(headers["payment-required"]);
  if (statusCode === 402 && required) {
    return paymentRequiredResult(toolPaymentRequired(decodePaymentRequiredHeader(required), call));
  }
  const body = parseObject(answer.body);
  const p: Record<string, unknown> =
    body && typeof body.status === "number" && typeof body.type === "string"
      ? asMeta(body)
      : problem(statusCode, "internal", "The server failed to answer this request.", instance);
  const retryAfter = Number(one(headers["retry-after"]));
  return structured(Number.isFinite(retryAfter) && retryAfter > 0 ? { ...p, retryAfter } : p, true);
}
