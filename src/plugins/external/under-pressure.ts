import underPressure, { type FastifyUnderPressureOptions } from "@fastify/under-pressure";
import type { Config } from "../../config.js";

/** Load shedding: past the event-loop delay limit, requests get a 503 with Retry-After instead of waiting. */
export const autoConfig = (config: Config): FastifyUnderPressureOptions => ({
  maxEventLoopDelay: config.maxEventLoopDelayMs,
  retryAfter: 5,
  exposeStatusRoute: false,
});

export default underPressure;
