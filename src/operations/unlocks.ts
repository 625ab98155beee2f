import { createHash } from "node:crypto";
import type { FastifyRequest } from "fastify";
import type { Static } from "typebox";
import { HttpProblem } from "../http/problem.js";
import {
  type BacktestBody,
  DEFAULT_UPCOMING_LIMIT,
  MAX_FILTER_TOKENS,
  type RiskSummaryBody,
  type UnlockRiskBody,
  type UpcomingQuery,
} from "../schemas/unlocks.js";
import { type Derivatives, derivativesEvidence } from "../sources/derivatives/derivatives.js";
import type { RecipientCategory } from "../unlocks/data/types.js";
import type { UnlockService, UpcomingFilter } from "../unlocks/service.js";
import { backtestView, riskView, summaryView, upcomingView } from "../unlocks/views.js";
import type { PaidHandler } from "./handler.js";
import { PRICES } from "./prices.js";

export interface UnlockHandlerOptions {
  /** The service a call is answered from: the data generation pinned to its request on arrival. */
  unlocksFor: (request: FastifyRequest) => UnlockService;
  /** The refresh's latest funding and open-interest figures per token (evidence only); absent when not refreshed. */
  derivatives?: (() => ReadonlyMap<string, Derivatives>) | undefined;
}

export interface UnlockHandlers {
  upcoming: PaidHandler<Static<typeof UpcomingQuery>>;
  unlockRisk: PaidHandler<Static<typeof UnlockRiskBody>>;
  riskSummary: PaidHandler<Static<typeof RiskSummaryBody>>;
  backtest: PaidHandler<Static<typeof BacktestBody>>;
}

function known(service: UnlockService, token: string, eventId?: string): void {
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
}

type Upcoming = Static<typeof UpcomingQuery>;

const tokensOf = (q: Upcoming): string[] =>
  q.tokens === undefined ? [] : [...new Set(q.tokens.split(",").map((s) => s.toLowerCase()))].sort();

/**
 * A cursor is the next page's offset bound to what the list was cut from: the query (but `limit`, `cursor`, `view`
 * and `pp_ref`), the UTC day and the schedule data's date. Another query, day or data would page a different list, so
 * it is refused rather than silently skipping or repeating items.
 */
function fingerprint(service: UnlockService, q: Upcoming): string {
  const basis = [
    service.today(),
    service.data().snapshot.as_of,
    q.days,
    q.minRisk,
    q.minUsd ?? null,
    q.minPctCirculating ?? null,
    tokensOf(q),
    q.category ?? null,
    q.type ?? null,
    q.sort ?? "date",
  ];
  return createHash("sha256").update(JSON.stringify(basis)).digest("hex").slice(0, 16);
}

const cursorFor = (service: UnlockService, q: Upcoming, offset: number): string =>
  `${offset}_${fingerprint(service, q)}`;

/** The offset a cursor stands for, or null when it was not issued for this query, day and data. */
function offsetOf(service: UnlockService, q: Upcoming, cursor: string): number | null {
  const m = /^(\d{1,9})_([0-9a-f]{16})$/.exec(cursor);
  return m && m[2] === fingerprint(service, q) ? Number(m[1]) : null;
}

const badQuery = (pointer: string, detail: string) =>
  new HttpProblem(400, "invalid-request", detail, {}, { errors: [{ in: "query", pointer, detail }] });

function upcomingFilter(service: UnlockService, q: Upcoming): UpcomingFilter {
  const tokens = tokensOf(q);
  return {
    minUsd: q.minUsd,
    minPctCirculating: q.minPctCirculating,
    tokens: tokens.length > 0 ? tokens : undefined,
    category: q.category as RecipientCategory | undefined,
    type: q.type,
    sort: q.sort ?? "date",
    limit: q.limit ?? DEFAULT_UPCOMING_LIMIT,
    offset: q.cursor === undefined ? 0 : (offsetOf(service, q, q.cursor) ?? 0),
  };
}

/** The four unlock operations: existence (and, for a backtest, something to measure) is checked before payment. */
export function unlockHandlers(opts: UnlockHandlerOptions): UnlockHandlers {
  const of = opts.unlocksFor;
  return {
    upcoming: {
      price: PRICES.upcoming,
      // What the schema cannot know: the symbols must be covered, the cursor issued for this very list.
      check: (q, request) => {
        const service = of(request);
        const symbols = q.tokens?.split(",") ?? [];
        if (symbols.length > MAX_FILTER_TOKENS || symbols.some((t) => !/^[A-Za-z0-9._-]{1,64}$/.test(t)))
          throw badQuery(
            "/tokens",
            `tokens takes 1 to ${MAX_FILTER_TOKENS} symbols (1 to 64 letters, digits, '.', '_' or '-'), separated by commas.`,
          );
        const unknown = tokensOf(q).filter((t) => !service.hasToken(t));
        if (unknown.length > 0)
          throw badQuery(
            "/tokens",
            `No unlock schedule is known for ${unknown.slice(0, 5).join(", ").toUpperCase()} (GET /v1/tokens lists the covered tokens).`,
          );
        if (q.cursor !== undefined && offsetOf(service, q, q.cursor) === null)
          throw badQuery(
            "/cursor",
            "This cursor was not issued for this query, UTC day and data; start again without a cursor.",
          );
      },
      answer: (q, request) => {
        const service = of(request);
        const list = service.upcoming(q.days, q.minRisk, upcomingFilter(service, q));
        const next = list.next_offset === null ? null : cursorFor(service, q, list.next_offset);
        return upcomingView(list, q.view ?? "compact", next);
      },
    },
    unlockRisk: {
      price: PRICES.unlockRisk,
      check: (body, request) => known(of(request), body.token, body.unlock_event_id),
      answer: (body, request) => {
        const item = of(request).score(body.token, body.unlock_event_id, body.includeEvidence);
        if (!body.includeEvidence || !opts.derivatives) return riskView(item, body.view ?? "compact");
        return riskView(
          item,
          body.view ?? "compact",
          derivativesEvidence(opts.derivatives().get(item.token)),
        );
      },
    },
    riskSummary: {
      price: PRICES.riskSummary,
      check: (body, request) => known(of(request), body.token),
      answer: (body, request) =>
        summaryView(of(request).summary(body.token, body.lookbackDays), body.view ?? "compact"),
    },
    backtest: {
      price: PRICES.backtest,
      check: (body, request) => {
        const service = of(request);
        known(service, body.token, body.unlock_event_id);
        // Nobody pays for an empty answer.
        const reason = service.backtestRefusal(body.token, body.unlock_event_id, body.windowDays);
        if (reason !== null) throw new HttpProblem(422, "no-measurable-reactions", reason);
      },
      answer: (body, request) =>
        backtestView(
          of(request).backtest(body.token, body.unlock_event_id, body.windowDays),
          body.view ?? "compact",
        ),
    },
  };
}
