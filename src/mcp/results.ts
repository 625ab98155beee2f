import { decodePaymentResponseHeader } from "@x402/core/http";
import type { PaymentRequired } from "@x402/core/types";
import { type Problem, problem } from "../http/problem.js";
import { boundedError } from "../payments/challenge.js";
import type { Challenge, HttpAnswer } from "../payments/http-answers.js";
import { type PaymentTerms, paymentRequiredV2, type RoutePrice } from "../payments/requirements.js";
import { ascii, mcpBazaar } from "./discovery.js";
import { toolSummary } from "./summary.js";
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

/** The core's answer to a tool call, with the status and body the handler gave where the core kept them. */
export type ToolAnswer = HttpAnswer & { status: number };

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

/** An error result carrying a problem (RFC 9457 fields), with `retryAfter` when the answer said when to retry. */
export const problemResult = (p: Problem | Record<string, unknown>, retryAfter?: string): ToolResult => {
  const seconds = Number(retryAfter);
  return structured(Number.isFinite(seconds) && seconds > 0 ? { ...p, retryAfter: seconds } : p, true);
};

/**
 * A tool's PaymentRequired: its operation's price and terms with the MCP endpoint as `resource.url` (a Bazaar
 * catalogues an MCP tool by endpoint and tool name) and the tool's Bazaar extension in place of the route's HTTP one.
 * What the client echoes in its payment (resource, extensions) is ASCII.
 */
export function toolPaymentRequired(
  tool: PaidTool,
  price: RoutePrice,
  terms: PaymentTerms,
  mcpUrl: string,
  error: string,
): PaymentRequired {
  const pr = paymentRequiredV2(price, terms, mcpUrl, boundedError(error));
  return { ...pr, resource: ascii(pr.resource), extensions: { ...pr.extensions, ...mcpBazaar(tool) } };
}

/** The 402s of one tool call: a call that carried no payment is told where to put one. */
export const toolChallenge =
  (tool: PaidTool, price: RoutePrice, terms: PaymentTerms, baseUrl: string, paid: boolean): Challenge =>
  (error) => ({
    required: toolPaymentRequired(tool, price, terms, `${baseUrl}${MCP_PATH}`, paid ? error : NO_PAYMENT),
  });

/**
 * x402 MCP transport, "Payment Required Signaling": `isError`, the PaymentRequired in `structuredContent` and, as
 * `JSON.stringify` of the same object, in `content[0].text`; the same object again in `_meta["x402/error"]`.
 */
export const paymentRequiredResult = (pr: PaymentRequired): ToolResult => ({
  ...structured(pr as unknown as Record<string, unknown>, true),
  _meta: { [META_ERROR]: pr },
});

const headerOf = (a: HttpAnswer, name: string): string | undefined =>
  a.headers.find(([n]) => n.toLowerCase() === name)?.[1];

const text = (body: unknown): string =>
  typeof body === "string" ? body : Buffer.isBuffer(body) ? body.toString("utf8") : JSON.stringify(body);

/**
 * The tool result of the core's answer:
 * - 2xx: the body as structured content, the settlement in `_meta["x402/payment-response"]`;
 * - 402: the tool's PaymentRequired (fresh requirements, the reason in `error`);
 * - any other status: the problem (with `retryAfter` when the answer said when to retry).
 * A failed settlement's `success: false` and the retry key issued to the payment ride in `_meta` of any of them.
 */
export function toolResult(answer: ToolAnswer, tool: PaidTool): ToolResult {
  const result = resultOf(answer, tool);
  const meta: Record<string, unknown> = {};
  const issued = headerOf(answer, "idempotency-key");
  if (issued) meta[META_RETRY_KEY] = issued;
  const settlement = answer.x402?.settlement;
  if (settlement && (answer.status < 200 || answer.status >= 300)) meta[META_PAYMENT_RESPONSE] = settlement;
  return Object.keys(meta).length ? { ...result, _meta: { ...result._meta, ...meta } } : result;
}

function resultOf(answer: ToolAnswer, tool: PaidTool): ToolResult {
  const instance = tool.path;
  if (answer.status >= 200 && answer.status < 300) {
    const body = text(answer.body);
    const value = parseObject(body);
    if (!value)
      return problemResult(problem(502, "internal", "The route answered without a JSON object.", instance));
    // A replay carries the settlement as it was kept with the response (encoded, as HTTP sends it).
    const kept = headerOf(answer, "payment-response");
    const settlement = answer.x402?.settlement ?? (kept ? decodePaymentResponseHeader(kept) : undefined);
    const meta: Record<string, unknown> = {};
    if (settlement) meta[META_PAYMENT_RESPONSE] = settlement;
    if (headerOf(answer, "idempotent-replayed") === "true") meta["pressure402/replayed"] = true;
    return {
      // A short quotable summary; the whole answer is structuredContent (summary.ts).
      content: [{ type: "text", text: toolSummary(tool.key, value) ?? body }],
      structuredContent: value,
      ...(Object.keys(meta).length ? { _meta: meta } : {}),
    };
  }
  const required = answer.x402?.required;
  if (answer.status === 402 && required) return paymentRequiredResult(required);
  const body = typeof answer.body === "object" && !Buffer.isBuffer(answer.body) ? answer.body : undefined;
  const p = (body as Record<string, unknown> | undefined) ?? parseObject(text(answer.body));
  return problemResult(
    p && typeof p.status === "number" && typeof p.type === "string"
      ? p
      : problem(answer.status, "internal", "The server failed to answer this request.", instance),
    headerOf(answer, "retry-after"),
  );
}
