import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import { encodePaymentResponseHeader } from "@x402/core/http";
import type { PaymentPayload, PaymentRequirements, SettleResponse } from "@x402/core/types";
import type { FastifyPluginAsync, FastifyReply, FastifyRequest, preHandlerAsyncHookHandler } from "fastify";
import fp from "fastify-plugin";
import { PROBLEM_CONTENT_TYPE, problem, problemInstance, sendProblem } from "../http/problem.js";
import { challengeCache } from "./challenge.js";
import { noopObserver, type PaymentObserver, type PaymentOutcome } from "./events.js";
import { FacilitatorFault, type FacilitatorGateway, SETTLEMENT_PENDING } from "./facilitator.js";
import { validIdempotencyKey } from "./idempotency.js";
import {
  type LedgerPort,
  normalizeNetwork,
  type PaymentIdentity,
  type Receipt,
  type StoredResponse,
} from "./ledger-port.js";
import {
  authorizationMismatch,
  chooseProofHeader,
  HEADER_V1,
  HEADER_V2,
  requirementsFor,
} from "./matching.js";
import { decodeProof, type Proof, requestFingerprint } from "./proof.js";
import type { ChainReader } from "./reconcile.js";
import { deadIncarnations, reconcileOnce, resolveFromChain } from "./reconciler.js";
import { NETWORK_V1, type PaymentTerms, type RoutePrice } from "./requirements.js";
import { evmChainId, signedByPayer } from "./signature.js";

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

/** A provisional cap, reserved atomically with the claim: `limit` paid calls since `since`. */
export type CapRule = (now: Date) => { limit: number; since: Date } | undefined;

export interface PaidRoute extends RoutePrice {
  /** Stable route id for receipts, e.g. "POST /v1/unlock-risk". */
  route: string;
  cap?: CapRule | undefined;
}

interface PaymentContext {
  route: PaidRoute;
  proof: Proof;
  requirements: PaymentRequirements;
  identity: PaymentIdentity;
  requestFingerprint: string;
  idempotencyKey: string | undefined;
  ppRef: string | undefined;
  receiptId: string;
  done: boolean;
  /** It had an unknown settlement outcome before this request took it over: never forget that. */
  reclaimed: boolean;
  /** Already paid (found on chain), never delivered: deliver this settlement, do not settle again. */
  deliver?: Receipt;
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
};

const NONCE_USED = /nonce_already_used|transaction_failed|authorization.*used/i;

function header(request: FastifyRequest, name: string): string | undefined {
  const v = request.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

const paymentsPlugin: FastifyPluginAsync<PaymentsOptions> = async (app, opts) => {
  const { gateway, ledger, terms } = opts;
  const lockTtlMs = opts.lockTtlMs ?? 5 * 60_000;
  const retentionMs = opts.responseRetentionMs ?? opts.idempotencyTtlMs;
  const observer = opts.observer ?? noopObserver;
  const clock = opts.clock ?? (() => new Date());
  const incarnation = opts.incarnation ?? randomUUID();
  const chain = opts.chain;
  if (opts.requirePublicBaseUrl && !opts.publicBaseUrl)
    throw new Error(
      "PUBLIC_BASE_URL is required in production: the 402 resource must not come from the Host header",
    );

  const resourceUrl = (request: FastifyRequest) =>
    `${opts.publicBaseUrl ?? `${request.protocol}://${request.host}`}${request.url}`;

  const outcome = (ctx: { route: PaidRoute; proof?: Proof }, o: PaymentOutcome) =>
    observer.paymentOutcome({
      route: ctx.route.route,
      x402Version: ctx.proof?.version ?? 2,
      outcome: o,
      amount: ctx.route.amount,
    });

  let lastCircuit = gateway.position();
  async function timed<T>(operation: "verify" | "settle", call: () => Promise<T>): Promise<T> {
    const t0 = performance.now();
    let ok = false;
    try {
      const r = await call();
      ok = true;
      return r;
    } finally {
      observer.facilitatorCall({ operation, seconds: (performance.now() - t0) / 1000, ok });
      const now = gateway.position();
      if (now !== lastCircuit) observer.circuitState(now);
      lastCircuit = now;
    }
  }

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
   * Sets the 409 status and headers of a payment whose earlier settlement has no known outcome yet; returns the
   * problem body (the onSend hook returns it as text, the preHandler sends it).
   */
  function prepareUnconfirmed(reply: FastifyReply, instance: string) {
    reply.code(409).type(PROBLEM_CONTENT_TYPE).header("Retry-After", "5").header("Cache-Control", "no-store");
    return problem(
      409,
      "settlement-unconfirmed",
      "An earlier settlement of this payment has not been confirmed yet. Do not pay again; retry with the same proof shortly.",
      instance,
    );
  }

  const unconfirmed = (reply: FastifyReply, instance: string) =>
    reply.send(prepareUnconfirmed(reply, instance));

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

  function replay(reply: FastifyReply, stored: StoredResponse) {
    reply.code(stored.statusCode).headers(stored.headers).header("Idempotent-Replayed", "true");
    return reply.send(stored.body);
  }

  function settlementHeader(version: 1 | 2, result: SettleResponse): [string, string] {
    if (version === 2) return ["PAYMENT-RESPONSE", encodePaymentResponseHeader(result)];
    const v1 = { ...result, network: NETWORK_V1 };
    return ["X-PAYMENT-RESPONSE", Buffer.from(JSON.stringify(v1)).toString("base64")];
  }

  /**
   * A claim that found the authorization already paid: the same request gets its response again (at least once); a
   * different request needs a payment of its own.
   */
  function answerPaid(
    request: FastifyRequest,
    reply: FastifyReply,
    ctx: Omit<PaymentContext, "receiptId" | "done" | "reclaimed">,
    r: Receipt,
    now: Date,
  ) {
    const instance = problemInstance(request);
    if (r.requestFingerprint !== ctx.requestFingerprint) {
      outcome(ctx, "refused");
      return paymentRequired(
        request,
        reply,
        ctx.route,
        "payment_already_used: this authorization has already paid for another request",
      );
    }
    if (r.response && (!r.responseExpiresAt || Date.parse(r.responseExpiresAt) > now.getTime())) {
      outcome(ctx, "replayed");
      return replay(reply, r.response);
    }
    if (r.responseExpiresAt === null && r.transaction) {
      // Paid (found on chain) and never delivered: run the handler and deliver, with no second settlement.
      request.payment = { ...ctx, receiptId: r.id, done: false, reclaimed: false, deliver: r };
      return;
    }
    outcome(ctx, "refused");
    return sendProblem(
      reply,
      problem(
        409,
        "payment-already-used",
        "This payment already bought this request's response, which is no longer kept (retention window passed).",
        instance,
      ),
      { "Cache-Control": "no-store" },
    );
  }

  /** Ends a claim that did not settle: released, or back to unknown when an earlier settlement may have happened. */
  const giveBack = (ctx: Pick<PaymentContext, "receiptId" | "reclaimed">) =>
    ctx.reclaimed
      ? ledger.recordFailure(ctx.receiptId, { status: "unknown", error: "retry_not_settled", now: clock() })
      : ledger.releaseClaim(ctx.receiptId, incarnation);

  function guard(route: PaidRoute): preHandlerAsyncHookHandler {
    return async function requirePayment(request, reply) {
      const instance = problemInstance(request);
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
        outcome({ route }, "refused");
        return sendProblem(reply, problem(400, "invalid-payment-header", decoded.detail, instance));
      }
      const proof = decoded.proof;
      const matched = requirementsFor(proof, choice, route, terms, resourceUrl(request));
      if (!matched.ok) {
        outcome({ route, proof }, "refused");
        return paymentRequired(request, reply, route, matched.error);
      }
      const requirements = matched.requirements;
      const wrong = authorizationMismatch(
        proof.exact,
        { payTo: terms.payTo, amount: route.amount },
        Math.floor(now.getTime() / 1000),
      );
      if (wrong) {
        outcome({ route, proof }, "refused");
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

      const base = {
        route,
        proof,
        requirements,
        identity: {
          network: requirements.network,
          asset: requirements.asset,
          payer: proof.exact.authorization.from,
          nonce: proof.exact.authorization.nonce,
        },
        requestFingerprint: requestFingerprint(request.method, route.route, request.query, request.body),
        idempotencyKey,
        ppRef: (request.query as { pp_ref?: string } | undefined)?.pp_ref,
      };

      const claimIt = () =>
        ledger.claimAuthorization({
          identity: base.identity,
          route: route.route,
          requestFingerprint: base.requestFingerprint,
          x402Version: proof.version,
          amount: route.amount,
          payTo: terms.payTo,
          ppRef: base.ppRef,
          validBefore: proof.exact.authorization.validBefore,
          idempotency: idempotencyKey ? { key: idempotencyKey, ttlMs: opts.idempotencyTtlMs } : undefined,
          incarnation,
          lockTtlMs,
          cap: route.cap?.(now),
          now,
        });
      let claim = await claimIt();
      if (claim.kind === "in_progress" && (await releaseDeadHolder(claim.receipt, now)))
        claim = await claimIt();

      let receiptId: string;
      let reclaimed = false;
      switch (claim.kind) {
        case "idempotency_conflict":
          return sendProblem(
            reply,
            problem(
              422,
              "idempotency-key-reused",
              claim.reason === "different_request"
                ? "this Idempotency-Key was used with a different request"
                : "this Idempotency-Key was used with a different payment proof",
              instance,
            ),
          );
        case "cap_reached":
          outcome(base, "refused");
          return sendProblem(
            reply,
            problem(
              503,
              "provisional-cap-reached",
              "This route's provisional cap of paid calls is reached.",
              instance,
            ),
            { "Retry-After": "3600" },
          );
        case "in_progress":
          return busy(
            reply,
            instance,
            idempotencyKey !== undefined && claim.receipt.idempotencyKey === idempotencyKey,
          );
        case "paid":
          return answerPaid(request, reply, base, claim.receipt, now);
        case "unresolved": {
          // An earlier settlement of this authorization has no known outcome: the chain settles it, now.
          const res = await resolveFromChain(ledger, chain, claim.receipt, now, request.log);
          if (res.kind === "settled") return answerPaid(request, reply, base, res.receipt, now);
          if (res.kind === "failed") {
            outcome(base, "invalid");
            return paymentRequired(request, reply, route, "invalid_exact_evm_nonce_already_used");
          }
          if (claim.receipt.requestFingerprint !== base.requestFingerprint)
            return unconfirmed(reply, instance);
          // Unused, or no chain to ask: this request takes it over and pays normally. The chain refuses a second use
          // of one authorization, so at worst the facilitator refuses it and the question stays open.
          if (!(await ledger.reclaimUnresolved(claim.receipt.id, incarnation, lockTtlMs, now)))
            return busy(reply, instance, false);
          receiptId = claim.receipt.id;
          reclaimed = true;
          break;
        }
        case "claimed":
          receiptId = claim.receipt.id;
          break;
      }

      const ctx: PaymentContext = { ...base, receiptId, done: false, reclaimed };
      const release = () => giveBack(ctx);
      try {
        const verdict = await timed("verify", () =>
          gateway.verify(proof.payload as PaymentPayload, requirements),
        );
        if (!verdict.isValid) {
          await release();
          const reason = verdict.invalidReason ?? "invalid_payment";
          request.log.info(
            { reason, detail: verdict.invalidMessage },
            "payment proof refused by the facilitator",
          );
          const chainId = evmChainId(requirements.network);
          const domain = requirements.extra as { name?: unknown; version?: unknown } | undefined;
          if (
            reason === "invalid_exact_evm_signature" &&
            chainId !== undefined &&
            typeof domain?.name === "string" &&
            typeof domain.version === "string" &&
            (await signedByPayer(proof.exact, {
              name: domain.name,
              version: domain.version,
              chainId,
              verifyingContract: requirements.asset,
            }))
          ) {
            // The payer's own signature, checked here without the chain: the facilitator could not check it.
            outcome(ctx, "facilitator_error");
            return fault(
              request,
              reply,
              new FacilitatorFault(
                503,
                "facilitator_chain_unavailable",
                30,
                `verify said ${reason} for a valid signature`,
              ),
            );
          }
          if (reclaimed) return unconfirmed(reply, instance);
          outcome(ctx, "invalid");
          return paymentRequired(request, reply, route, reason);
        }
      } catch (error) {
        await release();
        if (error instanceof FacilitatorFault) {
          outcome(ctx, "facilitator_error");
          return fault(request, reply, error);
        }
        throw error;
      }
      request.payment = ctx;
    };
  }

  /** The response as stored for a retry: status, body, content type and the settlement header. */
  function storedResponse(reply: FastifyReply, body: string, settlement: [string, string]): StoredResponse {
    const headers: Record<string, string> = {
      [settlement[0]]: settlement[1],
      "Cache-Control": "private, no-store",
    };
    const type = reply.getHeader("content-type");
    if (typeof type === "string") headers["Content-Type"] = type;
    return { statusCode: reply.statusCode, headers, body };
  }

  // A cached body is one Buffer sent to many buyers: decoded once, and the same string each time lets the ledger see
  // it is a body it already keeps.
  const decoded = new WeakMap<Buffer, string>();
  const bodyText = (payload: unknown): string => {
    if (typeof payload === "string") return payload;
    if (!Buffer.isBuffer(payload)) return "";
    let text = decoded.get(payload);
    if (text === undefined) {
      text = payload.toString("utf8");
      decoded.set(payload, text);
    }
    return text;
  };

  function settled(
    request: FastifyRequest,
    ctx: PaymentContext,
    r: { transaction: string; status: "settled" | "pending" },
  ) {
    request.log.info(
      {
        receipt: ctx.receiptId,
        route: ctx.route.route,
        payer: ctx.identity.payer.toLowerCase(),
        amount: ctx.route.amount,
        network: normalizeNetwork(ctx.identity.network),
        transaction: r.transaction,
        pp_ref: ctx.ppRef ?? null,
        status: r.status,
      },
      "payment settled",
    );
  }

  app.decorateRequest("payment", null);
  const reconcileNow = () => reconcileOnce({ ledger, chain, observer, log: app.log, clock });
  app.decorate("payments", { guard, reconcileNow, incarnation });

  // Settle only what the handler answered successfully; withhold the body unless the settlement went through.
  app.addHook("onSend", async (request, reply, payload) => {
    const ctx = request.payment;
    if (!ctx || ctx.done) return payload;
    ctx.done = true;
    const now = clock();
    const network = ctx.requirements.network;

    if (ctx.deliver) {
      if (reply.statusCode >= 400) return payload;
      const tx = ctx.deliver.transaction as string;
      const result: SettleResponse = { success: true, transaction: tx, network, payer: ctx.identity.payer };
      const h = settlementHeader(ctx.proof.version, result);
      const stored = storedResponse(reply, bodyText(payload), h);
      await ledger.storeResponse(ctx.receiptId, stored, new Date(now.getTime() + retentionMs), now);
      settled(request, ctx, { transaction: tx, status: "settled" });
      outcome(ctx, "settled");
      reply.header(h[0], h[1]).header("Cache-Control", "private, no-store");
      return payload;
    }

    if (reply.statusCode >= 400) {
      await giveBack(ctx);
      return payload;
    }
    if (!(await ledger.beginSettlement(ctx.receiptId, incarnation, now))) {
      // The claim expired and another request took the authorization over: it settles, not this one.
      reply.code(409).type(PROBLEM_CONTENT_TYPE).header("Retry-After", "1");
      return JSON.stringify(
        problem(
          409,
          "payment-in-progress",
          "This payment is being settled by another request.",
          problemInstance(request),
        ),
      );
    }

    let result: SettleResponse;
    try {
      result = await timed("settle", () =>
        gateway.settle(ctx.proof.payload as PaymentPayload, ctx.requirements),
      );
    } catch (error) {
      // Indeterminate: the facilitator may or may not have settled. The body is withheld; the buyer's retry with the
      // same proof (or the background reconciler) settles the question on chain, so nobody pays twice or for nothing.
      await ledger.recordFailure(ctx.receiptId, {
        status: "unknown",
        error: error instanceof FacilitatorFault ? error.reason : "settle_error",
        now: clock(),
      });
      outcome(ctx, "unknown");
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
      const reason = result.errorReason ?? "settlement_failed";
      request.log.warn({ reason, detail: result.errorMessage, receipt: ctx.receiptId }, "settlement failed");
      if (chain && NONCE_USED.test(reason)) {
        // An earlier attempt of this very authorization may have paid already (its reply was lost): ask the chain.
        await ledger.recordFailure(ctx.receiptId, { status: "unknown", error: reason, now: clock() });
        const receipt = await ledger.receipt(ctx.receiptId);
        const res = receipt
          ? await resolveFromChain(ledger, chain, receipt, clock(), request.log)
          : undefined;
        if (res?.kind === "settled") {
          ctx.deliver = res.receipt;
          ctx.done = false;
          // Re-enter as a delivery of the settlement the chain shows.
          const tx = res.receipt.transaction as string;
          const h = settlementHeader(ctx.proof.version, {
            success: true,
            transaction: tx,
            network,
            payer: ctx.identity.payer,
          });
          await ledger.storeResponse(
            ctx.receiptId,
            storedResponse(reply, bodyText(payload), h),
            new Date(now.getTime() + retentionMs),
            clock(),
          );
          ctx.done = true;
          settled(request, ctx, { transaction: tx, status: "settled" });
          outcome(ctx, "settled");
          reply.header(h[0], h[1]).header("Cache-Control", "private, no-store");
          return payload;
        }
        if (res?.kind !== "failed" && ctx.reclaimed) {
          // The earlier attempt may still land: the question stays open for the reconciler and the next retry.
          return JSON.stringify(prepareUnconfirmed(reply, problemInstance(request)));
        }
        if (res?.kind !== "failed")
          await ledger.recordFailure(ctx.receiptId, { status: "failed", error: reason, now: clock() });
      } else if (ctx.reclaimed && NONCE_USED.test(reason)) {
        await ledger.recordFailure(ctx.receiptId, { status: "unknown", error: reason, now: clock() });
        return JSON.stringify(prepareUnconfirmed(reply, problemInstance(request)));
      } else {
        await ledger.recordFailure(ctx.receiptId, { status: "failed", error: reason, now: clock() });
      }
      outcome(ctx, "settle_failed");
      return prepare402(request, reply, ctx.route, `settlement_failed: ${reason}`);
    }

    // Settled, or broadcast and awaiting confirmation: the transaction exists, so the buyer gets what it paid for.
    const status = pending ? "pending" : "settled";
    const h = settlementHeader(ctx.proof.version, result);
    const stored = storedResponse(reply, bodyText(payload), h);
    const rec = await ledger.recordSettlement(ctx.receiptId, {
      status,
      transaction: result.transaction,
      response: { value: stored, expiresAt: new Date(now.getTime() + retentionMs) },
      now: clock(),
    });
    if (!rec.ok) {
      // The facilitator named a transaction that already paid for another receipt: not a payment for this one.
      request.log.error(
        { receipt: ctx.receiptId, transaction: result.transaction, reason: rec.reason },
        "settlement not credited",
      );
      await ledger.recordFailure(ctx.receiptId, { status: "failed", error: rec.reason, now: clock() });
      outcome(ctx, "settle_failed");
      return JSON.stringify(
        prepareFault(
          request,
          reply,
          new FacilitatorFault(502, "facilitator_bad_response", 5, rec.reason),
          "Nothing was delivered; retry later.",
        ),
      );
    }
    settled(request, ctx, { transaction: result.transaction, status });
    outcome(ctx, status);
    reply.header(h[0], h[1]).header("Cache-Control", "private, no-store");
    return payload;
  });

  async function releaseDeadIncarnations(now: Date, only?: string): Promise<number> {
    const dead = deadIncarnations(await ledger.incarnations(), incarnation, now, {
      singleInstance: opts.singleInstance ?? true,
      staleMs: opts.staleIncarnationMs ?? 60_000,
    }).filter((id) => only === undefined || id === only);
    for (const id of dead) {
      const released = await ledger.releaseIncarnation(id, now);
      app.log.warn(
        { incarnation: id, releasedClaims: released.releasedClaims, unresolved: released.unresolved.length },
        "released a dead incarnation's claims",
      );
    }
    return dead.length;
  }
  /** A claim held by another instance that died (kill -9): released now, so the buyer's retry is not kept waiting. */
  async function releaseDeadHolder(r: Receipt, now: Date): Promise<boolean> {
    if (opts.singleInstance !== false || r.incarnation === null || r.incarnation === incarnation)
      return false;
    return (await releaseDeadIncarnations(now, r.incarnation)) > 0;
  }

  // Recovery of what a dead incarnation left: before the server takes requests, its claims and in-flight keys are
  // released (the buyer's retry is never blocked); its unknown settlements go to the background reconciler.
  let timer: NodeJS.Timeout | undefined;
  app.addHook("onReady", async () => {
    const now = clock();
    await ledger.startIncarnation(incarnation, now);
    await releaseDeadIncarnations(now);
    void reconcileNow();
    const every = opts.maintenanceMs ?? 0;
    if (every > 0) {
      timer = setInterval(() => {
        void (async () => {
          const t = clock();
          await ledger.heartbeat(incarnation, t);
          // With several instances on one ledger, another one may have died since this one started.
          if (opts.singleInstance === false) await releaseDeadIncarnations(t);
          await ledger.purgeExpired(t);
          await reconcileNow();
        })().catch((err: unknown) => app.log.error({ err }, "payments maintenance failed"));
      }, every);
      timer.unref();
    }
  });
  app.addHook("onClose", async () => {
    if (timer) clearInterval(timer);
    await ledger.endIncarnation(incarnation, clock());
  });
};

export default fp(paymentsPlugin, { name: "payments", fastify: "5.x" });
