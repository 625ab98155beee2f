import { dayOf, formatDay, parseDay } from "../unlocks/data/dates.js";
import type { PriceSeries, TokenRecord, UnlockSnapshot } from "../unlocks/data/types.js";
import {
  BINANCE_INSTRUMENT,
  BINANCE_VENUE,
  checkContinuity,
  fetchKlines,
  pairOf,
} from "../unlocks/ingest/binance.js";
import { BYBIT_INSTRUMENT, BYBIT_VENUE, fetchBybitKlines } from "../unlocks/ingest/bybit.js";
import type { FetchLike } from "../unlocks/ingest/http.js";
import { mergeCandles } from "../unlocks/ingest/series-merge.js";
import type { Candle } from "../unlocks/market-history.js";
import { marketFromSeries } from "../unlocks/market-snapshot.js";
import { describeError, retryAfterOf } from "./errors.js";
import type { SourceName, SourceOutcome } from "./status.js";

export interface MarketSources {
  readonly fetchImpl: FetchLike;
  readonly binanceBase: string;
  readonly bybitBase: string;
  /** Requests in flight per source. */
  readonly concurrency?: number;
  /** Most candles asked for per token (Binance serves up to 1500). */
  readonly maxDays?: number;
}

type Venue = Extract<SourceName, "binance" | "bybit">;

/** The venue whose candles continue a series: the one of its last segment (never splice venues). */
export function venueOf(series: PriceSeries | null): Venue | null {
  const last = series?.segments?.[series.segments.length - 1];
  if (!last) return null;
  if (last.venue === BINANCE_VENUE && /perpetual/i.test(last.instrument)) return "binance";
  if (last.venue === BYBIT_VENUE && /perpetual/i.test(last.instrument)) return "bybit";
  return null;
}

const segmentFor = (venue: Venue, base: string, symbol: string) =>
  venue === "binance"
    ? {
        venue: BINANCE_VENUE,
        instrument: BINANCE_INSTRUMENT,
        quote: "USDT",
        source_url: `${base.replace(/\/+$/, "")}/fapi/v1/klines?symbol=${pairOf(symbol)}&interval=1d`,
      }
    : {
        venue: BYBIT_VENUE,
        instrument: BYBIT_INSTRUMENT,
        quote: "USDT",
        source_url: `${base.replace(/\/+$/, "")}/v5/market/kline?category=linear&symbol=${pairOf(symbol)}&interval=D`,
      };

/** The close of the candle of `day` in a 00:00 UTC series (index day+1), or null. */
function closeOfCandle(series: PriceSeries, day: number): number | null {
  const v = series.close[day + 1 - parseDay(series.start)];
  return typeof v === "number" ? v : null;
}

/** Day of the last closed candle a series holds (its last index is the 00:00 UTC price after it). */
export const lastCandleDay = (series: PriceSeries): number =>
  parseDay(series.start) + series.close.length - 2;

interface Fetched {
  readonly series: PriceSeries;
  readonly lastDay: number;
}

/**
 * New candles for one series, validated against it: only closed candles, day after day, none 20× off the close
 * before it. The first candle asked for is the last one held, so the check always has a previous close.
 */
async function extend(
  src: MarketSources,
  venue: Venue,
  symbol: string,
  series: PriceSeries,
  now: Date,
): Promise<Fetched | null> {
  const last = lastCandleDay(series);
  const yesterday = dayOf(now) - 1;
  if (last >= yesterday) return null; // nothing closed since
  const limit = Math.min(src.maxDays ?? 1500, yesterday - last + 1);
  const candles: Candle[] =
    venue === "binance"
      ? await fetchKlines(src.fetchImpl, src.binanceBase, symbol, limit, now.getTime())
      : await fetchBybitKlines(src.fetchImpl, src.bybitBase, symbol, limit, now.getTime());
  const first = candles[0];
  checkContinuity(first ? closeOfCandle(series, first.day - 1) : null, candles);
  const newest = (candles[candles.length - 1] as Candle).day;
  if (newest <= last) return null;
  const base = venue === "binance" ? src.binanceBase : src.bybitBase;
  return { series: mergeCandles(series, candles, segmentFor(venue, base, symbol)), lastDay: newest };
}

/** Runs `work` over `items`, `n` at a time; stops handing out items once `stop()` says so. */
export async function pool<T>(
  items: readonly T[],
  n: number,
  work: (item: T) => Promise<void>,
  stop: () => boolean,
) {
  let next = 0;
  const lane = async () => {
    while (next < items.length && !stop()) await work(items[next++] as T);
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(n, items.length)) }, lane));
}

export interface MarketRefresh {
  /** The snapshot with every series that could be extended extended; the input itself when none could. */
  readonly snapshot: UnlockSnapshot;
  readonly outcomes: readonly SourceOutcome[];
  readonly changed: boolean;
}

/**
 * Extends every token's (and the benchmark's) daily series from its own venue, up to the last candle closed at `now`,
 * and recomputes its market figures (price, 30-day ADV, as-of). A token whose answer fails or looks wrong keeps its
 * series as it was and is named in its source's outcome; a 429 stops that source for this run. Pure apart from the
 * fetches: nothing is written.
 */
export async function refreshMarkets(
  base: UnlockSnapshot,
  src: MarketSources,
  now: Date,
  only: readonly Venue[] = ["binance", "bybit"],
): Promise<MarketRefresh> {
  const acc: Record<
    Venue,
    {
      updated: string[];
      failed: { item: string; error: string }[];
      asOf: number | null;
      retry: number | null;
    }
  > = {
    binance: { updated: [], failed: [], asOf: null, retry: null },
    bybit: { updated: [], failed: [], asOf: null, retry: null },
  };
  const jobs: { key: string; venue: Venue; symbol: string; series: PriceSeries }[] = [];
  const benchVenue = venueOf(base.benchmark.prices);
  if (benchVenue && only.includes(benchVenue))
    jobs.push({
      key: "$benchmark",
      venue: benchVenue,
      symbol: base.benchmark.symbol,
      series: base.benchmark.prices,
    });
  for (const t of base.tokens) {
    const v = venueOf(t.prices);
    if (v && t.prices && only.includes(v))
      jobs.push({ key: t.symbol, venue: v, symbol: t.symbol, series: t.prices });
  }
  const results = new Map<string, Fetched>();
  for (const venue of only) {
    const mine = jobs.filter((j) => j.venue === venue);
    const a = acc[venue];
    await pool(
      mine,
      src.concurrency ?? 4,
      async (j) => {
        try {
          const got = await extend(src, venue, j.symbol, j.series, now);
          const lastDay = got?.lastDay ?? lastCandleDay(j.series);
          if (got) results.set(j.key, got);
          a.updated.push(j.symbol);
          a.asOf = a.asOf === null ? lastDay : Math.max(a.asOf, lastDay);
        } catch (err) {
          a.failed.push({ item: j.symbol, error: describeError(err) });
          const wait = retryAfterOf(err);
          if (wait !== null || (err as { status?: number }).status === 429) a.retry = wait ?? 60;
        }
      },
      () => a.retry !== null,
    );
    if (a.retry !== null) {
      const done = new Set([...a.updated, ...a.failed.map((f) => f.item)]);
      for (const j of mine)
        if (!done.has(j.symbol))
          a.failed.push({ item: j.symbol, error: "not asked: source rate-limited us" });
    }
  }
  const outcomes: SourceOutcome[] = only.map((venue) => ({
    source: venue,
    updated: acc[venue].updated,
    failed: acc[venue].failed,
    dataAsOf: acc[venue].asOf === null ? null : formatDay(acc[venue].asOf as number),
    retryAfterSeconds: acc[venue].retry,
  }));
  if (results.size === 0) return { snapshot: base, outcomes, changed: false };
  const bench = results.get("$benchmark");
  const tokens: TokenRecord[] = base.tokens.map((t) => {
    const got = results.get(t.symbol);
    if (!got) return t;
    const market = marketFromSeries(got.series);
    // Depth is one order-book observation of its own day: kept (with its note) only while it is the same market.
    return { ...t, prices: got.series, market: { ...market, depth_2pct_usd: null } };
  });
  return {
    snapshot: {
      ...base,
      generated_at: now.toISOString(),
      benchmark: bench ? { ...base.benchmark, prices: bench.series } : base.benchmark,
      tokens,
    },
    outcomes,
    changed: true,
  };
}
