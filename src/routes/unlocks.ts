import type { FastifyRequest } from "fastify";
import { compressBody, precompressedEncoding } from "../http/encoding.js";
import { createResponseCache } from "../http/response-cache.js";
import { DEFAULT_UPCOMING_LIMIT, UpcomingQuery } from "../schemas/unlocks.js";
import type { AnswerBody } from "./paid.js";

export interface UpcomingBodyOptions {
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

/** How GET /v1/unlocks/upcoming sends its answer: one serialized (and compressed) body per data, UTC day and query. */
export function upcomingAnswerBody(opts: UpcomingBodyOptions = {}): AnswerBody {
  const clock = opts.clock ?? (() => new Date());
  const dataVersion = opts.dataVersion ?? (() => "static");
  const upcomingBodies = createResponseCache(UPCOMING_CACHE);
  const servedFromCache = new WeakMap<object, { generation: string; key: string; body: Buffer }>();
  return {
    // Runs after the payments hook (which settles and records the identity body) and before @fastify/compress,
    // which leaves a body that already has a Content-Encoding alone: the cached compressed copy goes out instead.
    // A callback hook (the work is synchronous): an async one would make every 402 of the route wait a promise.
    onSend: (request, reply, payload, done) => {
      // The status first: every PaymentRequired of the route passes here too, and it is the cheaper test.
      if (reply.statusCode !== 200) return done(null, payload);
      const served = servedFromCache.get(request);
      if (!served || payload !== served.body) return done(null, payload);
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
    send: async (request, reply, handler) => {
      const { pp_ref: _ref, ...given } = request.query as { pp_ref?: string } & Record<string, unknown>;
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
        Buffer.from(String(reply.serialize(handler.answer(query as never, request))), "utf8"),
      );
      servedFromCache.set(request, { generation, key, body });
      // A Buffer payload skips Fastify's serializer: reply.serialize above already applied the 200 schema.
      return reply.type("application/json; charset=utf-8").send(body);
    },
  };
}
