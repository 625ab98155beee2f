import { Type } from "typebox";
import type { PaidRoute } from "../payments/http/plugin.js";

const PaymentRequiredV1Body = Type.Object(
  {
    x402Version: Type.Literal(1),
    error: Type.String({ description: "Why payment is required, or why the proof was refused" }),
    accepts: Type.Array(Type.Object({}, { additionalProperties: true })),
  },
  { additionalProperties: true, description: "x402 v1 PaymentRequired (for v1 clients that read the body)" },
);

type HeaderDocs = Record<string, { type: "string"; description: string }>;

/** A problem response, declared with the media type it is sent as; the schema is registered once and referenced. */
export const problem = (description: string, headers?: HeaderDocs) => ({
  description,
  ...(headers ? { headers } : {}),
  content: { "application/problem+json": { schema: { $ref: "Problem#" } } },
});

const retryAfter = {
  "Retry-After": { type: "string" as const, description: "Seconds to wait before retrying" },
};

/** Response headers of a successful paid call. */
export const PAID_RESPONSE_HEADERS = {
  "PAYMENT-RESPONSE": {
    type: "string" as const,
    description: "x402 v2 SettleResponse, base64 JSON (v2 proofs)",
  },
  "X-PAYMENT-RESPONSE": {
    type: "string" as const,
    description: "x402 v1 settlement response, base64 JSON (v1 proofs)",
  },
};

/** The 200 of a paid route: the result, with the settlement headers documented. */
export const paid = <T extends object>(schema: T) => ({ ...schema, headers: PAID_RESPONSE_HEADERS });

const paymentRequiredHeader = {
  "PAYMENT-REQUIRED": {
    type: "string" as const,
    description: "x402 v2 PaymentRequired, base64 (standard alphabet) JSON",
  },
};

export const notFoundResponse = problem("Unknown token or unlock event (checked before any payment request)");

const rateLimitHeaders: HeaderDocs = {
  ...retryAfter,
  "RateLimit-Limit": { type: "string", description: "Requests allowed per window" },
  "RateLimit-Remaining": { type: "string", description: "Requests left in the window" },
  "RateLimit-Reset": { type: "string", description: "Seconds until the window resets" },
};

/** Statuses any route can answer, paid or free. */
export const commonErrorResponses = {
  429: problem("Rate limit exceeded", rateLimitHeaders),
  500: problem("Server fault (no internal detail is sent)"),
  503: problem("Server overloaded; retry after the delay", retryAfter),
};

/** Error responses every paid route documents; the 402 body differs between v1-capable routes and the benchmark. */
export function paidErrorResponses(price: PaidRoute) {
  const hasBody = price.route.startsWith("POST ");
  return {
    400: problem("Invalid request or undecodable payment header (nothing is charged)"),
    402: {
      ...PaymentRequiredV1Body,
      headers: paymentRequiredHeader,
      description: price.acceptsV1
        ? "Payment required. Header PAYMENT-REQUIRED carries the x402 v2 PaymentRequired (base64 JSON); the body is the v1 form, for clients that pay with X-PAYMENT."
        : "Payment required. Header PAYMENT-REQUIRED carries the x402 v2 PaymentRequired (base64 JSON). x402 v2 only: the body is a v1 PaymentRequired whose `error`, and the scheme of its only `accepts` entry, start with x402_v2_only: no v1 client pays an unknown scheme, so v1-only clients stop with that reason.",
    },
    409: problem("The same payment proof or Idempotency-Key is already in flight", retryAfter),
    ...(hasBody
      ? {
          413: problem("Body larger than the limit"),
          415: problem("The body is not application/json"),
        }
      : {}),
    422: problem("Idempotency-Key reused with a different request or proof"),
    429: problem("Rate limit exceeded (RateLimit headers)", rateLimitHeaders),
    500: problem("Server fault (no internal detail is sent)"),
    502: problem(
      "The facilitator answered with an error or malformed data; nothing was delivered or charged twice",
      retryAfter,
    ),
    503: problem(
      "Facilitator unavailable, overloaded server, or (benchmark) provisional daily cap reached",
      retryAfter,
    ),
  };
}
