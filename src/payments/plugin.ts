import { randomUUID } from "node:crypto";
import type { FastifyPluginAsync, FastifyReply, FastifyRequest, preHandlerAsyncHookHandler } from "fastify";
import fp from "fastify-plugin";
import { PROBLEM_CONTENT_TYPE, problem, problemInstance, sendProblem } from "../http/problem.js";
import { challengeCache } from "./challenge.js";
import {
  admitPayment,
  type Completion,
  completePayment,
  flushUnwritten,
  type PaidRoute,
  type Payment,
  type PaymentCore,
  type Refusal,
  releaseDeadIncarnations,
  reportOutcome,
} from "./core.js";
import { noopObserver, type PaymentObserver } from "./events.js";
import type { FacilitatorFault, FacilitatorGateway } from "./facilitator.js";
import { validIdempotencyKey } from "./idempotency.js";
import type { LedgerPort, StoredResponse } from "./ledger-port.js";
import {
  authorizationMismatch,
  chooseProofHeader,
  HEADER_V1,
  HEADER_V2,
  requirementsFor,
} from "./matching.js";
import { decodeProof, paymentIdOf, requestFingerprint } from "./proof.js";
import type { ChainReader } from "./reconcile.js";
import { reconcileOnce } from "./reconciler.js";
import type { PaymentTerms } from "./requirements.js";

export type { CapRule, PaidRoute } from "./core.js";

export interface PaymentsOptions {
  gateway: FacilitatorGateway;
  ledger: LedgerPort;
  terms: PaymentTerms;
  publicBaseUrl: string | undefined;
  /** Production: the 402 `resource` must come from PUBLIC_BASE_URL, never from the request's Host. */
  requirePublicBaseUrl?: boolean;
  idempotencyTtlMs: number;
  /** How long a delivered response is kept for a retry of the same proof and request (default: idempotencyTtlMs). */
  responseRetentionMs?: number;
  /** How long a claim stays locked if its request never finishes (a hung client); settling never expires. */
  lockTtlMs?: number;
  /** Reads the chain to settle lost settlement outcomes; without it they are answered 409 until resolved. */
  chain?: ChainReader | undefined;
  observer?: PaymentObserver;
  clock?: () => Date;
  /** This process's incarnation id (default: a fresh UUID). */
  incarnation?: string;
  /** One process per ledger (SQLite): every other unfinished incarnation is dead at start. */
  singleInstance?: boolean;
  /** With several instances: an incarnation whose heartbeat is older than this is dead. */
  staleIncarnationMs?: number;
  /** Background reconciler/heartbeat/purge period; 0 runs it only at start (tests call reconcileNow). */
  maintenanceMs?: number;
}

/** A verified payment riding on its request until onSend settles it. */
interface PaymentContext extends Payment {
  done: boolean;
}

declare module "fastify" {
  interface FastifyRequest {
    payment: PaymentContext | null;
  }
  interface FastifyInstance {
    payments: {
      guard(route: PaidRoute): preHandlerAsyncHookHandler;
      /** One reconciler pass now (tests, operations). */
      reconcileNow(): Promise<{ resolved: number; remaining: number }>;
      readonly incarnation: string;
    };
  }
}

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

/** A Host header: a name or IPv4 address, or a bracketed IPv6 address, and an optional port (RFC 9110 `uri-host`). */
const HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

function header(request: FastifyRequest, name: string): string | undefined {
  const v = request.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/**
 * The payment core (src/payments/core.ts) over HTTP: the proof headers in, the core's decisions out as 402s with
 * PAYMENT-REQUIRED, problem+json answers and settlement headers. Nothing here decides whether a payment holds.
 */
const paymentsPlugin: FastifyPluginAsync<PaymentsOptions> = async (app, opts) => {
  const { terms } = opts;
  if (opts.requirePublicBaseUrl && !opts.publicBaseUrl)
    throw new Error(
      "PUBLIC_BASE_URL is required in production: the 402 resource must not come from the Host header",
    );
  const core: PaymentCore = {
    gateway: opts.gateway,
    ledger: opts.ledger,
    terms,
    chain: opts.chain,
    observer: opts.observer ?? noopObserver,
    clock: opts.clock ?? (() => new Date()),
    incarnation: opts.incarnation ?? randomUUID(),
    idempotencyTtlMs: opts.idempotencyTtlMs,
    retentionMs: opts.responseRetentionMs ?? opts.idempotencyTtlMs,
    lockTtlMs: opts.lockTtlMs ?? 5 * 60_000,
    singleInstance: opts.singleInstance ?? true,
    staleIncarnationMs: opts.staleIncarnationMs ?? 60_000,
    log: app.log,
    unwritten: new Map(),
  };
  const { clock, incarnation } = core;

  // pp_ref is recorded with the paid call, never echoed: the resource URL is the request's without it.
  const resourceUrl = (request: FastifyRequest) =>
    `${opts.publicBaseUrl ?? `${request.protocol}://${request.host}`}${withoutPpRef(request.url)}`;
  /** Without PUBLIC_BASE_URL the 402's resource comes from Host: one that makes no URL is the caller's error. */
  const badHost = (request: FastifyRequest): boolean => {
    if (opts.publicBaseUrl) return false;
    if (!HOST.test(request.host)) return true;
    try {
      new URL(resourceUrl(request));
      return false;
    } catch {
      return true;
    }
  };

  const challenges = new WeakMap<PaidRoute, ReturnType<typeof challengeCache>>();
  const challengeOf = (route: PaidRoute) => {
    const known = challenges.get(route);
    if (known) return known;
    const built = challengeCache(route, terms);
    challenges.set(route, built);
    return built;
  };

  /**
   * Sets the 402 status and headers; returns the body's JSON bytes (the v1 PaymentRequired on v1-capable routes, else a
   * v1-shaped body with nothing to accept).
   */
  function prepare402(
    request: FastifyRequest,
    reply: FastifyReply,
    route: PaidRoute,
    error: string,
    v1Error?: string,
  ): Buffer {
    const challenge = challengeOf(route)(resourceUrl(request), error, v1Error);
    reply
      .code(402)
      .header("PAYMENT-REQUIRED", challenge.header)
      .header("Cache-Control", "no-store")
      .type("application/json");
    return challenge.bytes;
  }

  /** 402 with a fresh PAYMENT-REQUIRED (v2 header) and, on v1-capable routes, the v1 JSON body. */
  const paymentRequired = (
    request: FastifyRequest,
    reply: FastifyReply,
    route: PaidRoute,
    error: string,
    v1Error?: string,
  ) => reply.send(prepare402(request, reply, route, error, v1Error));

  const busy = (reply: FastifyReply, instance: string, withKey: boolean) =>
    sendProblem(
      reply,
      withKey
        ? problem(
            409,
            "request-in-progress",
            "A request with this Idempotency-Key is still running.",
            instance,
          )
        : problem(
            409,
            "payment-in-progress",
            "This payment is already being used by another request.",
            instance,
          ),
      { "Retry-After": "1" },
    );

  /**
   * Sets the 409 status and headers of a payment whose settlement has no known outcome yet; returns the problem body
   * (the onSend hook returns it as text, the preHandler sends it).
   */
  function prepareUnconfirmed(reply: FastifyReply, instance: string) {
    reply.code(409).type(PROBLEM_CONTENT_TYPE).header("Retry-After", "5").header("Cache-Control", "no-store");
    return problem(
      409,
      "settlement-unconfirmed",
      "The settlement of this payment is being confirmed on chain. Do not pay again; retry with the same proof shortly.",
      instance,
    );
  }

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

  const refused = (reply: FastifyReply, r: Refusal, instance: string) =>
    sendProblem(reply, problem(r.status, r.slug, r.detail, instance), r.headers);

  function replay(reply: FastifyReply, stored: StoredResponse) {
    reply.code(stored.statusCode).headers(stored.headers).header("Idempotent-Replayed", "true");
    return reply.send(stored.body);
  }

  function guard(route: PaidRoute): preHandlerAsyncHookHandler {
    return async function requirePayment(request, reply) {
      const instance = problemInstance(request);
      if (badHost(request))
        return sendProblem(
          reply,
          problem(400, "invalid-host", "The Host header does not make a valid URL.", instance),
        );
      const now = clock();
      // HEAD has no body to deliver: it shows the price and never verifies or settles a proof.
      if (request.method === "HEAD")
        return paymentRequired(
          request,
          reply,
          route,
          "payment required: HEAD never pays; send the proof with GET",
        );
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
          "X-PAYMENT header is required",
        );

      const decoded = decodeProof(choice.name, choice.value);
      if (!decoded.ok) {
        reportOutcome(core, { route }, "refused");
        return sendProblem(reply, problem(400, "invalid-payment-header", decoded.detail, instance));
      }
      const proof = decoded.proof;
      const matched = requirementsFor(proof, choice, route, terms, resourceUrl(request));
      if (!matched.ok) {
        reportOutcome(core, { route, proof }, "refused");
        return paymentRequired(request, reply, route, matched.error);
      }
      const wrong = authorizationMismatch(
        proof.exact,
        { payTo: terms.payTo, amount: route.amount },
        Math.floor(now.getTime() / 1000),
      );
      if (wrong) {
        reportOutcome(core, { route, proof }, "refused");
        return paymentRequired(request, reply, route, wrong);
      }
      const idempotencyKey = header(request, "idempotency-key");
      if (idempotencyKey !== undefined && !validIdempotencyKey(idempotencyKey))
        return sendProblem(
          reply,
          problem(
            400,
            "invalid-idempotency-key",
            "Idempotency-Key must be 1–255 visible ASCII characters.",
            instance,
          ),
        );
      const paymentId = paymentIdOf(proof);
      if (!paymentId.ok)
        return sendProblem(reply, problem(400, "invalid-payment-identifier", paymentId.detail, instance));

      let admission: Awaited<ReturnType<typeof admitPayment>>;
      try {
        admission = await admitPayment(core, {
          route,
          proof,
          requirements: matched.requirements,
          requestFingerprint: requestFingerprint(request.method, route.route, request.query, request.body),
          idempotencyKey,
          paymentId: paymentId.id,
          ppRef: (request.query as { pp_ref?: string } | undefined)?.pp_ref,
          client: request.ip,
          now,
          log: request.log,
        });
      } catch (err) {
        // The ledger failed before anything was settled (a full disk): a retryable 503, never a 500.
        request.log.error({ err }, "payment admission failed");
        return sendProblem(
          reply,
          problem(
            503,
            "ledger-unavailable",
            "The payment ledger is unavailable. Nothing was charged; retry later.",
            instance,
          ),
          { "Retry-After": "5", "Cache-Control": "no-store" },
        );
      }
      switch (admission.kind) {
        case "proceed":
          request.payment = { ...admission.payment, done: false };
          return;
        case "replay":
          return replay(reply, admission.response);
        case "payment_required":
          return paymentRequired(request, reply, route, admission.error);
        case "busy":
          return busy(reply, instance, admission.withKey);
        case "unconfirmed":
          return reply.send(prepareUnconfirmed(reply, instance));
        case "refused":
          return refused(reply, admission.refusal, instance);
        case "fault":
          return reply.send(prepareFault(request, reply, admission.fault, admission.consequence));
      }
    };
  }

  // A cached body is one Buffer sent to many buyers: decoded once, and the same string each time lets the ledger see
  // it is a body it already keeps.
  const decodedBodies = new WeakMap<Buffer, string>();
  const bodyText = (payload: unknown): string => {
    if (typeof payload === "string") return payload;
    if (!Buffer.isBuffer(payload)) return "";
    let text = decodedBodies.get(payload);
    if (text === undefined) {
      text = payload.toString("utf8");
      decodedBodies.set(payload, text);
    }
    return text;
  };

  /** What onSend sends for a completion: the handler's payload, or the problem/402 that replaces it. */
  function answer(
    request: FastifyRequest,
    reply: FastifyReply,
    ctx: PaymentContext,
    c: Completion,
    payload: unknown,
  ) {
    const instance = problemInstance(request);
    // The retry key issued to a payment without a secret: whatever this answer is, only it recovers the payment.
    if (ctx.issuedKey !== undefined) reply.header("Idempotency-Key", ctx.issuedKey);
    // A failed settlement still answers PAYMENT-RESPONSE (`success: false` and the reason), as x402 clients expect.
    if (c.kind !== "delivered" && "header" in c && c.header) reply.header(c.header[0], c.header[1]);
    switch (c.kind) {
      case "delivered":
        reply.header(c.header[0], c.header[1]).header("Cache-Control", "private, no-store");
        return payload;
      case "unpaid":
        return payload;
      case "taken_over":
        reply.code(409).type(PROBLEM_CONTENT_TYPE).header("Retry-After", "1");
        return JSON.stringify(
          problem(409, "payment-in-progress", "This payment is being settled by another request.", instance),
        );
      case "unconfirmed":
        return JSON.stringify(prepareUnconfirmed(reply, instance));
      case "payment_required":
        return prepare402(request, reply, ctx.route, c.error);
      case "fault":
        return JSON.stringify(prepareFault(request, reply, c.fault, c.consequence));
    }
  }

  app.decorateRequest("payment", null);
  // Writes the ledger refused after a settlement go first; the backlog counts them with the unknown receipts.
  const reconcileNow = async () => {
    const unwritten = await flushUnwritten(core);
    const r = await reconcileOnce({
      ledger: core.ledger,
      chain: core.chain,
      observer: core.observer,
      log: app.log,
      clock,
    });
    if (unwritten === 0 || r.remaining < 0) return r;
    core.observer.reconcilerBacklog(r.remaining + unwritten);
    return { ...r, remaining: r.remaining + unwritten };
  };
  app.decorate("payments", { guard, reconcileNow, incarnation });

  // Settle only what the handler answered successfully; withhold the body unless the settlement went through.
  app.addHook("onSend", async (request, reply, payload) => {
    const ctx = request.payment;
    if (!ctx || ctx.done) return payload;
    ctx.done = true;
    const type = reply.getHeader("content-type");
    const completion = await completePayment(core, ctx, {
      statusCode: reply.statusCode,
      contentType: typeof type === "string" ? type : undefined,
      body: bodyText(payload),
    });
    return answer(request, reply, ctx, completion, payload);
  });

  // Recovery of what a dead incarnation left: before the server takes requests, its claims and in-flight keys are
  // released (the buyer's retry is never blocked); its unknown settlements go to the background reconciler.
  let timer: NodeJS.Timeout | undefined;
  app.addHook("onReady", async () => {
    const now = clock();
    await core.ledger.startIncarnation(incarnation, now);
    await releaseDeadIncarnations(core, now);
    void reconcileNow();
    const every = opts.maintenanceMs ?? 0;
    if (every > 0) {
      timer = setInterval(() => {
        void (async () => {
          const t = clock();
          await core.ledger.heartbeat(incarnation, t);
          // With several instances on one ledger, another one may have died since this one started.
          if (!core.singleInstance) await releaseDeadIncarnations(core, t);
          await core.ledger.purgeExpired(t);
          await reconcileNow();
        })().catch((err: unknown) => app.log.error({ err }, "payments maintenance failed"));
      }, every);
      timer.unref();
    }
  });
  app.addHook("onClose", async () => {
    if (timer) clearInterval(timer);
    // A clean stop leaves nothing in `settling`: what is still unrecorded becomes `unknown`, for the chain to settle
    // at the next start. If the ledger still cannot write, the incarnation stays unended, so the next start releases
    // it as a dead one instead of trusting it.
    try {
      await flushUnwritten(core);
      await core.ledger.releaseIncarnation(incarnation, clock());
    } catch (err) {
      app.log.error(
        { err, unwritten: core.unwritten.size },
        "payments: the ledger could not close this incarnation",
      );
    }
  });
};

export default fp(paymentsPlugin, { name: "payments", fastify: "5.x" });

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
