import { encodePaymentRequiredHeader, encodePaymentResponseHeader } from "@x402/core/http";
import type { PaymentPayload, PaymentRequirements, SettleResponse } from "@x402/core/types";
import type { FastifyPluginAsync, FastifyReply, FastifyRequest, preHandlerAsyncHookHandler } from "fastify";
import fp from "fastify-plugin";
import { PROBLEM_CONTENT_TYPE, problem, problemInstance, sendProblem } from "../http/problem.js";
import type { Ledger, StoredResponse } from "../store/ledger.js";
import { noopObserver, type PaymentObserver, type PaymentOutcome } from "./events.js";
import { FacilitatorFault, type FacilitatorGateway, SETTLEMENT_PENDING } from "./facilitator.js";
import { decideIdempotency } from "./idempotency.js";
import { chooseProofHeader, HEADER_V1, HEADER_V2, requirementsFor } from "./matching.js";
import { decodeProof, type Proof, proofFingerprint, requestFingerprint, sha256 } from "./proof.js";
import type { Reconciler } from "./reconcile.js";
import {
  NETWORK_V1,
  type PaymentTerms,
  paymentRequiredV1,
  paymentRequiredV2,
  type RoutePrice,
} from "./requirements.js";

export interface PaymentsOptions {
  gateway: FacilitatorGateway;
  ledger: Ledger;
  terms: PaymentTerms;
  publicBaseUrl: string | undefined;
  idempotencyTtlMs: number;
  /** How long a proof stays locked if its request never finishes (crash, hung client). */
  lockTtlMs?: number;
  /** Reads the chain to recover settlements whose outcome was lost; without it they are answered 409. */
  reconciler?: Reconciler | undefined;
  /** Told every payment outcome (metrics); defaults to nobody. */
  observer?: PaymentObserver | undefined;
}

export interface PaidRoute extends RoutePrice {
  /** Stable route id for receipts, e.g. "POST /v1/unlock-risk". */
  route: string;
}

interface PaymentContext {
  route: PaidRoute;
  proof: Proof;
  requirements: PaymentRequirements;
  proofFingerprint: string;
  requestFingerprint: string;
  idempotencyKey: string | undefined;
  ppRef: string | undefined;
  settled: boolean;
  /** A settlement found on chain for this proof (an earlier attempt whose outcome was lost): deliver, do not settle. */
  recovered?: { receiptId: string; result: SettleResponse };
}

declare module "fastify" {
  interface FastifyRequest {
    payment: PaymentContext | null;
  }
  interface FastifyInstance {
    payments: { guard(route: PaidRoute): preHandlerAsyncHookHandler };
  }
}

const FAULT_DETAIL: Record<string, string> = {
  facilitator_timeout: "The payment facilitator did not answer in time.",
  facilitator_unreachable: "The payment facilitator is unreachable.",
  facilitator_bad_response: "The payment facilitator answered with malformed data.",
  facilitator_circuit_open: "The payment facilitator is failing; calls are paused for a short cool-down.",
  facilitator_error: "The payment facilitator answered with an error.",
};

function header(request: FastifyRequest, name: string): string | undefined {
  const v = request.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

const paymentsPlugin: FastifyPluginAsync<PaymentsOptions> = async (app, opts) => {
  const { gateway, ledger, terms } = opts;
  const lockTtlMs = opts.lockTtlMs ?? 5 * 60_000;
  const observer = opts.observer ?? noopObserver;
  const report = (ctx: Pick<PaymentContext, "route" | "proof">, outcome: PaymentOutcome) =>
    observer.paymentOutcome({
      route: ctx.route.route,
      x402Version: ctx.proof.version,
      outcome,
      amount: ctx.route.amount,
    });

  const resourceUrl = (request: FastifyRequest) =>
    `${opts.publicBaseUrl ?? `${request.protocol}://${request.host}`}${request.url}`;

  /** 402 with a fresh PAYMENT-REQUIRED (v2 header) and, on v1-capable routes, the v1 JSON body. */
  /** Sets the 402 status and headers; returns the body (v1 PaymentRequired on v1-capable routes, else a problem). */
  function prepare402(
    request: FastifyRequest,
    reply: FastifyReply,
    route: PaidRoute,
    error: string,
    slug: string,
  ): object {
    const url = resourceUrl(request);
    reply
      .code(402)
      .header("PAYMENT-REQUIRED", encodePaymentRequiredHeader(paymentRequiredV2(route, terms, url, error)))
      .header("Cache-Control", "no-store");
    if (route.acceptsV1) {
      reply.type("application/json");
      return paymentRequiredV1(route, terms, url, error);
    }
    reply.type(PROBLEM_CONTENT_TYPE);
    return problem(402, slug, error, problemInstance(request), { error });
  }

  /** 402 with a fresh PAYMENT-REQUIRED (v2 header) and, on v1-capable routes, the v1 JSON body. */
  const paymentRequired = (request: FastifyRequest, reply: FastifyReply, route: PaidRoute, error: string) =>
    reply.send(prepare402(request, reply, route, error, "payment-required"));

  const inProgress = (reply: FastifyReply, instance: string) =>
    sendProblem(
      reply,
      problem(409, "request-in-progress", "A request with this Idempotency-Key is still running.", instance),
      { "Retry-After": "1" },
    );

  /**
   * Sets a facilitator fault's status and headers on the reply and returns its problem body. The facilitator's own
   * words stay in the log: they may carry internals a client has no use for.
   */
  function prepareFault(
    request: FastifyRequest,
    reply: FastifyReply,
    f: FacilitatorFault,
    consequence: string,
  ) {
    request.log.warn({ reason: f.reason, status: f.status, detail: f.message }, "facilitator fault");
    reply
      .code(f.status)
      .type(PROBLEM_CONTENT_TYPE)
      .header("Retry-After", String(f.retryAfterSeconds))
      .header("Cache-Control", "no-store");
    const detail = `${FAULT_DETAIL[f.reason] ?? "The payment facilitator failed."} ${consequence}`;
    return problem(f.status, f.reason.replace(/_/g, "-"), detail, problemInstance(request));
  }

  const fault = (request: FastifyRequest, reply: FastifyReply, f: FacilitatorFault) =>
    reply.send(prepareFault(request, reply, f, "Nothing was charged; retry later."));

  function release(ctx: Pick<PaymentContext, "proofFingerprint" | "idempotencyKey">) {
    ledger.releaseProofLock(ctx.proofFingerprint);
    if (ctx.idempotencyKey) ledger.dropIdempotency(ctx.idempotencyKey);
  }

  async function recover(request: FastifyRequest, ctx: PaymentContext): Promise<SettleResponse | undefined> {
    if (!opts.reconciler) return undefined;
    try {
      const found = await opts.reconciler.findSettlement(ctx.proof.payload.payload, {
        asset: ctx.requirements.asset,
        payTo: terms.payTo,
        amount: ctx.route.amount,
      });
      if (found)
        request.log.info({ transaction: found.transaction }, "recovered a settlement from the chain");
      return (
        found && {
          success: true,
          transaction: found.transaction,
          payer: found.payer,
          network: ctx.requirements.network,
        }
      );
    } catch (error) {
      request.log.warn({ err: error }, "chain reconciliation failed");
      return undefined;
    }
  }

  function guard(route: PaidRoute): preHandlerAsyncHookHandler {
    return async function requirePayment(request, reply) {
      const instance = problemInstance(request);
      const choice = chooseProofHeader(
        header(request, HEADER_V2),
        header(request, HEADER_V1),
        route.acceptsV1,
      );
      if (choice.kind === "both")
        return sendProblem(
          reply,
          problem(400, "invalid-payment-header", "Send PAYMENT-SIGNATURE or X-PAYMENT, not both.", instance),
        );
      if (choice.kind === "v1_not_accepted")
        return paymentRequired(
          request,
          reply,
          route,
          "x402 v1 proofs (X-PAYMENT) are not accepted on this route; pay with PAYMENT-SIGNATURE (x402 v2)",
        );
      if (choice.kind === "none")
        return paymentRequired(
          request,
          reply,
          route,
          "payment required: send an x402 proof in PAYMENT-SIGNATURE",
        );

      const decoded = decodeProof(choice.name, choice.value);
      if (!decoded.ok)
        return sendProblem(reply, problem(400, "invalid-payment-header", decoded.detail, instance));
      const proof = decoded.proof;
      const matched = requirementsFor(proof, choice, route, terms, resourceUrl(request));
      if (!matched.ok) return paymentRequired(request, reply, route, matched.error);
      const requirements = matched.requirements;

      const ctx: PaymentContext = {
        route,
        proof,
        requirements,
        proofFingerprint: proofFingerprint(proof),
        requestFingerprint: requestFingerprint(request.method, route.route, request.query, request.body),
        idempotencyKey: header(request, "idempotency-key"),
        ppRef: (request.query as { pp_ref?: string } | undefined)?.pp_ref,
        settled: false,
      };

      if (ctx.idempotencyKey) {
        const decision = decideIdempotency(
          ledger.getIdempotency(ctx.idempotencyKey),
          ctx.requestFingerprint,
          ctx.proofFingerprint,
        );
        if (decision.kind === "mismatch") {
          report(ctx, "refused");
          return sendProblem(reply, problem(422, "idempotency-key-reused", decision.detail, instance));
        }
        if (decision.kind === "in_flight") {
          report(ctx, "refused");
          return inProgress(reply, instance);
        }
        if (decision.kind === "replay") {
          report(ctx, "replayed");
          return replay(reply, decision.response);
        }
      }

      if (!ledger.acquireProofLock(ctx.proofFingerprint, lockTtlMs)) {
        report(ctx, "refused");
        return sendProblem(
          reply,
          problem(
            409,
            "payment-in-progress",
            "This payment proof is already being used by another request.",
            instance,
          ),
          { "Retry-After": "1" },
        );
      }
      if (
        ctx.idempotencyKey &&
        !ledger.startIdempotency(
          ctx.idempotencyKey,
          ctx.requestFingerprint,
          ctx.proofFingerprint,
          opts.idempotencyTtlMs,
        )
      ) {
        ledger.releaseProofLock(ctx.proofFingerprint);
        report(ctx, "refused");
        return inProgress(reply, instance);
      }

      const used = ledger.receiptForProof(ctx.proofFingerprint);
      if (used && (used.status === "settled" || used.status === "pending")) {
        release(ctx);
        report(ctx, "refused");
        return paymentRequired(
          request,
          reply,
          route,
          "payment_already_used: this proof has already paid for a response",
        );
      }

      try {
        const verdict = await gateway.verify(proof.payload as PaymentPayload, requirements);
        if (!verdict.isValid && used && (used.status === "unknown" || used.status === "settling")) {
          // An earlier settlement of this very proof had no confirmed outcome, and the authorisation no longer
          // verifies: most likely that settlement spent it. Look on chain; a fresh 402 would make a paying client
          // pay again.
          const recovered =
            used.requestFingerprint === ctx.requestFingerprint ? await recover(request, ctx) : undefined;
          if (recovered) {
            ledger.finishReceipt(used.id, {
              status: "settled",
              payer: recovered.payer,
              transaction: recovered.transaction,
            });
            ctx.recovered = { receiptId: used.id, result: recovered };
            request.payment = ctx;
            return;
          }
          release(ctx);
          report(ctx, "refused");
          return sendProblem(
            reply,
            problem(
              409,
              "settlement-unconfirmed",
              "An earlier settlement of this payment proof has not been confirmed and the proof no longer verifies. Do not pay again; check the authorization on chain or retry later.",
              instance,
              { error: verdict.invalidReason ?? "invalid_payment" },
            ),
            { "Retry-After": "30", "Cache-Control": "no-store" },
          );
        }
        if (!verdict.isValid) {
          release(ctx);
          report(ctx, "invalid");
          const reason = verdict.invalidReason ?? "invalid_payment";
          return paymentRequired(
            request,
            reply,
            route,
            verdict.invalidMessage ? `${reason}: ${verdict.invalidMessage}` : reason,
          );
        }
      } catch (error) {
        release(ctx);
        report(ctx, "facilitator_error");
        if (error instanceof FacilitatorFault) return fault(request, reply, error);
        throw error;
      }
      request.payment = ctx;
    };
  }

  function replay(reply: FastifyReply, stored: StoredResponse) {
    reply.code(stored.statusCode).headers(stored.headers).header("Idempotent-Replayed", "true");
    return reply.send(stored.body);
  }

  function settlementHeader(ctx: PaymentContext, result: SettleResponse): [string, string] {
    if (ctx.proof.version === 2) return ["PAYMENT-RESPONSE", encodePaymentResponseHeader(result)];
    const v1 = { ...result, network: NETWORK_V1 };
    return ["X-PAYMENT-RESPONSE", Buffer.from(JSON.stringify(v1)).toString("base64")];
  }

  app.decorateRequest("payment", null);
  app.decorate("payments", { guard });

  // Settle only what the handler answered successfully; withhold the body unless the settlement went through.
  app.addHook("onSend", async (request, reply, payload) => {
    const ctx = request.payment;
    if (!ctx || ctx.settled) return payload;
    ctx.settled = true;
    if (reply.statusCode >= 400) {
      release(ctx);
      return payload;
    }
    const body =
      typeof payload === "string" ? payload : Buffer.isBuffer(payload) ? payload.toString("utf8") : "";
    const receiptId =
      ctx.recovered?.receiptId ??
      ledger.beginReceipt({
        route: ctx.route.route,
        requestFingerprint: ctx.requestFingerprint,
        proofFingerprint: ctx.proofFingerprint,
        x402Version: ctx.proof.version,
        amount: ctx.route.amount,
        network: ctx.requirements.network,
        asset: ctx.requirements.asset,
        payTo: terms.payTo,
        ppRef: ctx.ppRef,
        idempotencyKey: ctx.idempotencyKey,
      });

    let result: SettleResponse;
    try {
      result =
        ctx.recovered?.result ??
        (await gateway.settle(ctx.proof.payload as PaymentPayload, ctx.requirements));
    } catch (error) {
      // Indeterminate: the facilitator may or may not have settled. The body is withheld; a retry with the same
      // proof re-verifies, and the chain refuses a second use of the same authorisation, so nobody pays twice.
      ledger.finishReceipt(receiptId, {
        status: "unknown",
        error: error instanceof Error ? error.message : String(error),
      });
      release(ctx);
      report(ctx, "unknown");
      const f =
        error instanceof FacilitatorFault
          ? error
          : new FacilitatorFault(502, "facilitator_error", 5, String(error));
      const consequence =
        "The settlement could not be confirmed and nothing was delivered; retry later with the same proof.";
      return JSON.stringify(prepareFault(request, reply, f, consequence));
    }

    const pending =
      !result.success && result.errorReason === SETTLEMENT_PENDING && Boolean(result.transaction);
    if (!result.success && !pending) {
      ledger.finishReceipt(receiptId, {
        status: "failed",
        payer: result.payer,
        error: result.errorReason ?? "settlement_failed",
      });
      release(ctx);
      report(ctx, "settle_failed");
      const reason = `settlement failed: ${result.errorReason ?? "unknown"}${result.errorMessage ? ` (${result.errorMessage})` : ""}`;
      return JSON.stringify(prepare402(request, reply, ctx.route, reason, "settlement-failed"));
    }

    // Settled, or broadcast and awaiting confirmation: the transaction exists, so the buyer gets what it paid for.
    ledger.finishReceipt(receiptId, {
      status: pending ? "pending" : "settled",
      payer: result.payer,
      transaction: result.transaction,
      responseDigest: sha256(body),
    });
    report(ctx, pending ? "pending" : "settled");
    // One line per settlement, for operators reconciling logs against the chain (no proof, no signature).
    request.log.info(
      {
        receiptId,
        route: ctx.route.route,
        payer: result.payer,
        amount: ctx.route.amount,
        network: ctx.requirements.network,
        transaction: result.transaction,
        status: pending ? "pending" : "settled",
        ppRef: ctx.ppRef,
      },
      "payment settled",
    );
    const [name, value] = settlementHeader(ctx, result);
    reply.header(name, value).header("Cache-Control", "private, no-store");
    if (ctx.idempotencyKey) {
      const headers: Record<string, string> = { [name]: value, "Cache-Control": "private, no-store" };
      const type = reply.getHeader("content-type");
      if (typeof type === "string") headers["Content-Type"] = type;
      ledger.completeIdempotency(ctx.idempotencyKey, { statusCode: reply.statusCode, headers, body });
    }
    ledger.releaseProofLock(ctx.proofFingerprint);
    return payload;
  });
};

export default fp(paymentsPlugin, { name: "payments", fastify: "5.x" });
