import type { PaymentRequired, SettleResponse } from "@x402/core/types";
import { PROBLEM_CONTENT_TYPE, type Problem, problem } from "../http/problem.js";
import type { Admission, Completion, Refusal } from "./core.js";
import type { FacilitatorFault } from "./gateway.js";
import type { StoredResponse } from "../ledger/port.js";

/**
 * What the transport sends, decided here and only copied by the Fastify plugin: a status (absent: the handler's),
 * headers in the order they are set, and a body (absent: the handler's payload). A problem body is a `Problem` object
 * the route's serializer writes; inside onSend, where no serializer runs, it is already JSON text.
 */
export interface HttpAnswer {
  status?: number;
  headers: Array<[string, string]>;
  body?: unknown;
  /**
   * The x402 objects behind the encoded headers, for a transport that carries them as they are (MCP): the
   * PaymentRequired of a 402 and the settlement of a paid or failed settlement.
   */
  x402?: { required?: PaymentRequired; settlement?: SettleResponse };
}

/**
 * The 402 of a route for one request: the v2 PaymentRequired and, over HTTP, its PAYMENT-REQUIRED header and JSON body
 * bytes (see challenge.ts).
 */
export type Challenge = (
  error: string,
  v1Error?: string,
) => { required: PaymentRequired; header?: string; bytes?: Buffer };

const FAULT_DETAIL: Record<string, string> = {
  facilitator_timeout: "The payment facilitator did not answer in time.",
  facilitator_unreachable: "The payment facilitator is unreachable.",
  facilitator_bad_response: "The payment facilitator answered with malformed data.",
  facilitator_circuit_open: "The payment facilitator is failing; calls are paused for a short cool-down.",
  facilitator_error: "The payment facilitator answered with an error.",
  facilitator_chain_unavailable: "The payment facilitator could not reach the chain to check the payment.",
  payer_limited: "Too many payment checks of this payer are running or recently failed.",
  ledger_unavailable: "The payment ledger could not record this payment.",
};

export const problemAnswer = (p: Problem, headers: Record<string, string> = {}): HttpAnswer => ({
  status: p.status,
  headers: [...Object.entries(headers), ["content-type", PROBLEM_CONTENT_TYPE]],
  body: p,
});

/** 402 with a fresh PAYMENT-REQUIRED (v2 header) and, on v1-capable routes, the v1 JSON body. */
export function paymentRequiredAnswer(challenge: Challenge, error: string, v1Error?: string): HttpAnswer {
  const c = challenge(error, v1Error);
  return {
    status: 402,
    headers: [
      ...(c.header === undefined ? [] : [["PAYMENT-REQUIRED", c.header] as [string, string]]),
      ["Cache-Control", "no-store"],
      ["content-type", "application/json"],
    ],
    body: c.bytes,
    x402: { required: c.required },
  };
}

export const busyAnswer = (instance: string, withKey: boolean): HttpAnswer =>
  problemAnswer(
    withKey
      ? problem(409, "request-in-progress", "A request with this Idempotency-Key is still running.", instance)
      : problem(
          409,
          "payment-in-progress",
          "This payment is already being used by another request.",
          instance,
        ),
    { "Retry-After": "1" },
  );

/**
 * A payment whose settlement has no known outcome yet (a timeout, a lost answer, an earlier attempt still unknown):
 * x402 has no pending settlement, so this is a 409 with no PAYMENT-RESPONSE at all, never `success: false`; the
 * recovery resolves it from the chain and the retry with the same proof or key gets the answer.
 */
export const unconfirmedAnswer = (instance: string): HttpAnswer => ({
  status: 409,
  headers: [
    ["content-type", PROBLEM_CONTENT_TYPE],
    ["Retry-After", "5"],
    ["Cache-Control", "no-store"],
  ],
  body: problem(
    409,
    "settlement-unconfirmed",
    "The settlement of this payment is being confirmed on chain; you may already be charged. Do not pay again: retry shortly with the same proof, or with this answer's Idempotency-Key.",
    instance,
  ),
});

/** A facilitator fault. Its own words stay in the log: they may carry internals a client has no use for. */
export function faultAnswer(f: FacilitatorFault, consequence: string, instance: string): HttpAnswer {
  const detail = `${FAULT_DETAIL[f.reason] ?? "The payment facilitator failed."} ${consequence}`;
  return {
    status: f.status,
    headers: [
      ["content-type", PROBLEM_CONTENT_TYPE],
      ["Retry-After", String(f.retryAfterSeconds)],
      ["Cache-Control", "no-store"],
    ],
    body: problem(f.status, f.reason.replace(/_/g, "-"), detail, instance),
  };
}

export const refusedAnswer = (r: Refusal, instance: string): HttpAnswer =>
  problemAnswer(problem(r.status, r.slug, r.detail, instance), r.headers);

export const replayAnswer = (stored: StoredResponse): HttpAnswer => ({
  status: stored.statusCode,
  headers: [...Object.entries(stored.headers), ["Idempotent-Replayed", "true"]],
  body: stored.body,
});

/** The answer to an admission that does not let the handler run. */
export function admissionAnswer(
  a: Exclude<Admission, { kind: "proceed" }>,
  instance: string,
  challenge: Challenge,
): HttpAnswer {
  switch (a.kind) {
    case "replay":
      return replayAnswer(a.response);
    case "payment_required":
      return paymentRequiredAnswer(challenge, a.error);
    case "busy":
      return busyAnswer(instance, a.withKey);
    case "unconfirmed":
      return unconfirmedAnswer(instance);
    case "refused":
      return refusedAnswer(a.refusal, instance);
    case "fault":
      return faultAnswer(a.fault, a.consequence, instance);
  }
}

/** A problem answer whose body goes out as JSON text (onSend runs no serializer). */
const asText = (a: HttpAnswer): HttpAnswer => ({ ...a, body: JSON.stringify(a.body) });

/**
 * What goes out once the handler answered and the core completed the payment: the handler's payload with the
 * settlement header, or the problem/402 that replaces it. `issuedKey`: the retry key issued to a payment without a
 * secret; whatever this answer is, only it recovers the payment.
 */
export function completionAnswer(
  c: Completion,
  issuedKey: string | undefined,
  instance: string,
  challenge: Challenge,
): HttpAnswer {
  const headers: Array<[string, string]> = [];
  if (issuedKey !== undefined) headers.push(["Idempotency-Key", issuedKey]);
  // A failed settlement still answers PAYMENT-RESPONSE (`success: false` and the reason), as x402 clients expect.
  const settlement = "settlement" in c ? c.settlement : undefined;
  if (c.kind !== "delivered" && "header" in c && c.header) headers.push(c.header);
  const with_ = (a: HttpAnswer): HttpAnswer => ({
    ...a,
    headers: [...headers, ...a.headers],
    ...(settlement ? { x402: { ...a.x402, settlement } } : {}),
  });
  switch (c.kind) {
    case "delivered":
      return {
        headers: [...headers, c.header, ["Cache-Control", "private, no-store"]],
        x402: { settlement: c.settlement },
      };
    case "unpaid":
      return { headers };
    case "taken_over":
      return with_(
        asText({
          status: 409,
          headers: [
            ["content-type", PROBLEM_CONTENT_TYPE],
            ["Retry-After", "1"],
          ],
          body: problem(
            409,
            "payment-in-progress",
            "This payment is being settled by another request.",
            instance,
          ),
        }),
      );
    case "unconfirmed":
      return with_(asText(unconfirmedAnswer(instance)));
    case "payment_required":
      return with_(paymentRequiredAnswer(challenge, c.error));
    case "fault":
      return with_(asText(faultAnswer(c.fault, c.consequence, instance)));
  }
}
