import { Type } from "typebox";
import { DerivativesEvidence, MarketSegment } from "./freshness.js";

/**
 * Every 200 object is closed: it declares every field the service sends (the serializer drops anything undeclared
 * anyway), so a typed client catches a misspelt field. Evidence records stay free-form objects (the contract).
 */
const closed = { additionalProperties: false } as const;
const Num = (description: string) => Type.Number({ description });
const Int = (description: string) => Type.Integer({ description });
const Str = (description: string) => Type.String({ description });
const NullableNum = (description: string) => Type.Union([Type.Number(), Type.Null()], { description });
const Level = Type.String({
  description: "Risk level: low (<25), medium (25–50), high (50–75), critical (≥75)",
});

export const EvidenceRecord = Type.Object(
  {
    factor: Str(
      "Model factor: unlock_size, absorption_ratio, order_book_depth, recipient_category, unlock_type, source_confidence",
    ),
    value: NullableNum("Observed input value in `unit`; null when unknown"),
    unit: Str("Unit of `value`"),
    weight: Num(
      "Effective weight (magnitude factors, after redistributing unknown inputs) or multiplier (the others)",
    ),
    contribution: Num(
      "Points added to (or removed from) risk_score; contributions sum to risk_score within 0.5",
    ),
    source_url: Type.Union([Type.String(), Type.Null()], { description: "Where the input comes from" }),
    observed_at: Str("Date (UTC) the input was observed"),
    confidence: Num("Confidence in this input, 0–1"),
    assumptions: Type.Array(Type.String(), { description: "Assumptions made for this factor" }),
  },
  { additionalProperties: true, description: "One evidence record per model factor" },
);

export const RecipientShare = Type.Object(
  {
    recipient: Str("Allocation name"),
    category: Str("Recipient category"),
    kind: Str("cliff, step or linear"),
    amount_tokens: Num("Tokens released to this recipient in the event"),
    source_type: Str("How the schedule is known: onchain_contract, official_docs, aggregator, inferred"),
    timing_precision: Str("Date precision: exact, day, week, month"),
  },
  closed,
);

const MarketFigures = Type.Object(
  {
    price_usd: Num("Price used to value the release (USDT quote, taken as USD)"),
    price_as_of: Str("UTC date of the daily candle whose close is the price"),
    adv_30d_usd: NullableNum("Mean daily quote volume of the 30 candles ending adv_as_of; null when unknown"),
    adv_as_of: Str("Last candle of the ADV window"),
    depth_2pct_usd: NullableNum("±2% order-book depth; null = unknown (no order-book history is shipped)"),
    venue: Type.Union([Type.String(), Type.Null()], { description: "Exchange the figures come from" }),
    instrument: Type.Union([Type.String(), Type.Null()], {
      description: "Instrument, e.g. USDT-margined perpetual",
    }),
    source_url: Type.Union([Type.String(), Type.Null()], {
      description: "Where the price's candle comes from (its segment's url)",
    }),
    segments: Type.Optional(
      Type.Array(MarketSegment, {
        description:
          "Each stretch of candles the price and the ADV were read from (shipped history, live extension), with source, url, as-of and fetched-at",
      }),
    ),
    stale_days: Int("Days from price_as_of to today (UTC)"),
    circulating_supply_estimate: NullableNum(
      "Estimated circulating supply before the unlock; null when unknown",
    ),
    circulating_method: Str("How circulating supply was estimated"),
    market_age_days: Type.Optional(
      Int(
        "Days between these figures and the event (or today when the event is ahead); 0 = the event's own day",
      ),
    ),
    liquidity_confidence: Type.Optional(
      Num("Confidence of the liquidity evidence: 0.8 × 0.5^(market_age_days / 30) (docs/risk-model.md)"),
    ),
  },
  { ...closed, description: "The market figures this item was valued with" },
);

/** How completely the token's supply is known (the complete adapter schedules included). */
export const SupplyCoverage = Type.Object(
  {
    supply_model: Type.Union([Type.Literal("vesting"), Type.Literal("emission")], {
      description:
        "emission: most modelled supply is issuance (block rewards, staking, gauges); its emission sections count toward circulating supply but are never scored as vesting unlocks",
    }),
    schedule_set: Type.Union([Type.Literal("curated"), Type.Literal("wide")], {
      description:
        "curated: the 46 hand-checked tokens (official figures kept); wide: DefiLlama emissions adapters",
    }),
    schedule_complete: Type.Union([Type.Boolean(), Type.Null()], {
      description:
        "false: some allocations could not be evaluated, so circulating supply is a lower bound; null: no complete schedule (circulating unknown)",
    }),
    unevaluated_sections: Type.Array(Type.String(), {
      description: "Allocations left out, each with the reason",
    }),
    circulating_is_lower_bound: Type.Union([Type.Boolean(), Type.Null()], {
      description: "true when the circulating figure is a lower bound; null when it is unknown",
    }),
    circulating_rule: Type.Union(
      [Type.Literal("reported+schedule"), Type.Literal("schedule"), Type.Literal("unknown")],
      {
        description:
          "reported+schedule: the latest reported figure before the day plus what the complete schedule releases after it; schedule: no report yet, what the complete schedule has unlocked; unknown: neither",
      },
    ),
    circulating_report: Type.Union(
      [
        Type.Object(
          {
            source: Str("Who reported it (coinmarketcap: monthly snapshot; coingecko: live)"),
            date: Str("Day the figure was reported for (it counts releases to the end of that day)"),
            circulating_supply: Num("The reported circulating supply"),
            attribution: Str("How the figure is attributed"),
          },
          closed,
        ),
        Type.Null(),
      ],
      {
        description:
          "The report the circulating figure is anchored on; null unless circulating_rule is reported+schedule",
      },
    ),
    circulating_rebuilt: NullableNum(
      "What the complete schedule alone has unlocked by then (the rebuilt figure, kept beside the anchored one); null without one",
    ),
    circulating_anchor_age_days: Type.Union([Type.Integer(), Type.Null()], {
      description:
        "Days from the end of the anchoring report's day to the figure's day; null when no report anchors it",
    }),
    circulating_anchor_accuracy: Type.Union([Type.String(), Type.Null()], {
      description:
        "What accuracy to expect at that anchor age, from the held-out test (docs/risk-model.md): held_out_<n>m (the anchor is about n months old, within what the test measured) or beyond_held_out_horizon (older than anything it measured); null when no report anchors it",
    }),
    reported_vs_rebuilt: Type.Union(
      [
        Type.Object(
          {
            report_date: Str("Day of the token's latest report"),
            report_source: Str("Who reported it"),
            reported: Num("The reported circulating supply"),
            rebuilt: NullableNum("What the complete schedule has unlocked by the end of that day"),
            ratio: NullableNum("rebuilt ÷ reported"),
            cause: Str("Why they differ, where the schedule shows it"),
          },
          closed,
        ),
        Type.Null(),
      ],
      {
        description:
          "Set when the token's latest report and its rebuilt figure differ by more than 25 % either way, with the cause; null otherwise",
      },
    ),
    unexplained_report_changes: Type.Array(
      Type.Object(
        {
          from: Str("Earlier report's day"),
          to: Str("Later report's day"),
          reported_change: Num("Change of the reported figure between them"),
          scheduled_change: Num("What the complete schedule releases between them"),
        },
        closed,
      ),
      {
        description:
          "The latest (at most 3) changes between consecutive reports that the schedule does not explain by more than 25 % of the earlier report: a redefinition by the aggregator, or releases the schedule lacks",
      },
    ),
    schedule_share_of_max_supply: NullableNum(
      "What the complete schedule models ÷ max supply (below 1: part of max supply is in no schedule); null when either is unknown",
    ),
    schedule_coverage_note: Type.Union([Type.String(), Type.Null()], {
      description:
        "How much of max supply no schedule covers, when the schedule covers less than 99 % of it; null otherwise",
    }),
  },
  { ...closed, description: "Completeness of the supply schedule behind circulating supply" },
);

const riskItemFields = {
  token: Str("Token symbol"),
  unlock_event_id: Str("Event id unlock_<symbol>_<yyyy>_<mm>_<dd>[_n]"),
  risk_score: Num("Modeled sell-pressure risk, 0–100"),
  risk_level: Level,
  score_kind: Str("What the score is (a supply-pressure ranking, not a price forecast)"),
  token_name: Str("Token name"),
  unlock_date: Str("Unlock date (UTC); for linear streams the first streaming day of the month"),
  days_until: Int("Days from today (UTC) to the unlock; negative when past"),
  amount_tokens: Num("Tokens released"),
  amount_usd: Num("USD value of the release at the price in the evidence"),
  pct_circulating: NullableNum(
    "Release as % of estimated circulating supply just before it (see market.circulating_method); null when unknown",
  ),
  pct_max_supply: NullableNum("Release as % of max supply (exact from the schedule)"),
  market: MarketFigures,
  window_amount_tokens: Type.Optional(
    Num("Tokens of this event released inside the requested window (linear streams prorated by day)"),
  ),
  window_amount_usd: Type.Optional(Num("USD value of window_amount_tokens")),
  stream: Type.Optional(
    Type.Object(
      {
        stream_start: Str("First streaming day of this month's stream"),
        stream_end: Str("Last streaming day of this month's stream"),
        month_amount_tokens: Num("Tokens the stream releases over the whole month"),
      },
      { ...closed, description: "Linear events only" },
    ),
  ),
  absorption_ratio: NullableNum("Release USD value ÷ 30-day average daily volume"),
  recipient_category: Str(
    "Dominant recipient: team, investors, ecosystem, community, treasury, airdrop, foundation, other",
  ),
  unlock_type: Str("cliff, step (scheduled tranche) or linear (a month of a continuous stream)"),
  confidence: Num(
    "Score confidence 0–1: schedule confidence × the decay of stale market inputs (1 when fresh)",
  ),
  schedule_confidence: Type.Optional(Num("Schedule confidence 0–1 (source type × timing precision)")),
  supply_coverage: SupplyCoverage,
  recipients: Type.Array(RecipientShare, { description: "Breakdown of the release by schedule piece" }),
  model_version: Str("Risk model version (see docs/risk-model.md)"),
  as_of: Str("Snapshot date of the market context"),
  synthetic: Type.Boolean({ description: "true when built from synthetic (generated) market data" }),
  evidence: Type.Optional(Type.Array(EvidenceRecord, { description: "Evidence records, one per factor" })),
  derivatives: Type.Optional(
    Type.Union([DerivativesEvidence, Type.Null()], {
      description:
        "POST /v1/unlock-risk with includeEvidence only: what hedgers see before the unlock, funding rate and open interest on the token's Binance USDⓈ-M perpetual, each with its as-of and source (the refresh's latest figures; evidence only, not a score input); null when none were fetched",
    }),
  ),
};

export const RiskItem = Type.Object(riskItemFields, { ...closed, description: "Unlock risk item" });

export const UpcomingResponse = Type.Object(
  {
    days: Int("Forward window in days"),
    minRisk: Int("Minimum risk score included"),
    unlocks: Type.Array(RiskItem, {
      description:
        "Events releasing tokens on days today..today + days (discrete releases; linear months overlapping the window, prorated), by date",
    }),
    window_amount_tokens_by_token: Type.Record(Type.String(), Type.Number(), {
      description: "Tokens released in the window, per token",
    }),
    score_kind: Str("What risk_score is"),
    window_start: Str("First day of the window (today, UTC)"),
    window_end: Str("Last day of the window (inclusive)"),
    count: Int("Number of unlocks returned"),
    model_version: Str("Risk model version"),
    as_of: Str("Snapshot date of the market context"),
    synthetic: Type.Boolean({ description: "true when any item uses synthetic market data" }),
  },
  closed,
);

const NextUnlock = Type.Object(
  {
    unlock_event_id: Str("Event id"),
    unlock_date: Str("Unlock date"),
    days_until: Int("Days from today"),
    in_window: Type.Boolean({ description: "Whether it falls inside the summary window" }),
    amount_tokens: Num("Tokens released"),
    amount_usd: Num("USD value"),
    risk_score: Num("Risk score 0–100"),
    risk_level: Level,
  },
  closed,
);

const CategoryTotal = Type.Object(
  {
    category: Str("Recipient category"),
    event_count: Int("Events in the window"),
    amount_tokens: Num("Tokens unlocking in the window"),
    amount_usd: Num("USD unlocking in the window"),
  },
  closed,
);

export const RiskSummary = Type.Object(
  {
    token: Str("Token symbol"),
    windowDays: Int("Window length in days (echoes lookbackDays)"),
    eventCount: Int("Unlock events in the window"),
    maxRiskScore: Type.Optional(Num("Highest risk score in the window; absent when there are no events")),
    riskLevel: Type.Optional(Str("Level of maxRiskScore; absent when there are no events")),
    token_name: Str("Token name"),
    window_start: Str("First day of the window (today, UTC)"),
    window_end: Str("Last day (today + windowDays, inclusive)"),
    window_covers: Str("What the window covers"),
    mean_risk_score: NullableNum("Mean risk score of the window's events"),
    next_unlock: Type.Union([NextUnlock, Type.Null()], {
      description: "Next unlock from today, in or after the window",
    }),
    tokens_unlocking: Num("Tokens unlocking in the window"),
    usd_unlocking: Num("USD unlocking in the window"),
    pct_circulating_unlocking: NullableNum("Tokens unlocking as % of estimated circulating supply today"),
    pct_max_supply_unlocking: NullableNum("Tokens unlocking as % of max supply"),
    circulating_supply: NullableNum("Estimated circulating supply today; null when unknown"),
    circulating_method: Str("How circulating supply was estimated"),
    supply_coverage: SupplyCoverage,
    market: MarketFigures,
    score_kind: Str("What the risk scores are"),
    by_category: Type.Array(CategoryTotal, { description: "Totals by recipient category" }),
    top_events: Type.Array(RiskItem, { description: "Up to 5 highest-risk events in the window" }),
    model_version: Str("Risk model version"),
    as_of: Str("Snapshot date of the market context"),
    synthetic: Type.Boolean({ description: "true when built from synthetic market data" }),
  },
  closed,
);

export const Reaction = Type.Object(
  {
    unlock_event_id: Str("Past unlock measured"),
    token: Str("Its token"),
    unlock_date: Str("Its date"),
    recipient_category: Str("Its dominant recipient category"),
    unlock_type: Str("cliff or step"),
    risk_score: Num("Its modeled risk score"),
    pct_circulating: NullableNum("Its size, % of circulating supply"),
    window_days: Int("Window w in days"),
    pre_return_pct: Num("Token return day −w → day 0, %"),
    post_return_pct: Num("Token return day 0 → day +w, %"),
    benchmark: Str("Benchmark symbol"),
    benchmark_pre_return_pct: Num("Benchmark return day −w → 0, %"),
    benchmark_post_return_pct: Num("Benchmark return day 0 → +w, %"),
    beta: Type.Optional(
      Num("β of the token's daily log returns on the benchmark's, fitted on days −120..−31"),
    ),
    pre_abnormal_return_pct: Num("Token log return − β × benchmark log return, day −w → day 0, in %"),
    abnormal_return_pct: Num("Token log return − β × benchmark log return, day 0 → day +w, in %"),
    max_drawdown_pct: Num("Worst peak-to-trough fall over days 0..+w, % (≤ 0)"),
    volume_change_pct: NullableNum("Mean volume days 0..w−1 vs days −w..−1, %; null when volume unknown"),
    synthetic: Type.Boolean({ description: "true when the prices are synthetic" }),
  },
  { ...closed, description: "Market reaction around one past unlock" },
);

const ReactionSummary = Type.Object(
  {
    sample_size: Int("Reactions measured"),
    mean_abnormal_return_pct: NullableNum("Mean abnormal return, %"),
    median_abnormal_return_pct: NullableNum("Median abnormal return, %"),
    mean_post_return_pct: NullableNum("Mean raw post return, %"),
    median_post_return_pct: NullableNum("Median raw post return, %"),
    share_negative_abnormal: NullableNum("Share of reactions with a negative abnormal return"),
    mean_max_drawdown_pct: NullableNum("Mean max drawdown, %"),
  },
  closed,
);

export const BacktestResult = Type.Object(
  {
    token: Str("Token symbol"),
    unlock_event_id: Str("Event the backtest is for"),
    windowDays: Int("Window w in days"),
    reactions: Type.Array(Reaction, { description: "Non-overlapping past reactions, by date" }),
    basis: Str(
      "Which history was measured: event (the event itself), token_history (the token's own earlier unlocks) or category_history (other tokens' unlocks of the same recipient category)",
    ),
    pooled_across_tokens: Type.Boolean({
      description: "true when the reactions (and the summary) mix several tokens",
    }),
    basis_description: Str("The basis in words"),
    benchmark: Str("Benchmark for abnormal returns"),
    event: Type.Object(
      {
        unlock_date: Str("Event date"),
        recipient_category: Str("Event's dominant recipient category"),
        unlock_type: Str("Event's release type"),
        is_past: Type.Boolean({
          description: "Whether the event date is on or before the data's last day",
        }),
      },
      closed,
    ),
    candidates: Int("Past unlocks with enough price history on the chosen basis"),
    excluded_overlapping: Int(
      "Candidates dropped because another kept unlock of the token is closer than w days",
    ),
    excluded_truncated: Int("Non-overlapping candidates beyond the 60 most significant"),
    summary: ReactionSummary,
    method: Str("How returns are measured"),
    data_through: Str("Last day of price history"),
    price_sources: Type.Array(
      Type.Object(
        {
          symbol: Str("Token (or benchmark) symbol"),
          segments: Type.Array(
            Type.Object(
              {
                from: Str("First day (00:00 UTC price)"),
                to: Str("Last day"),
                venue: Str("Exchange"),
                instrument: Str("Instrument"),
              },
              closed,
            ),
          ),
        },
        closed,
      ),
      { description: "Venue and instrument of every price series the reactions use" },
    ),
    model_version: Str("Risk model version"),
    synthetic: Type.Boolean({ description: "true exactly when any figure in the response is generated" }),
  },
  closed,
);
