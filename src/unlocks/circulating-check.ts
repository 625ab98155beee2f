import { parseDay } from "../store/unlocks-dates.js";
import type { TokenRecord } from "../store/unlocks-types.js";
import type { SixMvFile } from "./import-6mv.js";
import { unlockedBefore } from "./supply.js";

/** Agreement is "within 10 %": |ours / reported − 1| ≤ 0.10 (the target). */
export const AGREEMENT_TOLERANCE = 0.1;

export interface CirculatingComparison {
  readonly source: string;
  readonly symbol: string;
  readonly date: string;
  readonly reported: number;
  readonly rebuilt: number;
  readonly ratio: number;
  readonly lowerBound: boolean;
}

export interface AgreementRow {
  readonly source: string;
  readonly symbol: string;
  readonly n: number;
  readonly within: number;
  readonly medianRatio: number;
  readonly lowerBound: boolean;
}

/**
 * Every reported circulating figure of a 6MV table on its unlock days (the days the table records a release), against
 * what the token's complete schedule has unlocked by the end of that day. 6MV's date D is CoinGecko's 00:00 UTC
 * snapshot of D+1, so the rebuilt figure is everything released before D+1. Tables of tokens without a complete
 * schedule cannot be checked and are skipped (listed by the caller).
 */
export function compare6mv(
  files: readonly SixMvFile[],
  tokens: readonly TokenRecord[],
): CirculatingComparison[] {
  const byGecko = new Map(
    tokens.filter((t) => t.supply_schedule && t.coingecko_id).map((t) => [t.coingecko_id, t]),
  );
  const out: CirculatingComparison[] = [];
  for (const f of files) {
    const t = byGecko.get(f.coingecko_id);
    if (!t?.supply_schedule) continue;
    for (const d of f.days) {
      if (
        !(d.unlocked_tokens && d.unlocked_tokens > 0) ||
        !(d.circulating_supply && d.circulating_supply > 0)
      )
        continue;
      const rebuilt = unlockedBefore(t.supply_schedule.pieces, parseDay(d.date) + 1);
      out.push({
        source: `6MV ${f.coingecko_id}.${f.allocation_class}`,
        symbol: t.symbol,
        date: d.date,
        reported: d.circulating_supply,
        rebuilt,
        ratio: rebuilt / d.circulating_supply,
        lowerBound: !t.supply_schedule.complete,
      });
    }
  }
  return out;
}

/** One CoinGecko /coins/markets row (the fields compared). */
export interface GeckoMarketRow {
  id: string;
  circulating_supply: number | null;
  last_updated: string;
}

export function compareGecko(
  rows: readonly GeckoMarketRow[],
  tokens: readonly TokenRecord[],
  source: string,
): CirculatingComparison[] {
  const out: CirculatingComparison[] = [];
  for (const r of rows) {
    const t = tokens.find((x) => x.coingecko_id === r.id && x.supply_schedule);
    if (!t?.supply_schedule || !(r.circulating_supply && r.circulating_supply > 0)) continue;
    const date = r.last_updated.slice(0, 10);
    const rebuilt = unlockedBefore(t.supply_schedule.pieces, parseDay(date) + 1);
    out.push({
      source,
      symbol: t.symbol,
      date,
      reported: r.circulating_supply,
      rebuilt,
      ratio: rebuilt / r.circulating_supply,
      lowerBound: !t.supply_schedule.complete,
    });
  }
  return out;
}

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

export const within = (c: CirculatingComparison): boolean => Math.abs(c.ratio - 1) <= AGREEMENT_TOLERANCE;

/** Per source and token: how many checked days agree within 10 %, and the median ratio rebuilt ÷ reported. */
export function agreementRows(cs: readonly CirculatingComparison[]): AgreementRow[] {
  const groups = new Map<string, CirculatingComparison[]>();
  for (const c of cs) {
    const k = `${c.source}\u0000${c.symbol}`;
    groups.set(k, [...(groups.get(k) ?? []), c]);
  }
  return [...groups.values()].map((g) => ({
    source: (g[0] as CirculatingComparison).source,
    symbol: (g[0] as CirculatingComparison).symbol,
    n: g.length,
    within: g.filter(within).length,
    medianRatio: median(g.map((c) => c.ratio)),
    lowerBound: (g[0] as CirculatingComparison).lowerBound,
  }));
}
