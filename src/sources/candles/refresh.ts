import { dayOf, formatDay, parseDay } from "../../unlocks/data/dates.js";
import type { PriceSeries, TokenRecord, UnlockSnapshot } from "../../unlocks/data/types.js";
import type { Candle } from "../../unlocks/market-history.js";
import { marketFromSeries } from "../../unlocks/market-snapshot.js";
import { checkAgainstOtherSource } from "../coingecko/circulating.js";
import { failure, ImplausibleError, retryAfterOf } from "../errors.js";
import type { FetchLike } from "../http.js";
import type { SourceName, SourceOutcome } from "../status.js";
import {
  BINANCE_INSTRUMENT,
  BINANCE_VENUE,
  checkContinuity,
  fetchDepth,
  fetchKlines,
  klinesUrl,
  withDepth,
} from "./binance.js";
import { BYBIT_INSTRUMENT, BYBIT_VENUE, bybitKlinesUrl, fetchBybitKlines } from "./bybit.js";
import { mergeCandles } from "./merge.js";

export interface MarketSources {
  readonly fetchImpl: FetchLike;
  readonly binanceBase: string;
  readonly bybitBase: string;
  /** Requests in flight per source. */
  readonly concurrency?: number;
  /** Most candles asked for per token (Binance serves up to 1500). */
  readonly maxDays?: number;
  /** Per token: another source's price and its day (CoinGecko's), to check the newest close against. */
  readonly reference?: ReadonlyMap<string, { readonly price: number; readonly day: number }>;
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

/** The live segment a refresh appends: the endpoint actually read, and when it was read. */
const segmentFor = (venue: Venue, base: string, symbol: string, now: Date) =>
  venue === "binance"
    ? {
        venue: BINANCE_VENUE,
        instrument: BINANCE_INSTRUMENT,
        quote: "USDT",
        source_url: klinesUrl(base, symbol),
        fetched_at: now.toISOString(),
      }
    : {
        venue: BYBIT_VENUE,
        instrument: BYBIT_INSTRUMENT,
        quote: "USDT",
        source_url: bybitKlinesUrl(base, symbol),
        fetched_at: now.toISOString(),
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
 * before it, none MAX_TOTAL_MOVE× off the last good close; then against the other sources: CoinGecko's price and,
 * when it lists the symbol, the other venue's closes of the same days. The first candle asked for is the last one
 * held, so the check always has a previous close.
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
  checkTotalMove(closeOfCandle(series, last), candles);
  const newestCandle = candles[candles.length - 1] as Candle;
  const ref = src.reference?.get(symbol);
  checkAgainstOtherSource(
    `close on ${formatDay(newestCandle.day)}`,
    newestCandle.close,
    newestCandle.day,
    ref ? { name: "CoinGecko", ...ref } : null,
    { candles, other_source: ref ?? null },
  );
  const newest = (candles[candles.length - 1] as Candle).day;
  if (newest <= last) return null;
  const other: Venue = venue === "binance" ? "bybit" : "binance";
  checkAgainstOtherVenue(
    venueName(venue),
    candles,
    venueName(other),
    await otherVenueCandles(src, other, symbol, limit, now),
  );
  const base = venue === "binance" ? src.binanceBase : src.bybitBase;
  return { series: mergeCandles(series, candles, segmentFor(venue, base, symbol, now)), lastDay: newest };
}

const venueName = (v: Venue): string => (v === "binance" ? BINANCE_VENUE : BYBIT_VENUE);

/**
 * The other venue's candles for the same symbol and days, to check a batch against; null when it cannot give them
 * (it does not list the symbol, is down or rate-limits us): then the batch stands on its own checks, as before a
 * second venue was asked.
 */
async function otherVenueCandles(
  src: MarketSources,
  other: Venue,
  symbol: string,
  limit: number,
  now: Date,
): Promise<readonly Candle[] | null> {
  try {
    return other === "binance"
      ? await fetchKlines(src.fetchImpl, src.binanceBase, symbol, limit, now.getTime())
      : await fetchBybitKlines(src.fetchImpl, src.bybitBase, symbol, limit, now.getTime());
  } catch {
    return null;
  }
}

/**
 * How far one venue's daily close may be from the other's for the same perpetual and day. On the 15,271 token-days
 * where the shipped Binance USDⓈ-M and Bybit USDT perpetual series overlap (26 tokens, data/market-history), the
 * largest gap is 0.80 % (median 0.03 %), 2025-10-10's liquidations included: arbitrage holds the two within a
 * fraction of a percent at the 00:00 UTC close. 5 % is six times the worst seen, so a real market does not trip it,
 * while a venue (or whoever answers in its name) cannot move a figure further than that from the other.
 */
export const MAX_VENUE_DISAGREEMENT = 0.05;

/**
 * Refuses a batch of candles whose close on any day the other venue also closed is more than MAX_VENUE_DISAGREEMENT
 * away from the other venue's close that day: two venues of the same instrument that disagree that much mean one of
 * them is wrong, and neither may set the figure alone. Nothing to compare (no other candles, no common day) passes.
 */
export function checkAgainstOtherVenue(
  venue: string,
  candles: readonly Candle[],
  otherVenue: string,
  other: readonly Candle[] | null,
): void {
  if (!other || other.length === 0) return;
  const theirs = new Map(other.map((c) => [c.day, c.close]));
  for (const c of candles) {
    const o = theirs.get(c.day);
    if (o === undefined || !(o > 0)) continue;
    const gap = c.close / o - 1;
    if (Math.abs(gap) > MAX_VENUE_DISAGREEMENT)
      throw new ImplausibleError(
        `${venue} close ${c.close} on ${formatDay(c.day)} is ${(gap * 100).toFixed(1)} % off ${otherVenue}'s ${o} (bound ${MAX_VENUE_DISAGREEMENT * 100} % between venues)`,
        {
          candles,
          other_venue: otherVenue,
          other_candles: other.filter((x) => candles.some((c2) => c2.day === x.day)),
        },
      );
  }
}

/**
 * How far a refreshed series may move from the last good close, all its new candles together: a per-candle bound alone
 * lets 15× a day compound (two candles: 225×). Real daily crypto closes move far less over the days a refresh covers.
 */
export const MAX_TOTAL_MOVE = 10;

/** Refuses new candles any of which closes more than MAX_TOTAL_MOVE× above or below the last good close. */
export function checkTotalMove(lastGood: number | null, candles: readonly Candle[]): void {
  if (lastGood === null) return;
  for (const c of candles) {
    const ratio = c.close / lastGood;
    if (ratio > MAX_TOTAL_MOVE || ratio * MAX_TOTAL_MOVE < 1)
      throw new ImplausibleError(
        `close ${c.close} on ${formatDay(c.day)} is ${ratio >= 1 ? `${ratio.toPrecision(3)}×` : `1/${(1 / ratio).toPrecision(3)}`} the last good close ${lastGood} (bound ${MAX_TOTAL_MOVE}× over one refresh)`,
        { last_good_close: lastGood, candles },
      );
  }
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
          a.failed.push(failure(j.symbol, err));
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

/**
 * The ±2 % order-book depth of every Binance-perpetual token, one snapshot each (`npm run ingest -- --depth`). A token
 * whose book cannot be read keeps its market as it was (depth unknown) and is named; nothing is written here.
 */
export async function refreshDepth(
  base: UnlockSnapshot,
  fetchImpl: FetchLike,
  binanceBase: string,
  now: Date,
): Promise<{ snapshot: UnlockSnapshot | null; outcomes: SourceOutcome[] }> {
  const updated: string[] = [];
  const failed: { item: string; error: string }[] = [];
  const markets = new Map<string, TokenRecord["market"]>();
  for (const t of base.tokens) {
    if (venueOf(t.prices) !== "binance") continue;
    try {
      const d = await fetchDepth(fetchImpl, binanceBase, t.symbol);
      if (!d) throw new Error("empty order book");
      markets.set(t.symbol, withDepth(t.market, d, t.symbol, now));
      updated.push(`${t.symbol} depth`);
    } catch (err) {
      failed.push(failure(`${t.symbol} depth`, err));
    }
  }
  const outcome: SourceOutcome = {
    source: "binance",
    updated,
    failed,
    dataAsOf: null,
    retryAfterSeconds: null,
  };
  if (markets.size === 0) return { snapshot: null, outcomes: [outcome] };
  return {
    snapshot: {
      ...base,
      tokens: base.tokens.map((t) => {
        const market = markets.get(t.symbol);
        return market ? { ...t, market } : t;
      }),
    },
    outcomes: [outcome],
  };
}
