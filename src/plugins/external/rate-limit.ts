import rateLimit, { type RateLimitPluginOptions } from "@fastify/rate-limit";
import type { Config } from "../../config.js";
import { HttpProblem } from "../../http/problem.js";

/**
 * Every route, free ones too: a flood of /ready or / costs like any other. An orchestrator's probes (one per few
 * seconds) are far below the limit; Prometheus scrapes the metrics listener, which has none.
 */
export const autoConfig = (config: Config): RateLimitPluginOptions => ({
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
});

export default rateLimit;
