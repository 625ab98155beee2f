import { formatDay, parseDay } from "./data/dates.js";
import { type DailySeries, type SeriesValues, seriesAt, type UnlockStore } from "./data/snapshot.js";
import type { TokenRecord } from "./data/types.js";
import { ADV_DAYS } from "./market-snapshot.js";
import type { CirculatingFigure } from "./supply.js";

/** The market figures an event is scored against, each with where and when it was observed. */
export interface MarketContext {
  readonly priceUsd: number;
  /** Date of the candle whose close is the price. */
  readonly priceObservedAt: string;
  readonly priceSource: string;
  readonly priceSourceUrl: string | null;
  readonly venue: string | null;
  readonly instrument: string | null;
  readonly advUsd: number | null;
  readonly advObservedAt: string;
  readonly advSource: string;
  readonly depthUsd: number | null;
  readonly depthObservedAt: string;
  readonly circulatingBefore: number | null;
  readonly circulatingObservedAt: string;
  readonly circulatingSource: string;
  readonly circulatingMethod: string;
  /** true when the complete schedule has unevaluated sections: the figure is a lower bound; null when unknown. */
  readonly circulatingLowerBound: boolean | null;
  readonly synthetic: boolean;
  readonly assumptions: readonly string[];
}

const MIN_ADV_POINTS = 20;

/** Mean of the series over index days [from, to], or null when fewer than `minPoints` values are present. */
export function meanOver(
  series: DailySeries,
  values: SeriesValues | null,
  from: number,
  to: number,
  minPoints: number,
): number | null {
  if (values === null) return null;
  let sum = 0;
  let n = 0;
  for (let d = from; d <= to; d++) {
    const v = seriesAt(values, series.startDay, d);
    if (v !== null) {
      sum += v;
      n++;
    }
  }
  return n >= minPoints ? sum / n : null;
}

export const seriesEndDay = (s: DailySeries): number => s.startDay + s.close.length - 1;

function segmentAt(series: DailySeries, day: number): { venue: string; instrument: string } | null {
  const seg = series.segments.find((s) => parseDay(s.from) <= day && day <= parseDay(s.to));
  return seg ? { venue: seg.venue, instrument: seg.instrument } : null;
}

/** The market context's circulating fields, from the one figure the event is scored against. */
function circulatingFields(c: CirculatingFigure) {
  return {
    circulatingBefore: c.value,
    circulatingObservedAt: c.observedAt,
    circulatingSource: c.source,
    circulatingMethod: c.method,
    circulatingLowerBound: c.lowerBound,
  };
}

/**
 * An event inside the token's price history is valued with the history around its own date: the
 * 00:00 UTC price of the unlock day (the last close before it) and the mean volume of the 30 candles
 * before it. An event outside it (future, or before the token traded) uses the snapshot's latest
 * figures, which say how old they are.
 */
export function marketContextFor(
  store: UnlockStore,
  token: TokenRecord,
  day: number,
  circulating: CirculatingFigure,
): MarketContext {
  const series = store.pricesBySymbol.get(token.symbol.toLowerCase());
  const assumptions: string[] = [];
  const histPrice = series ? seriesAt(series.close, series.startDay, day) : null;
  const circ = circulatingFields(circulating);
  if (circ.circulatingBefore === null)
    assumptions.push(
      "nothing is scheduled to circulate before this unlock: % of circulating is unknown and size is scored on % of max supply",
    );
  if (series && histPrice !== null) {
    const adv = meanOver(series, series.volume, day - ADV_DAYS + 1, day, MIN_ADV_POINTS);
    const seg = segmentAt(series, day);
    if (adv === null)
      assumptions.push("fewer than 20 days of same-venue volume before this unlock: ADV unknown");
    return {
      priceUsd: histPrice,
      priceObservedAt: formatDay(day - 1),
      priceSource: series.source,
      priceSourceUrl: series.sourceUrl,
      venue: seg?.venue ?? token.market.venue ?? null,
      instrument: seg?.instrument ?? token.market.instrument ?? null,
      advUsd: adv,
      advObservedAt: formatDay(day - 1),
      advSource: series.source,
      // Depth is only ever known as of a snapshot; applying today's book to a past unlock would mislead.
      depthUsd: null,
      depthObservedAt: formatDay(day - 1),
      ...circ,
      synthetic: series.synthetic,
      assumptions,
    };
  }
  assumptions.push(
    `valued at the last real close (${token.market.as_of}) and the 30-day ADV ending then; see market.stale_days`,
  );
  return {
    priceUsd: token.market.price_usd,
    priceObservedAt: token.market.as_of,
    priceSource: token.market.source,
    priceSourceUrl: token.market.source_url,
    venue: token.market.venue ?? null,
    instrument: token.market.instrument ?? null,
    advUsd: token.market.adv_30d_usd,
    advObservedAt: token.market.as_of,
    advSource: token.market.source,
    depthUsd: token.market.depth_2pct_usd,
    depthObservedAt: token.market.as_of,
    ...circ,
    synthetic: token.market.synthetic,
    assumptions,
  };
}
