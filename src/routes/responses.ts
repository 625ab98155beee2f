import { Type } from "typebox";
import { ProblemSchema } from "../schemas/common.js";
import type { PaidRoute } from "../payments/plugin.js";

const PaymentRequiredV1Body = Type.Object(
  {
    x402Version: Type.Literal(1),
    error: Type.String({ description: "Why payment is required, or why the proof was refused" }),
    accepts: Type.Array(Type.Object({}, { additionalProperties: true })),
  },
  { additionalProperties: true, description: "x402 v1 PaymentRequired (for v1 clients that read the body)" },
);

const problem = (description: string) => ({ ...ProblemSchema, description });

export const notFoundResponse = problem("Unknown token or unlock event (checked before any payment request)");

/** Error responses every paid route documents; the 402 body differs between v1-capable routes and the benchmark. */
export function paidErrorResponses(price: PaidRoute) {
  return {
    400: problem("Invalid request or undecodable payment header (nothing is charged)"),
    402: price.acceptsV1
      ? {
          ...PaymentRequiredV1Body,
          description:
            "Payment required. Header PAYMENT-REQUIRED carries the x402 v2 PaymentRequired (base64 JSON); the body is the v1 form.",
        }
      : problem("Payment required. Header PAYMENT-REQUIRED carries the x402 v2 PaymentRequired (base64 JSON)."),
    409: problem("The same payment proof or Idempotency-Key is already in flight (Retry-After)"),
    413: problem("Body larger than the limit"),
    422: problem("Idempotency-Key reused with a different request or proof"),
    429: problem("Rate limit exceeded (RateLimit headers, Retry-After)"),
    502: problem("The facilitator answered with an error or malformed data; nothing was delivered or charged twice"),
    503: problem("Facilitator unavailable, overloaded server, or (benchmark) provisional daily cap reached; see Retry-After"),
  };
}
