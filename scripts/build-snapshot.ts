/**
 * Builds data/unlocks.snapshot.json from the compiled real schedules plus the seeded synthetic
 * market generator (prices, volumes, supplies are SYNTHETIC and flagged so).
 *
 *   npm run snapshot [-- --schedules <schedules.json>] [--out <path>] [--seed <n>] [--history-from YYYY-MM-DD]
 */

import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { writeFileAtomic } from "../src/store/atomic-write.js";
import { repoRoot as rootDir } from "../src/store/paths.js";
import { validateUnlockSnapshot } from "../src/store/unlocks-snapshot.js";
import type { TokenRecord, UnlockSnapshot } from "../src/store/unlocks-types.js";
import { type CompiledSchedules, scheduleFacts } from "../src/unlocks/import-schedules.js";
import { GENERATOR_NAME, generateBenchmark, generateTokenMarket } from "../src/unlocks/synthetic.js";

const repoRoot = `${rootDir()}/`;
export const DEFAULT_SEED = 402;
/** Past unlocks in the schedules start in 2024; 120 days of pre-window history (the longest backtest) before that. */
export const DEFAULT_HISTORY_FROM = "2023-09-01";

export function buildShippedSnapshot(
  compiled: CompiledSchedules,
  seed: number,
  historyFrom: string,
): UnlockSnapshot {
  const asOf = compiled.compiled_on;
  const bench = generateBenchmark(seed, historyFrom, asOf);
  const tokens: TokenRecord[] = compiled.tokens.map((t) => {
    const facts = scheduleFacts(t);
    const placeholder: TokenRecord = {
      ...facts,
      supply: {
        circulating: 0,
        total: null,
        as_of: asOf,
        source: "-",
        source_url: null,
        synthetic: true,
        assumptions: [],
      },
      market: {
        price_usd: 1,
        adv_30d_usd: null,
        depth_2pct_usd: null,
        as_of: asOf,
        source: "-",
        source_url: null,
        synthetic: true,
        assumptions: [],
      },
      prices: null,
    };
    const m = generateTokenMarket(placeholder, bench, seed, asOf, historyFrom);
    return { ...placeholder, supply: m.supply, market: m.market, prices: m.prices };
  });
  return {
    schema_version: 1,
    generated_at: `${asOf}T00:00:00.000Z`,
    as_of: asOf,
    synthetic: true,
    description:
      "Real vesting schedules (../shared/data/unlock-schedules, compiled " +
      `${asOf}) with SYNTHETIC market context and price history from ${GENERATOR_NAME} (seed ${seed}). ` +
      "Schedule facts are real; prices, volumes, depth and circulating supplies are generated for demonstration.",
    generator: {
      name: GENERATOR_NAME,
      seed,
      description:
        "Seeded random walks: benchmark GBM; token log-returns = beta x benchmark + idiosyncratic noise; " +
        "rescaled to a log-uniform market cap; volume = turnover x market cap with noise; see data/README.md. No unlock effect is built in.",
    },
    benchmark: { symbol: "ETH", name: "Ether (synthetic path)", prices: bench.series },
    tokens,
  };
}

function main(): void {
  const { values } = parseArgs({
    options: {
      schedules: { type: "string", default: `${repoRoot}../shared/data/unlock-schedules/schedules.json` },
      out: { type: "string", default: `${repoRoot}data/unlocks.snapshot.json` },
      seed: { type: "string", default: String(DEFAULT_SEED) },
      "history-from": { type: "string", default: DEFAULT_HISTORY_FROM },
    },
  });
  const compiled = JSON.parse(readFileSync(values.schedules as string, "utf8")) as CompiledSchedules;
  const snap = validateUnlockSnapshot(
    buildShippedSnapshot(compiled, Number(values.seed), values["history-from"] as string),
    "(built)",
  );
  const text = `${JSON.stringify(snap)}\n`;
  writeFileAtomic(values.out as string, text);
  console.log(
    `wrote ${values.out}: ${snap.tokens.length} tokens, ${(text.length / 1024).toFixed(0)} KiB, as_of ${snap.as_of}`,
  );
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) main();
