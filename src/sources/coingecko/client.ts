import { type FetchLike, getJson, joinUrl } from "../http.js";

/**
 * Optional CoinGecko adapter (only with a key): circulating supply from the documented shape
 *   GET {base}/coins/markets?vs_currency=usd&ids=a,b → [{id, symbol, current_price, total_volume, circulating_supply, total_supply, last_updated}]
 * Default base https://api.coingecko.com/api/v3; a key goes in x-cg-demo-api-key (x-cg-pro-api-key on pro-api hosts).
 */
export const COINGECKO_DEFAULT_BASE = "https://api.coingecko.com/api/v3";

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
