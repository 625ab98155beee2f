import { Type } from "typebox";
import { DerivativesEvidence, MarketSegment, TokenCoverage, TokensResponse } from "./freshness.js";

/**
 * Every 200 object is closed: it declares every field the service sends (the serializer drops anything undeclared
 * anyway), so a typed client catches a misspelt field. Evidence records stay free-form objects (the contract).
 */
const closed = { additionalProperties: false } as const;
const Num = (description: string) => Type.Number({ description });
const Int = (description: string) => Type.Integer({ description });
const Str = (description: string) => Type.String({ description });
const NullableNum = (description: string) => Type.Union([Type.Number(), Type.Null()], { description });

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

const Legend = Type.Object(
  {
    fields: Type.Record(Type.String(), Type.String(), {
      description: "What a field means, said once per answer instead of in every item",
    }),
    codes: Type.Record(Type.String(), Type.String(), {
      description: "What each short code the answer's items carry means (only the codes used)",
    }),
  },
  { ...closed, description: "Every sentence that would repeat from item to item, said once" },
);

const Codes = Type.Array(
  Type.Union(["st", "syn", "cr", "cs", "cu", "lb", "sg", "rg", "em", "on"].map((c) => Type.Literal(c))),
  {
    description:
      "Short flags, explained in legend.codes: st stale market inputs, syn synthetic market figures, cr/cs/cu circulating counted from a report plus schedule / from the schedule alone / unknown, lb circulating is a lower bound, sg schedule covers < 99 % of max supply, rg report and schedule disagree, em issuance-dominated supply, on a stream already under way",
  },
);

const SizeBand = Type.String({
  description:
    "Band of risk_score: low (< 25), medium (25–50), high (50–75), critical (≥ 75). A size-and-liquidity band of a ranking with no out-of-sample skill at predicting price moves (docs/risk-model.md), not a forecast",
});

/** What a compact item carries; a full item carries exactly these with the same values, then its detail. */
const compactItemFields = {
  unlock_event_id: Str(
    "Event id unlock_<symbol>_<yyyy>_<mm>_<dd>[_n]: what POST /v1/unlock-risk and /v1/unlock/backtest take",
  ),
  token: Str("Token symbol"),
  date: Str(
    "First day (UTC) the tokens of this item release: a cliff's or step's own day; a linear stream's first streaming day in the window (today when it is already under way)",
  ),
  date_end: Type.Optional(
    Str("Linear streams only: last streaming day counted (the stream's end or the window's)"),
  ),
  type: Type.Union([Type.Literal("cliff"), Type.Literal("step"), Type.Literal("linear")], {
    description: "cliff, step (a scheduled tranche) or linear (a month of a continuous stream)",
  }),
  category: Str(
    "Dominant recipient: team, investors, ecosystem, community, treasury, airdrop, foundation, other",
  ),
  amount_tokens: Num("Tokens released from date through date_end (never a stream's past days)"),
  amount_usd: Num("USD value of amount_tokens at the last observed price"),
  pct_circulating: NullableNum(
    "amount_tokens as % of the circulating supply estimated just before the event (codes say how it was counted); null when unknown",
  ),
  risk_score: Num("Modelled supply-pressure rank score, 0–100 (legend.fields.risk_score)"),
  codes: Codes,
};

const detailItemFields = {
  token_name: Type.Optional(Str("Token name")),
  size_band: Type.Optional(SizeBand),
  days_until: Type.Optional(
    Int("Days from today (UTC) to date; 0 for a stream under way; negative when past"),
  ),
  event_date: Type.Optional(Str("The event's own date (a linear month's first streaming day)")),
  event_amount_tokens: Type.Optional(Num("Tokens the whole event releases (a linear stream's whole month)")),
  event_amount_usd: Type.Optional(Num("USD value of event_amount_tokens")),
  event_pct_circulating: Type.Optional(
    NullableNum("event_amount_tokens as % of circulating supply before it"),
  ),
  pct_max_supply: Type.Optional(
    NullableNum("amount_tokens as % of max supply; null when max supply is unknown"),
  ),
  absorption_ratio: Type.Optional(NullableNum("The event's USD value ÷ 30-day average daily volume")),
  schedule_confidence: Type.Optional(
    Num("How well the schedule is known, 0–1: source type × timing precision, amount-weighted"),
  ),
  input_confidence: Type.Optional(
    Num(
      "How much the score's inputs can be trusted, 0–1: schedule_confidence × the decay of stale market inputs (market.liquidity_confidence ÷ 0.8)",
    ),
  ),
  stream: Type.Optional(
    Type.Object(
      {
        stream_start: Str("First streaming day of this month's stream"),
        stream_end: Str("Last streaming day of this month's stream"),
        month_amount_tokens: Num("Tokens the stream releases over the whole month"),
      },
      { ...closed, description: "Linear events only: the stream's own month" },
    ),
  ),
  market: Type.Optional(MarketFigures),
  supply_coverage: Type.Optional(SupplyCoverage),
  recipients: Type.Optional(
    Type.Array(RecipientShare, { description: "Breakdown of the event by schedule piece" }),
  ),
  evidence: Type.Optional(
    Type.Array(EvidenceRecord, {
      description: "POST /v1/unlock-risk with includeEvidence (either view): one record per model factor",
    }),
  ),
  derivatives: Type.Optional(
    Type.Union([DerivativesEvidence, Type.Null()], {
      description:
        "POST /v1/unlock-risk with includeEvidence only: what hedgers see before the unlock, funding rate and open interest on the token's Binance USDⓈ-M perpetual, each with its as-of and source (the refresh's latest figures; evidence only, not a score input); null when none were fetched",
    }),
  ),
};

/** An item of the upcoming list or a summary's top events. */
export const WireItem = Type.Object(
  { ...compactItemFields, ...detailItemFields },
  { ...closed, description: "Unlock item: compact fields, plus the detail with view=full" },
);

const answerFields = {
  model_version: Str("Risk model version (see docs/risk-model.md)"),
  as_of: Str("Snapshot date of the schedule data"),
  synthetic: Type.Boolean({ description: "true when any figure is built from synthetic market data" }),
  legend: Legend,
};

/** POST /v1/unlock-risk: one event's item, with the answer's legend beside it. */
export const RiskItem = Type.Object(
  { ...compactItemFields, ...detailItemFields, ...answerFields },
  {
    ...closed,
    description:
      "One unlock event. For a stream already under way, date is today and the amounts are what is still to come (the whole month is stream.month_amount_tokens with view=full)",
  },
);

export const UpcomingResponse = Type.Object(
  {
    days: Int("Forward window in days"),
    minRisk: Int("Minimum risk score included"),
    window_start: Str("First day of the window (today, UTC)"),
    window_end: Str("Last day of the window (inclusive)"),
    count: Int("Items on this page"),
    total: Int("Items matched by the window and every filter, on all pages"),
    total_amount_usd: Num("USD released in the window by every matched item (all pages)"),
    next_cursor: Type.Union([Type.String(), Type.Null()], {
      description: "Pass as `cursor` (same query otherwise) for the next page; null on the last page",
    }),
    ...answerFields,
    unlocks: Type.Array(WireItem, {
      description:
        "Items releasing tokens in the window, one per event, ordered by `sort` (default: date, then risk)",
    }),
    window_amount_tokens_by_token: Type.Optional(
      Type.Record(Type.String(), Type.Number(), {
        description: "view=full: tokens released in the window per token, by every matched item",
      }),
    ),
  },
  closed,
);

const NextUnlock = Type.Object(
  {
    unlock_event_id: Str("Event id"),
    date: Str("Unlock date"),
    days_until: Int("Days from today"),
    in_window: Type.Boolean({ description: "Whether it falls inside the summary window" }),
    amount_tokens: Num("Tokens the event releases"),
    amount_usd: Num("USD value"),
    risk_score: Num("Risk score 0–100"),
    size_band: SizeBand,
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
    window_start: Str("First day of the window (today, UTC)"),
    window_end: Str("Last day (today + windowDays, inclusive)"),
    eventCount: Int("Unlock events in the window"),
    maxRiskScore: Type.Optional(Num("Highest risk score in the window; absent when there are no events")),
    sizeBand: Type.Optional(SizeBand),
    mean_risk_score: NullableNum("Mean risk score of the window's events"),
    next_unlock: Type.Union([NextUnlock, Type.Null()], {
      description: "Next unlock from today, in or after the window",
    }),
    tokens_unlocking: Num("Tokens unlocking in the window"),
    usd_unlocking: Num("USD unlocking in the window"),
    pct_circulating_unlocking: NullableNum("Tokens unlocking as % of estimated circulating supply today"),
    pct_max_supply_unlocking: NullableNum("Tokens unlocking as % of max supply"),
    circulating_supply: NullableNum("Estimated circulating supply today; null when unknown"),
    price_usd: Num("Last observed price (USDT quote, taken as USD)"),
    price_as_of: Str("UTC day of the candle whose close is price_usd"),
    codes: Codes,
    by_category: Type.Array(CategoryTotal, { description: "Totals by recipient category" }),
    top_events: Type.Array(WireItem, { description: "Up to 5 highest-risk events in the window" }),
    ...answerFields,
    token_name: Type.Optional(Str("view=full: token name")),
    circulating_method: Type.Optional(Str("view=full: how circulating supply was estimated")),
    supply_coverage: Type.Optional(SupplyCoverage),
    market: Type.Optional(MarketFigures),
  },
  closed,
);

export const Reaction = Type.Object(
  {
    unlock_event_id: Str("Past unlock measured"),
    token: Str("Its token"),
    date: Str("Its date"),
    category: Str("Its dominant recipient category"),
    type: Str("cliff or step"),
    risk_score: Num("Its modeled risk score"),
    pct_circulating: NullableNum("Its size, % of circulating supply"),
    window_days: Type.Optional(Int("view=full: window w in days (windowDays)")),
    pre_return_pct: Num("Token return day −w → day 0, %"),
    post_return_pct: Num("Token return day 0 → day +w, %"),
    benchmark: Type.Optional(Str("view=full: benchmark symbol")),
    benchmark_pre_return_pct: Num("Benchmark return day −w → 0, %"),
    benchmark_post_return_pct: Num("Benchmark return day 0 → +w, %"),
    beta: Type.Optional(
      Num("β of the token's daily log returns on the benchmark's, fitted on days −120..−31"),
    ),
    pre_abnormal_return_pct: Num("Token log return − β × benchmark log return, day −w → day 0, in %"),
    abnormal_return_pct: Num("Token log return − β × benchmark log return, day 0 → day +w, in %"),
    max_drawdown_pct: Num("Worst peak-to-trough fall over days 0..+w, % (≤ 0)"),
    volume_change_pct: NullableNum("Mean volume days 0..w−1 vs days −w..−1, %; null when volume unknown"),
    synthetic: Type.Optional(Type.Boolean({ description: "view=full: true when the prices are synthetic" })),
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
    basis_description: Type.Optional(Str("view=full: the basis in words (also legend.fields.basis)")),
    benchmark: Str("Benchmark for abnormal returns"),
    event: Type.Object(
      {
        date: Str("Event date"),
        category: Str("Event's dominant recipient category"),
        type: Str("Event's release type"),
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
    method: Type.Optional(Str("view=full: how returns are measured (also legend.fields.method)")),
    data_through: Str("Last day of price history"),
    price_sources: Type.Optional(
      Type.Array(
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
        { description: "view=full: venue and instrument of every price series the reactions use" },
      ),
    ),
    model_version: Str("Risk model version"),
    synthetic: Type.Boolean({ description: "true exactly when any figure in the response is generated" }),
    legend: Legend,
  },
  closed,
);

/** A token's next unlock on the free map: enough to pick an event id before paying. */
const TokenNextUnlock = Type.Object(
  {
    unlock_event_id: Str("Event id, as the paid unlock routes take it"),
    date: Str("Its date (UTC; a linear month's first streaming day)"),
    type: Str("cliff, step or linear"),
    amount_tokens: Num("Tokens the event releases"),
    amount_usd: Num("USD value at the last observed price"),
    pct_circulating: NullableNum("% of circulating supply before it; null when unknown"),
  },
  closed,
);

/** GET /v1/tokens: the coverage list, each token with its next unlock. */
export const TokensMapResponse = Type.Object(
  {
    ...TokensResponse.properties,
    tokens: Type.Array(
      Type.Object(
        {
          ...TokenCoverage.properties,
          next_unlock: Type.Union([TokenNextUnlock, Type.Null()], {
            description: "The token's first unlock event dated today or later; null when none is scheduled",
          }),
        },
        closed,
      ),
    ),
  },
  closed,
);
