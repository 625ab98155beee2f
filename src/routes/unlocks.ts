import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { HttpProblem } from "../http/problem.js";
import { PaidQuery, UnlockPaymentHeaders } from "../schemas/common.js";
import { BacktestBody, RiskSummaryBody, UnlockRiskBody, UpcomingQuery } from "../schemas/unlocks.js";
import { BacktestResult, RiskItem, RiskSummary, UpcomingResponse } from "../schemas/unlocks-responses.js";
import type { UnlockService } from "../unlocks/service.js";
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

/** The four unlock-risk routes: schema + price + one service call each. Existence is checked before payment. */
export const unlockRoutes: FastifyPluginAsyncTypebox<{ unlocks: UnlockService }> = async (
  app,
  { unlocks },
) => {
  app.get(
    "/v1/unlocks/upcoming",
    {
      schema: {
        tags: [TAG],
        summary: "Upcoming unlock events with modelled risk",
        description: "Price per call: 0.02 USD (x402, USDC on Base).",
        querystring: UpcomingQuery,
        headers: UnlockPaymentHeaders,
        response: { 200: paid(UpcomingResponse), ...paidErrorResponses(PRICES.upcoming) },
        "x-payment-info": paymentInfo(PRICES.upcoming),
      },
      preHandler: [app.payments.guard(PRICES.upcoming)],
    },
    async (request) => unlocks.upcoming(request.query.days, request.query.minRisk),
  );

  app.post(
    "/v1/unlock-risk",
    {
      schema: {
        tags: [TAG],
        summary: "Score one unlock event, with its evidence",
        description: "Price per call: 0.10 USD. Unknown token or event: 404, before any payment.",
        querystring: PaidQuery,
        headers: UnlockPaymentHeaders,
        body: UnlockRiskBody,
        response: { 200: paid(RiskItem), 404: notFoundResponse, ...paidErrorResponses(PRICES.unlockRisk) },
        "x-payment-info": paymentInfo(PRICES.unlockRisk),
      },
      preHandler: [
        async (request) => notFound(unlocks, request.body.token, request.body.unlock_event_id),
        app.payments.guard(PRICES.unlockRisk),
      ],
    },
    async (request) =>
      unlocks.score(request.body.token, request.body.unlock_event_id, request.body.includeEvidence),
  );

  app.post(
    "/v1/token/risk-summary",
    {
      schema: {
        tags: [TAG],
        summary: "Token-level unlock risk over a window",
        description: "Price per call: 0.25 USD. Unknown token: 404, before any payment.",
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
        async (request) => notFound(unlocks, request.body.token),
        app.payments.guard(PRICES.riskSummary),
      ],
    },
    async (request) => unlocks.summary(request.body.token, request.body.lookbackDays),
  );

  app.post(
    "/v1/unlock/backtest",
    {
      schema: {
        tags: [TAG],
        summary: "Historical post-unlock market reactions for one event",
        description:
          "Price per call: 0.50 USD. Unknown token or event: 404; no measurable reaction on any basis: 422 — both before any payment.",
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
          notFound(unlocks, request.body.token, request.body.unlock_event_id);
          measurable(unlocks, request.body.token, request.body.unlock_event_id, request.body.windowDays);
        },
        app.payments.guard(PRICES.backtest),
      ],
    },
    async (request) =>
      unlocks.backtest(request.body.token, request.body.unlock_event_id, request.body.windowDays),
  );
};
