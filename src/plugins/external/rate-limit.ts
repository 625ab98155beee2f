import rateLimit, { type RateLimitPluginOptions } from "@fastify/rate-limit";
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
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

/**
 * A client's share of the server at any moment. The rate limit bounds how many requests an address sends per window,
 * but not how many it holds open at once: 32 connections of one address each waiting on the facilitator, or each
 * asking for costly answers, would take the event loop and the MCP servers from everyone else long before the window
 * is spent. So an address may have `max` requests being answered at once; the next is refused with 429 at once, for
 * the price of a counter, and everyone else keeps their share. Keyed by `request.ip`, as the rate limit is (the
 * client's address behind TRUST_PROXY).
 */
export function inFlightLimit(max: number) {
  const running = new Map<string, number>();
  const leaving = new WeakMap<FastifyRequest, () => void>();
  return {
    running,
    async onRequest(request: FastifyRequest, reply: FastifyReply) {
      const ip = request.ip;
      const now = running.get(ip) ?? 0;
      if (now >= max)
        throw new HttpProblem(
          429,
          "concurrency-limited",
          `At most ${max} requests from one client are answered at once; retry when one has ended.`,
          { "Retry-After": "1" },
        );
      running.set(ip, now + 1);
      let left = false;
      const leave = () => {
        if (left) return;
        left = true;
        const n = (running.get(ip) ?? 1) - 1;
        if (n <= 0) running.delete(ip);
        else running.set(ip, n);
      };
      leaving.set(request, leave);
      // Whichever comes first: the answer is sent, or the connection is gone.
      reply.raw.once("close", leave);
    },
    async onResponse(request: FastifyRequest) {
      leaving.get(request)?.();
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
