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
import {
  authorizationMismatch,
  chooseProofHeader,
  HEADER_V1,
  HEADER_V2,
  requirementsFor,
} from "./matching.js";
import { decodeProof, paymentIdOf, requestFingerprint } from "./proof.js";

/** What the payment decision needs of an HTTP request, nothing of the framework. */
export interface PaidRequest {
  method: string;
  header(name: string): string | undefined;
  query: unknown;
  body: unknown;
  /** The 402's resource URL (without pp_ref). */
  resourceUrl: string;
  /** The problem `instance`: the request path. */
  instance: string;
  /** The sender's address: what an attacker controls, unlike the `from` a proof claims. */
  client: string;
  log: FastifyBaseLogger;
}

export type RequestDecision = { kind: "proceed"; payment: Payment } | { kind: "answer"; answer: HttpAnswer };

const answer = (a: HttpAnswer): RequestDecision => ({ kind: "answer", answer: a });

/**
 * Everything decided before the handler runs: which proof header, its decoding, its match against the route's terms,
 * the pre-checks of the authorization, the idempotency key and payment identifier, then the core's admission.
 */
export async function decideRequest(
  core: PaymentCore,
  route: PaidRoute,
  req: PaidRequest,
  challenge: Challenge,
): Promise<RequestDecision> {
  const { instance, terms } = { instance: req.instance, terms: core.terms };
  const now = core.clock();
  // HEAD has no body to deliver: it shows the price and never verifies or settles a proof.
  if (req.method === "HEAD")
    return answer(
      paymentRequiredAnswer(challenge, "payment required: HEAD never pays; send the proof with GET"),
    );
  const choice = chooseProofHeader(req.header(HEADER_V2), req.header(HEADER_V1), route.acceptsV1);
  if (choice.kind === "both")
    return answer(
      problemAnswer(
        problem(400, "invalid-payment-header", "Send PAYMENT-SIGNATURE or X-PAYMENT, not both.", instance),
      ),
    );
  if (choice.kind === "v1_not_accepted")
    return answer(
      paymentRequiredAnswer(
        challenge,
        "x402 v1 proofs (X-PAYMENT) are not accepted on this route; pay with PAYMENT-SIGNATURE (x402 v2)",
      ),
    );
  if (choice.kind === "none")
    return answer(
      paymentRequiredAnswer(
        challenge,
        "payment required: send an x402 proof in PAYMENT-SIGNATURE",
        "X-PAYMENT header is required",
      ),
    );

  const decoded = decodeProof(choice.name, choice.value);
  if (!decoded.ok) {
    reportOutcome(core, { route }, "refused");
    return answer(problemAnswer(problem(400, "invalid-payment-header", decoded.detail, instance)));
  }
  const proof = decoded.proof;
  const matched = requirementsFor(proof, choice, route, terms, req.resourceUrl);
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
  const idempotencyKey = req.header("idempotency-key");
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
      requestFingerprint: requestFingerprint(req.method, route.route, req.query, req.body),
      idempotencyKey,
      paymentId: paymentId.id,
      ppRef: (req.query as { pp_ref?: string } | undefined)?.pp_ref,
      client: req.client,
      now,
      log: req.log,
    });
  } catch (err) {
    // The ledger failed before anything was settled (a full disk): a retryable 503, never a 500.
    req.log.error({ err }, "payment admission failed");
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
  if (admission.kind === "fault") logFault(req.log, admission.fault);
  return answer(admissionAnswer(admission, instance, challenge));
}

/** The facilitator's own words, for the operator only. */
export function logFault(
  log: FastifyBaseLogger,
  f: { reason: string; status: number; message: string },
): void {
  log.warn({ reason: f.reason, status: f.status, detail: f.message }, "facilitator fault");
}

/** A Host header: a name or IPv4 address, or a bracketed IPv6 address, and an optional port (RFC 9110 `uri-host`). */
const HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

/** Whether a Host header makes the 402's resource URL (without PUBLIC_BASE_URL the resource comes from it). */
export function validHost(host: string, resourceUrl: string): boolean {
  if (!HOST.test(host)) return false;
  try {
    new URL(resourceUrl);
    return true;
  } catch {
    return false;
  }
}

// A cached body is one Buffer sent to many buyers: decoded once, and the same string each time lets the ledger see
// it is a body it already keeps.
const decodedBodies = new WeakMap<Buffer, string>();
/** The handler's payload as the text the ledger keeps for a retry. */
export function bodyText(payload: unknown): string {
  if (typeof payload === "string") return payload;
  if (!Buffer.isBuffer(payload)) return "";
  let text = decodedBodies.get(payload);
  if (text === undefined) {
    text = payload.toString("utf8");
    decodedBodies.set(payload, text);
  }
  return text;
}

/** A request target without its pp_ref parameters (the rest of the query re-serialised only when one was there). */
export function withoutPpRef(target: string): string {
  const q = target.indexOf("?");
  if (q < 0 || !target.includes("pp_ref", q)) return target;
  const params = new URLSearchParams(target.slice(q + 1));
  if (!params.has("pp_ref")) return target;
  params.delete("pp_ref");
  const rest = params.toString();
  return `${target.slice(0, q)}${rest ? `?${rest}` : ""}`;
}
