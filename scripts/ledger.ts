import { existsSync } from "node:fs";
import { parseArgs } from "node:util";
import { assertChain, WrongChainError } from "../src/chain/eip3009.js";
import { paymentNetwork } from "../src/chain/networks.js";
import { ConfigError, DEFAULT_LEDGER_PATH, DEFAULT_NETWORK, loadDotEnv } from "../src/config.js";
import { openConfiguredLedger } from "../src/ledger/factory.js";
import { blockOfTransaction, chainClient, receiptConfirms, scanPayments } from "../src/ops/chain-payments.js";
import {
  backupSqlite,
  type LedgerView,
  reconcileFromChain,
  verifyAgainstChain,
} from "../src/ops/ledger-ops.js";
import { readLegacyReceipts } from "../src/ops/legacy-receipts.js";
import { usd } from "../src/ops/receipts.js";
import { PRICES } from "../src/operations/prices.js";

/*
 * npm run ledger -- backup FILE                          consistent copy of the live SQLite ledger
 * npm run ledger -- verify --from-block N [--to-block M] billed receipts vs the chain's payments to PAY_TO
 * npm run ledger -- reconcile --from-block N [--to-block M] [--confirmations K] [--dry-run]
 *                                                        writes receipts for chain payments the ledger lacks
 * Options: --ledger PATH (else LEDGER_URL / LEDGER_PATH), --rpc URL (else CHAIN_RPC_URL), --pay-to ADDR (else PAY_TO),
 * --network ID (else NETWORK, as the server reads it), --chunk-blocks N (eth_getLogs page, default 10000),
 * --confirmations K (blocks, the payment's included, before reconcile writes it; default 10).
 * In the image: docker exec <container> node dist/ledger.mjs …
 */
const USAGE = `usage: npm run ledger -- backup FILE
       npm run ledger -- verify --from-block N [--to-block M]
       npm run ledger -- reconcile --from-block N [--to-block M] [--confirmations K] [--dry-run]
options: --ledger PATH  --rpc URL  --pay-to 0x…  --network eip155:8453|eip155:84532  --chunk-blocks N`;

/** Blocks (the payment's own included) a payment must have behind it before reconcile writes it: ~20 s on Base. */
const DEFAULT_CONFIRMATIONS = 10n;

function fail(message: string, code = 2): never {
  process.stderr.write(`ledger: ${message}\n`);
  process.exit(code);
}

let parsed: ReturnType<typeof parse>;
function parse() {
  return parseArgs({
    allowPositionals: true,
    options: {
      ledger: { type: "string" },
      rpc: { type: "string" },
      "pay-to": { type: "string" },
      network: { type: "string" },
      "from-block": { type: "string" },
      "to-block": { type: "string" },
      "chunk-blocks": { type: "string" },
      confirmations: { type: "string" },
      "dry-run": { type: "boolean" },
    },
    strict: true,
  });
}
try {
  parsed = parse();
} catch (err) {
  fail(`${(err as Error).message}\n${USAGE}`);
}
const { values, positionals } = parsed;
const [command, ...rest] = positionals;
if (!command || !["backup", "verify", "reconcile"].includes(command)) fail(USAGE);

try {
  loadDotEnv();
} catch (err) {
  fail(err instanceof ConfigError ? err.message : String(err), 1);
}
const env = process.env;
const ledgerPath = values.ledger ?? (env.LEDGER_PATH || DEFAULT_LEDGER_PATH);
const ledgerUrl = values.ledger ? undefined : env.LEDGER_URL || undefined;
const hidden = (url: string) => url.replace(/(\/\/[^/:@\s]*:)[^@\s]*@/, "$1***@");

if (command === "backup") {
  const file = rest[0];
  if (!file || rest.length > 1) fail(`backup takes one FILE\n${USAGE}`);
  if (ledgerUrl) {
    // PostgreSQL has its own consistent online dump; this command does not reimplement it.
    fail(
      `the ledger is PostgreSQL (LEDGER_URL); back it up with pg_dump, which is consistent while the service runs:\n  pg_dump --format=custom --file ${file} '${hidden(ledgerUrl)}'\nrestore with: pg_restore --clean --if-exists --dbname '<url>' ${file}`,
      1,
    );
  }
  if (!existsSync(ledgerPath)) fail(`no ledger at ${ledgerPath}; set LEDGER_PATH or pass --ledger`, 1);
  try {
    const r = await backupSqlite(ledgerPath, file);
    process.stdout.write(
      `${JSON.stringify({ backup: r.file, from: ledgerPath, pages: r.pages, receipts: r.receipts, billed_atomic: r.billedAtomic.toString(), billed_usd: usd(r.billedAtomic), integrity: "ok" })}\n`,
    );
  } catch (err) {
    fail(`backup failed: ${(err as Error).message}`, 1);
  }
  process.exit(0);
}

const network = paymentNetwork(values.network ?? env.NETWORK ?? DEFAULT_NETWORK);
if (!network) fail(`--network/NETWORK ${values.network ?? env.NETWORK}: set eip155:8453 or eip155:84532`);
const rpc = values.rpc ?? env.CHAIN_RPC_URL;
if (!rpc) fail("no chain RPC: set CHAIN_RPC_URL or pass --rpc URL");
const payTo = (values["pay-to"] ?? env.PAY_TO) as `0x${string}` | undefined;
if (!payTo || !/^0x[0-9a-fA-F]{40}$/.test(payTo)) fail("no payee: set PAY_TO or pass --pay-to 0x…");
const block = (name: "from-block" | "to-block" | "chunk-blocks" | "confirmations"): bigint | undefined => {
  const v = values[name];
  if (v === undefined) return undefined;
  if (!/^\d+$/.test(v)) fail(`--${name} ${JSON.stringify(v)} is not a whole number`);
  return BigInt(v);
};
const fromBlock = block("from-block");
if (fromBlock === undefined) fail(`${command} needs --from-block N (the first block to read)\n${USAGE}`);
const toBlock = block("to-block");
const chunkBlocks = block("chunk-blocks");
const confirmations = Number(block("confirmations") ?? DEFAULT_CONFIRMATIONS);
if (!ledgerUrl && !existsSync(ledgerPath))
  fail(`no ledger at ${ledgerPath}; set LEDGER_PATH or pass --ledger`, 1);

const client = chainClient(rpc);
const asset = network.usdc.address;
let scan: Awaited<ReturnType<typeof scanPayments>>;
let head: bigint;
try {
  // Another chain's logs are another chain's money: refused before anything is read.
  await assertChain(client, network);
  head = await client.getBlockNumber();
  scan = await scanPayments(client, network, payTo, {
    fromBlock,
    toBlock: toBlock ?? head,
    ...(chunkBlocks ? { chunkBlocks } : {}),
  });
} catch (err) {
  if (err instanceof WrongChainError) fail(`${command} refused: ${err.message}`, 1);
  fail(`cannot read the chain at ${rpc} (${(err as Error).message.split("\n")[0]})`, 1);
}

let opened: Awaited<ReturnType<typeof openConfiguredLedger>>;
try {
  opened = await openConfiguredLedger({
    ledgerPath,
    ledgerUrl,
    ledgerSecretKey: env.LEDGER_SECRET_KEY || undefined,
  });
} catch (err) {
  fail(`cannot open the ledger (${(err as Error).message.split("\n")[0]})`, 1);
}
const { ledger } = opened;
let exitCode = 0;
try {
  const legacy = ledgerUrl ? [] : readLegacyReceipts(ledgerPath, ["settled", "pending"]);
  const view: LedgerView = {
    receipts: await ledger.receipts(),
    legacyTransactions: new Set(legacy.flatMap((r) => (r.transaction ? [r.transaction.toLowerCase()] : []))),
  };
  const terms = { network: network.caip2, asset, payTo };
  if (command === "verify") {
    const [first, last] = await Promise.all([
      client.getBlock({ blockNumber: scan.fromBlock }),
      client.getBlock({ blockNumber: scan.toBlock }),
    ]);
    const report = await verifyAgainstChain(
      view,
      scan,
      {
        fromBlock: scan.fromBlock,
        toBlock: scan.toBlock,
        fromTime: new Date(Number(first.timestamp) * 1000),
        toTime: new Date(Number(last.timestamp) * 1000),
      },
      terms,
      (tx) => blockOfTransaction(client, tx),
    );
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    process.stderr.write(
      `ledger verify: blocks ${report.fromBlock}–${report.toBlock}: ${report.chain.payments} payments on chain (${usd(BigInt(report.chain.atomic))} USD), ${report.matched.receipts} billed in the ledger (${usd(BigInt(report.matched.atomic))} USD); missing from the ledger ${report.missingFromLedger.length}, not on chain ${report.notOnChain.length}, mismatched ${report.mismatched.length}, rejected logs ${report.rejectedLogs.length}${report.ok ? "" : " — run `npm run ledger -- reconcile` for the missing ones"}\n`,
    );
    exitCode = report.ok ? 0 : 1;
  } else {
    const report = await reconcileFromChain(
      ledger,
      view,
      scan.payments,
      { fromBlock: scan.fromBlock, toBlock: scan.toBlock },
      {
        ...terms,
        prices: Object.values(PRICES).map((p) => ({ route: p.route, amount: p.amount })),
        head,
        confirmations,
        confirm: (p) => receiptConfirms(client, network, payTo, p),
        rejectedLogs: scan.rejected,
        dryRun: values["dry-run"] ?? false,
      },
    );
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    process.stderr.write(
      `ledger reconcile${report.dryRun ? " (dry run: nothing written)" : ""}: blocks ${report.fromBlock}–${report.toBlock}: ${report.chainPayments} payments on chain, ${report.alreadyBilled} already billed, ${report.restored.length} receipts restored and ${report.settled.length} settled from the chain (${usd(BigInt(report.restoredAtomic))} USD), ${report.rejected.length} rejected (not written); billed ${usd(BigInt(report.billedBeforeAtomic))} USD → ${report.dryRun ? "would bill " : ""}${usd(BigInt(report.billedAfterAtomic))} USD\n`,
    );
  }
} catch (err) {
  process.stderr.write(`ledger: ${command} failed: ${(err as Error).message.split("\n")[0]}\n`);
  exitCode = 1;
} finally {
  await ledger.close();
}
process.exit(exitCode);
