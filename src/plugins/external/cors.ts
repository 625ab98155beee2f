import cors, { type FastifyCorsOptions } from "@fastify/cors";

/**
 * Any origin may call (no cookies or credentials are used); a request without Origin is not a browser's cross-origin
 * request, so it gets no Access-Control-* headers (about 200 bytes on every agent's answer).
 */
export const autoConfig: FastifyCorsOptions = {
  origin: (origin, callback) => callback(null, origin !== undefined),
  methods: ["GET", "POST", "OPTIONS"],
  allowedHeaders: [
    "Content-Type",
    "PAYMENT-SIGNATURE",
    "X-PAYMENT",
    "Idempotency-Key",
    "Access-Control-Expose-Headers",
    "Mcp-Protocol-Version", // browser MCP clients (/mcp)
    "X-Request-Id",
  ],
  exposedHeaders: [
    "PAYMENT-REQUIRED",
    "PAYMENT-RESPONSE",
    "X-PAYMENT-RESPONSE",
    "Retry-After",
    "Idempotent-Replayed",
    "Idempotency-Key", // the retry key issued to a payment sent without a secret
    "RateLimit-Limit",
    "RateLimit-Remaining",
    "RateLimit-Reset",
    "X-Request-Id",
  ],
  maxAge: 600,
};

export default cors;
