import type { FastifyPluginAsync, FastifyReply, FastifyRequest, preHandlerAsyncHookHandler } from "fastify";
import fp from "fastify-plugin";
import { problemInstance } from "../../http/problem.js";
import { completePayment, type PaidRoute, type Payment, type PaymentCore } from "../core/core.js";
import { createPaymentCore, type PaymentsOptions } from "../core/create-core.js";
import { decideCall, logFault } from "../core/decide.js";
import { createMaintenance } from "../recovery/maintenance.js";
import { routeChallenges } from "./challenge.js";
import {
  type Challenge,
  completionAnswer,
  type HttpAnswer,
  httpAnswer,
  KEPT_AS_SENT,
} from "./http-answers.js";
import { bodyText, offerOf, resourceUrls, withoutPpRef } from "./http-request.js";

export type { CapRule, PaidRoute } from "../core/core.js";
export type { PaymentsOptions } from "../core/create-core.js";
export { withoutPpRef } from "./http-request.js";

/** What a request whose Host makes no URL is answered (the resource would come from it). */
const INVALID_HOST = {
  kind: "invalid_request",
  code: "invalid-host",
  detail: "The Host header does not make a valid URL.",
} as const;

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
      /**
       * The route's preHandler: its `check` (whose refusals answer before any PaymentRequired), then the payment
       * decision. One hook rather than two: each async hook costs Fastify a promise and a hook-runner step.
       */
      guard(
        route: PaidRoute,
        check?: (request: FastifyRequest) => void | Promise<void>,
      ): preHandlerAsyncHookHandler;
      /** The payment core itself, for a transport that is not an HTTP route (MCP tools). */
      readonly core: PaymentCore;
      /** Whether a Host makes the PaymentRequired's resource URL (always, with PUBLIC_BASE_URL set). */
      hostMakesUrl(request: FastifyRequest, path: string): boolean;
      /** The origin and base path of every PaymentRequired resource: PUBLIC_BASE_URL, or the request's own. */
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
 * The payment core (src/payments/core/core.ts) over HTTP. The decisions and their answers are made in decide.ts and
 * http-answers.ts; this plugin only reads the request, copies the answers onto the reply and runs the maintenance
 * loop with the server.
 */
const paymentsPlugin: FastifyPluginAsync<PaymentsOptions> = async (app, opts) => {
  const { terms } = opts;
  if (opts.requirePublicBaseUrl && !opts.publicBaseUrl)
    throw new Error(
      "PUBLIC_BASE_URL is required in production: the payment resource must not come from the Host header",
    );
  const core = createPaymentCore({ ...opts, answers: KEPT_AS_SENT }, app.log);
  const maintenance = createMaintenance(core, app.log);

  const { baseUrl, resourceUrl, hostMakesUrl } = resourceUrls(opts.publicBaseUrl);
  const challenges = routeChallenges(terms);
  const challengeFor = (request: FastifyRequest, route: PaidRoute): Challenge =>
    challenges(route, resourceUrl(request));

  function guard(
    route: PaidRoute,
    check?: (request: FastifyRequest) => void | Promise<void>,
  ): preHandlerAsyncHookHandler {
    return async function requirePayment(request, reply) {
      if (check !== undefined) {
        const pending = check(request);
        if (pending !== undefined) await pending;
      }
      const instance = problemInstance(request);
      const path = withoutPpRef(request.url);
      if (!hostMakesUrl(request, path))
        return reply.send(apply(reply, httpAnswer(INVALID_HOST, instance, challenges(route, ""))));
      // Read once: the origin (Host, protocol) and the path each cost a getter or a scan.
      const url = `${baseUrl(request)}${path}`;
      const decision = await decideCall(core, route, {
        method: request.method,
        offer: offerOf((name) => header(request, name), route.acceptsV1),
        idempotencyKey: header(request, "idempotency-key"),
        query: request.query,
        body: request.body,
        resourceUrl: url,
        client: request.ip,
        generation: core.dataGeneration(request),
        log: request.log,
      });
      if (decision.kind === "proceed") {
        request.payment = { ...decision.payment, done: false };
        return;
      }
      return reply.send(apply(reply, httpAnswer(decision.outcome, instance, challenges(route, url))));
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
  const settle = async (
    request: FastifyRequest,
    reply: FastifyReply,
    payload: unknown,
    ctx: PaymentContext,
  ) => {
    ctx.done = true;
    const type = reply.getHeader("content-type");
    const completion = await completePayment(core, ctx, {
      statusCode: reply.statusCode,
      contentType: typeof type === "string" ? type : undefined,
      body: bodyText(payload),
    });
    logFault(request.log, completion);
    const a = completionAnswer(completion, problemInstance(request), challengeFor(request, ctx.route));
    const body = apply(reply, a);
    return body === undefined ? payload : body;
  };
  // A callback hook: every answer passes here, and one without a payment (every PaymentRequired) must not wait a
  // promise, so it is written before the guard returns.
  app.addHook("onSend", (request, reply, payload, done) => {
    const ctx = request.payment;
    if (!ctx || ctx.done) return done(null, payload);
    settle(request, reply, payload, ctx).then(
      (body) => done(null, body),
      (err: Error) => done(err),
    );
  });

  app.addHook("onReady", async () => maintenance.start(opts.maintenanceMs ?? 0));
  app.addHook("onClose", async () => maintenance.stop());
};

export default fp(paymentsPlugin, { name: "payments", fastify: "5.x" });
