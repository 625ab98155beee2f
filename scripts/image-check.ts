/**
 * The checks scripts/image.sh runs against a server it started (the image, or the rehearsed runtime tree) on a devnet:
 *
 *   tsx scripts/image-check.ts --base-url URL --rpc-url URL --pay-to 0x… -- <command printing the receipts JSON>
 *
 * 1. the documents and probes answer (/health, /ready, /openapi.json, /docs; /metrics on its own listener, and not on
 *    the public port);
 * 2. each of the five paid routes, paid with x402 v2 by the devnet's buyer, answers 200 and moves exactly its price
 *    to PAY_TO on chain (balance read before and after each call);
 * 3. the receipts export, run by the given command (e.g. `docker exec <container> node dist/receipts.mjs`), bills
 *    exactly those five settlements: one receipt per transaction, each matched by a USDC Transfer from its payer to
 *    PAY_TO of its amount in that transaction's on-chain receipt, and a total equal to what PAY_TO gained.
 *
 * Prints one line per check; exits 1 after naming every mismatch.
 */
import { execFile } from "node:child_process";
import { parseArgs, promisify } from "node:util";
import { createPublicClient, erc20Abi, http, parseEventLogs, type TransactionReceipt } from "viem";
import { base } from "viem/chains";
import type { ReceiptsReport } from "../src/ops/receipts.js";
import { BASE_MAINNET } from "../src/chain/networks.js";
import { PRICES } from "../src/operations/prices.js";
import { DEVNET_BUYER_KEY, decodeSettlement, payingFetch } from "./buyer.js";

const USDC_BASE = BASE_MAINNET.usdc.address;

/** One paid call as the buyer and the chain saw it. */
export interface PaidCall {
  route: string;
  price: bigint;
  transaction: string;
  payer: string;
  /** PAY_TO's USDC balance after the call minus before it. */
  delta: bigint;
}

/** A USDC Transfer as an on-chain transaction receipt logs it. */
export interface Transfer {
  from: string;
  to: string;
  value: bigint;
}

/**
 * Every way the receipts export disagrees with the paid calls and the chain: a call without its receipt (or two), a
 * receipt for no call, an amount, payer, route or status that differs, a transaction with no matching USDC Transfer to
 * `payTo`, or totals other than what `payTo` gained. Empty when they agree.
 */
export function receiptProblems(
  report: Pick<ReceiptsReport, "rows" | "total">,
  calls: readonly PaidCall[],
  transfers: ReadonlyMap<string, readonly Transfer[]>,
  payTo: string,
  gained: bigint,
): string[] {
  const problems: string[] = [];
  const lower = (s: string) => s.toLowerCase();
  for (const call of calls) {
    const rows = report.rows.filter((r) => lower(r.transaction) === lower(call.transaction));
    if (rows.length !== 1) {
      problems.push(
        `${call.route}: ${rows.length} receipts for transaction ${call.transaction} (expected 1)`,
      );
      continue;
    }
    const row = rows[0] as ReceiptsReport["rows"][number];
    if (row.route !== call.route)
      problems.push(`${call.transaction}: receipt route ${row.route}, paid ${call.route}`);
    if (row.status !== "settled")
      problems.push(`${call.route}: receipt status ${row.status}, expected settled`);
    if (BigInt(row.amountAtomic) !== call.price)
      problems.push(`${call.route}: receipt amount ${row.amountAtomic}, price ${call.price}`);
    if (lower(row.payer) !== lower(call.payer))
      problems.push(`${call.route}: receipt payer ${row.payer}, paid by ${call.payer}`);
    if (lower(row.payTo) !== lower(payTo))
      problems.push(`${call.route}: receipt payTo ${row.payTo}, expected ${payTo}`);
    const moved = (transfers.get(lower(call.transaction)) ?? []).filter(
      (t) =>
        lower(t.from) === lower(call.payer) &&
        lower(t.to) === lower(payTo) &&
        t.value === BigInt(row.amountAtomic),
    );
    if (moved.length !== 1)
      problems.push(
        `${call.route}: transaction ${call.transaction} has ${moved.length} matching USDC Transfers on chain`,
      );
  }
  const known = new Set(calls.map((c) => lower(c.transaction)));
  for (const row of report.rows)
    if (!known.has(lower(row.transaction)))
      problems.push(
        `receipt ${row.receiptId} (${row.route}, ${row.transaction || "no transaction"}) is for no paid call`,
      );
  if (report.total.calls !== calls.length)
    problems.push(`export total: ${report.total.calls} calls, paid ${calls.length}`);
  if (BigInt(report.total.amountAtomic) !== gained)
    problems.push(`export total ${report.total.amountAtomic} ≠ PAY_TO's on-chain gain ${gained}`);
  return problems;
}

/** The five paid routes, each with an input the shipped data answers; the unlock event comes from the first answer. */
function paidRequests(event: () => { token: string; unlock_event_id: string }) {
  const json = (body: unknown): RequestInit => ({
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return [
    { price: PRICES.upcoming, path: "/v1/unlocks/upcoming?days=120", init: () => ({ method: "GET" }) },
    { price: PRICES.unlockRisk, path: "/v1/unlock-risk", init: () => json(event()) },
    { price: PRICES.riskSummary, path: "/v1/token/risk-summary", init: () => json({ token: event().token }) },
    { price: PRICES.backtest, path: "/v1/unlock/backtest", init: () => json(event()) },
    {
      price: PRICES.benchmark,
      path: "/v1/benchmark/endpoint",
      init: () => json({ endpoint_url: "https://2s.io/api/crypto/token-price" }),
    },
  ];
}

async function main() {
  const { values, positionals } = parseArgs({
    options: {
      "base-url": { type: "string" },
      "metrics-url": { type: "string" },
      "rpc-url": { type: "string" },
      "pay-to": { type: "string" },
    },
    allowPositionals: true,
  });
  const baseUrl = values["base-url"];
  const metricsUrl = values["metrics-url"];
  const rpcUrl = values["rpc-url"];
  const payTo = values["pay-to"] as `0x${string}` | undefined;
  if (!baseUrl || !metricsUrl || !rpcUrl || !payTo || positionals.length === 0) {
    process.stderr.write(
      "usage: tsx scripts/image-check.ts --base-url URL --metrics-url URL --rpc-url URL --pay-to 0x… -- <receipts export command>\n",
    );
    process.exit(2);
  }
  const problems: string[] = [];
  const say = (line: string) => process.stdout.write(`${line}\n`);

  const probes: [string, number][] = [
    ...["/health", "/ready", "/openapi.json", "/docs/"].map((p): [string, number] => [`${baseUrl}${p}`, 200]),
    [`${baseUrl}/metrics`, 404],
    [metricsUrl, 200],
  ];
  for (const [target, expected] of probes) {
    const res = await fetch(target);
    await res.arrayBuffer();
    say(`GET ${target}: ${res.status}`);
    if (res.status !== expected) problems.push(`GET ${target} answered ${res.status}, not ${expected}`);
  }

  const chain = createPublicClient({ chain: base, transport: http(rpcUrl) });
  const balance = () =>
    chain.readContract({ address: USDC_BASE, abi: erc20Abi, functionName: "balanceOf", args: [payTo] });
  const pay = payingFetch(DEVNET_BUYER_KEY, 1_000_000n);
  const start = await balance();
  const calls: PaidCall[] = [];
  let event: { token: string; unlock_event_id: string } | undefined;
  for (const { price, path, init } of paidRequests(() => {
    if (!event) throw new Error("no upcoming unlock event to ask about");
    return event;
  })) {
    const before = await balance();
    const res = await pay(`${baseUrl}${path}`, init());
    const text = await res.text();
    const settlement = decodeSettlement(res) as { transaction?: string; payer?: string } | undefined;
    const delta = (await balance()) - before;
    say(
      `paid ${price.route}: ${res.status}, price ${price.amount}, PAY_TO ${delta >= 0n ? "+" : ""}${delta} on chain, tx ${settlement?.transaction ?? "none"}`,
    );
    if (res.status !== 200 || !settlement?.transaction || !settlement.payer) {
      problems.push(`${price.route}: ${res.status} ${text.slice(0, 300)}`);
      continue;
    }
    if (delta !== BigInt(price.amount))
      problems.push(`${price.route}: PAY_TO gained ${delta}, price ${price.amount}`);
    if (price.route === PRICES.upcoming.route) {
      const first = (JSON.parse(text) as { unlocks?: { token: string; unlock_event_id: string }[] })
        .unlocks?.[0];
      if (first) event = { token: first.token, unlock_event_id: first.unlock_event_id };
    }
    calls.push({
      route: price.route,
      price: BigInt(price.amount),
      transaction: settlement.transaction,
      payer: settlement.payer,
      delta,
    });
  }
  const gained = (await balance()) - start;

  const [command, ...args] = positionals as [string, ...string[]];
  const { stdout } = await promisify(execFile)(command, args, { maxBuffer: 16 * 1024 * 1024 });
  const report = JSON.parse(stdout) as ReceiptsReport;
  const transfers = new Map<string, Transfer[]>();
  for (const call of calls) {
    const receipt: TransactionReceipt = await chain.getTransactionReceipt({
      hash: call.transaction as `0x${string}`,
    });
    const logs = parseEventLogs({ abi: erc20Abi, eventName: "Transfer", logs: receipt.logs }).filter(
      (l) => l.address.toLowerCase() === USDC_BASE.toLowerCase() && receipt.status === "success",
    );
    transfers.set(
      call.transaction.toLowerCase(),
      logs.map((l) => ({ from: l.args.from, to: l.args.to, value: l.args.value })),
    );
  }
  const mismatches = receiptProblems(report, calls, transfers, payTo, gained);
  problems.push(...mismatches);
  say(
    `receipts export: ${report.total.calls} receipts, total ${report.total.amountAtomic} (${report.total.amountUsd} USD); PAY_TO gained ${gained} on chain; ${mismatches.length === 0 ? "every receipt matches its transaction's USDC Transfer" : `${mismatches.length} mismatches`}`,
  );

  if (problems.length > 0) {
    for (const p of problems) process.stderr.write(`image-check: ${p}\n`);
    process.exit(1);
  }
}

if (process.argv[1]?.endsWith("image-check.ts")) await main();
