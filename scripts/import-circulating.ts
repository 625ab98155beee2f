/**
 * Compacts CoinMarketCap's monthly snapshot pages (`coinmarketcap_monthly_YYYYMM01.csv`) into the reports the service
 * anchors circulating supply on: only our tokens (matched on symbol and name), one row per token-month.
 *
 *   npx tsx scripts/import-circulating.ts --from <folder of the monthly csv files>
 *
 * Writes data/circulating-reported/coinmarketcap-monthly.csv (`token,date,circulating_supply,cmc_name,cmc_symbol`).
 */

import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { matchReports, parseCmcCsv } from "../src/build/import-circulating.js";
import { writeFileAtomic } from "../src/files/atomic-write.js";
import { dataPath } from "../src/files/paths.js";
import { loadUnlockStore } from "../src/unlocks/data/snapshot.js";

const { values } = parseArgs({ options: { from: { type: "string" } } });
if (!values.from) throw new Error("--from <folder> is required");
const dir = values.from;
const rows = readdirSync(dir)
  .filter((f) => /^coinmarketcap_monthly_\d{8}\.csv$/.test(f))
  .sort()
  .flatMap((f) => parseCmcCsv(readFileSync(join(dir, f), "utf8"), f));
const tokens = loadUnlockStore().tokens;
const matched = matchReports(rows, tokens);
const text = `token,date,circulating_supply,cmc_name,cmc_symbol\n${matched.map((r) => [r.token, r.date, r.circulating_supply, r.cmc_name, r.cmc_symbol].join(",")).join("\n")}\n`;
const out = dataPath("circulating-reported/coinmarketcap-monthly.csv");
writeFileAtomic(out, text);
console.log(
  `wrote ${out}: ${matched.length} token-months on ${new Set(matched.map((r) => r.token)).size} tokens from ${rows.length} rows`,
);
