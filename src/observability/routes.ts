import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { type FreshnessSource, freshnessView } from "../refresh/freshness.js";
import { SourceFreshness } from "../schemas/freshness.js";
import type { ReadinessReport } from "./readiness.js";

export interface ReadinessRouteOptions {
  /** The cached health state (see createHealthMonitor): no facilitator call or ledger write per request. */
  check: () => Promise<ReadinessReport>;
  /** Per-source data freshness, shown beside the checks (informational: old data is served with its age, not refused). */
  freshness?: FreshnessSource | undefined;
  clock?: () => Date;
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
    data_sources: Type.Optional(
      Type.Array(SourceFreshness, {
        description:
          "Each data source's last refresh, when the data is refreshed (does not decide readiness: answers carry their own age)",
      }),
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
        ...(opts.freshness
          ? { data_sources: freshnessView(opts.freshness, (opts.clock ?? (() => new Date()))()) }
          : {}),
      });
    },
  );
};
