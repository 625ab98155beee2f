/**
 * The embedded ledger (SQLite, LEDGER_PATH). The port it implements is src/ledger/port.ts; this module keeps
 * the name the entry points and scripts open it by.
 */
export type { LedgerPort as Ledger } from "./port.js";
export { openSqliteLedger as openLedger } from "./sqlite.js";
