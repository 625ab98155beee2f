import Database from "better-sqlite3";
import { caip2, type LedgerReceipt } from "./receipts.js";

/**
 * Receipts of the pre-ledger-port schema, which the SQLite adapter keeps aside in `receipts_legacy` when it upgrades
 * such a file (they have no authorization nonce, so they cannot live beside the port's receipts). They are revenue:
 * the export and the chain checks read them here, read-only. Empty for a file without that table.
 */
export function readLegacyReceipts(path: string, statuses: readonly string[]): LedgerReceipt[] {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const table = db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'receipts_legacy'")
      .get();
    if (!table) return [];
    const cols = new Set(
      (db.prepare("PRAGMA table_info(receipts_legacy)").all() as { name: string }[]).map((c) => c.name),
    );
    // A table that never held the shipped schema's money columns has nothing to export.
    if (!["status", "amount", "network", "asset"].every((c) => cols.has(c))) return [];
    const rows = db.prepare("SELECT * FROM receipts_legacy ORDER BY created_at, id").all() as {
      id: string;
      route: string;
      x402_version: number;
      payer: string | null;
      amount: string;
      network: string;
      asset: string;
      pay_to: string;
      transaction: string | null;
      status: string;
      created_at: string;
      settled_at: string | null;
      pp_ref: string | null;
    }[];
    const wanted = new Set(statuses);
    return rows
      .filter((r) => wanted.has(r.status))
      .map((r) => ({
        id: r.id,
        route: r.route,
        x402Version: r.x402_version,
        payer: r.payer?.toLowerCase() ?? null,
        amount: String(r.amount),
        network: caip2(r.network),
        asset: r.asset.toLowerCase(),
        payTo: r.pay_to,
        transaction: r.transaction,
        status: r.status,
        createdAt: r.created_at,
        settledAt: r.settled_at,
        ppRef: r.pp_ref,
      }));
  } finally {
    db.close();
  }
}
