/**
 * Builds data/unlock.snapshot.json from shipped data only: the compiled real schedules
 * (data/unlock-schedules/schedules.json) and the real daily market history (data/market-history/).
 * Nothing is generated: where no real figure exists (depth, circulating supply) it is null.
 *
 *   npm run snapshot [-- --schedules <schedules.json>] [--market <dir>] [--out <path>]
 */

import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { writeFileAtomic } from "../src/store/atomic-write.js";
import { dataPath } from "../src/store/paths.js";
import { parseDay } from "../src/store/unlocks-dates.js";
import { validateUnlockSnapshot } from "../src/store/unlocks-snapshot.js";
import type { TokenRecord, UnlockSnapshot } from "../src/store/unlocks-types.js";
import { type CompiledSchedules, scheduleFacts } from "../src/unlocks/import-schedules.js";
import {
  buildBenchmarkSeries,
  buildTokenSeries,
  type MarketIndex,
  readMarketIndex,
} from "../src/unlocks/market-history.js";
import { marketFromSeries, unknownSupply } from "../src/unlocks/market-snapshot.js";

export function buildShippedSnapshot(compiled: CompiledSchedules, marketDir: string): UnlockSnapshot {
  const index: MarketIndex = readMarketIndex(marketDir);
  const asOf = compiled.compiled_on;
  const tokens: TokenRecord[] = compiled.tokens.map((t) => {
    const facts = scheduleFacts(t);
    const firstDay = Math.min(...facts.schedules.map((p) => parseDay(p.start)));
    const prices = buildTokenSeries(marketDir, index, t.symbol, Number.isFinite(firstDay) ? firstDay : null);
    if (!prices) throw new Error(`${t.symbol}: no market history in ${marketDir}`);
    return { ...facts, supply: unknownSupply(t.max_supply, asOf), market: marketFromSeries(prices), prices };
  });
  const bench = buildBenchmarkSeries(marketDir, index, "ETH");
  return {
    schema_version: 1,
    generated_at: `${asOf}T00:00:00.000Z`,
    as_of: asOf,
    synthetic: false,
    description:
      `Real vesting schedules (compiled ${asOf}) and real daily closes and quote volumes ` +
      `(${index.files.find((f) => f.role === "primary")?.venue} USDT-margined perpetuals, older history from Binance spot / Bybit perps; ` +
      "see data/market-history/index.json). Market figures are as of each series' last candle (2026-03-18), not as of the schedules. " +
      "Order-book depth and circulating supply are unknown (null), never generated.",
    generator: null,
    benchmark: { symbol: "ETH", name: "Ether", prices: bench },
    tokens,
  };
}

function main(): void {
  const { values } = parseArgs({
    options: {
      schedules: { type: "string", default: dataPath("unlock-schedules/schedules.json") },
      market: { type: "string", default: dataPath("market-history") },
      out: { type: "string", default: dataPath("unlocks.snapshot.json") },
    },
  });
  const compiled = JSON.parse(readFileSync(values.schedules as string, "utf8")) as CompiledSchedules;
  const snap = validateUnlockSnapshot(buildShippedSnapshot(compiled, values.market as string), "(built)");
  const text = `${JSON.stringify(snap)}\n`;
  writeFileAtomic(values.out as string, text);
  console.log(
    `wrote ${values.out}: ${snap.tokens.length} tokens, ${(text.length / 1024).toFixed(0)} KiB, as_of ${snap.as_of}`,
  );
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) main();
