import { formatDay } from "../store/unlocks-dates.js";
import { type DailySeries, seriesAt, type UnlockStore } from "../store/unlocks-snapshot.js";
import type { TokenRecord } from "../store/unlocks-types.js";
import { scheduledReleasedBefore } from "./events.js";

/** The market figures an event is scored against, each with where and when it was observed. */
export interface MarketContext {
  readonly priceUsd: number;
  readonly priceObservedAt: string;
  readonly priceSource: string;
  readonly priceSourceUrl: string | null;
  readonly advUsd: number | null;
  readonly advObservedAt: string;
  readonly advSource: string;
  readonly depthUsd: number | null;
  readonly depthObservedAt: string;
  readonly circulatingBefore: number | null;
  readonly circulatingObservedAt: string;
  readonly circulatingSource: string;
  readonly synthetic: boolean;
  readonly assumptions: readonly string[];
}

const ADV_DAYS = 30;
const MIN_ADV_POINTS = 20;

/** Mean of the series over [from, to], or null when fewer than `minPoints` values are present. */
export function meanOver(
  series: DailySeries,
  values: readonly (number | null)[] | null,
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

/**
 * Past events are valued with the history around their own date (price at 00:00 UTC of the unlock day,
 * volume averaged over the 30 days before it); future events with the snapshot's current market context.
 */
export function marketContextFor(store: UnlockStore, token: TokenRecord, day: number): MarketContext {
  const series = store.pricesBySymbol.get(token.symbol.toLowerCase());
  const assumptions: string[] = [];
  let synthetic = token.market.synthetic || token.supply.synthetic;
  const histPrice = series && day <= store.asOfDay ? seriesAt(series.close, series.startDay, day) : null;
  let priceUsd = token.market.price_usd;
  let priceObservedAt = token.market.as_of;
  let priceSource = token.market.source;
  let priceSourceUrl = token.market.source_url;
  let advUsd = token.market.adv_30d_usd;
  let advObservedAt = token.market.as_of;
  let advSource = token.market.source;
  if (series && histPrice !== null) {
    priceUsd = histPrice;
    priceObservedAt = formatDay(day);
    priceSource = series.source;
    priceSourceUrl = series.sourceUrl;
    synthetic = synthetic || series.synthetic;
    const adv = meanOver(series, series.volume, day - ADV_DAYS, day - 1, MIN_ADV_POINTS);
    if (adv !== null) {
      advUsd = adv;
      advObservedAt = formatDay(day - 1);
      advSource = series.source;
    } else {
      assumptions.push(
        "no volume history before this past unlock: the snapshot's current 30-day ADV is used",
      );
    }
  } else if (day < store.asOfDay) {
    assumptions.push("no price history on the unlock date: valued at the snapshot's current price");
  } else {
    assumptions.push(`future unlock valued at the price and 30-day ADV as of ${token.market.as_of}`);
  }

  const histCirc = series?.circulating ? seriesAt(series.circulating, series.startDay, day - 1) : null;
  let circulatingBefore: number | null;
  let circulatingObservedAt: string;
  let circulatingSource: string;
  if (histCirc !== null && histCirc !== undefined && histCirc > 0) {
    circulatingBefore = histCirc;
    circulatingObservedAt = formatDay(day - 1);
    circulatingSource = series?.source ?? token.supply.source;
  } else {
    const asOfNext = store.asOfDay + 1;
    const projected =
      token.supply.circulating +
      scheduledReleasedBefore(token, day) -
      scheduledReleasedBefore(token, asOfNext);
    circulatingBefore = projected > 0 ? projected : null;
    circulatingObservedAt = token.supply.as_of;
    circulatingSource = token.supply.source;
    if (day !== asOfNext) {
      assumptions.push(
        `circulating supply before the unlock = ${token.supply.as_of} circulating supply ${day > asOfNext ? "plus" : "minus"} scheduled releases in between (no inflation, burns or unscheduled transfers)`,
      );
    }
    if (circulatingBefore === null)
      assumptions.push("nothing circulates before this unlock: size scored as saturated");
  }
  return {
    priceUsd,
    priceObservedAt,
    priceSource,
    priceSourceUrl,
    advUsd,
    advObservedAt,
    advSource,
    // Depth is only known as of the snapshot; applying today's book to a past unlock would mislead.
    depthUsd: histPrice !== null ? null : token.market.depth_2pct_usd,
    depthObservedAt: token.market.as_of,
    circulatingBefore,
    circulatingObservedAt,
    circulatingSource,
    synthetic,
    assumptions,
  };
}
