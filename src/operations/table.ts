import type { TObject } from "typebox";
import { EXAMPLES } from "../discovery/examples.generated.js";
import { formatUsdc } from "../chain/usdc.js";
import { BenchmarkBody } from "../schemas/benchmark.js";
import { BenchmarkResult } from "../schemas/benchmark-response.js";
import { BacktestBody, RiskSummaryBody, UnlockRiskBody, UpcomingQuery } from "../schemas/unlocks.js";
import { BacktestResult, RiskItem, RiskSummary, UpcomingResponse } from "../schemas/unlocks-responses.js";

/** Fields kept from a JSON value: `true` keeps a field whole; a nested mask keeps those fields of an object (or of an array's first item). */
export interface FieldMask {
  readonly [field: string]: true | FieldMask;
}

/**
 * One paid operation, written once: its price and terms, what the OpenAPI document, the 402's discovery metadata,
 * /.well-known/x402, llms.txt and the MCP tool list say about it. Everything else derives from this table.
 */
export interface PaidOperation {
  method: "GET" | "POST";
  path: string;
  /** "GET /v1/unlocks/upcoming": the receipts' route id. */
  route: string;
  /** Price in USDC atomic units (6 decimals), as a decimal string. */
  amount: string;
  /** One line for the 402 (`resource.description`) and the price list. */
  description: string;
  /** v2 `resource.tags`. */
  tags: readonly string[];
  /** Whether the route also takes x402 v1 proofs. */
  acceptsV1: boolean;
  operationId: string;
  /** OpenAPI `summary`. */
  summary: string;
  /** OpenAPI `description` after the price sentence (it starts with its own punctuation). */
  note: string;
  /** One line an agent can act on: what the route answers and when to call it. */
  answers: string;
  /** Query string (GET) or JSON body (POST). */
  inputIn: "query" | "body";
  inputSchema: TObject;
  outputSchema: TObject;
  /** A request a client would send, answered before the payment at the examples' date (`npm run discovery:examples`). */
  inputExample: Record<string, unknown>;
  /** The operation's real answer to `inputExample`, as `npm run discovery:examples` computed it. */
  outputExample: Record<string, unknown>;
  /**
   * The fields of `outputExample` the 402's Bazaar extension shows (its compact output example): the answer's headline,
   * so PAYMENT-REQUIRED fits a 4 KiB proxy buffer. The full example and schema are in the OpenAPI document.
   */
  outputHeadline: FieldMask;
  /** The operation as an MCP tool; its description gets the price appended. */
  mcp: { name: string; title: string; description: string };
  /** The OpenAPI tag the route is listed under. */
  openapiTag: "unlocks" | "benchmark";
  /**
   * The statuses the operation's check answers before any payment, beyond those every paid route documents (an entry
   * here replaces the shared one of its status), with their OpenAPI descriptions.
   */
  refusals?: Readonly<Record<number, string>>;
  /** The route states `x-provisional`: whether it is offered under capped provisional x402 metadata. */
  provisional?: boolean;
}

type Entry = Omit<PaidOperation, "route" | "outputExample">;

/** A price for people: at least two decimals ("0.10"), from the atomic amount. */
export function usdText(amount: string): string {
  const usd = formatUsdc(amount);
  const [whole, frac = ""] = usd.split(".");
  return `${whole}.${frac.padEnd(2, "0")}`;
}

/** The OpenAPI `description` of a paid operation: its price, then its note. */
export const operationDescription = (op: PaidOperation): string =>
  `Price per call: ${usdText(op.amount)} USD${op.note}`;

const ENTRIES = {
  upcoming: {
    method: "GET",
    path: "/v1/unlocks/upcoming",
    amount: "20000",
    description: "Upcoming token unlock events with modelled sell-pressure risk",
    tags: ["unlocks", "token-risk", "crypto"],
    acceptsV1: true,
    operationId: "listUpcomingUnlocks",
    summary: "Upcoming unlock events with modelled risk",
    note: " (x402, USDC on Base).",
    answers:
      "Which token unlocks release tokens in the next `days` days (default 30), one compact row per event (date, tokens, USD, % of circulating supply, risk score, short codes; repeated prose once in `legend`; `view=full` for the detail). Filters: `minRisk`, `minUsd`, `minPctCirculating`, `tokens`, `category`, `type`; `sort` date|usd|pct_circulating|risk; `limit` and `cursor` page. Call it first: it returns the `unlock_event_id` values the other unlock routes take (GET /v1/tokens, free, gives each token's next one).",
    inputIn: "query",
    inputSchema: UpcomingQuery,
    outputSchema: UpcomingResponse,
    inputExample: { days: 30, minRisk: 50 },
    outputHeadline: {
      unlocks: { unlock_event_id: true, date: true, risk_score: true },
    },
    mcp: {
      name: "unlocks_upcoming",
      title: "Upcoming token unlocks with modelled risk",
      description:
        "Token unlocks releasing from today through today + days (UTC): one compact row per event (date, tokens, USD, % circulating, risk score, codes explained once in legend), filtered by minRisk, minUsd, minPctCirculating, tokens, category, type; sorted by date, usd, pct_circulating or risk; paged by limit and cursor; view=full adds each item's detail. The text result is a short summary; the whole answer is in structuredContent.",
    },
    openapiTag: "unlocks",
  },
  unlockRisk: {
    method: "POST",
    path: "/v1/unlock-risk",
    amount: "100000",
    description: "Risk score of one unlock event with its evidence",
    tags: ["unlocks", "token-risk", "crypto"],
    acceptsV1: true,
    operationId: "scoreUnlockEvent",
    summary: "Score one unlock event, with its evidence",
    note: ". Unknown token or event: 404, before any payment.",
    answers:
      "The risk score (0-100) of one unlock event, with one evidence record per model factor (unlock size, absorption, order-book depth, recipients, unlock type, source confidence); `view=full` adds its market figures, supply coverage and recipients. Call it for an event id from the upcoming list.",
    inputIn: "body",
    inputSchema: UnlockRiskBody,
    outputSchema: RiskItem,
    inputExample: { token: "ARB", unlock_event_id: "unlock_arb_2026_11_01", includeEvidence: true },
    outputHeadline: {
      token: true,
      unlock_event_id: true,
      date: true,
      risk_score: true,
      amount_usd: true,
      evidence: { factor: true, contribution: true },
    },
    mcp: {
      name: "unlock_risk",
      title: "Score one unlock event",
      description:
        "Risk score of one unlock event (ids from unlocks_upcoming) with one evidence record per model factor. Unknown token or event: an error result before any payment.",
    },
    openapiTag: "unlocks",
    refusals: { 404: "Unknown token or unlock event (checked before any payment request)" },
  },
  riskSummary: {
    method: "POST",
    path: "/v1/token/risk-summary",
    amount: "250000",
    description: "Token-level unlock risk summary over a window",
    tags: ["unlocks", "token-risk", "crypto"],
    acceptsV1: true,
    operationId: "summarizeTokenRisk",
    summary: "Token-level unlock risk over a window",
    note: ". Unknown token: 404, before any payment.",
    answers:
      "A token's unlock risk over the next `lookbackDays` days (default 90): number of events, highest score and its size band, tokens and USD unlocking, share of supply, top events and the next unlock; `view=full` adds the supply coverage and market figures. Call it to compare tokens.",
    inputIn: "body",
    inputSchema: RiskSummaryBody,
    outputSchema: RiskSummary,
    inputExample: { token: "ARB", lookbackDays: 90 },
    outputHeadline: {
      token: true,
      windowDays: true,
      eventCount: true,
      maxRiskScore: true,
      usd_unlocking: true,
      next_unlock: { unlock_event_id: true, date: true, risk_score: true },
    },
    mcp: {
      name: "token_risk_summary",
      title: "Token unlock risk over a window",
      description:
        "A token's scheduled unlocks from today through today + lookbackDays: count, highest risk, totals by recipient, top events and the next unlock.",
    },
    openapiTag: "unlocks",
    refusals: { 404: "Unknown token or unlock event (checked before any payment request)" },
  },
  backtest: {
    method: "POST",
    path: "/v1/unlock/backtest",
    amount: "500000",
    description: "Historical post-unlock market reactions for one unlock event",
    tags: ["unlocks", "backtest", "crypto"],
    acceptsV1: true,
    operationId: "backtestUnlockEvent",
    summary: "Historical post-unlock market reactions for one event",
    note: ". Unknown token or event: 404; no measurable reaction on any basis: 422 — both before any payment.",
    answers:
      "How the market reacted after past unlocks comparable to one event, over `windowDays` days (default 14); `view=full` adds the price sources. Call it last, to check the score of an event against history.",
    inputIn: "body",
    inputSchema: BacktestBody,
    outputSchema: BacktestResult,
    inputExample: { token: "ARB", unlock_event_id: "unlock_arb_2026_11_01", windowDays: 14 },
    outputHeadline: {
      token: true,
      unlock_event_id: true,
      windowDays: true,
      summary: { sample_size: true, median_abnormal_return_pct: true },
    },
    mcp: {
      name: "unlock_backtest",
      title: "Market reactions after past unlocks",
      description:
        "How the market reacted after a token's past unlocks, for one unlock event, over windowDays.",
    },
    openapiTag: "unlocks",
    refusals: {
      404: "Unknown token or unlock event (checked before any payment request)",
      // Both causes: the shared entry says only the second.
      422: "No measurable market reaction for this backtest (checked before any payment request), or Idempotency-Key reused with a different request or proof",
    },
  },
  benchmark: {
    method: "POST",
    path: "/v1/benchmark/endpoint",
    amount: "50000",
    description: "x402 market price benchmark for an endpoint URL",
    tags: ["x402", "pricing", "benchmark"],
    acceptsV1: false,
    operationId: "benchmarkEndpointPrice",
    summary: "x402 market price benchmark for an endpoint URL (provisional)",
    note:
      ". Available through capped provisional x402 metadata: at most " +
      "BENCHMARK_PROVISIONAL_CAP paid calls per UTC day; past the cap, 503 before any payment request.",
    answers:
      "Where a third-party x402 endpoint's price sits among comparable paid endpoints (percentile, median, alternatives), how busy that market is and how confident the benchmark is. Independent of the unlock routes. x402 v2 only.",
    inputIn: "body",
    inputSchema: BenchmarkBody,
    outputSchema: BenchmarkResult,
    inputExample: { endpoint_url: "https://2s.io/api/crypto/token-price", category_hint: "data" },
    outputHeadline: {
      route: { method: true, price: true, confidence: true },
      market: { median: true },
      price_percentile: true,
      price_position: true,
      decision: true,
    },
    mcp: {
      name: "benchmark_endpoint",
      title: "x402 endpoint price benchmark",
      description:
        "Where a third-party x402 endpoint's price sits among comparable paid endpoints, how busy that market is, and how confident the estimate is (provisional, daily cap).",
    },
    openapiTag: "benchmark",
    provisional: true,
  },
} as const satisfies Record<string, Entry>;

export type OperationKey = keyof typeof ENTRIES;

/** Every paid operation by key, in the order an agent would usually call them. */
export const OPERATIONS = Object.fromEntries(
  Object.entries(ENTRIES).map(([key, e]) => [
    key,
    // A new operation has no example until `npm run discovery:examples` writes it (the discovery tests fail meanwhile).
    { ...e, route: `${e.method} ${e.path}`, outputExample: EXAMPLES[key] ?? {} },
  ]),
) as {
  [K in OperationKey]: (typeof ENTRIES)[K] & {
    route: `${(typeof ENTRIES)[K]["method"]} ${(typeof ENTRIES)[K]["path"]}`;
    outputExample: Record<string, unknown>;
  };
};

export const PAID_OPERATIONS: readonly PaidOperation[] = Object.values(OPERATIONS);
