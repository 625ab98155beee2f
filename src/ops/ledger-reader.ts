import type { LedgerPort } from "../ledger/port.js";
import type { LedgerReceipt } from "./receipts.js";

/**
 * The ledger's billed receipts through the ledger port, so the export reads SQLite and PostgreSQL alike. Ordered by
 * settlement time (creation time while pending), then id, so two exports of the same ledger are identical.
 */
export async function readLedgerReceipts(
  ledger: Pick<LedgerPort, "receipts">,
  statuses: readonly string[],
): Promise<LedgerReceipt[]> {
  const wanted = new Set(statuses);
  const rows = (await ledger.receipts()).filter((r) => wanted.has(r.status));
  const at = (r: { settledAt: string | null; createdAt: string }) => r.settledAt ?? r.createdAt;
  rows.sort((a, b) => at(a).localeCompare(at(b)) || a.id.localeCompare(b.id));
  return rows.map((r) => ({
    id: r.id,
    route: r.route,
    x402Version: r.x402Version,
    payer: r.identity.payer,
    amount: r.amount,
    network: r.identity.network,
    asset: r.identity.asset,
    payTo: r.payTo,
    transaction: r.transaction,
    status: r.status,
    createdAt: r.createdAt,
    settledAt: r.settledAt,
    ppRef: r.ppRef,
  }));
}

/** Two lists of receipts as one, in the export's order (settlement time, else creation time, then id). */
export function mergeReceipts(a: readonly LedgerReceipt[], b: readonly LedgerReceipt[]): LedgerReceipt[] {
  const at = (r: LedgerReceipt) => r.settledAt ?? r.createdAt;
  return [...a, ...b].sort((x, y) => at(x).localeCompare(at(y)) || x.id.localeCompare(y.id));
}
