import { SingleBar } from "cli-progress";
import { writeFileAtomic } from "../../files/atomic-write.js";
import { formatDay } from "../data/dates.js";
import { validateUnlockSnapshot } from "../data/snapshot.js";
import type { MarketInfo, SchedulePiece, TokenRecord, UnlockSnapshot } from "../data/types.js";
import { marketFromSeries } from "../market-snapshot.js";
import { BINANCE_INSTRUMENT, BINANCE_VENUE, type Depth, fetchDepth, fetchKlines, pairOf } from "./binance.js";
import { type CgClient, fetchMarkets } from "./coingecko.js";
import { type DlEmission, fetchEmission } from "./defillama.js";
import type { FetchLike } from "./http.js";
import { mergeCandles } from "./series-merge.js";

export interface IngestOptions {
  readonly base: UnlockSnapshot;
  readonly out: string;
  readonly binanceBase: string;
  readonly defillamaBase: string;
  readonly coingeckoBase: string;
  /** CoinGecko is optional: without a key, circulating supply stays unknown. */
  readonly coingeckoApiKey?: string | undefined;
  /** "defillama" replaces schedules from the emissions dataset; "keep" keeps the curated ones. */
  readonly schedules: "defillama" | "keep";
  /** Daily candles fetched per token (Binance allows up to 1500). */
  readonly days: number;
  readonly depth: boolean;
  readonly fetchImpl?: FetchLike;
  readonly clock?: () => Date;
  readonly progress?: boolean;
  readonly onlySymbols?: readonly string[];
}

export interface IngestReport {
  readonly out: string;
  readonly tokens: number;
  readonly schedulesUpdated: string[];
  readonly marketsUpdated: string[];
  readonly depthUpdated: string[];
  readonly supplyUpdated: string[];
  readonly kept: string[];
  readonly warnings: string[];
}

function withDepth(market: MarketInfo, d: Depth, symbol: string, now: Date): MarketInfo {
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

/** A refreshed schedule releasing less than this share of the tokens the previous one released is refused. */
export const MIN_SCHEDULE_SHARE = 2 / 3;

/**
 * Why a refreshed schedule must not replace the previous one (it releases under two thirds of the tokens the previous
 * one did: an adapter that lost a section, not a real change of tokenomics), or null when it may.
 */
export function scheduleLoss(
  previous: readonly SchedulePiece[],
  next: readonly SchedulePiece[],
): string | null {
  const total = (ps: readonly SchedulePiece[]) => ps.reduce((s, p) => s + p.amount_tokens, 0);
  const before = total(previous);
  const after = total(next);
  if (before > 0 && after < before * MIN_SCHEDULE_SHARE)
    return `releases ${Math.round(after)} tokens, under two thirds of the previous ${Math.round(before)}`;
  return null;
}

/**
 * The token with DefiLlama's schedule in place of its own, or why it must keep its own: no unlock events (an empty or
 * stripped answer), or a schedule that releases under two thirds of what the previous one did. What the one-shot and
 * the refresh loop both apply.
 */
export function withEmission(t: TokenRecord, em: DlEmission): { token: TokenRecord } | { refused: string } {
  if (em.pieces.length === 0) return { refused: "returned no unlock events" };
  const lost = scheduleLoss(t.schedules, em.pieces);
  if (lost !== null) return { refused: `schedule ${lost}` };
  return {
    token: {
      ...t,
      schedules: em.pieces,
      sources: [...new Set([`https://defillama.com/unlocks/${t.defillama_slug}`, ...em.sources])],
    },
  };
}

/**
 * Refreshes a snapshot from keyless public sources and writes it atomically (temp file + rename): a
 * crash or a validation failure leaves the previous snapshot in place. Prices and volumes come from
 * the same venue and instrument as the shipped series (Binance USDⓈ-M daily klines), depth from its
 * order book, schedules from DefiLlama's datasets host, circulating supply from CoinGecko only with a
 * key. A token a source cannot serve keeps its previous figures, with a warning.
 */
export async function runIngest(opts: IngestOptions): Promise<IngestReport> {
  const fetchImpl = opts.fetchImpl ?? (globalThis.fetch as unknown as FetchLike);
  const now = (opts.clock ?? (() => new Date()))();
  const warnings: string[] = [];
  const schedulesUpdated: string[] = [];
  const marketsUpdated: string[] = [];
  const depthUpdated: string[] = [];
  const supplyUpdated: string[] = [];
  const kept: string[] = [];
  const wanted = opts.onlySymbols?.map((s) => s.toLowerCase());
  const selected = opts.base.tokens.filter((t) => !wanted || wanted.includes(t.symbol.toLowerCase()));
  const bar = opts.progress
    ? new SingleBar({ format: "ingest [{bar}] {value}/{total} {token}", hideCursor: true })
    : null;
  bar?.start(selected.length + 1, 0, { token: "" });
  const seg = (symbol: string) => ({
    venue: BINANCE_VENUE,
    instrument: BINANCE_INSTRUMENT,
    quote: "USDT",
    source_url: `${opts.binanceBase.replace(/\/+$/, "")}/fapi/v1/klines?symbol=${pairOf(symbol)}&interval=1d`,
  });

  let benchmark = opts.base.benchmark;
  try {
    const candles = await fetchKlines(
      fetchImpl,
      opts.binanceBase,
      benchmark.symbol,
      opts.days,
      now.getTime(),
    );
    benchmark = { ...benchmark, prices: mergeCandles(benchmark.prices, candles, seg(benchmark.symbol)) };
  } catch (err) {
    warnings.push(`benchmark ${benchmark.symbol}: ${(err as Error).message}; previous kept`);
  }
  bar?.increment(1, { token: benchmark.symbol });

  let supplies = new Map<string, { circulating_supply?: number | null }>();
  if (opts.coingeckoApiKey) {
    const cg: CgClient = { base: opts.coingeckoBase, fetchImpl, apiKey: opts.coingeckoApiKey };
    try {
      supplies = await fetchMarkets(
        cg,
        selected.map((t) => t.coingecko_id).filter((x): x is string => !!x),
      );
    } catch (err) {
      warnings.push(`CoinGecko markets: ${(err as Error).message}; circulating supply left as it was`);
    }
  }

  const bySymbol = new Map(selected.map((t) => [t.symbol, t]));
  const tokens: TokenRecord[] = [];
  for (const original of opts.base.tokens) {
    if (!bySymbol.has(original.symbol)) {
      tokens.push(original);
      continue;
    }
    let t: TokenRecord = original;
    if (opts.schedules === "defillama" && t.defillama_slug) {
      try {
        const em = await fetchEmission(fetchImpl, opts.defillamaBase, t.defillama_slug);
        const taken = withEmission(t, em);
        if ("refused" in taken) warnings.push(`${t.symbol}: DefiLlama ${taken.refused}; schedules kept`);
        else {
          t = taken.token;
          schedulesUpdated.push(t.symbol);
        }
      } catch (err) {
        warnings.push(`${t.symbol}: emissions ${(err as Error).message}; schedules kept`);
      }
    }
    try {
      const candles = await fetchKlines(fetchImpl, opts.binanceBase, t.symbol, opts.days, now.getTime());
      if (candles.length === 0) throw new Error("no closed candle");
      const prices = mergeCandles(t.prices, candles, seg(t.symbol));
      t = { ...t, prices, market: marketFromSeries(prices) };
      marketsUpdated.push(t.symbol);
    } catch (err) {
      kept.push(t.symbol);
      warnings.push(
        `${t.symbol}: klines ${(err as Error).message}; previous prices kept (as of ${t.market.as_of})`,
      );
    }
    if (opts.depth) {
      try {
        const d = await fetchDepth(fetchImpl, opts.binanceBase, t.symbol);
        if (d) {
          t = { ...t, market: withDepth(t.market, d, t.symbol, now) };
          depthUpdated.push(t.symbol);
        } else warnings.push(`${t.symbol}: empty order book; depth unknown`);
      } catch (err) {
        warnings.push(`${t.symbol}: depth ${(err as Error).message}; depth unknown`);
      }
    }
    const circ = t.coingecko_id ? supplies.get(t.coingecko_id)?.circulating_supply : undefined;
    if (typeof circ === "number") {
      t = {
        ...t,
        supply: {
          ...t.supply,
          circulating: circ,
          as_of: formatDay(Math.floor(now.getTime() / 86_400_000)),
          source: "CoinGecko coins/markets circulating_supply",
          source_url: `https://www.coingecko.com/en/coins/${t.coingecko_id}`,
          synthetic: false,
          assumptions: ["CoinGecko's reported circulating supply (method theirs)"],
        },
      };
      supplyUpdated.push(t.symbol);
    }
    bar?.increment(1, { token: t.symbol });
    tokens.push(t);
  }
  bar?.stop();

  if (
    marketsUpdated.length + schedulesUpdated.length + depthUpdated.length + supplyUpdated.length === 0 &&
    benchmark === opts.base.benchmark
  )
    // Nothing was refreshed: the snapshot is not rewritten, so no fresh generated_at is put on stale data.
    throw new Error(`nothing refreshed: ${warnings.slice(0, 3).join("; ") || "no source answered"}`);
  const synthetic =
    benchmark.prices.synthetic ||
    tokens.some((t) => t.market.synthetic || t.supply.synthetic || t.prices?.synthetic === true);
  const snapshot: UnlockSnapshot = {
    ...opts.base,
    generated_at: now.toISOString(),
    synthetic,
    description: `${opts.base.description} Refreshed by ingest at ${now.toISOString()}: ${marketsUpdated.length} tokens from ${BINANCE_VENUE} klines${depthUpdated.length ? `, ${depthUpdated.length} with depth` : ""}${schedulesUpdated.length ? `, ${schedulesUpdated.length} schedules from DefiLlama` : ""}.`,
    generator: synthetic ? opts.base.generator : null,
    benchmark,
    tokens,
  };
  // Validate before writing: a bad refresh must never replace a good snapshot.
  validateUnlockSnapshot(snapshot, "(ingested)");
  writeFileAtomic(opts.out, `${JSON.stringify(snapshot)}\n`);
  return {
    out: opts.out,
    tokens: tokens.length,
    schedulesUpdated,
    marketsUpdated,
    depthUpdated,
    supplyUpdated,
    kept,
    warnings,
  };
}
