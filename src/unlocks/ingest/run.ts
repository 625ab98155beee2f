import { SingleBar } from "cli-progress";
import { writeFileAtomic } from "../../store/atomic-write.js";
import { dayOf, formatDay, parseDay } from "../../store/unlocks-dates.js";
import { validateUnlockSnapshot } from "../../store/unlocks-snapshot.js";
import type { TokenRecord, UnlockSnapshot } from "../../store/unlocks-types.js";
import { type CgClient, type CgMarket, fetchDailySeries, fetchDepth, fetchMarkets } from "./coingecko.js";
import { fetchEmission } from "./defillama.js";
import type { FetchLike } from "./http.js";

export interface IngestOptions {
  readonly base: UnlockSnapshot;
  readonly out: string;
  readonly defillamaBase: string;
  readonly coingeckoBase: string;
  readonly coingeckoApiKey?: string | undefined;
  /** "defillama" replaces schedules from the emissions API; "keep" keeps the curated ones. */
  readonly schedules: "defillama" | "keep";
  readonly historyDays: number;
  readonly depth: boolean;
  readonly benchmarkId: string;
  readonly fetchImpl?: FetchLike;
  readonly clock?: () => Date;
  readonly progress?: boolean;
  readonly onlySymbols?: readonly string[];
}

export interface IngestReport {
  readonly out: string;
  readonly asOf: string;
  readonly tokens: number;
  readonly schedulesUpdated: string[];
  readonly marketsUpdated: string[];
  readonly kept: string[];
  readonly warnings: string[];
}

/**
 * Refreshes a snapshot from the providers and writes it atomically (temp file + rename): a crash or a
 * validation failure leaves the previous snapshot in place. Tokens a provider cannot serve keep their
 * previous data (and its synthetic flag), with a warning.
 */
export async function runIngest(opts: IngestOptions): Promise<IngestReport> {
  const fetchImpl = opts.fetchImpl ?? (globalThis.fetch as unknown as FetchLike);
  const now = (opts.clock ?? (() => new Date()))();
  const asOfDay = dayOf(now);
  const lastCompleteDay = asOfDay; // 00:00 price of today is already a complete observation
  const asOf = formatDay(asOfDay);
  const cg: CgClient = { base: opts.coingeckoBase, fetchImpl, apiKey: opts.coingeckoApiKey };
  const warnings: string[] = [];
  const schedulesUpdated: string[] = [];
  const marketsUpdated: string[] = [];
  const kept: string[] = [];
  const wanted = opts.onlySymbols?.map((s) => s.toLowerCase());
  const selected = opts.base.tokens.filter((t) => !wanted || wanted.includes(t.symbol.toLowerCase()));
  const bar = opts.progress
    ? new SingleBar({ format: "ingest [{bar}] {value}/{total} {token}", hideCursor: true })
    : null;
  bar?.start(selected.length * 2 + 2, 0, { token: "" });

  const ids = selected.map((t) => t.coingecko_id).filter((x): x is string => !!x);
  let markets = new Map<string, CgMarket>();
  try {
    markets = await fetchMarkets(cg, ids);
  } catch (err) {
    warnings.push(`markets: ${(err as Error).message}`);
  }
  bar?.increment(1, { token: "markets" });

  let benchmark = opts.base.benchmark;
  try {
    const s = await fetchDailySeries(cg, opts.benchmarkId, opts.historyDays, lastCompleteDay);
    if (s)
      benchmark = {
        symbol: benchmark.symbol,
        name: benchmark.name.replace(/ \(synthetic path\)$/, ""),
        prices: s,
      };
    else warnings.push(`benchmark ${opts.benchmarkId}: empty price history, previous kept`);
  } catch (err) {
    warnings.push(`benchmark ${opts.benchmarkId}: ${(err as Error).message}; previous kept`);
  }
  bar?.increment(1, { token: benchmark.symbol });

  const tokens: TokenRecord[] = [];
  const bySymbol = new Map(selected.map((t) => [t.symbol, t]));
  for (const original of opts.base.tokens) {
    if (!bySymbol.has(original.symbol)) {
      tokens.push(original);
      continue;
    }
    let t: TokenRecord = original;
    if (opts.schedules === "defillama" && t.defillama_slug) {
      try {
        const em = await fetchEmission(fetchImpl, opts.defillamaBase, t.defillama_slug);
        if (em.pieces.length > 0) {
          t = {
            ...t,
            schedules: em.pieces,
            sources: [...new Set([`https://defillama.com/unlocks/${t.defillama_slug}`, ...em.sources])],
          };
          schedulesUpdated.push(t.symbol);
        } else warnings.push(`${t.symbol}: DefiLlama returned no unlock events; schedules kept`);
      } catch (err) {
        warnings.push(`${t.symbol}: emissions ${(err as Error).message}; schedules kept`);
      }
    }
    bar?.increment(1, { token: t.symbol });
    const m = t.coingecko_id ? markets.get(t.coingecko_id) : undefined;
    try {
      if (!t.coingecko_id || !m || !(m.current_price && m.current_price > 0))
        throw new Error("no market data");
      const series = await fetchDailySeries(cg, t.coingecko_id, opts.historyDays, lastCompleteDay);
      const depth = opts.depth ? await fetchDepth(cg, t.coingecko_id).catch(() => null) : null;
      const vols = series?.volume_usd?.slice(-30).filter((v): v is number => v !== null) ?? [];
      const adv =
        vols.length >= 20 ? vols.reduce((a, b) => a + b, 0) / vols.length : (m.total_volume ?? null);
      const url = `https://www.coingecko.com/en/coins/${t.coingecko_id}`;
      t = {
        ...t,
        supply: {
          circulating: m.circulating_supply ?? t.supply.circulating,
          total: m.total_supply ?? t.supply.total,
          as_of: asOf,
          source: m.circulating_supply ? "CoinGecko coins/markets" : t.supply.source,
          source_url: m.circulating_supply ? url : t.supply.source_url,
          synthetic: m.circulating_supply ? false : t.supply.synthetic,
          assumptions: m.circulating_supply ? [] : t.supply.assumptions,
        },
        market: {
          price_usd: m.current_price,
          adv_30d_usd: adv,
          depth_2pct_usd: depth,
          as_of: asOf,
          source: "CoinGecko coins/markets + market_chart",
          source_url: url,
          synthetic: false,
          assumptions: vols.length >= 20 ? [] : ["30-day ADV unavailable: the reported 24 h volume is used"],
        },
        prices: series ?? t.prices,
      };
      marketsUpdated.push(t.symbol);
    } catch (err) {
      kept.push(t.symbol);
      warnings.push(
        `${t.symbol}: prices ${(err as Error).message}; previous market data kept${t.market.synthetic ? " (synthetic)" : ""}`,
      );
    }
    bar?.increment(1, { token: t.symbol });
    tokens.push(t);
  }
  bar?.stop();

  const synthetic =
    benchmark.prices.synthetic ||
    tokens.some((t) => t.market.synthetic || t.supply.synthetic || t.prices?.synthetic === true);
  const snapshot: UnlockSnapshot = {
    ...opts.base,
    generated_at: now.toISOString(),
    as_of: asOf,
    synthetic,
    description: synthetic
      ? `${opts.base.description} Partially refreshed by ingest on ${asOf}; tokens still marked synthetic were not refreshed.`
      : `Schedules and market data ingested on ${asOf} (DefiLlama emissions, CoinGecko).`,
    generator: synthetic ? opts.base.generator : null,
    benchmark,
    tokens,
  };
  // Validate before writing: a bad refresh must never replace a good snapshot.
  validateUnlockSnapshot(snapshot, "(ingested)");
  if (parseDay(snapshot.as_of) < parseDay(opts.base.as_of))
    warnings.push("clock is earlier than the base snapshot's as_of");
  writeFileAtomic(opts.out, `${JSON.stringify(snapshot)}\n`);
  return { out: opts.out, asOf, tokens: tokens.length, schedulesUpdated, marketsUpdated, kept, warnings };
}
