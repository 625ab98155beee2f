import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import type { ReadinessReport } from "./readiness.js";

export interface ReadinessRouteOptions {
  /** The cached health state (see createHealthMonitor): no facilitator call or ledger write per request. */
  check: () => Promise<ReadinessReport>;
}

const closed = { additionalProperties: false } as const;
const Check = Type.Object({ ok: Type.Boolean(), detail: Type.String() }, closed);
const ReadyBody = Type.Object(
  {
    status: Type.Union([Type.Literal("ready"), Type.Literal("not_ready")]),
    checks: Type.Object(
      {
        facilitator: Check,
        ledger: Check,
        circuit: Check,
        // The metrics listener (METRICS_PORT): shown, never decides readiness.
        metrics: Type.Optional(Check),
      },
      closed,
    ),
  },
  closed,
);

/** GET /ready: 200 when a paid call can succeed here, 503 (with each check's state) when it cannot. */
export const readinessRoutes: FastifyPluginAsyncTypebox<ReadinessRouteOptions> = async (app, opts) => {
  app.get(
    "/ready",
    {
      logLevel: "warn",
      schema: {
        tags: ["meta"],
        summary:
          "Readiness: facilitator reachable and supporting exact on the configured NETWORK, ledger writable, circuit not open",
        response: { 200: ReadyBody, 503: ReadyBody },
      },
    },
    async (request, reply) => {
      const report = await opts.check();
      if (!report.ready) request.log.warn({ checks: report.checks }, "not ready");
      reply.header("Cache-Control", "no-store");
      return reply.code(report.ready ? 200 : 503).send({
        status: report.ready ? "ready" : "not_ready",
        checks: report.checks,
      });
    },
  );
};
