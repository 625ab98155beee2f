/**
 * Every problem `type` the service sends, with what it means and what a client should do: the pages behind the
 * `/problems/<slug>` URIs in problem+json answers. A test checks that each slug the code can emit is listed.
 */
export interface ProblemType {
  status: number;
  title: string;
  meaning: string;
  action: string;
  charged: string;
}

const NOT_CHARGED = "Nothing was charged.";

export const PROBLEM_TYPES: Record<string, ProblemType> = {
  "invalid-request": {
    status: 400,
    title: "Invalid request",
    meaning:
      "A query parameter, body field or header breaks the declared schema. `errors[]` names each field by JSON pointer.",
    action:
      "Fix the fields listed in `errors` (see /openapi.json for bounds and defaults) and send the request again.",
    charged: `${NOT_CHARGED} Validation runs before any payment request.`,
  },
  "invalid-payment-header": {
    status: 400,
    title: "Invalid payment header",
    meaning:
      "PAYMENT-SIGNATURE or X-PAYMENT is not base64 JSON of an x402 payment payload, or both were sent.",
    action: "Send exactly one proof header, built by an x402 client from the 402's requirements.",
    charged: NOT_CHARGED,
  },
  "not-found": {
    status: 404,
    title: "No such route",
    meaning: "No route matches this method and path.",
    action: "See /openapi.json or /llms.txt for the routes.",
    charged: NOT_CHARGED,
  },
  "unknown-token": {
    status: 404,
    title: "Unknown token",
    meaning: "No unlock schedule is known for this token symbol.",
    action: "Use a token listed by GET /v1/unlocks/upcoming.",
    charged: `${NOT_CHARGED} Existence is checked before any payment request.`,
  },
  "unknown-unlock-event": {
    status: 404,
    title: "Unknown unlock event",
    meaning: "The token exists but has no unlock event with this id.",
    action: "Take `unlock_event_id` from GET /v1/unlocks/upcoming.",
    charged: `${NOT_CHARGED} Existence is checked before any payment request.`,
  },
  "request-in-progress": {
    status: 409,
    title: "Request in progress",
    meaning: "A request with this Idempotency-Key is still running.",
    action:
      "Wait for Retry-After seconds and send the same request again: it then replays the stored answer.",
    charged: "The first request is charged once, if it succeeds.",
  },
  "payment-in-progress": {
    status: 409,
    title: "Payment proof in use",
    meaning: "Another request is using this payment proof right now. One proof buys one response.",
    action: "Wait for Retry-After seconds; to buy a second response, sign a new proof.",
    charged: "The proof is charged at most once.",
  },
  "settlement-unconfirmed": {
    status: 409,
    title: "Settlement unconfirmed",
    meaning: "An earlier settlement of this proof has no confirmed outcome and the proof no longer verifies.",
    action:
      "Do not pay again. Retry later with the same proof and your Idempotency-Key or payment-identifier id (or the Idempotency-Key this answer carries), or check the authorization on chain.",
    charged: "Possibly charged once by the earlier attempt; never twice.",
  },
  "payment-identifier-reused": {
    status: 409,
    title: "payment-identifier id reused",
    meaning: "This payment-identifier id was first used with a different request or payment.",
    action: "Use a new id for a new payment; retry a payment with the id it was sent with.",
    charged: "Nothing was charged for this request.",
  },
  "invalid-payment-identifier": {
    status: 400,
    title: "Invalid payment-identifier",
    meaning: 'extensions["payment-identifier"].info.id is not 16–128 characters of A–Z, a–z, 0–9, _ and -.',
    action: "Send a valid id (generatePaymentId() of @x402/extensions), or none.",
    charged: NOT_CHARGED,
  },
  "ledger-unavailable": {
    status: 503,
    title: "Payment ledger unavailable",
    meaning: "The payment ledger could not record this payment (for example, its disk is full).",
    action:
      "Retry after Retry-After seconds with the same proof and your Idempotency-Key or payment-identifier id (or the Idempotency-Key this answer carries).",
    charged: "Never twice: a payment that settled is delivered on the retry.",
  },
  "invalid-host": {
    status: 400,
    title: "Invalid Host",
    meaning: "The Host header does not make a valid URL, and the payment's resource URL is built from it.",
    action: "Send a valid Host header.",
    charged: NOT_CHARGED,
  },
  "idempotency-key-reused": {
    status: 422,
    title: "Idempotency-Key reused",
    meaning: "This Idempotency-Key was first used with a different request or payment proof.",
    action: "Use a new key for a new request.",
    charged: NOT_CHARGED,
  },
  "ctp-invalid-media-type": {
    status: 415,
    title: "Unsupported media type",
    meaning: "The body is not `application/json`.",
    action: "Send JSON with `Content-Type: application/json`.",
    charged: NOT_CHARGED,
  },
  "ctp-body-too-large": {
    status: 413,
    title: "Body too large",
    meaning: "The body is larger than the server accepts (BODY_LIMIT_BYTES).",
    action: "Send a smaller body; no route needs more than a few hundred bytes.",
    charged: NOT_CHARGED,
  },
  "ctp-empty-json-body": {
    status: 400,
    title: "Empty JSON body",
    meaning: "The request says `application/json` but has no body.",
    action: "Send the JSON body the route declares.",
    charged: NOT_CHARGED,
  },
  "ctp-invalid-json-body": {
    status: 400,
    title: "Malformed JSON",
    meaning: "The body is not valid JSON.",
    action: "Send a valid JSON document.",
    charged: NOT_CHARGED,
  },
  "ctp-invalid-content-length": {
    status: 400,
    title: "Invalid Content-Length",
    meaning: "The Content-Length header does not match the body.",
    action: "Let your HTTP client compute Content-Length.",
    charged: NOT_CHARGED,
  },
  "client-error": {
    status: 400,
    title: "Client error",
    meaning: "The request could not be processed as sent.",
    action: "Check the request against /openapi.json.",
    charged: NOT_CHARGED,
  },
  "rate-limited": {
    status: 429,
    title: "Rate limited",
    meaning:
      "Too many requests from this client in the current window (RateLimit-* headers say how many remain).",
    action: "Wait for Retry-After seconds.",
    charged: NOT_CHARGED,
  },
  "concurrency-limited": {
    status: 429,
    title: "Too many requests at once",
    meaning:
      "This client already has as many requests being answered as one client may hold at once (CLIENT_MAX_IN_FLIGHT).",
    action: "Wait for one of your requests to end, or Retry-After seconds, then retry.",
    charged: NOT_CHARGED,
  },
  "provisional-cap-reached": {
    status: 503,
    title: "Benchmark daily cap reached",
    meaning:
      "The benchmark route is in its provisional phase, with a daily cap of paid calls, and the cap is reached.",
    action: "Retry after Retry-After seconds (00:00 UTC).",
    charged: `${NOT_CHARGED} The cap is checked before any payment request.`,
  },
  overloaded: {
    status: 503,
    title: "Overloaded",
    meaning: "The server is shedding load.",
    action: "Retry after Retry-After seconds.",
    charged: NOT_CHARGED,
  },
  "facilitator-timeout": {
    status: 503,
    title: "Payment facilitator timed out",
    meaning: "The x402 facilitator did not answer in time.",
    action: "Retry later with the same proof; it is never billed twice.",
    charged: "Not charged, or (if the settlement went through) delivered on the retry.",
  },
  "facilitator-unreachable": {
    status: 503,
    title: "Payment facilitator unreachable",
    meaning: "The x402 facilitator cannot be reached.",
    action: "Retry later with the same proof.",
    charged: NOT_CHARGED,
  },
  "facilitator-circuit-open": {
    status: 503,
    title: "Payment facilitator paused",
    meaning: "The facilitator failed repeatedly; calls are paused for a short cool-down.",
    action: "Retry after Retry-After seconds.",
    charged: NOT_CHARGED,
  },
  "payer-limited": {
    status: 429,
    title: "Too many payment checks for this payer",
    meaning:
      "Several verifications of this payer's proofs are running, or its recent ones timed out or failed (for example a smart-wallet signature too slow to check); its checks are paused briefly.",
    action: "Retry after Retry-After seconds, with the same proof.",
    charged: NOT_CHARGED,
  },
  unauthorized: {
    status: 401,
    title: "Credentials required",
    meaning: "GET /metrics on the public port needs the operator's bearer token.",
    action: "Scrape the metrics listener instead, or send Authorization: Bearer <METRICS_TOKEN>.",
    charged: NOT_CHARGED,
  },
  "facilitator-bad-response": {
    status: 502,
    title: "Malformed facilitator answer",
    meaning: "The x402 facilitator answered with malformed data.",
    action: "Retry later with the same proof; it is never billed twice.",
    charged: "Never charged twice.",
  },
  "facilitator-error": {
    status: 502,
    title: "Facilitator error",
    meaning: "The x402 facilitator answered with an error.",
    action: "Retry later with the same proof.",
    charged: "Never charged twice.",
  },
  "method-not-allowed": {
    status: 405,
    title: "Method not allowed",
    meaning:
      "/mcp takes MCP requests as POST (streamable HTTP, stateless); GET streams and DELETE sessions are not offered.",
    action: "POST JSON-RPC messages to /mcp.",
    charged: NOT_CHARGED,
  },
  "payment-already-used": {
    status: 409,
    title: "Payment already used",
    meaning:
      "This authorization already paid for this request, and its response is past the retention window, so it cannot be delivered again.",
    action: "Do not retry with this proof. A new request needs a new payment.",
    charged: "Charged once, for the response delivered earlier.",
  },
  "invalid-idempotency-key": {
    status: 400,
    title: "Invalid Idempotency-Key",
    meaning: "Idempotency-Key must be 1–255 visible ASCII characters.",
    action:
      "Send a valid key (a UUID is a good choice) or none: a retry with the same proof is replayed anyway.",
    charged: NOT_CHARGED,
  },
  "facilitator-chain-unavailable": {
    status: 503,
    title: "Chain unavailable to the facilitator",
    meaning:
      "The facilitator could not read the chain to check this payment; the proof itself was not judged invalid.",
    action: "Retry later with the same proof.",
    charged: NOT_CHARGED,
  },
  "no-measurable-reactions": {
    status: 422,
    title: "No measurable market reaction",
    meaning:
      "The backtest would have no reaction to report: the event and every fallback basis lack real prices around an unlock. `detail` says why.",
    action:
      "Pick another event or token (GET /v1/unlocks/upcoming lists them); nothing was asked to be paid.",
    charged: `${NOT_CHARGED} The refusal comes before any payment request.`,
  },
  internal: {
    status: 500,
    title: "Server fault",
    meaning: "The server failed to answer; no detail is sent to clients.",
    action: "Retry later; with an Idempotency-Key a retry cannot be charged twice.",
    charged: "A failed answer is never settled.",
  },
};
