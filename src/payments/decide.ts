import type { FastifyBaseLogger } from "fastify";
import { problem } from "../http/problem.js";
import { admitPayment, type PaidRoute, type Payment, type PaymentCore, reportOutcome } from "./core.js";
import {
  admissionAnswer,
  type Challenge,
  type HttpAnswer,
  paymentRequiredAnswer,
  problemAnswer,
} from "./http-answers.js";
import { validIdempotencyKey } from "./idempotency.js";
import { authorizationMismatch, type HEADER_V1, type HEADER_V2, requirementsFor } from "./matching.js";
import { type DecodeResult, paymentIdOf, requestFingerprint } from "./proof.js";

/**
 * The proof a call offers, as its transport found it: none, one (decoded, or why it cannot be), or an HTTP request's
 * two headers at once / a v1 header on a v2-only route.
 */
export type ProofOffer =
  | { kind: "none" }
  | { kind: "both" }
  | { kind: "v1_not_accepted" }
  | { kind: "pay"; name: typeof HEADER_V2 | typeof HEADER_V1; decoded: DecodeResult };

/** What the payment decision needs of a paid call, nothing of its transport (HTTP route or MCP tool). */
export interface PaidCall {
  method: string;
  offer: ProofOffer;
  /** The caller's retry secret (Idempotency-Key), unchecked. */
  idempotencyKey: string | undefined;
  /** Validated query and body: what the call asks for (its fingerprint). */
  query: unknown;
  body: unknown;
  /** The 402's resource URL (without pp_ref). */
  resourceUrl: string;
  /** The problem `instance`: the operation's path. */
  instance: string;
  /** The sender's address: what an attacker controls, unlike the `from` a proof claims. */
  client: string;
  /** The data generation the answer will come from. */
  generation?: string | undefined;
  log: FastifyBaseLogger;
}

export type CallDecision = { kind: "proceed"; payment: Payment } | { kind: "answer"; answer: HttpAnswer };

const answer = (a: HttpAnswer): CallDecision => ({ kind: "answer", answer: a });

/**
 * Everything decided before the handler runs: the offered proof, its match against the route's terms, the pre-checks
 * of the authorization, the idempotency key and payment identifier, then the core's admission.
 */
export async function decideCall(
  core: PaymentCore,
  route: PaidRoute,
  call: PaidCall,
  challenge: Challenge,
): Promise<CallDecision> {
  const { instance, offer } = call;
  const terms = core.terms;
  const now = core.clock();
  // HEAD has no body to deliver: it shows the price and never verifies or settles a proof.
  if (call.method === "HEAD")
    return answer(
      paymentRequiredAnswer(challenge, "payment required: HEAD never pays; send the proof with GET"),
    );
  if (offer.kind === "both")
    return answer(
      problemAnswer(
        problem(400, "invalid-payment-header", "Send PAYMENT-SIGNATURE or X-PAYMENT, not both.", instance),
      ),
    );
  if (offer.kind === "v1_not_accepted")
    return answer(
      paymentRequiredAnswer(
        challenge,
        "x402 v1 proofs (X-PAYMENT) are not accepted on this route; pay with PAYMENT-SIGNATURE (x402 v2)",
      ),
    );
  if (offer.kind === "none")
    return answer(
      paymentRequiredAnswer(
        challenge,
        "payment required: send an x402 proof in PAYMENT-SIGNATURE",
        "X-PAYMENT header is required",
      ),
    );

  const decoded = offer.decoded;
  if (!decoded.ok) {
    reportOutcome(core, { route }, "refused");
    return answer(problemAnswer(problem(400, "invalid-payment-header", decoded.detail, instance)));
  }
  const proof = decoded.proof;
  const matched = requirementsFor(proof, offer, route, terms, call.resourceUrl);
  if (!matched.ok) {
    reportOutcome(core, { route, proof }, "refused");
    return answer(paymentRequiredAnswer(challenge, matched.error));
  }
  const wrong = authorizationMismatch(
    proof.exact,
    { payTo: terms.payTo, amount: route.amount },
    Math.floor(now.getTime() / 1000),
  );
  if (wrong) {
    reportOutcome(core, { route, proof }, "refused");
    return answer(paymentRequiredAnswer(challenge, wrong));
  }
  const { idempotencyKey } = call;
  if (idempotencyKey !== undefined && !validIdempotencyKey(idempotencyKey))
    return answer(
      problemAnswer(
        problem(
          400,
          "invalid-idempotency-key",
          "Idempotency-Key must be 1–255 visible ASCII characters.",
          instance,
        ),
      ),
    );
  const paymentId = paymentIdOf(proof);
  if (!paymentId.ok)
    return answer(problemAnswer(problem(400, "invalid-payment-identifier", paymentId.detail, instance)));

  let admission: Awaited<ReturnType<typeof admitPayment>>;
  try {
    admission = await admitPayment(core, {
      route,
      proof,
      requirements: matched.requirements,
      requestFingerprint: requestFingerprint(call.method, route.route, call.query, call.body),
      idempotencyKey,
      paymentId: paymentId.id,
      ppRef: (call.query as { pp_ref?: string } | undefined)?.pp_ref,
      client: call.client,
      generation: call.generation,
      now,
      log: call.log,
    });
  } catch (err) {
    // The ledger failed before anything was settled (a full disk): a retryable 503, never a 500.
    call.log.error({ err }, "payment admission failed");
    return answer(
      problemAnswer(
        problem(
          503,
          "ledger-unavailable",
          "The payment ledger is unavailable. Nothing was charged; retry later.",
          instance,
        ),
        { "Retry-After": "5", "Cache-Control": "no-store" },
      ),
    );
  }
  if (admission.kind === "proceed") return admission;
  if (admission.kind === "fault") logFault(call.log, admission.fault);
  return answer(admissionAnswer(admission, instance, challenge));
}

/** The facilitator's own words, for the operator only. */
export function logFault(
  log: FastifyBaseLogger,
  f: { reason: string; status: number; message: string },
): void {
  log.warn({ reason: f.reason, status: f.status, detail: f.message }, "facilitator fault");
}
