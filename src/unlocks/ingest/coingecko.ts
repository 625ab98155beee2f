import { formatDay } from "../../store/unlocks-dates.js";
import type { PriceSeries } from "../../store/unlocks-types.js";
import { type FetchLike, getJson, joinUrl } from "./http.js";

/**
 * Daily price-history adapter in CoinGecko's documented shapes:
 *   GET {base}/coins/markets?vs_currency=usd&ids=a,b → [{id, symbol, current_price, total_volume, circulating_supply, total_supply, last_updated}]
 *   GET {base}/coins/{id}/market_chart?vs_currency=usd&days=N&interval=daily → {prices, market_caps, total_volumes: [[ms, value]]}
 *   GET {base}/coins/{id}/tickers?depth=true → {tickers: [{cost_to_move_down_usd, is_stale}]}
 * Default base https://api.coingecko.com/api/v3; a key goes in x-cg-demo-api-key (x-cg-pro-api-key on pro-api hosts).
 */
export const COINGECKO_DEFAULT_BASE = "https://api.coingecko.com/api/v3";
const DAY_MS = 86_400_000;

export interface CgMarket {
  id: string;
  symbol?: string;
  name?: string;
  current_price: number | null;
  total_volume?: number | null;
  circulating_supply?: number | null;
  total_supply?: number | null;
  max_supply?: number | null;
  last_updated?: string | null;
}

export interface CgClient {
  readonly base: string;
  readonly fetchImpl: FetchLike;
  readonly apiKey?: string | undefined;
}

function headers(c: CgClient): Record<string, string> {
  if (!c.apiKey) return {};
  return c.base.includes("pro-api") ? { "x-cg-pro-api-key": c.apiKey } : { "x-cg-demo-api-key": c.apiKey };
}

export async function fetchMarkets(c: CgClient, ids: readonly string[]): Promise<Map<string, CgMarket>> {
  const out = new Map<string, CgMarket>();
  for (let i = 0; i < ids.length; i += 100) {
    const batch = ids.slice(i, i + 100);
    const url = joinUrl(
      c.base,
      `coins/markets?vs_currency=usd&ids=${batch.map(encodeURIComponent).join(",")}&per_page=250`,
    );
    const rows = (await getJson(c.fetchImpl, url, headers(c))) as CgMarket[];
    for (const r of rows) out.set(r.id, r);
  }
  return out;
}

/**
 * Turns market_chart points into dense daily series. The first point of each UTC day (00:00) is the
 * day's price; the 24 h volume reported at 00:00 of day d+1 is day d's volume.
 */
export function chartToSeries(
  chart: { prices: [number, number][]; total_volumes?: [number, number][] },
  url: string,
  lastDay: number,
): PriceSeries | null {
  const price = new Map<number, number>();
  for (const [ms, p] of chart.prices) {
    const d = Math.floor(ms / DAY_MS);
    if (d <= lastDay && !price.has(d) && p > 0) price.set(d, p);
  }
  if (price.size === 0) return null;
  const volume = new Map<number, number>();
  for (const [ms, v] of chart.total_volumes ?? []) {
    const d = Math.floor(ms / DAY_MS) - 1;
    if (d <= lastDay && !volume.has(d) && v >= 0) volume.set(d, v);
  }
  const start = Math.min(...price.keys());
  const close: (number | null)[] = [];
  const vol: (number | null)[] = [];
  for (let d = start; d <= lastDay; d++) {
    close.push(price.get(d) ?? null);
    vol.push(volume.get(d) ?? null);
  }
  return {
    start: formatDay(start),
    close,
    volume_usd: volume.size > 0 ? vol : null,
    source: "CoinGecko market_chart (daily)",
    source_url: url.replace(/[?].*$/, ""),
    synthetic: false,
  };
}

export async function fetchDailySeries(
  c: CgClient,
  id: string,
  days: number,
  lastDay: number,
): Promise<PriceSeries | null> {
  const url = joinUrl(
    c.base,
    `coins/${encodeURIComponent(id)}/market_chart?vs_currency=usd&days=${days}&interval=daily`,
  );
  const chart = (await getJson(c.fetchImpl, url, headers(c))) as {
    prices: [number, number][];
    total_volumes?: [number, number][];
  };
  return chartToSeries(chart, url, lastDay);
}

/** Sell-side ±2% depth summed over fresh tickers; null when no ticker reports it. */
export async function fetchDepth(c: CgClient, id: string): Promise<number | null> {
  const url = joinUrl(c.base, `coins/${encodeURIComponent(id)}/tickers?depth=true`);
  const res = (await getJson(c.fetchImpl, url, headers(c))) as {
    tickers?: { cost_to_move_down_usd?: number | null; is_stale?: boolean }[];
  };
  let sum = 0;
  let n = 0;
  for (const t of res.tickers ?? []) {
    if (t.is_stale || typeof t.cost_to_move_down_usd !== "number") continue;
    sum += t.cost_to_move_down_usd;
    n++;
  }
  return n > 0 ? sum : null;
}
