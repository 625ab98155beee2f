import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyRequest, FastifyTypeProviderDefault } from "fastify";
import type { PaymentNetwork } from "../chain/networks.js";
import { compressBody, precompressedEncoding } from "../http/encoding.js";
import { createResponseCache } from "../http/response-cache.js";
import type { PaidHandler } from "../operations/handler.js";
import { PRICES, paymentInfo } from "../operations/prices.js";
import { OPERATIONS, operationDescription } from "../operations/table.js";
import type { UnlockHandlers } from "../operations/unlocks.js";
import { PaidQuery, UnlockPaymentHeaders } from "../schemas/common.js";
import { DEFAULT_UPCOMING_LIMIT, UpcomingQuery } from "../schemas/unlocks.js";
import { UpcomingResponse } from "../schemas/unlocks-responses.js";
import { notFoundResponse, paid, paidErrorResponses, problem } from "./responses.js";

const TAG = "unlocks";

/** Replaces the shared 422 entry on the backtest route: both causes are listed. */
const noReactionsResponse = problem(
  "No measurable market reaction for this backtest (checked before any payment request), or Idempotency-Key reused with a different request or proof",
);

export interface UnlockRoutesOptions {
  /** The four operations' checks and answers (see src/operations/unlocks.ts). */
  handlers: UnlockHandlers;
  /** The network the 402 asks payment on, stated in each operation's `x-payment-info`. */
  network: PaymentNetwork;
  /** Decides the UTC day the cached upcoming bodies belong to; must agree with the service's own clock. */
  clock?: () => Date;
  /** Changes whenever the unlock data behind the service changes (a refresh); the shipped snapshot never does. */
  dataVersion?: (request: FastifyRequest) => string;
}

// The upcoming list depends only on (data, UTC day, query): its body is serialized (and compressed, per encoding) once
// and reused. 64 MiB of bodies at most (a 365-day window over a 100k-event store is about 16 MB before compression).
const UPCOMING_CACHE = { maxEntries: 256, maxUnits: 64 * 1024 * 1024 };
/** Below this a body goes out as it is (the app's compression threshold too). */
const COMPRESS_MIN_BYTES = 2048;
const QUERY_FIELDS = Object.keys(UpcomingQuery.properties).filter((k) => k !== "pp_ref");
const utcDay = (date: Date): number => Math.floor(date.getTime() / 86_400_000);

/** The four unlock-risk routes: schema + price + one service call each. Existence is checked before payment. */
export const unlockRoutes: FastifyPluginAsyncTypebox<UnlockRoutesOptions> = async (app, opts) => {
  const { handlers } = opts;
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
        "x-payment-info": paymentInfo(PRICES.upcoming, opts.network),
      },
      preHandler: [
        async (request) => handlers.upcoming.check(request.query, request),
        app.payments.guard(handlers.upcoming.price),
      ],
      // Runs after the payments hook (which settles and records the identity body) and before @fastify/compress,
      // which leaves a body that already has a Content-Encoding alone: the cached compressed copy goes out instead.
      // A callback hook (the work is synchronous): an async one would make every 402 of the route wait a promise.
      onSend: (request, reply, payload, done) => {
        const served = servedFromCache.get(request);
        if (!served || payload !== served.body || reply.statusCode !== 200) return done(null, payload);
        if (served.body.length < COMPRESS_MIN_BYTES) return done(null, payload);
        const encoding = precompressedEncoding(request, reply);
        if (!encoding) return done(null, payload);
        done(
          null,
          upcomingBodies.get(served.generation, `${served.key}|${encoding}`, () =>
            compressBody(served.body, encoding),
          ),
        );
      },
    },
    async (request, reply) => {
      const { pp_ref: _ref, ...given } = request.query;
      // Absent and spelt-out defaults are the same query (one cache entry, one answer).
      const query = {
        ...given,
        sort: given.sort ?? "date",
        limit: given.limit ?? DEFAULT_UPCOMING_LIMIT,
        view: given.view ?? "compact",
      };
      // The day is read before the body is built, so a body can only be newer than its key, never staler.
      const generation = `${dataVersion(request)}|${utcDay(clock())}`;
      // Every field but the attribution tag shapes the answer; read in the schema's order, whatever the client's.
      const key = JSON.stringify(QUERY_FIELDS.map((k) => (query as Record<string, unknown>)[k] ?? null));
      // Kept as UTF-8 bytes: a socket writes a Buffer as it is, while a string of this size is encoded again on every
      // send (about 4× the CPU of the write for a 160 kB body, measured with autocannon against bare Fastify).
      const body = upcomingBodies.get(generation, key, () =>
        // The route's serializer (fast-json-stringify over the 200 schema) returns a string; the type is wider.
        Buffer.from(String(reply.serialize(handlers.upcoming.answer(query, request))), "utf8"),
      );
      servedFromCache.set(request, { generation, key, body });
      // A Buffer payload skips Fastify's serializer: reply.serialize above already applied the 200 schema.
      return reply.type("application/json; charset=utf-8").send(body);
    },
  );

  /**
   * A POST operation of the table: its body and result schemas, price texts and terms, its check before the payments
   * guard and its answer after it. `responses`: the statuses besides the paid ones its check can answer.
   */
  function postOperation(key: "unlockRisk" | "riskSummary" | "backtest", responses: Record<number, unknown>) {
    const op = OPERATIONS[key];
    const handler = handlers[key] as PaidHandler<unknown>;
    // Typed by the operation's handler (it takes the body this schema validates): a union of the three operations'
    // schema types could not name one handler's input.
    app.withTypeProvider<FastifyTypeProviderDefault>().post(
      op.path,
      {
        schema: {
          tags: [TAG],
          summary: op.summary,
          description: operationDescription(op),
          querystring: PaidQuery,
          headers: UnlockPaymentHeaders,
          body: op.inputSchema,
          response: { 200: paid(op.outputSchema), ...responses },
          "x-payment-info": paymentInfo(PRICES[key], opts.network),
        },
        preHandler: [
          async (request) => handler.check(request.body, request),
          app.payments.guard(handler.price),
        ],
      },
      async (request) => handler.answer(request.body, request),
    );
  }

  postOperation("unlockRisk", { 404: notFoundResponse, ...paidErrorResponses(PRICES.unlockRisk) });
  postOperation("riskSummary", { 404: notFoundResponse, ...paidErrorResponses(PRICES.riskSummary) });
  postOperation("backtest", {
    404: notFoundResponse,
    ...paidErrorResponses(PRICES.backtest),
    422: noReactionsResponse,
  });
};
