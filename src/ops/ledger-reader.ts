import Database from "better-sqlite3";
import type { LedgerReceipt } from "./receipts.js";

/**
 * Reads the SQLite ledger's billed receipts read-only (a running server may hold it open; WAL lets both proceed).
 * Only the columns that exist since the first ledger version are read, so a ledger with more columns still exports.
 */
export function readLedgerReceipts(path: string, statuses: readonly string[]): LedgerReceipt[] {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const rows = db
      .prepare(
        `SELECT id, route, x402_version, payer, amount, network, asset, pay_to, "transaction", status, created_at,
         settled_at, pp_ref FROM receipts WHERE status IN (${statuses.map(() => "?").join(", ")})
         ORDER BY COALESCE(settled_at, created_at), id`,
      )
      .all(...statuses) as {
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
    return rows.map((r) => ({
      id: r.id,
      route: r.route,
      x402Version: r.x402_version,
      payer: r.payer,
      amount: r.amount,
      network: r.network,
      asset: r.asset,
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
