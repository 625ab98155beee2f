/**
 * Refreshes the unlock snapshot from keyless public sources: Binance USDⓈ-M daily klines (prices,
 * quote volumes) and order book (±2 % depth), DefiLlama's datasets host (schedules); CoinGecko
 * (circulating supply) only with COINGECKO_API_KEY.
 *
 *   npm run ingest -- [--base data/unlocks.snapshot.json] [--out data/unlocks.snapshot.json]
 *                     [--schedules keep|defillama] [--days 400] [--depth] [--tokens ARB,OP]
 *                     [--binance-base URL] [--defillama-base URL] [--coingecko-base URL]
 *   npm run ingest -- --from-6mv data/unlock-history-6mv --out /tmp/6mv.snapshot.json
 *
 * Environment: BINANCE_FUTURES_BASE_URL, DEFILLAMA_BASE_URL, COINGECKO_BASE_URL, COINGECKO_API_KEY.
 */

import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { writeFileAtomic } from "../src/store/atomic-write.js";
import { repoRoot as rootDir } from "../src/store/paths.js";
import { parseUnlockSnapshot, validateUnlockSnapshot } from "../src/store/unlocks-snapshot.js";
import { load6mv } from "../src/unlocks/import-6mv.js";
import { BINANCE_FUTURES_BASE } from "../src/unlocks/ingest/binance.js";
import { COINGECKO_DEFAULT_BASE } from "../src/unlocks/ingest/coingecko.js";
import { DEFILLAMA_DEFAULT_BASE } from "../src/unlocks/ingest/defillama.js";
import { runIngest } from "../src/unlocks/ingest/run.js";

const repoRoot = `${rootDir()}/`;
const defaultPath = `${repoRoot}data/unlocks.snapshot.json`;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      base: { type: "string", default: defaultPath },
      out: { type: "string", default: defaultPath },
      schedules: { type: "string", default: "keep" },
      days: { type: "string", default: "400" },
      "binance-base": {
        type: "string",
        default: process.env.BINANCE_FUTURES_BASE_URL ?? BINANCE_FUTURES_BASE,
      },
      depth: { type: "boolean", default: false },
      tokens: { type: "string" },
      "defillama-base": { type: "string", default: process.env.DEFILLAMA_BASE_URL ?? DEFILLAMA_DEFAULT_BASE },
      "coingecko-base": { type: "string", default: process.env.COINGECKO_BASE_URL ?? COINGECKO_DEFAULT_BASE },
      "from-6mv": { type: "string" },
      "no-progress": { type: "boolean", default: false },
    },
  });
  if (values["from-6mv"]) {
    const { snapshot, gates } = load6mv(values["from-6mv"], `${repoRoot}data/market-history`);
    for (const g of gates.filter((x) => !x.passed))
      console.warn(
        `excluded ${g.table}: own ETH column within 1 % of real ETH on ${(g.share_within_1pct * 100).toFixed(1)} % of days`,
      );
    const snap = validateUnlockSnapshot(snapshot, values["from-6mv"]);
    writeFileAtomic(values.out as string, `${JSON.stringify(snap)}\n`);
    console.log(`wrote ${values.out}: ${snap.tokens.length} tokens from ${values["from-6mv"]}`);
    return;
  }
  if (values.schedules !== "keep" && values.schedules !== "defillama")
    throw new Error("--schedules must be keep or defillama");
  const base = parseUnlockSnapshot(readFileSync(values.base as string, "utf8"), values.base as string);
  const report = await runIngest({
    base,
    out: values.out as string,
    binanceBase: values["binance-base"] as string,
    defillamaBase: values["defillama-base"] as string,
    coingeckoBase: values["coingecko-base"] as string,
    coingeckoApiKey: process.env.COINGECKO_API_KEY,
    schedules: values.schedules,
    days: Number(values.days),
    depth: values.depth as boolean,
    progress: !values["no-progress"] && process.stderr.isTTY === true,
    onlySymbols: values.tokens?.split(",").map((s) => s.trim()),
  });
  for (const w of report.warnings) console.warn(`warning: ${w}`);
  console.log(
    `wrote ${report.out}: ${report.marketsUpdated.length} tokens with fresh klines, ${report.depthUpdated.length} with depth, ` +
      `${report.schedulesUpdated.length} with DefiLlama schedules, ${report.supplyUpdated.length} with CoinGecko supply, ${report.kept.length} kept as before`,
  );
}

main().catch((err: unknown) => {
  console.error(`ingest failed, snapshot left unchanged: ${(err as Error).message}`);
  process.exit(1);
});
