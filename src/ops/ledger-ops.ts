import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import Database from "better-sqlite3";
import type { LedgerPort, PaymentIdentity, Receipt } from "../ledger/port.js";
import type { ChainPayment } from "./chain-payments.js";

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
  /** Billed in the ledger in this block range's time, but no such payment on chain in the range. */
  notOnChain: { receipt: string; transaction: string | null; amount: string }[];
  /** Same authorization, different amount or transaction. */
  mismatched: { receipt: string; field: string; ledger: string; chain: string }[];
  ok: boolean;
}

/**
 * Compares the chain's payments of a block range with the ledger. A billed receipt counts as "not on chain" only when
 * its time falls inside the range's (block times, with a margin) and the chain shows no such payment there.
 */
export function verifyAgainstChain(
  view: LedgerView,
  payments: readonly ChainPayment[],
  range: { fromBlock: bigint; toBlock: bigint; fromTime: Date; toTime: Date },
  terms: { network: string; asset: string; payTo: string },
): VerifyReport {
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
  const margin = 120_000;
  for (const r of ours) {
    if (!BILLED.has(r.status) || seen.has(r.id)) continue;
    const at = Date.parse(r.settledAt ?? r.createdAt);
    if (at < range.fromTime.getTime() - margin || at > range.toTime.getTime() + margin) continue;
    report.notOnChain.push({ receipt: r.id, transaction: r.transaction, amount: r.amount });
  }
  report.ok = !report.missingFromLedger.length && !report.notOnChain.length && !report.mismatched.length;
  return report;
}

export interface ReconcileReport {
  fromBlock: string;
  toBlock: string;
  chainPayments: number;
  /** Already billed (or in the legacy table): nothing to do. */
  alreadyBilled: number;
  /** A receipt existed (claimed, settling, unknown, failed) and is now settled with the chain's transaction. */
  settled: { receipt: string; transaction: string; amount: string }[];
  /** No receipt existed: one was written from the chain. */
  restored: { receipt: string; transaction: string; amount: string; route: string }[];
  restoredAtomic: string;
  dryRun: boolean;
}

export interface ReconcileOptions {
  network: string;
  asset: string;
  payTo: string;
  /** Route prices (atomic USDC): a restored receipt is filed under the one route of its amount, else "unknown". */
  prices: readonly { route: string; amount: string }[];
  dryRun?: boolean;
}

/**
 * Writes a settled receipt for every chain payment the ledger does not bill, through the ledger port (SQLite and
 * PostgreSQL alike): the authorization is claimed, its settlement begun and recorded with the chain's transaction and
 * the block's time. Idempotent: a second run finds every payment billed and writes nothing. A restored receipt has
 * no request, proof version or pp_ref (the chain does not hold them): x402_version 0 and request fingerprint
 * `chain:<transaction>` mark it.
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
  const report: ReconcileReport = {
    fromBlock: range.fromBlock.toString(),
    toBlock: range.toBlock.toString(),
    chainPayments: payments.length,
    alreadyBilled: 0,
    settled: [],
    restored: [],
    restoredAtomic: "0",
    dryRun: opts.dryRun ?? false,
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
  return report;
}

const sum = (amounts: readonly string[]) => amounts.reduce((s, a) => s + BigInt(a), 0n).toString();
