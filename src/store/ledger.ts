/**
 * The embedded ledger (SQLite, LEDGER_PATH). The port it implements is src/payments/ledger-port.ts; this module keeps
 * the name the entry points and scripts open it by.
 */
export type { LedgerPort as Ledger } from "../payments/ledger-port.js";
export { openSqliteLedger as openLedger } from "./ledger-sqlite.js";
