import type { FastifyRequest } from "fastify";
import type { Static } from "typebox";
import { HttpProblem } from "../http/problem.js";
import type { BacktestBody, RiskSummaryBody, UnlockRiskBody, UpcomingQuery } from "../schemas/unlocks.js";
import type { Derivatives } from "../sources/derivatives/derivatives.js";
import type { UnlockService } from "../unlocks/service.js";
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

/** The four unlock operations: existence (and, for a backtest, something to measure) is checked before payment. */
export function unlockHandlers(opts: UnlockHandlerOptions): UnlockHandlers {
  const of = opts.unlocksFor;
  return {
    upcoming: {
      price: PRICES.upcoming,
      check: () => {},
      answer: ({ days, minRisk }, request) => of(request).upcoming(days, minRisk),
    },
    unlockRisk: {
      price: PRICES.unlockRisk,
      check: (body, request) => known(of(request), body.token, body.unlock_event_id),
      answer: (body, request) => {
        const item = of(request).score(body.token, body.unlock_event_id, body.includeEvidence);
        if (!body.includeEvidence || !opts.derivatives) return item;
        const d = opts.derivatives().get(item.token);
        if (!d) return { ...item, derivatives: null };
        const { token: _token, ...shown } = d;
        return { ...item, derivatives: shown };
      },
    },
    riskSummary: {
      price: PRICES.riskSummary,
      check: (body, request) => known(of(request), body.token),
      answer: (body, request) => of(request).summary(body.token, body.lookbackDays),
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
      answer: (body, request) => of(request).backtest(body.token, body.unlock_event_id, body.windowDays),
    },
  };
}
