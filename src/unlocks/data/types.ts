import { type Static, Type } from "typebox";

/** A UTC calendar date, `YYYY-MM-DD`. */
export const IsoDate = Type.String({
  pattern: "^\\d{4}-\\d{2}-\\d{2}$",
  description: "UTC calendar date YYYY-MM-DD",
});

export const RecipientCategory = Type.Union(
  [
    Type.Literal("team"),
    Type.Literal("investors"),
    Type.Literal("ecosystem"),
    Type.Literal("community"),
    Type.Literal("treasury"),
    Type.Literal("airdrop"),
    Type.Literal("foundation"),
    Type.Literal("other"),
  ],
  { description: "Who receives the unlocked tokens" },
);
export type RecipientCategory = Static<typeof RecipientCategory>;
export const RECIPIENT_CATEGORIES: readonly RecipientCategory[] = [
  "team",
  "investors",
  "ecosystem",
  "community",
  "treasury",
  "airdrop",
  "foundation",
  "other",
];

/** How the schedule is known; drives source confidence in the risk model. */
export const SourceType = Type.Union([
  Type.Literal("onchain_contract"),
  Type.Literal("official_docs"),
  Type.Literal("aggregator"),
  Type.Literal("inferred"),
]);
export type SourceType = Static<typeof SourceType>;

/** How precisely the release date is known. */
export const TimingPrecision = Type.Union([
  Type.Literal("exact"),
  Type.Literal("day"),
  Type.Literal("week"),
  Type.Literal("month"),
]);
export type TimingPrecision = Static<typeof TimingPrecision>;

/** When and how much a piece releases: shared by vesting pieces and the complete supply schedule's pieces. */
const pieceTiming = {
  kind: Type.Union([Type.Literal("cliff"), Type.Literal("linear"), Type.Literal("step")]),
  start: IsoDate,
  end: Type.Union([IsoDate, Type.Null()]),
  amount_tokens: Type.Number({ minimum: 0 }),
  steps: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()]),
  step_days: Type.Union([Type.Integer({ minimum: 1 }), Type.Literal("monthly"), Type.Null()]),
  /**
   * An adapter's own step clock: the i-th release (i = 1…steps) is on the UTC day of start_unix + i·period_s
   * (23:00 UTC counts as the next day). When present it dates the steps instead of calendar months from `start`.
   */
  step_clock: Type.Optional(
    Type.Object(
      { start_unix: Type.Integer(), period_s: Type.Integer({ minimum: 1 }) },
      { additionalProperties: false },
    ),
  ),
};

export const SchedulePiece = Type.Object({
  recipient: Type.String({ minLength: 1 }),
  category: RecipientCategory,
  ...pieceTiming,
  source_type: SourceType,
  timing_precision: TimingPrecision,
  source_url: Type.Union([Type.String(), Type.Null()]),
});
export type SchedulePiece = Static<typeof SchedulePiece>;

/** Provenance carried by every market figure. */
const Provenance = {
  as_of: IsoDate,
  source: Type.String({ minLength: 1 }),
  source_url: Type.Union([Type.String(), Type.Null()]),
  synthetic: Type.Boolean(),
};

export const SupplyInfo = Type.Object({
  /** null when no real circulating-supply figure exists (never generated). */
  circulating: Type.Union([Type.Number({ minimum: 0 }), Type.Null()]),
  total: Type.Union([Type.Number({ minimum: 0 }), Type.Null()]),
  ...Provenance,
  assumptions: Type.Array(Type.String()),
});
export type SupplyInfo = Static<typeof SupplyInfo>;

export const MarketInfo = Type.Object({
  price_usd: Type.Number({ exclusiveMinimum: 0 }),
  adv_30d_usd: Type.Union([Type.Number({ minimum: 0 }), Type.Null()]),
  depth_2pct_usd: Type.Union([Type.Number({ minimum: 0 }), Type.Null()]),
  /** Venue and instrument of price and volume, e.g. Binance / USDT-margined perpetual. */
  venue: Type.Optional(Type.String()),
  instrument: Type.Optional(Type.String()),
  /** Days averaged for adv_30d_usd, ending on as_of. */
  adv_window: Type.Optional(Type.Object({ from: IsoDate, to: IsoDate, days: Type.Integer({ minimum: 0 }) })),
  ...Provenance,
  assumptions: Type.Array(Type.String()),
});
export type MarketInfo = Static<typeof MarketInfo>;

/** Which venue a stretch of a series comes from (series may splice an older venue in front). */
export const SeriesSegment = Type.Object({
  from: IsoDate,
  to: IsoDate,
  venue: Type.String(),
  instrument: Type.String(),
  quote: Type.String(),
  /** false where volume is left null because it comes from another venue than the rest. */
  volume: Type.Boolean(),
  source_url: Type.String(),
  /** When these candles were fetched from the venue (ISO time): the shipped file's commit, or the live refresh. */
  fetched_at: Type.Optional(Type.String()),
});
export type SeriesSegment = Static<typeof SeriesSegment>;

/**
 * Daily series, dense from `start`: element i is day start+i. Prices are 00:00 UTC snapshots
 * (CoinGecko's daily convention), so day 0 of an unlock is the price before that day's trading.
 */
export const PriceSeries = Type.Object({
  start: IsoDate,
  close: Type.Array(Type.Union([Type.Number({ exclusiveMinimum: 0 }), Type.Null()])),
  volume_usd: Type.Union([Type.Array(Type.Union([Type.Number({ minimum: 0 }), Type.Null()])), Type.Null()]),
  circulating: Type.Optional(Type.Array(Type.Union([Type.Number({ minimum: 0 }), Type.Null()]))),
  /** Benchmark closes recorded alongside this token (same days); overrides the snapshot benchmark when present. */
  benchmark_close: Type.Optional(Type.Array(Type.Union([Type.Number({ exclusiveMinimum: 0 }), Type.Null()]))),
  source: Type.String({ minLength: 1 }),
  source_url: Type.Union([Type.String(), Type.Null()]),
  synthetic: Type.Boolean(),
  segments: Type.Optional(Type.Array(SeriesSegment)),
});
export type PriceSeries = Static<typeof PriceSeries>;

/** A piece of the complete supply schedule: only what circulating supply needs (no recipient or source per piece). */
export const SupplyPiece = Type.Object({
  ...pieceTiming,
  /**
   * true: the adapter categorises the piece's section `noncirculating` (foundation, ecosystem, treasury and community
   * reserves): it unlocks but is not distributed, so it counts toward `unlocked`, not toward circulating supply.
   */
  reserve: Type.Optional(Type.Literal(true)),
});
export type SupplyPiece = Static<typeof SupplyPiece>;

/** An allocation the adapter models but could not evaluate offline (its releases are missing from `pieces`). */
export const UnevaluatedSection = Type.Object({
  name: Type.String(),
  reason: Type.String(),
  allocation_in_meta: Type.Union([Type.Number({ minimum: 0 }), Type.Null()]),
});

/**
 * Every allocation a public tokenomics adapter models (genesis, public sale, airdrop, community, emissions and the
 * locked ones): the basis of point-in-time circulating supply. `complete: false` → some sections could not be
 * evaluated, so what it says has circulated is a lower bound.
 */
export const SupplySchedule = Type.Object({
  source: Type.String({ minLength: 1 }),
  source_url: Type.String({ minLength: 1 }),
  complete: Type.Boolean(),
  unevaluated_sections: Type.Array(UnevaluatedSection),
  /** Share of the pieces' total in emission-like sections (farming, staking, rewards, inflation, mining). */
  emission_like_share: Type.Number({ minimum: 0, maximum: 1 }),
  pieces: Type.Array(SupplyPiece),
});
export type SupplySchedule = Static<typeof SupplySchedule>;

/** `emission`: most of the modelled supply is issuance (block rewards, staking, gauges), not vesting. */
export const SupplyModel = Type.Union([Type.Literal("vesting"), Type.Literal("emission")]);
export type SupplyModel = Static<typeof SupplyModel>;

export const TokenRecord = Type.Object({
  symbol: Type.String({ pattern: "^[A-Za-z0-9]{1,20}$" }),
  name: Type.String({ minLength: 1 }),
  coingecko_id: Type.Union([Type.String(), Type.Null()]),
  defillama_slug: Type.Union([Type.String(), Type.Null()]),
  chain: Type.Union([Type.String(), Type.Null()]),
  max_supply: Type.Union([Type.Number({ exclusiveMinimum: 0 }), Type.Null()]),
  supply: SupplyInfo,
  market: MarketInfo,
  schedules: Type.Array(SchedulePiece),
  sources: Type.Array(Type.String()),
  notes: Type.String(),
  prices: Type.Union([PriceSeries, Type.Null()]),
  /** Where `schedules` come from: the curated 46-token set, or the wide adapter set. */
  schedule_set: Type.Optional(Type.Union([Type.Literal("curated"), Type.Literal("wide")])),
  supply_model: Type.Optional(SupplyModel),
  /** The complete schedule circulating supply is rebuilt from; absent → circulating supply is unknown. */
  supply_schedule: Type.Optional(SupplySchedule),
  /** First day of real price history kept (its listing, or its TGE when a pre-market perp traded before it). */
  listing_date: Type.Optional(IsoDate),
  listing_basis: Type.Optional(Type.String()),
});
export type TokenRecord = Static<typeof TokenRecord>;

export const UnlockSnapshot = Type.Object({
  schema_version: Type.Literal(1),
  generated_at: Type.String({ minLength: 1 }),
  as_of: IsoDate,
  synthetic: Type.Boolean({ description: "true when any part of the snapshot is generated" }),
  description: Type.String(),
  generator: Type.Union([
    Type.Object({ name: Type.String(), seed: Type.Integer(), description: Type.String() }),
    Type.Null(),
  ]),
  benchmark: Type.Object({ symbol: Type.String({ minLength: 1 }), name: Type.String(), prices: PriceSeries }),
  tokens: Type.Array(TokenRecord),
});
export type UnlockSnapshot = Static<typeof UnlockSnapshot>;
