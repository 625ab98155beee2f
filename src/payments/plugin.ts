import { randomUUID } from "node:crypto";
import type { FastifyPluginAsync, FastifyReply, FastifyRequest, preHandlerAsyncHookHandler } from "fastify";
import fp from "fastify-plugin";
import { problem, problemInstance } from "../http/problem.js";
import { challengeCache } from "./challenge.js";
import { completePayment, type PaidRoute, type Payment, type PaymentCore } from "./core.js";
import { noopObserver, type PaymentObserver } from "./events.js";
import type { FacilitatorGateway } from "./gateway.js";
import { type Challenge, completionAnswer, type HttpAnswer, problemAnswer } from "./http-answers.js";
import { decideCall, logFault } from "./decide.js";
import { bodyText, offerOf, validHost, withoutPpRef } from "./http-request.js";
import type { LedgerPort } from "../ledger/port.js";
import { createMaintenance } from "./maintenance.js";
import type { ChainReader } from "./chain-reader.js";
import type { PaymentTerms } from "./requirements.js";

export type { CapRule, PaidRoute } from "./core.js";
export { withoutPpRef } from "./http-request.js";

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
      /** The payment core itself, for a transport that is not an HTTP route (MCP tools). */
      readonly core: PaymentCore;
      /** Whether a Host makes the 402's resource URL (always, with PUBLIC_BASE_URL set). */
      hostMakesUrl(request: FastifyRequest, path: string): boolean;
      /** The origin and base path of every 402 resource: PUBLIC_BASE_URL, or the request's own. */
      baseUrl(request: FastifyRequest): string;
      /** One reconciler pass now (tests, operations). */
      reconcileNow(): Promise<{ resolved: number; remaining: number }>;
      readonly incarnation: string;
    };
  }
}

function header(request: FastifyRequest, name: string): string | undefined {
  const v = request.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** Copies a decided answer onto the reply; returns its body (undefined: keep the handler's payload). */
function apply(reply: FastifyReply, a: HttpAnswer): unknown {
  if (a.status !== undefined) reply.code(a.status);
  for (const [name, value] of a.headers) reply.header(name, value);
  return a.body;
}

/**
 * The payment core (src/payments/core.ts) over HTTP. The decisions and their answers are made in decide.ts and
 * http-answers.ts; this plugin only reads the request, copies the answers onto the reply and runs the maintenance
 * loop with the server.
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
  const maintenance = createMaintenance(core, app.log);

  const baseUrl = (request: FastifyRequest) => opts.publicBaseUrl ?? `${request.protocol}://${request.host}`;
  // pp_ref is recorded with the paid call, never echoed: the resource URL is the request's without it.
  const resourceUrl = (request: FastifyRequest) => `${baseUrl(request)}${withoutPpRef(request.url)}`;
  /** Without PUBLIC_BASE_URL the 402's resource comes from Host: one that makes no URL is the caller's error. */
  const hostMakesUrl = (request: FastifyRequest, path: string): boolean =>
    Boolean(opts.publicBaseUrl) || validHost(request.host, `${baseUrl(request)}${path}`);
  const badHost = (request: FastifyRequest): boolean => !hostMakesUrl(request, withoutPpRef(request.url));

  const challenges = new WeakMap<PaidRoute, ReturnType<typeof challengeCache>>();
  const challengeFor = (request: FastifyRequest, route: PaidRoute): Challenge => {
    let built = challenges.get(route);
    if (!built) {
      built = challengeCache(route, terms);
      challenges.set(route, built);
    }
    const cached = built;
    return (error, v1Error) => cached(resourceUrl(request), error, v1Error);
  };

  function guard(route: PaidRoute): preHandlerAsyncHookHandler {
    return async function requirePayment(request, reply) {
      const instance = problemInstance(request);
      if (badHost(request))
        return reply.send(
          apply(
            reply,
            problemAnswer(
              problem(400, "invalid-host", "The Host header does not make a valid URL.", instance),
            ),
          ),
        );
      const decision = await decideCall(
        core,
        route,
        {
          method: request.method,
          offer: offerOf((name) => header(request, name), route.acceptsV1),
          idempotencyKey: header(request, "idempotency-key"),
          query: request.query,
          body: request.body,
          resourceUrl: resourceUrl(request),
          instance,
          client: request.ip,
          log: request.log,
        },
        challengeFor(request, route),
      );
      if (decision.kind === "proceed") {
        request.payment = { ...decision.payment, done: false };
        return;
      }
      return reply.send(apply(reply, decision.answer));
    };
  }

  app.decorateRequest("payment", null);
  app.decorate("payments", {
    guard,
    core,
    hostMakesUrl,
    baseUrl,
    reconcileNow: maintenance.reconcileNow,
    incarnation: core.incarnation,
  });

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
    if (completion.kind === "fault") logFault(request.log, completion.fault);
    const a = completionAnswer(
      completion,
      ctx.issuedKey,
      problemInstance(request),
      challengeFor(request, ctx.route),
    );
    const body = apply(reply, a);
    return body === undefined ? payload : body;
  });

  app.addHook("onReady", async () => maintenance.start(opts.maintenanceMs ?? 0));
  app.addHook("onClose", async () => maintenance.stop());
};

export default fp(paymentsPlugin, { name: "payments", fastify: "5.x" });
