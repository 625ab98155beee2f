import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import Database from "better-sqlite3";
import type { LedgerPort, PaymentIdentity, Receipt } from "../ledger/port.js";
import type { ChainPayment, RejectedLog } from "./chain-payments.js";

/**
 * The ledger's life beside the chain: a consistent backup of a live SQLite file, a check of the billed receipts
 * against the chain's payments, and the restore of payments the ledger lacks (after restoring an old backup, a lost
 * disk, a crash before a receipt was written). The chain is the record; nothing here invents a payment.
 */

export interface BackupResult {
  file: string;
  pages: number;
  receipts: number;
  billedAtomic: bigint;
}

/**
 * Copies a SQLite ledger with SQLite's online backup API (better-sqlite3 `.backup()`): consistent while the server
 * keeps writing, unlike `cp` of the file (which misses what is still in the WAL). The copy is then opened and checked
 * (integrity_check) and its billed receipts counted.
 */
export async function backupSqlite(ledgerPath: string, file: string): Promise<BackupResult> {
  if (existsSync(file))
    throw new Error(`${file} already exists; choose a new file (a backup never overwrites)`);
  const db = new Database(ledgerPath, { readonly: true, fileMustExist: true });
  let pages = 0;
  try {
    await db.backup(file, {
      progress: (p) => {
        pages = p.totalPages;
        return 1000;
      },
    });
  } finally {
    db.close();
  }
  const copy = new Database(file, { readonly: true });
  try {
    const check = copy.pragma("integrity_check", { simple: true });
    if (check !== "ok") throw new Error(`the copy at ${file} fails integrity_check (${String(check)})`);
    const rows = copy.prepare("SELECT status, amount FROM receipts").all() as {
      status: string;
      amount: string;
    }[];
    const billed = rows.filter((r) => r.status === "settled" || r.status === "pending");
    return {
      file,
      pages,
      receipts: rows.length,
      billedAtomic: billed.reduce((sum, r) => sum + BigInt(r.amount), 0n),
    };
  } finally {
    copy.close();
  }
}

/** What the ledger knows for a check against the chain: its receipts and the legacy schema's transactions. */
export interface LedgerView {
  receipts: Receipt[];
  /** Transactions of receipts kept in `receipts_legacy` (pre-port schema): paid, but not claimable again. */
  legacyTransactions: ReadonlySet<string>;
}

const BILLED = new Set(["settled", "pending"]);
const key = (i: Pick<PaymentIdentity, "payer" | "nonce">) =>
  `${i.payer.toLowerCase()}:${i.nonce.toLowerCase()}`;

export interface VerifyReport {
  fromBlock: string;
  toBlock: string;
  chain: { payments: number; atomic: string };
  /** Chain payments with a billed receipt (same authorization and transaction, same amount). */
  matched: { receipts: number; atomic: string };
  /** Paid on chain, not billed in the ledger: `reconcile` restores them. */
  missingFromLedger: { transaction: string; payer: string; amount: string; block: string; state: string }[];
  /** Billed in the ledger, whose transaction the chain does not hold in the block range read. */
  notOnChain: { receipt: string; transaction: string | null; amount: string }[];
  /** Same authorization, different amount or transaction. */
  mismatched: { receipt: string; field: string; ledger: string; chain: string }[];
  /** Logs the RPC returned that are no payment to us in the range (another contract, payee or block). */
  rejectedLogs: RejectedLog[];
  ok: boolean;
}

/** How far a receipt's time may be from its transaction's block time (clocks, settlement latency). */
const TIME_MARGIN_MS = 120_000;

/**
 * Compares the chain's payments of a block range with the ledger. A billed receipt the range's payments do not match
 * is "not on chain" only when the chain places its transaction inside the range or nowhere (`blockOf`): receipts
 * whose time is near the range are asked about, so one settled just before the first block is never counted.
 */
export async function verifyAgainstChain(
  view: LedgerView,
  scan: { payments: readonly ChainPayment[]; rejected: readonly RejectedLog[] },
  range: { fromBlock: bigint; toBlock: bigint; fromTime: Date; toTime: Date },
  terms: { network: string; asset: string; payTo: string },
  blockOf: (transaction: string) => Promise<bigint | undefined>,
): Promise<VerifyReport> {
  const payments = scan.payments;
  const ours = view.receipts.filter(
    (r) =>
      r.identity.network === terms.network &&
      r.identity.asset === terms.asset.toLowerCase() &&
      r.payTo.toLowerCase() === terms.payTo.toLowerCase(),
  );
  const byIdentity = new Map(ours.map((r) => [key(r.identity), r]));
  const byTx = new Map(ours.filter((r) => r.transaction).map((r) => [r.transaction?.toLowerCase(), r]));
  const seen = new Set<string>();
  const report: VerifyReport = {
    fromBlock: range.fromBlock.toString(),
    toBlock: range.toBlock.toString(),
    chain: { payments: payments.length, atomic: sum(payments.map((p) => p.amount)) },
    matched: { receipts: 0, atomic: "0" },
    missingFromLedger: [],
    notOnChain: [],
    mismatched: [],
    rejectedLogs: [...scan.rejected],
    ok: true,
  };
  let matched = 0n;
  for (const p of payments) {
    const r = byIdentity.get(key(p)) ?? byTx.get(p.transaction.toLowerCase());
    if (!r && view.legacyTransactions.has(p.transaction.toLowerCase())) {
      matched += BigInt(p.amount);
      report.matched.receipts += 1;
      continue;
    }
    if (!r || !BILLED.has(r.status)) {
      report.missingFromLedger.push({
        transaction: p.transaction,
        payer: p.payer,
        amount: p.amount,
        block: p.blockNumber.toString(),
        state: r ? `receipt ${r.id} is ${r.status}` : "no receipt",
      });
      continue;
    }
    seen.add(r.id);
    if (r.amount !== p.amount)
      report.mismatched.push({ receipt: r.id, field: "amount", ledger: r.amount, chain: p.amount });
    else if (r.transaction?.toLowerCase() !== p.transaction.toLowerCase())
      report.mismatched.push({
        receipt: r.id,
        field: "transaction",
        ledger: r.transaction ?? "",
        chain: p.transaction,
      });
    else {
      matched += BigInt(p.amount);
      report.matched.receipts += 1;
    }
  }
  report.matched.atomic = matched.toString();
  for (const r of ours) {
    if (!BILLED.has(r.status) || seen.has(r.id)) continue;
    const at = Date.parse(r.settledAt ?? r.createdAt);
    if (at < range.fromTime.getTime() - TIME_MARGIN_MS || at > range.toTime.getTime() + TIME_MARGIN_MS)
      continue;
    // Near the range by its time: where the chain puts its transaction decides.
    const block = r.transaction ? await blockOf(r.transaction) : undefined;
    if (block !== undefined && (block < range.fromBlock || block > range.toBlock)) continue;
    report.notOnChain.push({ receipt: r.id, transaction: r.transaction, amount: r.amount });
  }
  report.ok =
    !report.missingFromLedger.length &&
    !report.notOnChain.length &&
    !report.mismatched.length &&
    !report.rejectedLogs.length;
  return report;
}

export interface ReconcileReport {
  fromBlock: string;
  toBlock: string;
  /** The chain's head when read, and the confirmations a payment needed to be written. */
  head: string;
  confirmations: number;
  chainPayments: number;
  /** Already billed (or in the legacy table): nothing to do. */
  alreadyBilled: number;
  /** A receipt existed (claimed, settling, unknown, failed) and is now settled with the chain's transaction. */
  settled: { receipt: string; transaction: string; amount: string }[];
  /** No receipt existed: one was written from the chain. */
  restored: { receipt: string; transaction: string; amount: string; route: string }[];
  restoredAtomic: string;
  /** Payments (and logs) the chain did not prove as ours: reported, never written. */
  rejected: { transaction: string; payer?: string; amount?: string; block: string; reason: string }[];
  /** What the ledger bills (settled and pending) before the run, and after it (dry run: would bill). */
  billedBeforeAtomic: string;
  billedAfterAtomic: string;
  dryRun: boolean;
}

export interface ReconcileOptions {
  network: string;
  asset: string;
  payTo: string;
  /** Route prices (atomic USDC): a payment is ours only at a route's price; it is filed under its route. */
  prices: readonly { route: string; amount: string }[];
  /** The chain's head and how many blocks (the payment's included) must hold a payment before it is written. */
  head: bigint;
  confirmations: number;
  /** The payment's own transaction receipt confirms it (src/ops/chain-payments.ts `receiptConfirms`). */
  confirm: (p: ChainPayment) => Promise<boolean>;
  /** Logs the scan set aside, reported with the rest. */
  rejectedLogs?: readonly RejectedLog[];
  dryRun?: boolean;
}

/**
 * Writes a settled receipt for every chain payment the ledger does not bill, through the ledger port (SQLite and
 * PostgreSQL alike): the authorization is claimed, its settlement begun and recorded with the chain's transaction and
 * the block's time. Only a payment the chain proves is written: the network's USDC paid PAY_TO exactly a route's price
 * (a receipt's own price, for a receipt settled from the chain) by this authorization, with enough confirmations, and
 * the transaction's own receipt says so; anything else is reported in `rejected`. Idempotent: a second run finds
 * every payment billed and writes nothing. A restored receipt has no request, proof version or pp_ref (the chain does
 * not hold them): x402_version 0 and request fingerprint `chain:<transaction>` mark it.
 */
export async function reconcileFromChain(
  ledger: LedgerPort,
  view: LedgerView,
  payments: readonly ChainPayment[],
  range: { fromBlock: bigint; toBlock: bigint },
  opts: ReconcileOptions,
): Promise<ReconcileReport> {
  const ours = view.receipts.filter(
    (r) => r.identity.network === opts.network && r.identity.asset === opts.asset.toLowerCase(),
  );
  const byIdentity = new Map(ours.map((r) => [key(r.identity), r]));
  const credited = new Set(
    view.receipts.filter((r) => r.transaction).map((r) => r.transaction?.toLowerCase() as string),
  );
  const billedBefore = view.receipts
    .filter((r) => BILLED.has(r.status))
    .reduce((s, r) => s + BigInt(r.amount), 0n);
  const report: ReconcileReport = {
    fromBlock: range.fromBlock.toString(),
    toBlock: range.toBlock.toString(),
    head: opts.head.toString(),
    confirmations: opts.confirmations,
    chainPayments: payments.length,
    alreadyBilled: 0,
    settled: [],
    restored: [],
    restoredAtomic: "0",
    rejected: (opts.rejectedLogs ?? []).map((l) => ({ ...l })),
    billedBeforeAtomic: billedBefore.toString(),
    billedAfterAtomic: billedBefore.toString(),
    dryRun: opts.dryRun ?? false,
  };
  const priceOf = new Map<string, string>(opts.prices.map((p) => [p.route, p.amount]));
  /** Why the chain does not prove this payment as ours, or undefined when it does. */
  const refusal = async (p: ChainPayment, existing: Receipt | undefined): Promise<string | undefined> => {
    if (existing) {
      if (existing.payTo.toLowerCase() !== opts.payTo.toLowerCase())
        return `receipt ${existing.id} is payable to ${existing.payTo}, not PAY_TO`;
      const price = priceOf.get(existing.route);
      if (price === undefined) return `receipt ${existing.id}'s route ${existing.route} has no price`;
      if (existing.amount !== price || p.amount !== price)
        return `paid ${p.amount}, receipt ${existing.id} is for ${existing.amount} and its route costs ${price}`;
    } else if (!opts.prices.some((pr) => pr.amount === p.amount))
      return `paid ${p.amount}, which is no route's price`;
    const confirmations = opts.head - p.blockNumber + 1n;
    if (confirmations < BigInt(opts.confirmations))
      return `${confirmations < 0n ? 0n : confirmations} confirmations of ${opts.confirmations} needed`;
    if (!(await opts.confirm(p))) return "its transaction's receipt does not show this payment";
    return undefined;
  };
  const incarnation = `ledger-reconcile-${randomUUID()}`;
  let started = false;
  let restoredAtomic = 0n;
  try {
    for (const p of payments) {
      const tx = p.transaction.toLowerCase();
      const existing = byIdentity.get(key(p));
      if ((existing && BILLED.has(existing.status)) || view.legacyTransactions.has(tx)) {
        report.alreadyBilled += 1;
        continue;
      }
      if (!existing && credited.has(tx)) {
        // The transaction is credited to another receipt (a batch or a changed identity): never credited twice.
        report.alreadyBilled += 1;
        continue;
      }
      const why = await refusal(p, existing);
      if (why !== undefined) {
        report.rejected.push({
          transaction: tx,
          payer: p.payer,
          amount: p.amount,
          block: p.blockNumber.toString(),
          reason: why,
        });
        continue;
      }
      if (!started && !report.dryRun) {
        await ledger.startIncarnation(incarnation, new Date());
        started = true;
      }
      if (existing) {
        if (!report.dryRun) {
          const done = await ledger.recordSettlement(existing.id, {
            status: "settled",
            transaction: tx,
            now: p.time,
          });
          if (!done.ok) throw new Error(`receipt ${existing.id}: ${done.reason}`);
        }
        credited.add(tx);
        report.settled.push({ receipt: existing.id, transaction: tx, amount: p.amount });
        restoredAtomic += BigInt(p.amount);
        continue;
      }
      const matches = opts.prices.filter((pr) => pr.amount === p.amount);
      const route = matches.length === 1 ? (matches[0]?.route as string) : "unknown";
      let receiptId = "(dry run)";
      if (!report.dryRun) {
        const claim = await ledger.claimAuthorization({
          identity: {
            network: opts.network,
            asset: opts.asset.toLowerCase(),
            payer: p.payer,
            nonce: p.nonce,
          },
          route,
          requestFingerprint: `chain:${tx}`,
          x402Version: 0,
          amount: p.amount,
          payTo: opts.payTo,
          incarnation,
          lockTtlMs: 60_000,
          now: p.time,
        });
        if (claim.kind !== "claimed") throw new Error(`claim of ${tx} answered ${claim.kind}`);
        receiptId = claim.receipt.id;
        if (!(await ledger.beginSettlement(receiptId, incarnation, p.time)))
          throw new Error(`receipt ${receiptId}: settlement could not begin`);
        const done = await ledger.recordSettlement(receiptId, {
          status: "settled",
          transaction: tx,
          now: p.time,
        });
        if (!done.ok) throw new Error(`receipt ${receiptId}: ${done.reason}`);
      }
      credited.add(tx);
      report.restored.push({ receipt: receiptId, transaction: tx, amount: p.amount, route });
      restoredAtomic += BigInt(p.amount);
    }
  } finally {
    if (started) await ledger.endIncarnation(incarnation, new Date());
  }
  report.restoredAtomic = restoredAtomic.toString();
  report.billedAfterAtomic = (billedBefore + restoredAtomic).toString();
  return report;
}

const sum = (amounts: readonly string[]) => amounts.reduce((s, a) => s + BigInt(a), 0n).toString();
