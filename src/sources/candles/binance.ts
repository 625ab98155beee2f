import { dayOf } from "../../unlocks/data/dates.js";
import type { MarketInfo } from "../../unlocks/data/types.js";
import type { Candle } from "../../unlocks/market-history.js";
import { type FetchLike, getJson, joinUrl } from "../http.js";

/**
 * Binance USDⓈ-M futures public market data (no key): the venue and instrument of the shipped
 * primary series, so refreshed rows continue them without splicing venues.
 *   GET {base}/fapi/v1/klines?symbol=ARBUSDT&interval=1d&limit=N
 *     → [[openTime, open, high, low, close, volume, closeTime, quoteAssetVolume, trades, …], …]
 *   GET {base}/fapi/v1/depth?symbol=ARBUSDT&limit=1000 → {lastUpdateId, E, T, bids: [[price, qty]], asks}
 */
export const BINANCE_FUTURES_BASE = "https://fapi.binance.com";
export const BINANCE_VENUE = "Binance";
export const BINANCE_INSTRUMENT = "USDT-margined perpetual futures (USDⓈ-M)";

const num = (v: unknown, what: string): number => {
  const n = typeof v === "string" ? Number(v) : typeof v === "number" ? v : Number.NaN;
  if (!Number.isFinite(n)) throw new Error(`${what}: not a number (${String(v)})`);
  return n;
};

/**
 * Daily candles from a klines response, keeping only candles that had closed at `nowMs` (an open
 * candle's close is not a close). Volume is the quote-asset (USDT) volume, as in the shipped files.
 */
export function parseKlines(raw: unknown, nowMs: number): Candle[] {
  if (!Array.isArray(raw)) throw new Error("klines: expected an array");
  const out: Candle[] = [];
  for (const [i, k] of raw.entries()) {
    if (!Array.isArray(k) || k.length < 8)
      throw new Error(`klines[${i}]: expected an array of at least 8 fields`);
    const openTime = num(k[0], `klines[${i}][0]`);
    const closeTime = num(k[6], `klines[${i}][6]`);
    if (closeTime >= nowMs) continue;
    const close = num(k[4], `klines[${i}][4]`);
    const volume = num(k[7], `klines[${i}][7]`);
    if (!(close > 0) || !(volume >= 0))
      throw new Error(`klines[${i}]: non-positive close or negative volume`);
    const day = dayOf(new Date(openTime));
    const prev = out[out.length - 1];
    if (prev && day !== prev.day + 1) throw new Error(`klines[${i}]: not the day after the previous candle`);
    out.push({ day, close, volume });
  }
  return out;
}

export interface Depth {
  readonly mid: number;
  /** USDT resting on the bid side within 2 % below mid: what absorbs a sell. */
  readonly bidUsd2pct: number;
  readonly askUsd2pct: number;
  readonly observedAtMs: number | null;
}

/** ±2 % depth of an order-book snapshot; null when a side is empty. */
export function parseDepth(raw: unknown): Depth | null {
  const book = raw as { bids?: unknown; asks?: unknown; E?: unknown; T?: unknown };
  if (!Array.isArray(book.bids) || !Array.isArray(book.asks))
    throw new Error("depth: expected bids and asks arrays");
  const levels = (side: unknown[], name: string) =>
    side.map((l, i) => {
      if (!Array.isArray(l) || l.length < 2) throw new Error(`depth.${name}[${i}]: expected [price, qty]`);
      return { p: num(l[0], `depth.${name}[${i}][0]`), q: num(l[1], `depth.${name}[${i}][1]`) };
    });
  const bids = levels(book.bids, "bids");
  const asks = levels(book.asks, "asks");
  if (bids.length === 0 || asks.length === 0) return null;
  const bestBid = Math.max(...bids.map((l) => l.p));
  const bestAsk = Math.min(...asks.map((l) => l.p));
  const mid = (bestBid + bestAsk) / 2;
  const sum = (ls: { p: number; q: number }[], keep: (p: number) => boolean) =>
    ls.filter((l) => keep(l.p)).reduce((s, l) => s + l.p * l.q, 0);
  const at = typeof book.E === "number" ? book.E : typeof book.T === "number" ? book.T : null;
  return {
    mid,
    bidUsd2pct: sum(bids, (p) => p >= mid * 0.98),
    askUsd2pct: sum(asks, (p) => p <= mid * 1.02),
    observedAtMs: at,
  };
}

export const pairOf = (symbol: string): string => `${symbol.toUpperCase()}USDT`;

/** A daily close this many times above or below the previous one is a bad print or a wrong symbol, not a market. */
export const MAX_DAILY_JUMP = 20;

/**
 * Refuses candles that do not continue a series: none at all, or a close MAX_DAILY_JUMP× off the one before it (the
 * series' own last close first). Throws naming the day; the caller keeps its previous data.
 */
export function checkContinuity(previousClose: number | null, candles: readonly Candle[]): void {
  if (candles.length === 0) throw new Error("empty answer: no closed candle");
  let prev = previousClose;
  for (const c of candles) {
    if (prev !== null && (c.close > prev * MAX_DAILY_JUMP || c.close * MAX_DAILY_JUMP < prev))
      throw new Error(
        `close ${c.close} on ${dayLabel(c.day)} is more than ${MAX_DAILY_JUMP}× off the previous close ${prev}`,
      );
    prev = c.close;
  }
}

const dayLabel = (day: number): string => new Date(day * 86_400_000).toISOString().slice(0, 10);

/** One USDⓈ-M contract of `GET /fapi/v1/exchangeInfo`: `{symbols: [{symbol, status, contractType, onboardDate}]}`. */
export interface FuturesListing {
  readonly symbol: string;
  readonly status: string;
  readonly contractType: string;
  /** The contract's listing time (ms). */
  readonly onboardDate: number | null;
}

export function parseExchangeInfo(raw: unknown): FuturesListing[] {
  const symbols = (raw as { symbols?: unknown } | null)?.symbols;
  if (!Array.isArray(symbols) || symbols.length === 0)
    throw new Error("exchangeInfo: expected a symbols array");
  return symbols.map((s, i) => {
    const r = s as Record<string, unknown>;
    if (typeof r.symbol !== "string") throw new Error(`exchangeInfo.symbols[${i}]: no symbol`);
    return {
      symbol: r.symbol,
      status: typeof r.status === "string" ? r.status : "UNKNOWN",
      contractType: typeof r.contractType === "string" ? r.contractType : "UNKNOWN",
      onboardDate: typeof r.onboardDate === "number" ? r.onboardDate : null,
    };
  });
}

export async function fetchExchangeInfo(fetchImpl: FetchLike, base: string): Promise<FuturesListing[]> {
  return parseExchangeInfo(await getJson(fetchImpl, joinUrl(base, "fapi/v1/exchangeInfo")));
}

/**
 * A symbol's daily klines endpoint: fetched with `limit`, and named without it by the live segment its candles
 * extend (the one place the URL is written).
 */
export const klinesUrl = (base: string, symbol: string, limit?: number): string =>
  joinUrl(
    base,
    `fapi/v1/klines?symbol=${pairOf(symbol)}&interval=1d${limit === undefined ? "" : `&limit=${limit}`}`,
  );

export async function fetchKlines(
  fetchImpl: FetchLike,
  base: string,
  symbol: string,
  limit: number,
  nowMs: number,
): Promise<Candle[]> {
  return parseKlines(await getJson(fetchImpl, klinesUrl(base, symbol, limit)), nowMs);
}

export async function fetchDepth(fetchImpl: FetchLike, base: string, symbol: string): Promise<Depth | null> {
  return parseDepth(
    await getJson(fetchImpl, joinUrl(base, `fapi/v1/depth?symbol=${pairOf(symbol)}&limit=1000`)),
  );
}

/** The market with the ±2 % depth of one order-book snapshot, noted in its assumptions. */
export function withDepth(market: MarketInfo, d: Depth, symbol: string, now: Date): MarketInfo {
  const at = new Date(d.observedAtMs ?? now.getTime()).toISOString();
  return {
    ...market,
    depth_2pct_usd: d.bidUsd2pct,
    assumptions: [
      ...market.assumptions.filter((a) => !a.startsWith("±2% order-book depth")),
      `±2% order-book depth: USDT on the bid side within 2% below mid (${d.mid}) of the ${BINANCE_VENUE} ${pairOf(symbol)} perpetual book at ${at} (1000 levels); ask side ${Math.round(d.askUsd2pct)} USDT. One snapshot, one venue.`,
    ],
  };
}
