import rateLimit, { type RateLimitPluginOptions } from "@fastify/rate-limit";
import type { ServerResponse } from "node:http";
import type { FastifyPluginAsync, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from "fastify";
import fp from "fastify-plugin";
import type { Config } from "../../config.js";
import { HttpProblem } from "../../http/problem.js";

export interface FairShareOptions extends RateLimitPluginOptions {
  /** Requests of one client address being answered at once; the next is refused with 429 until one ends. */
  clientMaxInFlight: number;
}

/**
 * Every route, free ones too: a flood of /ready or / costs like any other. An orchestrator's probes (one per few
 * seconds) are far below the limit; Prometheus scrapes the metrics listener, which has none.
 */
export const autoConfig = (config: Config): FairShareOptions => ({
  global: true,
  max: config.rateLimit.max,
  timeWindow: config.rateLimit.windowMs,
  enableDraftSpec: true,
  errorResponseBuilder: (_request, context) =>
    new HttpProblem(
      429,
      "rate-limited",
      `Rate limit of ${context.max} requests per ${context.after} exceeded.`,
    ),
  clientMaxInFlight: config.clientMaxInFlight,
});

/** The address a response counts against, set on the Node response while its request is in flight. */
const COUNTED = Symbol("in-flight address");
type Counted = ServerResponse & { [COUNTED]?: string | undefined };

/**
 * A client's share of the server at any moment. The rate limit bounds how many requests an address sends per window,
 * but not how many it holds open at once: 32 connections of one address each waiting on the facilitator, or each
 * asking for costly answers, would take the event loop and the MCP servers from everyone else long before the window
 * is spent. So an address may have `max` requests being answered at once; the next is refused with 429 at once, for
 * the price of a counter, and everyone else keeps their share. Keyed by `request.ip`, as the rate limit is (the
 * client's address behind TRUST_PROXY).
 *
 * Every request pays for this, so it allocates nothing per request: callback hooks (no promise), the address kept on
 * the Node response under a symbol, and one shared `close` listener (an async hook, a closure, a WeakMap entry and a
 * `once` wrapper per request were about 4 µs of a 402's CPU in a V8 profile).
 */
export function inFlightLimit(max: number) {
  const running = new Map<string, number>();
  const leave = (res: Counted) => {
    const ip = res[COUNTED];
    if (ip === undefined) return;
    res[COUNTED] = undefined;
    const n = (running.get(ip) ?? 1) - 1;
    if (n <= 0) running.delete(ip);
    else running.set(ip, n);
  };
  // Whichever comes first gives the share back: the answer is sent (onResponse), or the connection is gone (close).
  function onClose(this: Counted) {
    leave(this);
  }
  return {
    running,
    onRequest(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) {
      const ip = request.ip;
      const now = running.get(ip) ?? 0;
      if (now >= max)
        return done(
          new HttpProblem(
            429,
            "concurrency-limited",
            `At most ${max} requests from one client are answered at once; retry when one has ended.`,
            { "Retry-After": "1" },
          ),
        );
      running.set(ip, now + 1);
      const res = reply.raw as Counted;
      res[COUNTED] = ip;
      res.on("close", onClose);
      done();
    },
    onResponse(_request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) {
      leave(reply.raw as Counted);
      done();
    },
  };
}

/** @fastify/rate-limit, and the per-client in-flight limit beside it (both app-wide). */
const fairShare: FastifyPluginAsync<FairShareOptions> = async (app, opts) => {
  const { clientMaxInFlight, ...limits } = opts;
  await app.register(rateLimit, limits);
  const limit = inFlightLimit(clientMaxInFlight);
  app.addHook("onRequest", limit.onRequest);
  app.addHook("onResponse", limit.onResponse);
};

export default fp(fairShare, { name: "fair-share", fastify: "5.x" });
