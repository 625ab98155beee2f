import { existsSync } from "node:fs";
import { parseArgs } from "node:util";
import { ConfigError, DEFAULT_LEDGER_PATH, loadDotEnv } from "../src/config.js";
import { openConfiguredLedger } from "../src/ledger/factory.js";
import { mergeReceipts, readLedgerReceipts } from "../src/ops/ledger-reader.js";
import { readLegacyReceipts } from "../src/ops/legacy-receipts.js";
import { BILLED_STATUSES, buildReport, isDay, toCsv } from "../src/ops/receipts.js";

/*
 * npm run receipts -- [--from YYYY-MM-DD] [--to YYYY-MM-DD] [--csv] [--ledger PATH] [--no-links]
 *
 * Exports billed receipts (settled and pending) from the ledger with USD amounts, CAIP-2 networks, explorer links and
 * pp_ref, plus totals by route and by UTC day. JSON by default; --csv for one CSV table (a `kind` column tells
 * receipts from totals). The ledger is LEDGER_PATH (from the environment or .env) unless --ledger is given. Explorer
 * links are left out on the devnet (no facilitator configured): its transactions exist only on the local anvil chain.
 */
const USAGE =
  "usage: npm run receipts -- [--from YYYY-MM-DD] [--to YYYY-MM-DD] [--csv] [--ledger PATH] [--no-links]";

function fail(message: string, code = 2): never {
  process.stderr.write(`receipts: ${message}\n`);
  process.exit(code);
}

let values: { from?: string; to?: string; csv?: boolean; ledger?: string; "no-links"?: boolean };
try {
  ({ values } = parseArgs({
    options: {
      from: { type: "string" },
      to: { type: "string" },
      csv: { type: "boolean" },
      ledger: { type: "string" },
      "no-links": { type: "boolean" },
    },
    strict: true,
  }));
} catch (err) {
  fail(`${(err as Error).message}\n${USAGE}`);
}
for (const bound of ["from", "to"] as const) {
  const v = values[bound];
  if (v !== undefined && !isDay(v))
    fail(`--${bound} ${JSON.stringify(v)} is not a date; use YYYY-MM-DD (UTC)`);
}
if (values.from && values.to && values.from > values.to)
  fail(`--from ${values.from} is after --to ${values.to}`);

try {
  loadDotEnv();
} catch (err) {
  fail(err instanceof ConfigError ? err.message : String(err), 1);
}
const env = process.env;
const ledgerPath = values.ledger ?? (env.LEDGER_PATH || DEFAULT_LEDGER_PATH);
if (ledgerPath === ":memory:")
  fail("LEDGER_PATH is :memory:; there is no ledger file to read (use --ledger PATH)");
const devnet = !env.FACILITATOR_URL && !env.CDP_API_KEY_ID && env.NODE_ENV !== "production";

const ledgerUrl = values.ledger ? undefined : env.LEDGER_URL || undefined;
if (!ledgerUrl && !existsSync(ledgerPath))
  fail(`no ledger at ${ledgerPath}; set LEDGER_PATH (or LEDGER_URL) or pass --ledger`, 1);

let receipts: Awaited<ReturnType<typeof readLedgerReceipts>>;
try {
  const { ledger } = await openConfiguredLedger({
    ledgerPath,
    ledgerUrl,
    ledgerSecretKey: env.LEDGER_SECRET_KEY || undefined,
  });
  try {
    receipts = await readLedgerReceipts(ledger, BILLED_STATUSES);
    // A file upgraded from the pre-port schema keeps those receipts aside; they are revenue all the same.
    if (!ledgerUrl) receipts = mergeReceipts(receipts, readLegacyReceipts(ledgerPath, BILLED_STATUSES));
  } finally {
    await ledger.close();
  }
} catch (err) {
  fail(
    `cannot read the ledger ${ledgerUrl ? "at LEDGER_URL" : `at ${ledgerPath}`} (${(err as Error).message.split("\n")[0]}); set LEDGER_PATH/LEDGER_URL or pass --ledger`,
    1,
  );
}
const report = buildReport(receipts, {
  from: values.from,
  to: values.to,
  links: !devnet && !values["no-links"],
});
process.stdout.write(values.csv ? toCsv(report) : `${JSON.stringify(report, null, 2)}\n`);
