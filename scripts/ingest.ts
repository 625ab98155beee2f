/**
 * Refreshes the unlock snapshot once, with the very code the running service's refresh loop runs (src/refresh):
 * Binance USDⓈ-M daily klines (Bybit for series that are Bybit's) extend every token's and the benchmark's series;
 * DefiLlama's datasets host refreshes vesting schedules (`--sources …,defillama` or `--schedules defillama`);
 * CoinGecko's keyless /coins/markets gives reported circulating supply, written to
 * $DATA_DIR/circulating-reported/live.json. Each answer is validated (status, 429, empty, HTML, truncated JSON, 20×
 * jump); a token whose answer fails keeps its data. The snapshot is written only when some series got a new candle
 * (no fresh generated_at on stale data). Exits 1 naming every source that failed for any item.
 *
 *   npm run ingest -- [--base data/unlocks.snapshot.json] [--out data/unlocks.snapshot.json]
 *                     [--sources binance,bybit,coingecko,defillama] [--data-dir var/data]
 *   npm run ingest -- --depth        (also ±2 % order-book depth of each Binance-perpetual token)
 *   npm run ingest -- --from-6mv data/unlock-history-6mv --out /tmp/6mv.snapshot.json
 *
 * Environment: BINANCE_FUTURES_BASE_URL, BYBIT_BASE_URL, COINGECKO_BASE_URL, COINGECKO_API_KEY, DEFILLAMA_BASE_URL,
 * DATA_DIR.
 */

import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { load6mv } from "../src/build/import-6mv.js";
import { writeFileAtomic } from "../src/files/atomic-write.js";
import { repoRoot as rootDir } from "../src/files/paths.js";
import { BINANCE_FUTURES_BASE } from "../src/sources/candles/binance.js";
import { BYBIT_DEFAULT_BASE } from "../src/sources/candles/bybit.js";
import { readCoinIds } from "../src/sources/coingecko/circulating.js";
import { COINGECKO_DEFAULT_BASE } from "../src/sources/coingecko/client.js";
import { DEFILLAMA_DEFAULT_BASE } from "../src/sources/defillama/emission.js";
import type { FetchLike } from "../src/sources/http.js";
import { failureLines, refreshSources } from "../src/sources/runner.js";
import { SOURCES, type SourceName } from "../src/sources/status.js";
import { parseUnlockSnapshot, validateUnlockSnapshot } from "../src/unlocks/data/snapshot.js";

const repoRoot = `${rootDir()}/`;
const defaultPath = `${repoRoot}data/unlocks.snapshot.json`;

export interface IngestIo {
  readonly env: Record<string, string | undefined>;
  readonly out: (line: string) => void;
  readonly err: (line: string) => void;
  readonly fetchImpl?: FetchLike;
  readonly clock?: () => Date;
}

/** The one-shot; resolves to the exit status. */
export async function ingest(args: string[], io: IngestIo): Promise<number> {
  const env = io.env;
  const { values } = parseArgs({
    args,
    options: {
      base: { type: "string", default: defaultPath },
      out: { type: "string", default: defaultPath },
      sources: { type: "string", default: "binance,bybit,coingecko" },
      "data-dir": { type: "string", default: env.DATA_DIR || "var/data" },
      schedules: { type: "string", default: "keep" },
      "binance-base": { type: "string", default: env.BINANCE_FUTURES_BASE_URL || BINANCE_FUTURES_BASE },
      "bybit-base": { type: "string", default: env.BYBIT_BASE_URL || BYBIT_DEFAULT_BASE },
      depth: { type: "boolean", default: false },
      "defillama-base": { type: "string", default: env.DEFILLAMA_BASE_URL || DEFILLAMA_DEFAULT_BASE },
      "coingecko-base": { type: "string", default: env.COINGECKO_BASE_URL || COINGECKO_DEFAULT_BASE },
      "from-6mv": { type: "string" },
    },
  });
  const fetchImpl = io.fetchImpl ?? (globalThis.fetch as unknown as FetchLike);
  const now = (io.clock ?? (() => new Date()))();
  if (values["from-6mv"]) {
    const { snapshot, gates } = load6mv(values["from-6mv"], `${repoRoot}data/market-history`);
    for (const g of gates.filter((x) => !x.passed))
      io.err(
        `excluded ${g.table}: own ETH column within 1 % of real ETH on ${(g.share_within_1pct * 100).toFixed(1)} % of days`,
      );
    const snap = validateUnlockSnapshot(snapshot, values["from-6mv"]);
    writeFileAtomic(values.out as string, `${JSON.stringify(snap)}\n`);
    io.out(`wrote ${values.out}: ${snap.tokens.length} tokens from ${values["from-6mv"]}`);
    return 0;
  }
  if (values.schedules !== "keep" && values.schedules !== "defillama")
    throw new Error("--schedules must be keep or defillama");
  const base = parseUnlockSnapshot(readFileSync(values.base as string, "utf8"), values.base as string);

  const which = (values.sources as string).split(",").map((s) => s.trim());
  if (values.schedules === "defillama" && !which.includes("defillama")) which.push("defillama");
  const unknown = which.filter((s) => !(SOURCES as readonly string[]).includes(s) || s === "bazaar");
  if (unknown.length > 0) throw new Error(`--sources: unknown or not refreshed here: ${unknown.join(", ")}`);
  const run = await refreshSources(
    base,
    which as SourceName[],
    {
      bases: {
        binance: values["binance-base"] as string,
        bybit: values["bybit-base"] as string,
        coingecko: values["coingecko-base"] as string,
        coingeckoApiKey: env.COINGECKO_API_KEY,
        defillama: values["defillama-base"] as string,
      },
      fetchImpl,
      coinIds: readCoinIds(),
      dataDir: resolve(values["data-dir"] as string),
      depth: values.depth as boolean,
    },
    now,
  );
  for (const o of run.outcomes)
    io.out(
      `${o.source}: ${o.updated.length} refreshed${o.dataAsOf ? ` (newest ${o.dataAsOf})` : ""}, ${o.failed.length} not`,
    );
  if (run.snapshot) {
    writeFileAtomic(values.out as string, `${JSON.stringify(run.snapshot)}\n`);
    io.out(`wrote ${values.out} (generated_at ${run.snapshot.generated_at})`);
  } else io.out(`${values.out} left unchanged: no new candle was fetched`);
  const failures = failureLines(run.outcomes);
  for (const line of failures) io.err(`ingest: ${line}`);
  return failures.length > 0 ? 1 : 0;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  ingest(process.argv.slice(2), {
    env: process.env,
    out: (l) => console.log(l),
    err: (l) => console.error(l),
  })
    .then((code) => {
      process.exitCode = code;
    })
    .catch((err: unknown) => {
      console.error(`ingest failed, snapshot left unchanged: ${(err as Error).message}`);
      process.exitCode = 1;
    });
}
