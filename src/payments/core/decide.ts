import type { FastifyBaseLogger } from "fastify";
import { authorizationMismatch, type HEADER_V1, type HEADER_V2, requirementsFor } from "../terms/matching.js";
import { type DecodeResult, paymentIdOf, requestFingerprint } from "../terms/proof.js";
import { admitPayment, type PaidRoute, type Payment, type PaymentCore, reportOutcome } from "./core.js";
import { validIdempotencyKey } from "./idempotency.js";
import { NOTHING_CHARGED, type Outcome, type OutcomeOf } from "./outcomes.js";

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
  /** The PaymentRequired's resource URL (without pp_ref). */
  resourceUrl: string;
  /** The sender's address: what an attacker controls, unlike the `from` a proof claims. */
  client: string;
  /** The data generation the answer will come from. */
  generation?: string | undefined;
  log: FastifyBaseLogger;
}

/** Proceed to the handler with a verified payment, or answer this outcome (its transport renders it). */
export type CallDecision = { kind: "proceed"; payment: Payment } | { kind: "answer"; outcome: Outcome };

const answer = (outcome: Outcome): CallDecision => ({ kind: "answer", outcome });
const required = (error: string, v1Error?: string): OutcomeOf<"payment_required"> =>
  v1Error === undefined ? { kind: "payment_required", error } : { kind: "payment_required", error, v1Error };
const invalid = (code: OutcomeOf<"invalid_request">["code"], detail: string): CallDecision =>
  answer({ kind: "invalid_request", code, detail });

/**
 * Everything decided before the handler runs: the offered proof, its match against the route's terms, the pre-checks
 * of the authorization, the idempotency key and payment identifier, then the core's admission.
 */
export async function decideCall(core: PaymentCore, route: PaidRoute, call: PaidCall): Promise<CallDecision> {
  const { offer } = call;
  const terms = core.terms;
  // HEAD has no body to deliver: it shows the price and never verifies or settles a proof.
  if (call.method === "HEAD")
    return answer(required("payment required: HEAD never pays; send the proof with GET"));
  if (offer.kind === "both")
    return invalid("invalid-payment-header", "Send PAYMENT-SIGNATURE or X-PAYMENT, not both.");
  if (offer.kind === "v1_not_accepted")
    return answer(
      required(
        "x402 v1 proofs (X-PAYMENT) are not accepted on this route; pay with PAYMENT-SIGNATURE (x402 v2)",
      ),
    );
  if (offer.kind === "none")
    return answer(
      required("payment required: send an x402 proof in PAYMENT-SIGNATURE", "X-PAYMENT header is required"),
    );

  // Read after the answers without a proof: a PaymentRequired needs no time, and a Date is not free.
  const now = core.clock();
  const decoded = offer.decoded;
  if (!decoded.ok) {
    reportOutcome(core, { route }, "refused");
    return invalid("invalid-payment-header", decoded.detail);
  }
  const proof = decoded.proof;
  const matched = requirementsFor(proof, offer, route, terms, call.resourceUrl);
  if (!matched.ok) {
    reportOutcome(core, { route, proof }, "refused");
    return answer(required(matched.error));
  }
  const wrong = authorizationMismatch(
    proof.exact,
    { payTo: terms.payTo, amount: route.amount },
    Math.floor(now.getTime() / 1000),
  );
  if (wrong) {
    reportOutcome(core, { route, proof }, "refused");
    return answer(required(wrong));
  }
  const { idempotencyKey } = call;
  if (idempotencyKey !== undefined && !validIdempotencyKey(idempotencyKey))
    return invalid("invalid-idempotency-key", "Idempotency-Key must be 1–255 visible ASCII characters.");
  const paymentId = paymentIdOf(proof);
  if (!paymentId.ok) return invalid("invalid-payment-identifier", paymentId.detail);

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
    // The ledger failed before anything was settled (a full disk): retryable, never an internal error.
    call.log.error({ err }, "payment admission failed");
    return answer({
      kind: "fault",
      reason: "ledger_unavailable",
      retryAfterSeconds: 5,
      consequence: NOTHING_CHARGED,
      message: String(err),
    });
  }
  if (admission.kind === "proceed") return admission;
  logFault(call.log, admission);
  return answer(admission);
}

/** A fault's own words, for the operator only. */
export function logFault(log: FastifyBaseLogger, o: Outcome): void {
  if (o.kind === "fault") log.warn({ reason: o.reason, detail: o.message }, "facilitator fault");
}
