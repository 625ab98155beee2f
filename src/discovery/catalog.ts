import type { TObject } from "typebox";
import { BenchmarkBody } from "../schemas/benchmark.js";
import { BenchmarkResult } from "../schemas/benchmark-response.js";
import { BacktestBody, RiskSummaryBody, UnlockRiskBody, UpcomingQuery } from "../schemas/unlocks.js";
import { BacktestResult, RiskItem, RiskSummary, UpcomingResponse } from "../schemas/unlocks-responses.js";
import { EXAMPLES } from "./examples.generated.js";

/**
 * What an agent or a Bazaar needs to know about each paid route, in one place: the same TypeBox schemas that validate
 * requests and describe responses, an input example and a real output example (see scripts/discovery-examples.ts).
 * Listed in the order an agent would usually call them.
 */
export interface DiscoverableRoute {
  /** "GET /v1/unlocks/upcoming": the same id as the route's price entry. */
  route: string;
  method: "GET" | "POST";
  path: string;
  operationId: string;
  /** One line an agent can act on: what the route answers and when to call it. */
  answers: string;
  /** Query string (GET) or JSON body (POST). */
  inputIn: "query" | "body";
  inputSchema: TObject;
  outputSchema: TObject;
  inputExample: Record<string, unknown>;
  outputExample: Record<string, unknown>;
  /**
   * The fields of `outputExample` the 402's Bazaar extension shows (its compact output example): the answer's headline,
   * so PAYMENT-REQUIRED fits a 4 KiB proxy buffer. The full example and schema are in the OpenAPI document.
   */
  outputHeadline: FieldMask;
}

/** Fields kept from a JSON value: `true` keeps a field whole; a nested mask keeps those fields of an object (or of an array's first item). */
export interface FieldMask {
  readonly [field: string]: true | FieldMask;
}

export const DISCOVERABLE: readonly DiscoverableRoute[] = [
  {
    route: "GET /v1/unlocks/upcoming",
    method: "GET",
    path: "/v1/unlocks/upcoming",
    operationId: "listUpcomingUnlocks",
    answers:
      "Which token unlocks are scheduled in the next `days` days (default 30) with a modelled sell-pressure risk of at least `minRisk` (0-100), sorted by date. Call it first: it returns the `unlock_event_id` values the other unlock routes take.",
    inputIn: "query",
    inputSchema: UpcomingQuery,
    outputSchema: UpcomingResponse,
    inputExample: EXAMPLES.upcoming.input,
    outputExample: EXAMPLES.upcoming.output,
    outputHeadline: {
      days: true,
      minRisk: true,
      count: true,
      as_of: true,
      unlocks: { token: true, unlock_event_id: true, unlock_date: true, risk_score: true, risk_level: true },
    },
  },
  {
    route: "POST /v1/unlock-risk",
    method: "POST",
    path: "/v1/unlock-risk",
    operationId: "scoreUnlockEvent",
    answers:
      "The risk score (0-100) and level of one unlock event, with one evidence record per model factor (unlock size, absorption, order-book depth, recipients, unlock type, source confidence). Call it for an event id from the upcoming list.",
    inputIn: "body",
    inputSchema: UnlockRiskBody,
    outputSchema: RiskItem,
    inputExample: EXAMPLES.unlockRisk.input,
    outputExample: EXAMPLES.unlockRisk.output,
    outputHeadline: {
      token: true,
      unlock_event_id: true,
      unlock_date: true,
      risk_score: true,
      risk_level: true,
      amount_usd: true,
      evidence: { factor: true, contribution: true },
    },
  },
  {
    route: "POST /v1/token/risk-summary",
    method: "POST",
    path: "/v1/token/risk-summary",
    operationId: "summarizeTokenRisk",
    answers:
      "A token's unlock risk over the next `lookbackDays` days (default 90): number of events, highest score and level, tokens and USD unlocking, share of supply, top events and the next unlock. Call it to compare tokens.",
    inputIn: "body",
    inputSchema: RiskSummaryBody,
    outputSchema: RiskSummary,
    inputExample: EXAMPLES.riskSummary.input,
    outputExample: EXAMPLES.riskSummary.output,
    outputHeadline: {
      token: true,
      windowDays: true,
      eventCount: true,
      maxRiskScore: true,
      riskLevel: true,
      usd_unlocking: true,
      next_unlock: { unlock_event_id: true, unlock_date: true, risk_score: true },
    },
  },
  {
    route: "POST /v1/unlock/backtest",
    method: "POST",
    path: "/v1/unlock/backtest",
    operationId: "backtestUnlockEvent",
    answers:
      "How the market reacted after past unlocks comparable to one event, over `windowDays` days (default 14). Call it last, to check the score of an event against history.",
    inputIn: "body",
    inputSchema: BacktestBody,
    outputSchema: BacktestResult,
    inputExample: EXAMPLES.backtest.input,
    outputExample: EXAMPLES.backtest.output,
    outputHeadline: {
      token: true,
      unlock_event_id: true,
      windowDays: true,
      summary: { sample_size: true, median_abnormal_return_pct: true },
    },
  },
  {
    route: "POST /v1/benchmark/endpoint",
    method: "POST",
    path: "/v1/benchmark/endpoint",
    operationId: "benchmarkEndpointPrice",
    answers:
      "Where a third-party x402 endpoint's price sits among comparable paid endpoints (percentile, median, alternatives), how busy that market is and how confident the benchmark is. Independent of the unlock routes. x402 v2 only.",
    inputIn: "body",
    inputSchema: BenchmarkBody,
    outputSchema: BenchmarkResult,
    inputExample: EXAMPLES.benchmark.input,
    outputExample: EXAMPLES.benchmark.output,
    outputHeadline: {
      route: { method: true, price: true, confidence: true },
      market: { median: true },
      price_percentile: true,
      price_position: true,
      decision: true,
    },
  },
];

export function discoverable(route: string): DiscoverableRoute {
  const found = DISCOVERABLE.find((d) => d.route === route);
  if (!found) throw new Error(`no discovery entry for ${route}`);
  return found;
}
