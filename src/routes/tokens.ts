import { createHash } from "node:crypto";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyRequest } from "fastify";
import { type Static, Type } from "typebox";
import { type FreshnessSource, freshnessView } from "../refresh/freshness.js";
import { View } from "../schemas/unlocks.js";
import { TokensMapResponse } from "../schemas/unlocks-responses.js";
import { decimalString, type ReportedCirculating } from "../sources/coingecko/circulating.js";
import { type Derivatives, derivativesEvidence } from "../sources/derivatives/derivatives.js";
import { dayOf, formatDay, parseDay } from "../unlocks/data/dates.js";
import { latestMarketProvenance } from "../unlocks/market-context.js";
import type { UnlockService } from "../unlocks/service.js";
import { anchorOf, circulatingToday } from "../unlocks/supply.js";

export interface TokensRouteOptions {
  /** The unlock service a request is answered from (the generation pinned to it). */
  unlocksFor: (request: FastifyRequest) => UnlockService;
  freshness?: FreshnessSource | undefined;
  clock: () => Date;
}

/** How long a client or shared cache may reuse the list without asking (the refresh runs far less often). */
const CACHE_SECONDS = 300;

/** If-None-Match against a weak ETag: weak comparison (RFC 9110 §13.1.2), `*`, or any of a list. */
function matches(header: string | string[] | undefined, etag: string): boolean {
  if (header === undefined) return false;
  const opaque = etag.replace(/^W\//, "");
  return String(header)
    .split(",")
    .map((t) => t.trim())
    .some((t) => t === "*" || t.replace(/^W\//, "") === opaque);
}

const EMPTY: ReadonlyMap<string, never> = new Map<string, never>();

type TokenRows = Static<typeof TokensMapResponse>["tokens"];

interface TokenList {
  readonly tokens: TokenRows;
  /** A digest of the tokens' JSON: the weak ETag's part that only a refresh or a new day changes. */
  readonly digest: string;
}

interface Built extends TokenList {
  readonly reported: ReadonlyMap<string, ReportedCirculating>;
  readonly derivatives: ReadonlyMap<string, Derivatives>;
}

/**
 * The token rows depend only on the data generation (the service), the live reports and derivatives (each a new map
 * on every refresh that brings some), the UTC day and the view: built once per such set, not per request (about 12 ms
 * of CPU each on the shipped data, on a free route). The day is read before the rows are built, so a list can only be
 * newer than its key, never staler.
 */
const built = new WeakMap<UnlockService, Map<string, Built>>();

function tokenList(
  service: UnlockService,
  reported: ReadonlyMap<string, ReportedCirculating>,
  derivatives: ReadonlyMap<string, Derivatives>,
  today: number,
  full: boolean,
): TokenList {
  let lists = built.get(service);
  if (!lists) {
    lists = new Map();
    built.set(service, lists);
  }
  const key = `${today}|${full ? "full" : "compact"}`;
  const hit = lists.get(key);
  if (hit && hit.reported === reported && hit.derivatives === derivatives) return hit;
  const store = service.data();
  const tokens: TokenRows = store.tokens.map((t) => {
    const pieces = t.schedules;
    const starts = pieces.map((p) => p.start).sort();
    const ends = pieces.map((p) => p.end ?? p.start).sort();
    const reports = store.reports.get(t.symbol.toLowerCase());
    // The figure the paid summary states today, and the report it rests on: one story, free and paid.
    const fig = circulatingToday(t, reports, today);
    const anchor = fig.report;
    const live = anchor && anchor.source !== "coinmarketcap" ? reported.get(t.symbol) : undefined;
    const anchorAge = anchorOf(fig);
    const provenance = latestMarketProvenance(store, t);
    return {
      symbol: t.symbol,
      name: t.name,
      coingecko_id: t.coingecko_id,
      schedule_set: t.schedule_set ?? null,
      schedule: {
        pieces: pieces.length,
        complete: t.supply_schedule ? t.supply_schedule.complete : null,
        unevaluated_sections: t.supply_schedule?.unevaluated_sections.length ?? 0,
        first: starts[0] ?? null,
        last: ends[ends.length - 1] ?? null,
        as_of: store.snapshot.as_of,
      },
      market: {
        price_as_of: t.market.as_of,
        stale_days: today - parseDay(t.market.as_of),
        venue: t.market.venue ?? null,
        source_url: provenance.source_url,
        ...(full ? { source: t.market.source, segments: provenance.segments } : {}),
      },
      circulating_reported: anchor
        ? {
            circulating_supply: live?.circulating_supply ?? decimalString(anchor.value),
            source: anchor.source,
            coin_id: live?.coin_id ?? null,
            as_of: live?.as_of ?? anchor.date,
          }
        : null,
      supply: {
        as_of: fig.observedAt,
        source: fig.source,
        circulating: fig.value === null ? null : Math.round(fig.value * 100) / 100,
        circulating_rule: fig.rule,
        ...(full ? { method: fig.method } : {}),
        ...anchorAge,
      },
      derivatives: derivativesEvidence(derivatives.get(t.symbol)),
      next_unlock: service.nextUnlock(t.symbol),
    };
  });
  const list: Built = {
    tokens,
    digest: createHash("sha256").update(JSON.stringify(tokens)).digest("base64url"),
    reported,
    derivatives,
  };
  // One day and its two views at a time: an older day's lists are never asked again.
  for (const k of lists.keys()) if (!k.startsWith(`${today}|`)) lists.delete(k);
  lists.set(key, list);
  return list;
}

/**
 * GET /v1/tokens (free): what is covered and how fresh, so an agent knows before it pays. Lists every token with its
 * schedule's completeness, the day its price was observed and how old that is, its reported circulating supply with
 * source and as-of when one was fetched, and every source's refresh state.
 */
export const tokensRoutes: FastifyPluginAsyncTypebox<TokensRouteOptions> = async (app, opts) => {
  app.get(
    "/v1/tokens",
    {
      schema: {
        tags: ["unlocks"],
        summary:
          "Covered tokens, each with its next unlock, schedule completeness and per-source freshness (free)",
        description:
          "Free, rate-limited, no payment. Every token the unlock routes know, with its next unlock (date, event id, tokens, USD, % of circulating: the ids the paid routes take), its schedule's completeness, the candle day its price comes from (stale_days: how old), today's circulating supply and the report it is anchored on (source, as-of, anchor age), the URL, as-of and fetch time of each stretch of candles its price comes from, and each data source's last refresh. It changes only with a data refresh or the UTC day: a weak ETag (If-None-Match → 304) and Cache-Control say so. Compact by default; view=full adds each token's market segments and sources and how its circulating figure was obtained, in words.",
        querystring: Type.Object({ view: View }, { additionalProperties: false }),
        response: {
          200: TokensMapResponse,
          304: Type.Null({ description: "Not modified: the If-None-Match ETag is still current" }),
        },
      },
    },
    async (request, reply) => {
      const now = opts.clock();
      const today = dayOf(now);
      // The words and per-segment provenance are most of the bytes (three quarters of the full list); an agent asks
      // for them when it needs them.
      const full = request.query.view === "full";
      const service = opts.unlocksFor(request);
      const store = service.data();
      const reported = opts.freshness?.circulating() ?? EMPTY;
      const derivatives = opts.freshness?.derivatives?.() ?? EMPTY;
      const list = tokenList(service, reported, derivatives, today, full);
      const sources = freshnessView(opts.freshness, now);
      const body = {
        count: store.tokens.length,
        today: formatDay(today),
        schedules_as_of: store.snapshot.as_of,
        sources,
        tokens: list.tokens,
      };
      // Weak: the sources' age_seconds tick every second, yet the answer is the same until a refresh or a new day.
      const stable = sources.map(({ age_seconds: _age, ...s }) => s);
      const etag = `W/"${createHash("sha256")
        .update(list.digest)
        .update(JSON.stringify([body.count, body.today, body.schedules_as_of, stable]))
        .digest("base64url")
        .slice(0, 27)}"`;
      reply.header("etag", etag).header("cache-control", `public, max-age=${CACHE_SECONDS}`);
      if (matches(request.headers["if-none-match"], etag)) return reply.code(304).send(null);
      return body;
    },
  );
};
