import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from "@x402/core/http";
import type { PaymentRequired, SettleResponse } from "@x402/core/types";
import { type Problem, problem } from "../http/problem.js";

/** `_meta` keys of the x402 MCP transport (coinbase/x402 specs/transports-v2/mcp.md). */
export const META_PAYMENT = "x402/payment";
export const META_PAYMENT_RESPONSE = "x402/payment-response";

/** What a tool call returns (the MCP CallToolResult fields this adapter sets). */
export interface ToolResult {
  [key: string]: unknown;
  content: { type: "text"; text: string }[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  _meta?: Record<string, unknown>;
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
 * The tool result of one HTTP answer of a paid route:
 * - 2xx: the body as structured content, the decoded PAYMENT-RESPONSE in `_meta["x402/payment-response"]`;
 * - 402: the PaymentRequired of the PAYMENT-REQUIRED header (fresh requirements with the reason in `error`);
 * - any other status: the route's problem+json (with `retryAfter` when the route said when to retry).
 */
export function toolResult(answer: HttpAnswer, instance: string): ToolResult {
  const { statusCode, headers } = answer;
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
    const pr: PaymentRequired = decodePaymentRequiredHeader(required);
    return structured(pr as unknown as Record<string, unknown>, true);
  }
  const body = parseObject(answer.body);
  const p: Record<string, unknown> =
    body && typeof body.status === "number" && typeof body.type === "string"
      ? body
      : problem(statusCode, "internal", "The server failed to answer this request.", instance);
  const retryAfter = Number(one(headers["retry-after"]));
  return structured(Number.isFinite(retryAfter) && retryAfter > 0 ? { ...p, retryAfter } : p, true);
}
