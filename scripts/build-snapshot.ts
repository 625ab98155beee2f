/**
 * Builds data/unlock.snapshot.json from shipped data only: the compiled real schedules
 * (data/unlock-schedules/schedules.json) and the real daily market history (data/market-history/).
 * Nothing is generated: where no real figure exists (depth, circulating supply) it is null.
 *
 * It also reads data/unlocks-wide/ (complete adapter schedules and Binance perp prices for 154 tokens).
 *
 *   npm run snapshot [-- --out <path>]
 */

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { type CompiledSchedules, defillamaSlugFrom, scheduleFacts } from "../src/build/import-schedules.js";
import {
  adapterUrl,
  firstReleaseDay,
  supplyModelOf,
  supplyScheduleOf,
  UNDATED_ADAPTERS,
  vestingPiecesOf,
  type WideSchedules,
  type WideToken,
} from "../src/build/import-wide.js";
import { writeFileAtomic } from "../src/files/atomic-write.js";
import { dataPath } from "../src/files/paths.js";
import { formatDay, parseDay } from "../src/unlocks/data/dates.js";
import { validateUnlockSnapshot } from "../src/unlocks/data/snapshot.js";
import type {
  PriceSeries,
  SupplyModel,
  SupplySchedule,
  TokenRecord,
  UnlockSnapshot,
} from "../src/unlocks/data/types.js";
import {
  buildBenchmarkSeries,
  buildTokenSeries,
  type MarketFile,
  type MarketIndex,
  readMarketIndex,
} from "../src/unlocks/market-history.js";
import { marketFromSeries, unknownSupply } from "../src/unlocks/market-snapshot.js";

/** Where the snapshot's inputs live: the curated schedules, their market history, and the wide set (schedules + prices). */
export interface SnapshotInputs {
  readonly compiled: CompiledSchedules;
  readonly marketDir: string;
  readonly wide: WideSchedules;
  readonly wideDir: string;
}

/** The wide set's prices/index.json as a market index: one primary Binance perp file per symbol, paths under wideDir. */
function readWideIndex(wideDir: string): MarketIndex {
  const raw = JSON.parse(readFileSync(join(wideDir, "prices", "index.json"), "utf8")) as {
    generated: string;
    files: Omit<MarketFile, "role">[];
  };
  return { generated: raw.generated, files: raw.files.map((f) => ({ ...f, role: "primary" as const })) };
}

/**
 * The price history kept starts at the token's listing: the first candle, or its TGE (first release of the complete
 * schedule) when a pre-market perp traded before it. Never at its first vesting piece: that threw away TIA's,
 * PYTH's and AVAX's biggest cliffs.
 */
function listingFacts(
  index: MarketIndex,
  symbol: string,
  prices: PriceSeries,
  tgeDay: number | null,
  basis: string,
): Pick<TokenRecord, "listing_date" | "listing_basis"> {
  // Series values are 00:00 UTC prices: value 0 is the close of the first kept candle, the day before `start`.
  const first = parseDay(prices.start) - 1;
  const earliest = Math.min(
    ...index.files.filter((f) => f.symbol === symbol).map((f) => parseDay(f.first_date)),
  );
  const cut = tgeDay !== null && earliest < tgeDay && first >= tgeDay;
  return {
    listing_date: formatDay(first),
    listing_basis: cut
      ? `first candle on or after the TGE (${formatDay(tgeDay)}, first release of the ${basis}); earlier pre-market perp candles dropped`
      : `first candle of the shipped history (the ${basis} first releases on ${tgeDay === null ? "an unknown date" : formatDay(tgeDay)})`,
  };
}

function widePart(w: WideToken): { supply_model: SupplyModel; supply_schedule?: SupplySchedule } {
  if (UNDATED_ADAPTERS[w.symbol]) return { supply_model: supplyModelOf(w) };
  return { supply_model: supplyModelOf(w), supply_schedule: supplyScheduleOf(w) };
}

/** The wide set's ETH is the benchmark: its abnormal return against itself is zero by construction. */
const NOT_A_TOKEN = new Set(["ETH"]);

export function buildShippedSnapshot(inputs: SnapshotInputs): UnlockSnapshot {
  const { compiled, marketDir, wide, wideDir } = inputs;
  const index: MarketIndex = readMarketIndex(marketDir);
  const wideIndex = readWideIndex(wideDir);
  const wideBySymbol = new Map(wide.tokens.map((w) => [w.symbol, w]));
  const asOf = compiled.compiled_on;
  // Curated tokens keep their schedules (official figures where confirmed); the wide set adds the complete supply.
  const curated: TokenRecord[] = compiled.tokens.map((t) => {
    const facts = scheduleFacts(t);
    const w = wideBySymbol.get(t.symbol);
    const extra: Partial<ReturnType<typeof widePart>> = w ? widePart(w) : {};
    const tge = firstReleaseDay(extra.supply_schedule?.pieces ?? facts.schedules);
    const prices = buildTokenSeries(marketDir, index, t.symbol, tge);
    if (!prices) throw new Error(`${t.symbol}: no market history in ${marketDir}`);
    return {
      ...facts,
      supply: unknownSupply(t.max_supply, asOf),
      market: marketFromSeries(prices),
      prices,
      schedule_set: "curated" as const,
      ...extra,
      ...listingFacts(index, t.symbol, prices, tge, w ? "complete adapter schedule" : "curated schedule"),
    };
  });
  const curatedSymbols = new Set(compiled.tokens.map((t) => t.symbol));
  const wideOnly: TokenRecord[] = wide.tokens
    .filter((w) => !curatedSymbols.has(w.symbol) && !NOT_A_TOKEN.has(w.symbol))
    .map((w) => {
      const extra = widePart(w);
      const undated = UNDATED_ADAPTERS[w.symbol];
      const tge = extra.supply_schedule ? firstReleaseDay(extra.supply_schedule.pieces) : null;
      const prices = buildTokenSeries(wideDir, wideIndex, w.symbol, tge);
      if (!prices) throw new Error(`${w.symbol}: no price history in ${wideDir}`);
      const maxSupply = w.adapter_total !== null && w.adapter_total > 0 ? w.adapter_total : null;
      return {
        symbol: w.symbol,
        name: w.protocol_file.replace(/^protocols\//, "").replace(/\.ts$/, ""),
        coingecko_id: w.coingecko_id,
        defillama_slug: defillamaSlugFrom([adapterUrl(w)]),
        chain: w.chain,
        max_supply: maxSupply,
        supply: unknownSupply(maxSupply, asOf),
        market: marketFromSeries(prices),
        schedules: undated ? [] : vestingPiecesOf(w),
        sources: [adapterUrl(w), ...w.sources],
        notes: undated ? [...w.flags, `Schedule left out: ${undated}.`].join(" ") : w.flags.join(" "),
        prices,
        schedule_set: "wide" as const,
        ...extra,
        ...listingFacts(wideIndex, w.symbol, prices, tge, "complete adapter schedule"),
      };
    });
  const tokens = [...curated, ...wideOnly];
  const bench = buildBenchmarkSeries(marketDir, index, "ETH");
  return {
    schema_version: 1,
    generated_at: `${asOf}T00:00:00.000Z`,
    as_of: asOf,
    synthetic: false,
    description:
      `Real vesting schedules: ${curated.length} curated tokens (compiled ${asOf}) and ${wideOnly.length} more from DefiLlama's emissions adapters ` +
      `(data/unlocks-wide, compiled ${wide.compiled_on}, every allocation the adapter models); real daily closes and quote volumes ` +
      `(${index.files.find((f) => f.role === "primary")?.venue} USDT-margined perpetuals, older history from Binance spot / Bybit perps; ` +
      "see data/market-history/index.json and data/unlocks-wide/prices/index.json). Market figures are as of each series' last candle (2026-03-18), not as of the schedules. " +
      "Order-book depth is unknown (null), never generated; circulating supply is rebuilt point in time from the complete adapter schedule.",
    generator: null,
    benchmark: { symbol: "ETH", name: "Ether", prices: bench },
    tokens,
  };
}

export function shippedInputs(): SnapshotInputs {
  return {
    compiled: JSON.parse(
      readFileSync(dataPath("unlock-schedules/schedules.json"), "utf8"),
    ) as CompiledSchedules,
    marketDir: dataPath("market-history"),
    wide: JSON.parse(readFileSync(dataPath("unlocks-wide/schedules.json"), "utf8")) as WideSchedules,
    wideDir: dataPath("unlocks-wide"),
  };
}

function main(): void {
  const { values } = parseArgs({
    options: {
      out: { type: "string", default: dataPath("unlocks.snapshot.json") },
    },
  });
  const snap = validateUnlockSnapshot(buildShippedSnapshot(shippedInputs()), "(built)");
  const text = `${JSON.stringify(snap)}\n`;
  writeFileAtomic(values.out as string, text);
  console.log(
    `wrote ${values.out}: ${snap.tokens.length} tokens, ${(text.length / 1024).toFixed(0)} KiB, as_of ${snap.as_of}`,
  );
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) main();
