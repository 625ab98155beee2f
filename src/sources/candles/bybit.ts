import { dayOf } from "../../unlocks/data/dates.js";
import type { Candle } from "../../unlocks/market-history.js";
import { type FetchLike, getJson, joinUrl } from "../http.js";

/**
 * Bybit v5 public market data (no key), the venue of the shipped series of tokens without a Binance perpetual:
 *   GET {base}/v5/market/kline?category=linear&symbol=BLASTUSDT&interval=D&limit=N
 *     → {retCode: 0, retMsg: "OK", result: {category, symbol, list: [[startTime, open, high, low, close, volume, turnover], …]}}
 * `list` is newest first, every field a string; `turnover` is the quote (USDT) volume, as in the shipped files.
 */
export const BYBIT_DEFAULT_BASE = "https://api.bybit.com";
export const BYBIT_VENUE = "Bybit";
export const BYBIT_INSTRUMENT = "USDT perpetual (linear)";

export function parseBybitKlines(raw: unknown, nowMs: number): Candle[] {
  const r = raw as { retCode?: unknown; retMsg?: unknown; result?: { list?: unknown } } | null;
  if (r === null || typeof r !== "object") throw new Error("bybit kline: expected an object");
  if (r.retCode !== 0)
    throw new Error(`bybit kline: retCode ${String(r.retCode)} ${String(r.retMsg ?? "")}`.trim());
  const list = r.result?.list;
  if (!Array.isArray(list)) throw new Error("bybit kline: expected result.list");
  const out: Candle[] = [];
  for (const [i, k] of [...list].reverse().entries()) {
    if (!Array.isArray(k) || k.length < 7) throw new Error(`bybit kline[${i}]: expected 7 fields`);
    const start = Number(k[0]);
    const close = Number(k[4]);
    const turnover = Number(k[6]);
    if (!Number.isFinite(start) || !(close > 0) || !(turnover >= 0))
      throw new Error(`bybit kline[${i}]: bad number`);
    if (start + 86_400_000 > nowMs) continue; // still open
    const day = dayOf(new Date(start));
    const prev = out[out.length - 1];
    if (prev && day !== prev.day + 1)
      throw new Error(`bybit kline[${i}]: not the day after the previous candle`);
    out.push({ day, close, volume: turnover });
  }
  return out;
}

/**
 * A symbol's daily kline endpoint (Bybit serves at most 1000 a request): fetched with `limit`, and named without it
 * by the live segment its candles extend (the one place the URL is written).
 */
export const bybitKlinesUrl = (base: string, symbol: string, limit?: number): string =>
  joinUrl(
    base,
    `v5/market/kline?category=linear&symbol=${symbol.toUpperCase()}USDT&interval=D${limit === undefined ? "" : `&limit=${Math.min(limit, 1000)}`}`,
  );

export async function fetchBybitKlines(
  fetchImpl: FetchLike,
  base: string,
  symbol: string,
  limit: number,
  nowMs: number,
): Promise<Candle[]> {
  return parseBybitKlines(await getJson(fetchImpl, bybitKlinesUrl(base, symbol, limit)), nowMs);
}
