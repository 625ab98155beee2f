import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyRequest } from "fastify";
import { compressBody, precompressedEncoding } from "../http/encoding.js";
import { HttpProblem } from "../http/problem.js";
import { createResponseCache } from "../http/response-cache.js";
import { PaidQuery, UnlockPaymentHeaders } from "../schemas/common.js";
import { BacktestBody, RiskSummaryBody, UnlockRiskBody, UpcomingQuery } from "../schemas/unlocks.js";
import { BacktestResult, RiskItem, RiskSummary, UpcomingResponse } from "../schemas/unlocks-responses.js";
import type { Derivatives } from "../refresh/derivatives.js";
import type { UnlockService } from "../unlocks/service.js";
import { OPERATIONS, operationDescription } from "./paid-operations.js";
import { PRICES, paymentInfo } from "./prices.js";
import { notFoundResponse, paid, paidErrorResponses, problem } from "./responses.js";

const TAG = "unlocks";

/** Replaces the shared 422 entry on the backtest route: both causes are listed. */
const noReactionsResponse = problem(
  "No measurable market reaction for this backtest (checked before any payment request), or Idempotency-Key reused with a different request or proof",
);

const notFound = (service: UnlockService, token: string, eventId?: string): void => {
  if (eventId === undefined) {
    if (!service.hasToken(token))
      throw new HttpProblem(404, "unknown-token", `No unlock schedule is known for token ${token}.`);
    return;
  }
  const found = service.lookupEvent(token, eventId);
  if (found === "unknown_token")
    throw new HttpProblem(404, "unknown-token", `No unlock schedule is known for token ${token}.`);
  if (found === "unknown_event")
    throw new HttpProblem(404, "unknown-unlock-event", `Token ${token} has no unlock event ${eventId}.`);
};

/** A backtest with nothing to measure is refused before payment: nobody pays for an empty answer. */
const measurable = (service: UnlockService, token: string, eventId: string, windowDays: number): void => {
  const reason = service.backtestRefusal(token, eventId, windowDays);
  if (reason !== null) throw new HttpProblem(422, "no-measurable-reactions", reason);
};

export interface UnlockRoutesOptions {
  unlocks: UnlockService;
  /** Decides the UTC day the cached upcoming bodies belong to; must agree with the service's own clock. */
  clock?: () => Date;
  /** Changes whenever the unlock data behind the service changes (a refresh); the shipped snapshot never does. */
  dataVersion?: (request: FastifyRequest) => string;
  /**
   * The service a request is answered from, when the data is refreshed while serving: the generation pinned to the
   * request on arrival, so its pre-payment checks and its answer read the same data. Default: `unlocks`.
   */
  unlocksFor?: (request: FastifyRequest) => UnlockService;
  /** The refresh's latest funding and open-interest figures per token (evidence only); absent when not refreshed. */
  derivatives?: () => ReadonlyMap<string, Derivatives>;
}

// The upcoming list depends only on (data, UTC day, query): its body is serialized (and compressed, per encoding) once
// and reused. 64 MiB of bodies at most (a 365-day window over a 100k-event store is about 16 MB before compression).
const UPCOMING_CACHE = { maxEntries: 256, maxUnits: 64 * 1024 * 1024 };
/** Below this a body goes out as it is (the app's compression threshold too). */
const COMPRESS_MIN_BYTES = 2048;
const utcDay = (date: Date): number => Math.floor(date.getTime() / 86_400_000);

/** The four unlock-risk routes: schema + price + one service call each. Existence is checked before payment. */
export const unlockRoutes: FastifyPluginAsyncTypebox<UnlockRoutesOptions> = async (app, opts) => {
  const of = opts.unlocksFor ?? (() => opts.unlocks);
  const clock = opts.clock ?? (() => new Date());
  const dataVersion = opts.dataVersion ?? (() => "static");
  const upcomingBodies = createResponseCache(UPCOMING_CACHE);
  const servedFromCache = new WeakMap<object, { generation: string; key: string; body: Buffer }>();

  app.get(
    OPERATIONS.upcoming.path,
    {
      schema: {
        tags: [TAG],
        summary: OPERATIONS.upcoming.summary,
        description: operationDescription(OPERATIONS.upcoming),
        querystring: UpcomingQuery,
        headers: UnlockPaymentHeaders,
        response: { 200: paid(UpcomingResponse), ...paidErrorResponses(PRICES.upcoming) },
        "x-payment-info": paymentInfo(PRICES.upcoming),
      },
      preHandler: [app.payments.guard(PRICES.upcoming)],
      // Runs after the payments hook (which settles and records the identity body) and before @fastify/compress,
      // which leaves a body that already has a Content-Encoding alone: the cached compressed copy goes out instead.
      onSend: async (request, reply, payload) => {
        const served = servedFromCache.get(request);
        if (!served || payload !== served.body || reply.statusCode !== 200) return payload;
        if (served.body.length < COMPRESS_MIN_BYTES) return payload;
        const encoding = precompressedEncoding(request, reply);
        if (!encoding) return payload;
        return upcomingBodies.get(served.generation, `${served.key}|${encoding}`, () =>
          compressBody(served.body, encoding),
        );
      },
    },
    async (request, reply) => {
      const { days, minRisk } = request.query;
      // The day is read before the body is built, so a body can only be newer than its key, never staler.
      const generation = `${dataVersion(request)}|${utcDay(clock())}`;
      const key = `${days}|${minRisk}`;
      // Kept as UTF-8 bytes: a socket writes a Buffer as it is, while a string of this size is encoded again on every
      // send (about 4× the CPU of the write for a 160 kB body, measured with autocannon against bare Fastify).
      const body = upcomingBodies.get(generation, key, () =>
        // The route's serializer (fast-json-stringify over the 200 schema) returns a string; the type is wider.
        Buffer.from(String(reply.serialize(of(request).upcoming(days, minRisk))), "utf8"),
      );
      servedFromCache.set(request, { generation, key, body });
      // A Buffer payload skips Fastify's serializer: reply.serialize above already applied the 200 schema.
      return reply.type("application/json; charset=utf-8").send(body);
    },
  );

  app.post(
    OPERATIONS.unlockRisk.path,
    {
      schema: {
        tags: [TAG],
        summary: OPERATIONS.unlockRisk.summary,
        description: operationDescription(OPERATIONS.unlockRisk),
        querystring: PaidQuery,
        headers: UnlockPaymentHeaders,
        body: UnlockRiskBody,
        response: { 200: paid(RiskItem), 404: notFoundResponse, ...paidErrorResponses(PRICES.unlockRisk) },
        "x-payment-info": paymentInfo(PRICES.unlockRisk),
      },
      preHandler: [
        async (request) => notFound(of(request), request.body.token, request.body.unlock_event_id),
        app.payments.guard(PRICES.unlockRisk),
      ],
    },
    async (request) => {
      const item = of(request).score(
        request.body.token,
        request.body.unlock_event_id,
        request.body.includeEvidence,
      );
      if (!request.body.includeEvidence || !opts.derivatives) return item;
      const d = opts.derivatives().get(item.token);
      if (!d) return { ...item, derivatives: null };
      const { token: _token, ...shown } = d;
      return { ...item, derivatives: shown };
    },
  );

  app.post(
    OPERATIONS.riskSummary.path,
    {
      schema: {
        tags: [TAG],
        summary: OPERATIONS.riskSummary.summary,
        description: operationDescription(OPERATIONS.riskSummary),
        querystring: PaidQuery,
        headers: UnlockPaymentHeaders,
        body: RiskSummaryBody,
        response: {
          200: paid(RiskSummary),
          404: notFoundResponse,
          ...paidErrorResponses(PRICES.riskSummary),
        },
        "x-payment-info": paymentInfo(PRICES.riskSummary),
      },
      preHandler: [
        async (request) => notFound(of(request), request.body.token),
        app.payments.guard(PRICES.riskSummary),
      ],
    },
    async (request) => of(request).summary(request.body.token, request.body.lookbackDays),
  );

  app.post(
    OPERATIONS.backtest.path,
    {
      schema: {
        tags: [TAG],
        summary: OPERATIONS.backtest.summary,
        description: operationDescription(OPERATIONS.backtest),
        querystring: PaidQuery,
        headers: UnlockPaymentHeaders,
        body: BacktestBody,
        response: {
          200: paid(BacktestResult),
          404: notFoundResponse,
          ...paidErrorResponses(PRICES.backtest),
          422: noReactionsResponse,
        },
        "x-payment-info": paymentInfo(PRICES.backtest),
      },
      preHandler: [
        async (request) => {
          notFound(of(request), request.body.token, request.body.unlock_event_id);
          measurable(of(request), request.body.token, request.body.unlock_event_id, request.body.windowDays);
        },
        app.payments.guard(PRICES.backtest),
      ],
    },
    async (request) =>
      of(request).backtest(request.body.token, request.body.unlock_event_id, request.body.windowDays),
  );
};
