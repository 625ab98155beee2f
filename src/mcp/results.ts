import type { PaymentRequired } from "@x402/core/types";
import type { Problem } from "../http/problem.js";
import type { HandlerResponse } from "../payments/core/core.js";
import type { Outcome } from "../payments/core/outcomes.js";
import { boundedError } from "../payments/http/challenge.js";
import {
  type Challenge,
  internalProblem,
  malformedAnswerProblem,
  outcomeProblem,
  replaySettlement,
} from "../payments/http/http-answers.js";
import { type PaymentTerms, paymentRequiredV2, type RoutePrice } from "../payments/terms/requirements.js";
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

/** An error result carrying a problem (RFC 9457 fields), with `retryAfter` (seconds) when it says when to retry. */
export const problemResult = (
  p: Problem | Record<string, unknown>,
  retryAfter?: string | number,
): ToolResult => {
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

/** The PaymentRequired of one tool call: a call that carried no payment is told where to put one. */
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

/**
 * The tool result of a paid call's outcome (payments/core/outcomes.ts), the same outcome HTTP renders in
 * payments/http/http-answers.ts, whose problem bodies it shares:
 * - delivered or replayed: the answer as structured content, the settlement in `_meta["x402/payment-response"]`;
 * - payment_required: the tool's PaymentRequired (fresh requirements, the reason in `error`);
 * - unpaid: the operation's own problem;
 * - any other: the outcome's problem, with `retryAfter` (seconds) when it says when to retry.
 * A failed settlement's `success: false` and the retry key issued to the payment ride in `_meta` of any of them.
 * `response`: the operation's answer, for an outcome that sends it (delivered, unpaid).
 */
export function toolResult(
  outcome: Outcome,
  tool: PaidTool,
  challenge: Challenge,
  response?: HandlerResponse,
): ToolResult {
  const result = resultOf(outcome, tool, challenge, response);
  const meta: Record<string, unknown> = {};
  if ("retryKey" in outcome && outcome.retryKey !== undefined) meta[META_RETRY_KEY] = outcome.retryKey;
  if ((outcome.kind === "payment_required" || outcome.kind === "fault") && outcome.settlement)
    meta[META_PAYMENT_RESPONSE] = outcome.settlement.response;
  return Object.keys(meta).length ? { ...result, _meta: { ...result._meta, ...meta } } : result;
}

/** An answer's body as the tool's structured result, with what `_meta` adds to it. */
function answerResult(body: string, tool: PaidTool, meta: Record<string, unknown>): ToolResult {
  const value = parseObject(body);
  if (!value) return problemResult(malformedAnswerProblem(tool.path));
  return {
    // A short quotable summary; the whole answer is structuredContent (summary.ts).
    content: [{ type: "text", text: toolSummary(tool.key, value) ?? body }],
    structuredContent: value,
    ...(Object.keys(meta).length ? { _meta: meta } : {}),
  };
}

function resultOf(
  outcome: Outcome,
  tool: PaidTool,
  challenge: Challenge,
  response: HandlerResponse | undefined,
): ToolResult {
  switch (outcome.kind) {
    case "delivered":
      return answerResult(response?.body ?? "", tool, {
        [META_PAYMENT_RESPONSE]: outcome.settlement.response,
      });
    case "replay": {
      const settlement = replaySettlement(outcome);
      return answerResult(outcome.response.body, tool, {
        ...(settlement ? { [META_PAYMENT_RESPONSE]: settlement } : {}),
        "pressure402/replayed": true,
      });
    }
    case "payment_required":
      return paymentRequiredResult(challenge(outcome.error, outcome.v1Error).required);
    case "unpaid": {
      // The operation's own problem (its check or answer failed), as its route would have answered it.
      const p = parseObject(response?.body ?? "");
      return problemResult(
        p && typeof p.status === "number" && typeof p.type === "string"
          ? p
          : internalProblem(tool.path, "The server failed to answer this request."),
      );
    }
    default:
      return problemResult(
        outcomeProblem(outcome, tool.path),
        "retryAfterSeconds" in outcome ? outcome.retryAfterSeconds : undefined,
      );
  }
}
