import { Type } from "typebox";

const closed = { additionalProperties: false } as const;
const NullableStr = (description: string) => Type.Union([Type.String(), Type.Null()], { description });
const NullableNum = (description: string) => Type.Union([Type.Number(), Type.Null()], { description });

/** One data source's refresh state: free on GET /, /ready and /v1/tokens. */
export const SourceFreshness = Type.Object(
  {
    source: Type.String({ description: "binance, bybit, derivatives, coingecko, defillama or bazaar" }),
    period_seconds: Type.Integer({
      description: "How often it is refreshed (0: not refreshed by this instance)",
    }),
    last_attempt: NullableStr("ISO time of the last refresh attempt"),
    last_success: NullableStr("ISO time of the last attempt that failed for no item"),
    age_seconds: NullableNum("Seconds since last_success; null when never"),
    data_as_of: NullableStr("Newest data the source has given (candle day, report time)"),
    last_error: NullableStr("What failed in the last attempt (previous data kept); null when nothing"),
    updated: Type.Integer({ description: "Items the last attempt updated" }),
    failed: Type.Integer({ description: "Items the last attempt could not update (kept as they were)" }),
    failure_kinds: Type.Array(Type.String(), {
      description:
        "Why the last attempt failed, by kind: implausible, too_large, timeout, redirect, not_json, cut_short, refused_url, http, unreachable, invalid ([] when it did not)",
    }),
    quarantined: Type.Integer({
      description: "Items of the last attempt refused as implausible and kept aside (never served)",
    }),
  },
  closed,
);

/** One stretch of candles a market figure was read from: shipped history or the live refresh's extension. */
export const MarketSegment = Type.Object(
  {
    part: Type.Union([Type.Literal("shipped_history"), Type.Literal("live_extension")], {
      description:
        "shipped_history: the candle file shipped with the service; live_extension: candles the refresh appended from the venue",
    }),
    used_for: Type.Array(Type.Union([Type.Literal("price"), Type.Literal("adv_30d")]), {
      description: "Which figures read candles from this stretch",
    }),
    source: Type.String({ description: "Venue, instrument and kind of data" }),
    url: Type.String({
      description: "Where the candles come from: the shipped file's commit, or the venue's endpoint",
    }),
    first_candle: Type.String({ description: "UTC day of the first candle of this stretch the figures use" }),
    as_of: Type.String({ description: "UTC day of the last candle of this stretch the figures use" }),
    fetched_at: Type.Union([Type.String(), Type.Null()], {
      description:
        "ISO time the candles were fetched from the venue (a shipped file: its commit); null when not recorded",
    }),
  },
  closed,
);

/** Funding and open interest on a token's perpetual, with as-of: evidence only, never a score input. */
export const DerivativesEvidence = Type.Object(
  {
    symbol: Type.String({ description: "Binance USDⓈ-M perpetual" }),
    listed_at: NullableStr("The contract's listing time (exchangeInfo onboardDate)"),
    funding_rate_last: NullableStr("Last settled funding rate per period, as reported"),
    funding_rate_mean_7d: NullableNum("Mean of the last 21 settled funding rates (about 7 days)"),
    funding_as_of: NullableStr("Time of the last funding settlement"),
    open_interest_usd: NullableNum("Open interest, USD value of the last daily figure"),
    open_interest_as_of: NullableStr("Time of that figure"),
    source: Type.String(),
  },
  closed,
);

export const TokenCoverage = Type.Object(
  {
    symbol: Type.String(),
    name: Type.String(),
    coingecko_id: NullableStr("CoinGecko coin id (reported supply is matched by it, never by symbol)"),
    schedule_set: NullableStr("curated (hand-checked vesting schedule) or wide (DefiLlama adapter)"),
    schedule: Type.Object(
      {
        pieces: Type.Integer({ description: "Vesting pieces known" }),
        complete: Type.Union([Type.Boolean(), Type.Null()], {
          description:
            "Complete supply schedule (every allocation modelled): true; some sections unevaluated: false; none: null",
        }),
        unevaluated_sections: Type.Integer(),
        first: NullableStr("First piece's start"),
        last: NullableStr("Last piece's end (or start)"),
        as_of: Type.String({ description: "Date of the schedule data" }),
      },
      closed,
    ),
    market: Type.Object(
      {
        price_as_of: Type.String({ description: "UTC day of the candle whose close prices the token" }),
        stale_days: Type.Integer({ description: "Days from price_as_of to today (UTC)" }),
        venue: NullableStr("Exchange of the series"),
        source: Type.Optional(Type.String({ description: "The series' sources in words (view=full)" })),
        source_url: NullableStr(
          "Where the price's candle comes from (its segment's url), as paid answers say",
        ),
        segments: Type.Optional(
          Type.Array(MarketSegment, {
            description:
              "Each stretch of candles the latest price and ADV were read from (shipped history, live extension), as paid answers carry it (view=full)",
          }),
        ),
      },
      closed,
    ),
    circulating_reported: Type.Union(
      [
        Type.Object(
          {
            circulating_supply: Type.String({ description: "Decimal string, as reported" }),
            source: Type.String({
              description: "coinmarketcap (shipped monthly snapshot) or coingecko (live)",
            }),
            coin_id: NullableStr("The live source's coin id; null for a shipped report"),
            as_of: Type.String({ description: "When it was reported (a shipped report: its day)" }),
          },
          closed,
        ),
        Type.Null(),
      ],
      {
        description:
          "The latest reported circulating supply the service holds (shipped or live): the report today's circulating figure is anchored on; null when none",
      },
    ),
    supply: Type.Object(
      {
        as_of: NullableStr("UTC day the circulating figure is for (today)"),
        source: NullableStr("Who reported the anchoring figure (or the schedule's source, or none)"),
        circulating: Type.Union([Type.Number(), Type.Null()], {
          description: "Circulating supply today, as the paid risk summary states it; null when unknown",
        }),
        circulating_rule: Type.String({ description: "reported+schedule, schedule or unknown" }),
        method: Type.Optional(
          Type.String({ description: "How the figure was obtained, in words (view=full)" }),
        ),
        circulating_anchor_age_days: Type.Union([Type.Integer(), Type.Null()], {
          description: "Days from the end of the anchoring report's day to today; null without a report",
        }),
        circulating_anchor_accuracy: NullableStr(
          "held_out_<n>m or beyond_held_out_horizon: what accuracy to expect at that anchor age (docs/risk-model.md); null without a report",
        ),
      },
      closed,
    ),
    derivatives: Type.Union([DerivativesEvidence, Type.Null()], {
      description:
        "What hedgers see before an unlock: funding and open interest on the token's perpetual, with as-of (evidence only; not a score input); null when not fetched",
    }),
  },
  closed,
);

export const TokensResponse = Type.Object(
  {
    count: Type.Integer(),
    today: Type.String({ description: "UTC day the stale_days figures are counted to" }),
    schedules_as_of: Type.String({ description: "Date of the schedule data" }),
    sources: Type.Array(SourceFreshness),
    tokens: Type.Array(TokenCoverage),
  },
  closed,
);
