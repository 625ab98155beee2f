import { type Static, Type } from "typebox";
import { CATEGORIES } from "../benchmark/catalog/schema.js";

/**
 * 200 body of POST /v1/benchmark/endpoint. Every field the benchmark service returns is declared
 * here (the server serialises through this schema, which drops anything undeclared), so the objects are closed: a
 * typed client catches a misspelt field. Clients should still ignore fields they do not know (the contract's rule):
 * a later version may declare more.
 */
const closed = { additionalProperties: false } as const;
const NullableNumber = (description: string) => Type.Union([Type.Number(), Type.Null()], { description });
const NullableString = (description: string) => Type.Union([Type.String(), Type.Null()], { description });
const NullableInteger = (description: string) => Type.Union([Type.Integer(), Type.Null()], { description });

export const BenchmarkCategory = Type.Enum([...CATEGORIES], { description: "Endpoint category" });

export const BenchmarkPrice = Type.Object(
  {
    usd: NullableNumber("Price per call in USD (null when the asset's USD value is unknown)"),
    amount_atomic: NullableString("Price per call in the asset's atomic units, as a decimal string"),
  },
  { ...closed, description: "Observed price of one call" },
);

export const RouteDescriptor = Type.Object(
  {
    method: Type.Union([Type.Literal("GET"), Type.Literal("POST")], {
      description: "Normalised HTTP method: GET, or POST for any method that carries a body or changes state",
    }),
    method_observed: NullableString("HTTP method as listed by the source (e.g. DELETE), null when unknown"),
    generated_at: Type.String({
      format: "date-time",
      description: "ISO 8601 UTC time the market data behind this benchmark was generated",
    }),
    price: Type.Union([BenchmarkPrice, Type.Null()], { description: "Observed price, null when unknown" }),
    network: NullableString("CAIP-2 network id of the observed price"),
    asset: NullableString("Asset (token contract) of the observed price"),
    observed_at: NullableString(
      "When the price was observed (ISO 8601 UTC): the listing's lastUpdated, the probe time, or null when the source is undated",
    ),
    availability: Type.String({ description: "Availability label of this benchmark product" }),
    confidence: Type.Union([Type.Literal("high"), Type.Literal("low"), Type.Literal("unknown")], {
      description:
        "Confidence label of the contract: high, low (any grade short of high) or unknown (no observed price); the finer grade and its reasons are in confidence_detail",
    }),
    confidence_detail: Type.Object(
      {
        grade: Type.Union(
          [Type.Literal("high"), Type.Literal("medium"), Type.Literal("low"), Type.Literal("unknown")],
          {
            description:
              "Finer grade: drops with price quality, few services and stale observations (docs/benchmark.md); medium is labelled low",
          },
        ),
        reasons: Type.Array(Type.String(), { description: "Why the grade is what it is" }),
      },
      { ...closed, description: "The grade behind the confidence label, with its reasons" },
    ),
  },
  { ...closed, description: "Route descriptor of the benchmarked endpoint" },
);

export const BenchmarkMatch = Type.Object(
  {
    type: Type.Union(
      [Type.Literal("exact"), Type.Literal("template"), Type.Literal("live_probe"), Type.Literal("none")],
      {
        description: "How the price was found: same URL, same URL template, a live 402 probe, or not at all",
      },
    ),
    matched_count: Type.Integer({ description: "Catalog entries that matched the URL template" }),
    template: Type.String({ description: "host/path template used for matching ({} = an instance segment)" }),
    service: NullableString("Service (seller) of the best match: listings sharing a host or payTo address"),
    listed_service: NullableString("Service name as the source listed it"),
    matched_urls: Type.Array(Type.String(), { description: "URLs of the matching catalog entries" }),
  },
  { ...closed, description: "How the endpoint was matched to market data" },
);

export const MarketStats = Type.Object(
  {
    category: BenchmarkCategory,
    submarket: NullableString("Finer market used (e.g. token_price), null when the whole category is used"),
    scope: Type.Union([Type.Literal("submarket"), Type.Literal("category"), Type.Literal("all")], {
      description: "Which market the figures describe: a finer market, the category, or every category",
    }),
    fallback_reason: NullableString("Why the whole category is used instead of a finer market"),
    network: Type.String({ description: "Network of the comparables (Base mainnet)" }),
    comparable_count: Type.Integer({
      description: "Number of comparable endpoints (same as endpoint_count)",
    }),
    endpoint_count: Type.Integer({ description: "Comparable endpoints behind the figures" }),
    service_count: Type.Integer({ description: "Services behind the figures (one vote each)" }),
    p10: NullableNumber("10th percentile of the service prices, USD"),
    p25: NullableNumber("25th percentile of the service prices, USD"),
    median: NullableNumber("Median of the service prices, USD"),
    p75: NullableNumber("75th percentile of the service prices, USD"),
    p90: NullableNumber("90th percentile of the service prices, USD"),
    weighting: Type.String({ description: "How services are weighted" }),
    as_of: NullableString(
      "Newest observation date among the comparables (ISO 8601 UTC); null when none is dated",
    ),
    age_days: NullableInteger("Whole days from as_of to the benchmark time"),
    oldest_observed_at: NullableString("Oldest observation date among the comparables"),
    dated_count: Type.Integer({ description: "Comparables with an observation date" }),
    undated_count: Type.Integer({ description: "Comparables from undated sources" }),
    usage_observed_count: Type.Integer({
      description: "Comparables with observed 30-day usage (0: none observed)",
    }),
    excluded: Type.Object(
      {
        other_network: Type.Integer({ description: "Entries on other or unknown networks" }),
        testnet: Type.Integer({ description: "Testnet entries" }),
        not_per_call: Type.Integer({ description: "Bundles, top-ups, credit and inbox purchases" }),
        approximate_price: Type.Integer({ description: "Estimated, default, dynamic or example prices" }),
        no_price: Type.Integer({ description: "Entries without a USD price" }),
        self: Type.Integer({ description: "Entries of the benchmarked endpoint's own service" }),
      },
      { ...closed, description: "Entries of the category left out of the comparables, by reason" },
    ),
    basis: Type.String({ description: "What the comparables are" }),
  },
  { ...closed, description: "Market price distribution of comparable endpoints (USD per call)" },
);

export const UsageFigures = Type.Object(
  {
    calls_30d: NullableInteger("Paid calls in the last 30 days, as listed"),
    unique_payers_30d: NullableInteger("Distinct payers in the last 30 days, as listed"),
    adjusted_calls_30d: NullableInteger("Wash-adjusted calls: at most one per payer when 2 payers or fewer"),
    wash_adjusted: Type.Boolean({ description: "True when the adjustment lowered the call count" }),
    wash_check: Type.Union(
      [
        Type.Literal("passed"),
        Type.Literal("discounted"),
        Type.Literal("payers_unknown"),
        Type.Literal("no_usage_data"),
      ],
      { description: "Outcome of the wash check" },
    ),
    note: Type.String({ description: "The usage figure in words" }),
    observed: Type.Boolean({ description: "False when no usage was observed for this endpoint" }),
    source_url: NullableString("Where the usage figures were read"),
  },
  { ...closed, description: "Usage of the endpoint with the wash adjustment" },
);

export const Alternative = Type.Object(
  {
    url: Type.String({ description: "Alternative endpoint URL" }),
    method: Type.String({ description: "Its HTTP method" }),
    service: Type.String({ description: "Its service" }),
    price_usd: Type.Number({ description: "Its price per call, USD" }),
    amount_atomic: NullableString("Its price in atomic units"),
    calls_30d: NullableInteger("Its listed 30-day calls"),
    unique_payers_30d: NullableInteger("Its listed 30-day payers"),
    adjusted_calls_30d: Type.Integer({ description: "Its wash-adjusted 30-day calls" }),
    observed_at: NullableString("When its listing was observed"),
    source_url: Type.String({ description: "Where it was observed" }),
  },
  { ...closed, description: "Same-category endpoint at or below the price with stronger adjusted usage" },
);

export const TestPriceBand = Type.Object(
  {
    min_usd: Type.Number({ description: "Lower end (market 25th percentile), USD" }),
    max_usd: Type.Number({ description: "Upper end (market median), USD" }),
    min_amount_atomic: Type.String({ description: "Lower end in Base USDC atomic units (6 decimals)" }),
    max_amount_atomic: Type.String({ description: "Upper end in Base USDC atomic units (6 decimals)" }),
    endpoint_count: Type.Integer({ description: "Comparable endpoints behind the band" }),
    service_count: Type.Integer({ description: "Services behind the band (one vote each)" }),
    basis: Type.String({ description: "How the band was set" }),
  },
  { ...closed, description: "Price band in which to test a route in this market" },
);

export const SourceTrailItem = Type.Object(
  {
    source_url: NullableString("Public page, discovery listing or endpoint the fact was read from"),
    source: NullableString("Named source: recording:<name>, compilation:<name> or live probe"),
    observed_at: NullableString("When it was observed (ISO 8601 UTC); null for undated observations"),
    kind: Type.Union(
      [
        Type.Literal("catalog_entry"),
        Type.Literal("bazaar_listing"),
        Type.Literal("live_probe"),
        Type.Literal("market_snapshot"),
      ],
      {
        description:
          "What kind of observation: one catalog entry, a Bazaar listing, a live 402 probe, or the market snapshot",
      },
    ),
    compiled_on: NullableString("Date the source was compiled or ingested (YYYY-MM-DD)"),
  },
  { ...closed, description: "One observation behind the result" },
);

export const LiveProbeReport = Type.Object(
  {
    attempted: Type.Boolean({ description: "Whether a live probe was made" }),
    outcome: Type.String({ description: "ok, a refusal or failure reason, or why it was skipped" }),
    detail: Type.String({ description: "The outcome in words" }),
  },
  { ...closed, description: "Live 402 probe report" },
);

export const BenchmarkResult = Type.Object(
  {
    endpoint_url: Type.String({ description: "The URL as given" }),
    normalized_url: Type.String({
      description: "Normalised URL (lower-case scheme/host, no default port, trailing slash, query)",
    }),
    category: BenchmarkCategory,
    category_source: Type.Union(
      [Type.Literal("hint"), Type.Literal("catalog"), Type.Literal("inferred"), Type.Literal("default")],
      {
        description:
          "Where the category came from: the request's hint, the matched catalog entry, inference, or none",
      },
    ),
    category_evidence: Type.Array(Type.String(), {
      description: "Words or facts that decided an inferred category",
    }),
    route: RouteDescriptor,
    match: BenchmarkMatch,
    market: MarketStats,
    price_percentile: NullableNumber(
      "Mid-rank percentile (0–100) of the price among the comparable services' prices (one vote per service)",
    ),
    price_percentile_counts: Type.Object(
      {
        endpoint_count: Type.Integer({ description: "Comparable endpoints behind the percentile" }),
        service_count: Type.Integer({ description: "Services behind the percentile" }),
      },
      { ...closed, description: "What the percentile is computed over" },
    ),
    price_position: Type.Union(
      [
        Type.Literal("below_market"),
        Type.Literal("at_market"),
        Type.Literal("above_market"),
        Type.Literal("unknown"),
      ],
      { description: "Below p25, between p25 and p75, above p75, or unknown" },
    ),
    usage: UsageFigures,
    decision: Type.Union(
      [
        Type.Literal("worth_testing"),
        Type.Literal("avoid_for_now"),
        Type.Literal("better_alternative_available"),
        Type.Literal("needs_more_history"),
      ],
      { description: "What to do about this endpoint" },
    ),
    decision_reasons: Type.Array(Type.String(), { description: "Why" }),
    alternatives_check: Type.Object(
      {
        ran: Type.Boolean({
          description: "False when no usage was observed, so no alternative could qualify",
        }),
        detail: Type.String({ description: "The check in words" }),
      },
      { ...closed, description: "Whether the better-alternative check could run" },
    ),
    alternatives: Type.Array(Alternative, {
      description: "Better-used endpoints at or below the price (at most 5)",
    }),
    suggested_test_price_band: Type.Union([TestPriceBand, Type.Null()], {
      description: "Band to test a price in, null when the market is too thin",
    }),
    source_trail: Type.Array(SourceTrailItem, { description: "Observations behind the result" }),
    live_probe: LiveProbeReport,
    benchmarked_at: Type.String({
      format: "date-time",
      description: "When this benchmark was computed (ISO 8601 UTC)",
    }),
    synthetic: Type.Boolean({ description: "False: built from real public observations" }),
  },
  { ...closed, description: "x402 market price benchmark of one endpoint" },
);
export type BenchmarkResult = Static<typeof BenchmarkResult>;
