import type { Reaction, ReactionSummary } from "./backtest.js";
import type { UnlockStore } from "./data/snapshot.js";
import type { RecipientCategory } from "./data/types.js";
import type { SegmentProvenance } from "./market-context.js";
import type { RiskLevel } from "./risk-model.js";
import type { EvidenceRecord, ScoredEvent } from "./scoring.js";
import type { Coverage } from "./supply.js";

export type EventLookup = "ok" | "unknown_token" | "unknown_event";

export interface RecipientShare {
  recipient: string;
  category: RecipientCategory;
  kind: string;
  amount_tokens: number;
  source_type: string;
  timing_precision: string;
}

/** The market figures an item was valued with: each says when, where, and how old it is. */
export interface MarketFigures {
  price_usd: number;
  /** Date of the daily candle whose close is the price. */
  price_as_of: string;
  adv_30d_usd: number | null;
  adv_as_of: string;
  depth_2pct_usd: number | null;
  venue: string | null;
  instrument: string | null;
  source_url: string | null;
  /** Each stretch of candles the price and the ADV were read from, with source, url, as-of and fetched-at. */
  segments?: SegmentProvenance[];
  /** Days from price_as_of to today (UTC). */
  stale_days: number;
  circulating_supply_estimate: number | null;
  circulating_method: string;
  /** Items only: days between these figures and the event (or today when the event is ahead); 0 = its own day. */
  market_age_days?: number;
  /** Items only: 0.8 · 0.5^(market_age_days / 30). */
  liquidity_confidence?: number;
}

export interface LinearStreamWindow {
  /** First and last streaming day of this month's stream. */
  stream_start: string;
  stream_end: string;
  month_amount_tokens: number;
}

export interface RiskItem {
  token: string;
  unlock_event_id: string;
  risk_score: number;
  risk_level: RiskLevel;
  score_kind: string;
  token_name: string;
  unlock_date: string;
  days_until: number;
  amount_tokens: number;
  amount_usd: number;
  pct_circulating: number | null;
  pct_max_supply: number | null;
  absorption_ratio: number | null;
  recipient_category: RecipientCategory;
  unlock_type: string;
  confidence: number;
  /** The schedule's confidence alone (source type × timing precision); set on response items. */
  schedule_confidence?: number;
  recipients: RecipientShare[];
  market: MarketFigures;
  supply_coverage: Coverage;
  model_version: string;
  as_of: string;
  synthetic: boolean;
  /** Tokens of this event released inside the requested window (prorated by day for linear streams). */
  window_amount_tokens?: number;
  window_amount_usd?: number;
  /**
   * The days its tokens release in the window (or, for one event asked alone, from today when its stream is under
   * way): a discrete release's own day; a linear month's first and last streaming day inside the window.
   */
  release_start?: string;
  release_end?: string;
  stream?: LinearStreamWindow;
  evidence?: EvidenceRecord[];
}

export type UpcomingSort = "date" | "usd" | "pct_circulating" | "risk";

/** What narrows and orders the upcoming list beyond its window (all optional: absent = no filter). */
export interface UpcomingFilter {
  minUsd?: number | undefined;
  minPctCirculating?: number | undefined;
  /** Symbols, any case; unknown ones are refused before (upcomingProblem). */
  tokens?: readonly string[] | undefined;
  category?: RecipientCategory | undefined;
  type?: "cliff" | "step" | "linear" | undefined;
  sort?: UpcomingSort | undefined;
  /** Page: items offset..offset + limit of the matched, sorted list (all when limit is absent). */
  limit?: number | undefined;
  offset?: number | undefined;
}

export interface UpcomingResponse {
  days: number;
  minRisk: number;
  /** Events matched by the window and every filter (count is this page's). */
  total: number;
  /** USD released in the window by every matched event (all pages). */
  total_amount_usd: number;
  /** Offset of the next page, or null on the last one. */
  next_offset: number | null;
  window_start: string;
  window_end: string;
  count: number;
  window_amount_tokens_by_token: Record<string, number>;
  model_version: string;
  score_kind: string;
  as_of: string;
  synthetic: boolean;
  unlocks: RiskItem[];
}

export interface NextUnlock {
  unlock_event_id: string;
  unlock_date: string;
  days_until: number;
  in_window: boolean;
  amount_tokens: number;
  amount_usd: number;
  risk_score: number;
  risk_level: RiskLevel;
}

/** A token's next unlock as the free map shows it: when, which event, how much. */
export interface TokenNextUnlock {
  unlock_event_id: string;
  date: string;
  type: "cliff" | "step" | "linear";
  amount_tokens: number;
  amount_usd: number;
  pct_circulating: number | null;
}

export interface CategoryTotal {
  category: RecipientCategory;
  event_count: number;
  amount_tokens: number;
  amount_usd: number;
}

export interface RiskSummary {
  token: string;
  token_name: string;
  windowDays: number;
  window_start: string;
  window_end: string;
  window_covers: string;
  eventCount: number;
  maxRiskScore?: number;
  riskLevel?: RiskLevel;
  mean_risk_score: number | null;
  next_unlock: NextUnlock | null;
  tokens_unlocking: number;
  usd_unlocking: number;
  pct_max_supply_unlocking: number | null;
  pct_circulating_unlocking: number | null;
  circulating_supply: number | null;
  circulating_method: string;
  supply_coverage: Coverage;
  /** The token's latest real market figures (what future events in the window are valued at). */
  market: MarketFigures;
  by_category: CategoryTotal[];
  top_events: RiskItem[];
  model_version: string;
  score_kind: string;
  as_of: string;
  synthetic: boolean;
}

export type BacktestBasis = "event" | "token_history" | "category_history";

export interface BacktestResult {
  token: string;
  unlock_event_id: string;
  windowDays: number;
  basis: BacktestBasis;
  basis_description: string;
  pooled_across_tokens: boolean;
  benchmark: string;
  event: {
    unlock_date: string;
    recipient_category: RecipientCategory;
    unlock_type: string;
    is_past: boolean;
  };
  candidates: number;
  excluded_overlapping: number;
  excluded_truncated: number;
  reactions: Reaction[];
  summary: ReactionSummary;
  method: string;
  data_through: string;
  /** Where each measured token's (and the benchmark's) prices come from, stretch by stretch. */
  price_sources: {
    symbol: string;
    segments: { from: string; to: string; venue: string; instrument: string }[];
  }[];
  model_version: string;
  synthetic: boolean;
}

export interface UnlockService {
  lookupEvent(token: string, unlockEventId: string): EventLookup;
  hasToken(token: string): boolean;
  upcoming(days: number, minRisk: number, filter?: UpcomingFilter): UpcomingResponse;
  /** The day (UTC) the service calls today, as yyyy-mm-dd: what a cursor is bound to. */
  today(): string;
  /** Each token's first event dated today or later (lower-case symbol), or null when none is scheduled. */
  nextUnlock(symbol: string): TokenNextUnlock | null;
  score(token: string, unlockEventId: string, includeEvidence: boolean): RiskItem;
  summary(token: string, lookbackDays: number): RiskSummary;
  /** Why a backtest would have no reaction to return (checked before payment), or null when it has some. */
  backtestRefusal(token: string, unlockEventId: string, windowDays: number): string | null;
  backtest(token: string, unlockEventId: string, windowDays: number): BacktestResult;
  /** All scored events, sorted by day (for calibration and diagnostics). */
  events(): readonly ScoredEvent[];
  /** The data the service answers from (coverage listings read it; a refresh builds a new service around new data). */
  data(): UnlockStore;
}

export class UnlockLookupError extends Error {
  constructor(readonly reason: Exclude<EventLookup, "ok">) {
    super(reason === "unknown_token" ? "unknown token" : "unknown unlock event for this token");
    this.name = "UnlockLookupError";
  }
}

export class NoReactionsError extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = "NoReactionsError";
  }
}
