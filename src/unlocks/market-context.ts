import { dayOf, formatDay, parseDay } from "./data/dates.js";
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
  /** Where each stretch of candles the price and the ADV were read from came from, and when it was fetched. */
  readonly segments: readonly SegmentProvenance[];
}

/**
 * One stretch of the candles a market figure uses: the shipped history (a file fetched by its collector and committed
 * at `fetched_at`) or the live extension the refresh appended. Days are candle days (UTC), the stretch's first and last
 * used by the figures.
 */
export interface SegmentProvenance {
  readonly part: "shipped_history" | "live_extension";
  readonly used_for: ("price" | "adv_30d")[];
  readonly source: string;
  readonly url: string;
  readonly first_candle: string;
  readonly as_of: string;
  /** ISO time the candles were fetched from the venue; null when the refresh did not record it. */
  readonly fetched_at: string | null;
}

const SHIPPED_URL = /^https:\/\/github\.com\//;

/** The public endpoint the refresh continues a venue's series from (its default base URL). */
export function liveEndpointOf(venue: string, symbol: string): string {
  const pair = `${symbol.toUpperCase()}USDT`;
  return venue === "Bybit"
    ? `https://api.bybit.com/v5/market/kline?category=linear&symbol=${pair}&interval=D`
    : `https://fapi.binance.com/fapi/v1/klines?symbol=${pair}&interval=1d`;
}

interface Part {
  readonly part: SegmentProvenance["part"];
  readonly from: number;
  readonly to: number;
  readonly source: string;
  readonly url: string;
  readonly fetchedAt: string | null;
}

/**
 * The series' segments as shipped and live parts. A shipped file holds closed candles only, so a shipped segment
 * reaching past the day its file was fetched was extended by the refresh (same venue and instrument, merged into it):
 * that tail is the live part, from the venue's endpoint.
 */
function partsOf(series: DailySeries, symbol: string): Part[] {
  const out: Part[] = [];
  for (const seg of series.segments) {
    const from = parseDay(seg.from);
    const to = parseDay(seg.to);
    const source = `${seg.venue} ${seg.instrument} daily candles`;
    const fetched = seg.fetched_at ?? null;
    if (!SHIPPED_URL.test(seg.source_url)) {
      out.push({ part: "live_extension", from, to, source, url: seg.source_url, fetchedAt: fetched });
      continue;
    }
    // Index day d is the close of candle d-1: a file fetched on day F holds candles up to F-1 at most.
    const shippedTo = fetched === null ? to : Math.min(to, dayOf(new Date(fetched)));
    out.push({
      part: "shipped_history",
      from,
      to: shippedTo,
      source,
      url: seg.source_url,
      fetchedAt: fetched,
    });
    if (shippedTo < to)
      out.push({
        part: "live_extension",
        from: shippedTo + 1,
        to,
        source,
        url: liveEndpointOf(seg.venue, symbol),
        fetchedAt: null,
      });
  }
  return out;
}

/**
 * The parts a price at index day `priceDay` and, when known, the ADV of the 30 candles before it were read from, each
 * with its first and last candle used.
 */
export function segmentsUsed(
  series: DailySeries,
  symbol: string,
  priceDay: number,
  withAdv: boolean,
): SegmentProvenance[] {
  const lo = withAdv ? priceDay - ADV_DAYS + 1 : priceDay;
  const out: SegmentProvenance[] = [];
  for (const p of partsOf(series, symbol)) {
    const a = Math.max(p.from, lo);
    const b = Math.min(p.to, priceDay);
    if (a > b) continue;
    const used: SegmentProvenance["used_for"] = [];
    if (p.from <= priceDay && priceDay <= p.to) used.push("price");
    if (withAdv) used.push("adv_30d");
    out.push({
      part: p.part,
      used_for: used,
      source: p.source,
      url: p.url,
      first_candle: formatDay(a - 1),
      as_of: formatDay(b - 1),
      fetched_at: p.fetchedAt,
    });
  }
  return out;
}

/** The URL of the part the price comes from, else the series' own. */
const priceUrlOf = (segments: readonly SegmentProvenance[], fallback: string | null): string | null =>
  segments.find((s) => s.used_for.includes("price"))?.url ?? fallback;

/** Where a token's latest figures (price and 30-day ADV as of its last candle) come from, part by part. */
export function latestMarketProvenance(
  store: UnlockStore,
  token: TokenRecord,
): { source_url: string | null; segments: SegmentProvenance[] } {
  const series = store.pricesBySymbol.get(token.symbol.toLowerCase());
  if (!series) return { source_url: token.market.source_url, segments: [] };
  const segments = segmentsUsed(
    series,
    token.symbol,
    parseDay(token.market.as_of) + 1,
    token.market.adv_30d_usd !== null,
  );
  return { source_url: priceUrlOf(segments, token.market.source_url), segments };
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
    const segments = segmentsUsed(series, token.symbol, day, adv !== null);
    return {
      priceUsd: histPrice,
      priceObservedAt: formatDay(day - 1),
      priceSource: series.source,
      priceSourceUrl: priceUrlOf(segments, series.sourceUrl),
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
      segments,
    };
  }
  assumptions.push(
    `valued at the last real close (${token.market.as_of}) and the 30-day ADV ending then; see market.stale_days`,
  );
  const latest = latestMarketProvenance(store, token);
  return {
    priceUsd: token.market.price_usd,
    priceObservedAt: token.market.as_of,
    priceSource: token.market.source,
    priceSourceUrl: latest.source_url,
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
    segments: latest.segments,
  };
}
