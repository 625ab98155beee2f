/**
 * Refreshes the unlock snapshot from the providers (DefiLlama emissions + CoinGecko daily prices).
 *
 *   npm run ingest -- [--base data/unlocks.snapshot.json] [--out data/unlocks.snapshot.json]
 *                     [--schedules keep|defillama] [--days 365] [--depth] [--tokens ARB,OP]
 *                     [--defillama-base URL] [--coingecko-base URL]
 *   npm run ingest -- --from-6mv data/unlock-history-6mv --out /tmp/6mv.snapshot.json
 *
 * Environment: DEFILLAMA_BASE_URL, COINGECKO_BASE_URL, COINGECKO_API_KEY.
 */

import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { writeFileAtomic } from "../src/store/atomic-write.js";
import { repoRoot as rootDir } from "../src/store/paths.js";
import { parseUnlockSnapshot, validateUnlockSnapshot } from "../src/store/unlocks-snapshot.js";
import { load6mv } from "../src/unlocks/import-6mv.js";
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
      days: { type: "string", default: "365" },
      depth: { type: "boolean", default: false },
      tokens: { type: "string" },
      "defillama-base": { type: "string", default: process.env.DEFILLAMA_BASE_URL ?? DEFILLAMA_DEFAULT_BASE },
      "coingecko-base": { type: "string", default: process.env.COINGECKO_BASE_URL ?? COINGECKO_DEFAULT_BASE },
      benchmark: { type: "string", default: "ethereum" },
      "from-6mv": { type: "string" },
      "no-progress": { type: "boolean", default: false },
    },
  });
  if (values["from-6mv"]) {
    const { snapshot, gates } = load6mv(values["from-6mv"], `${repoRoot}data/market-history`);
    for (const g of gates.filter((x) => !x.passed))
      console.warn(`excluded ${g.table}: own ETH column within 1 % of real ETH on ${(g.share_within_1pct * 100).toFixed(1)} % of days`);
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
    defillamaBase: values["defillama-base"] as string,
    coingeckoBase: values["coingecko-base"] as string,
    coingeckoApiKey: process.env.COINGECKO_API_KEY,
    schedules: values.schedules,
    historyDays: Number(values.days),
    depth: values.depth as boolean,
    benchmarkId: values.benchmark as string,
    progress: !values["no-progress"] && process.stderr.isTTY === true,
    onlySymbols: values.tokens?.split(",").map((s) => s.trim()),
  });
  for (const w of report.warnings) console.warn(`warning: ${w}`);
  console.log(
    `wrote ${report.out} (as_of ${report.asOf}): ${report.marketsUpdated.length} tokens with fresh market data, ` +
      `${report.schedulesUpdated.length} with DefiLlama schedules, ${report.kept.length} kept as before`,
  );
}

main().catch((err: unknown) => {
  console.error(`ingest failed, snapshot left unchanged: ${(err as Error).message}`);
  process.exit(1);
});
