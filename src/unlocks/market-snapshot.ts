import { formatDay, parseDay } from "./data/dates.js";
import type { MarketInfo, PriceSeries, SupplyInfo } from "./data/types.js";

/** Days averaged for the 30-day average daily volume. */
export const ADV_DAYS = 30;

export const CIRCULATING_METHOD =
  "estimated circulating supply = tokens the shipped schedule has released before the day (cliffs, steps, " +
  "linear streams pro rata); allocations without a schedule (treasuries, emissions), burns and unscheduled " +
  "transfers are not counted, so % of estimated circulating is an upper bound of % of true circulating";

/**
 * The token's current market figures from its real series: the last close and the mean volume of
 * the last 30 candles of the same venue. Depth is null: no order-book history is shipped.
 */
export function marketFromSeries(series: PriceSeries): MarketInfo {
  const endDay = parseDay(series.start) + series.close.length - 1;
  const price = series.close[series.close.length - 1] as number;
  const vols = (series.volume_usd ?? []).slice(-ADV_DAYS).filter((v): v is number => v !== null);
  const seg = series.segments?.[series.segments.length - 1];
  // Index endDay is the 00:00 UTC price after the last candle: the candle's own date is the day before.
  const lastCandle = formatDay(endDay - 1);
  return {
    price_usd: price,
    adv_30d_usd: vols.length === ADV_DAYS ? vols.reduce((a, b) => a + b, 0) / ADV_DAYS : null,
    depth_2pct_usd: null,
    venue: seg?.venue,
    instrument: seg?.instrument,
    adv_window: { from: formatDay(endDay - ADV_DAYS), to: lastCandle, days: vols.length },
    as_of: lastCandle,
    source: series.source,
    source_url: series.source_url,
    synthetic: false,
    assumptions: [
      `price: close of the ${lastCandle} UTC daily candle, quoted in ${seg?.quote ?? "USDT"} (taken as USD)`,
      `ADV: mean quote volume of the ${ADV_DAYS} daily candles ending ${lastCandle}, one venue and instrument only (not an all-exchange aggregate)`,
      "±2% order-book depth: unknown (no order-book history shipped; `npm run ingest -- --depth` records it)",
    ],
  };
}

/** No circulating-supply series is shipped: the figure is unknown, never generated. */
export function unknownSupply(maxSupply: number | null, asOf: string): SupplyInfo {
  return {
    circulating: null,
    total: maxSupply,
    as_of: asOf,
    source: "none: no real circulating-supply series is shipped",
    source_url: null,
    synthetic: false,
    assumptions: [CIRCULATING_METHOD],
  };
}
