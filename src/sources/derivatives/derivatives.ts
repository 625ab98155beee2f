import { readFileSync } from "node:fs";
import { join } from "node:path";
import { writeFileAtomic } from "../../files/atomic-write.js";
import type { UnlockSnapshot } from "../../unlocks/data/types.js";
import { fetchExchangeInfo, pairOf } from "../candles/binance.js";
import { venueOf } from "../candles/refresh.js";
import { failure, retryAfterOf } from "../errors.js";
import { type FetchLike, getJson, joinUrl } from "../http.js";
import type { SourceOutcome } from "../status.js";

/**
 * What hedgers see before an unlock, per token with a Binance USDⓈ-M perpetual: the funding rate (last and mean of the
 * last 21 settlements, about 7 days) and the open interest (last daily value, USD), each with its as-of, plus the
 * contract's listing time. Evidence only: not a score input.
 *   GET {base}/fapi/v1/fundingRate?symbol=ARBUSDT&limit=21 → [{symbol, fundingTime, fundingRate, markPrice}]
 *   GET {base}/futures/data/openInterestHist?symbol=ARBUSDT&period=1d&limit=2 → [{symbol, sumOpenInterest, sumOpenInterestValue, timestamp}]
 *   GET {base}/fapi/v1/exchangeInfo → {symbols: [{symbol, status, contractType, onboardDate}]}
 */
export interface Derivatives {
  readonly token: string;
  readonly symbol: string;
  readonly listed_at: string | null;
  readonly funding_rate_last: string | null;
  readonly funding_rate_mean_7d: number | null;
  readonly funding_as_of: string | null;
  readonly open_interest_usd: number | null;
  readonly open_interest_as_of: string | null;
  readonly source: string;
}

export const DERIVATIVES_FILE = "derivatives.json";

/** A token's figures as answers show them (the evidence schema): `token` is the map's key, not one of its fields. */
export type DerivativesEvidence = Omit<Derivatives, "token">;

export function derivativesEvidence(d: Derivatives | undefined): DerivativesEvidence | null {
  if (!d) return null;
  const { token: _token, ...shown } = d;
  return shown;
}

const finite = (v: unknown): number | null => {
  const n = typeof v === "string" ? Number(v) : typeof v === "number" ? v : Number.NaN;
  return Number.isFinite(n) ? n : null;
};

export function parseFunding(raw: unknown): { last: string; mean: number; at: string } | null {
  if (!Array.isArray(raw)) throw new Error("fundingRate: expected an array");
  const rows = raw
    .map((r) => r as { fundingRate?: unknown; fundingTime?: unknown })
    .filter((r) => finite(r.fundingRate) !== null && typeof r.fundingTime === "number")
    .sort((a, b) => (a.fundingTime as number) - (b.fundingTime as number));
  const last = rows[rows.length - 1];
  if (!last) return null;
  const rates = rows.map((r) => finite(r.fundingRate) as number);
  if (rates.some((r) => Math.abs(r) > 0.05)) throw new Error("fundingRate: a rate beyond ±5 % per period");
  return {
    last: String(last.fundingRate),
    mean: rates.reduce((s, r) => s + r, 0) / rates.length,
    at: new Date(last.fundingTime as number).toISOString(),
  };
}

export function parseOpenInterest(raw: unknown): { usd: number; at: string } | null {
  if (!Array.isArray(raw)) throw new Error("openInterestHist: expected an array");
  const rows = raw
    .map((r) => r as { sumOpenInterestValue?: unknown; timestamp?: unknown })
    .filter((r) => finite(r.sumOpenInterestValue) !== null && typeof r.timestamp === "number")
    .sort((a, b) => (a.timestamp as number) - (b.timestamp as number));
  const last = rows[rows.length - 1];
  if (!last) return null;
  const usd = finite(last.sumOpenInterestValue) as number;
  if (usd < 0) throw new Error("openInterestHist: negative open interest");
  return { usd, at: new Date(last.timestamp as number).toISOString() };
}

export function readDerivatives(dataDir: string): ReadonlyMap<string, Derivatives> {
  try {
    const rows = JSON.parse(readFileSync(join(dataDir, DERIVATIVES_FILE), "utf8")) as Derivatives[];
    return new Map(rows.map((r) => [r.token, r]));
  } catch {
    return new Map();
  }
}

/** One pass over every Binance-perpetual token; a token that fails keeps its previous figures. */
export async function refreshDerivatives(
  snapshot: UnlockSnapshot,
  fetchImpl: FetchLike,
  base: string,
  dataDir: string,
): Promise<{ outcome: SourceOutcome; figures: ReadonlyMap<string, Derivatives> }> {
  const previous = readDerivatives(dataDir);
  const next = new Map(previous);
  const updated: string[] = [];
  const failed: { item: string; error: string }[] = [];
  let retry: number | null = null;
  let newest: string | null = null;
  let listings = new Map<string, number | null>();
  try {
    const all = await fetchExchangeInfo(fetchImpl, base);
    listings = new Map(
      all
        .filter((l) => l.contractType === "PERPETUAL" && l.status === "TRADING")
        .map((l) => [l.symbol, l.onboardDate]),
    );
  } catch (err) {
    failed.push(failure("exchangeInfo", err));
    retry = retryAfterOf(err);
  }
  for (const t of snapshot.tokens) {
    if (retry !== null) break;
    if (venueOf(t.prices) !== "binance") continue;
    const symbol = pairOf(t.symbol);
    if (listings.size > 0 && !listings.has(symbol)) {
      failed.push({ item: t.symbol, error: "not a trading USDⓈ-M perpetual in exchangeInfo" });
      continue;
    }
    try {
      const funding = parseFunding(
        await getJson(fetchImpl, joinUrl(base, `fapi/v1/fundingRate?symbol=${symbol}&limit=21`)),
      );
      const oi = parseOpenInterest(
        await getJson(
          fetchImpl,
          joinUrl(base, `futures/data/openInterestHist?symbol=${symbol}&period=1d&limit=2`),
        ),
      );
      const listed = listings.get(symbol);
      next.set(t.symbol, {
        token: t.symbol,
        symbol,
        listed_at:
          typeof listed === "number"
            ? new Date(listed).toISOString()
            : (previous.get(t.symbol)?.listed_at ?? null),
        funding_rate_last: funding?.last ?? null,
        funding_rate_mean_7d: funding?.mean ?? null,
        funding_as_of: funding?.at ?? null,
        open_interest_usd: oi?.usd ?? null,
        open_interest_as_of: oi?.at ?? null,
        source: "Binance USDⓈ-M /fapi/v1/fundingRate, /futures/data/openInterestHist, /fapi/v1/exchangeInfo",
      });
      updated.push(t.symbol);
      for (const at of [funding?.at, oi?.at]) if (at && (newest === null || at > newest)) newest = at;
    } catch (err) {
      failed.push(failure(t.symbol, err));
      if (retryAfterOf(err) !== null) retry = retryAfterOf(err);
    }
  }
  if (updated.length > 0)
    writeFileAtomic(join(dataDir, DERIVATIVES_FILE), `${JSON.stringify([...next.values()], null, 1)}\n`);
  return {
    outcome: { source: "derivatives", updated, failed, dataAsOf: newest, retryAfterSeconds: retry },
    figures: next,
  };
}
