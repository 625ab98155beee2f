import { type Config, ConfigError } from "../config.js";
import type { LedgerPort } from "./port.js";
import { parseSecretKey } from "./secrets.js";
import { openSqliteLedger } from "./sqlite.js";

export interface OpenedLedger {
  ledger: LedgerPort;
  backend: "sqlite" | "postgres";
  /**
   * Whether other instances may share this ledger: then an unfinished incarnation is not necessarily dead, and only a
   * stale heartbeat says it is (SQLite has one process per file, so every other unfinished incarnation is dead).
   */
  shared: boolean;
}

/**
 * The ledger the configuration asks for: PostgreSQL with LEDGER_URL, else the embedded SQLite file. Its secrets are
 * hashed under LEDGER_SECRET_KEY, which PostgreSQL requires (every instance sharing it must hash alike); SQLite
 * without it uses the key file beside the ledger.
 */
export async function openConfiguredLedger(
  config: Pick<Config, "ledgerPath" | "ledgerUrl" | "ledgerSecretKey">,
): Promise<OpenedLedger> {
  const secretKey = config.ledgerSecretKey ? parseSecretKey(config.ledgerSecretKey) : undefined;
  if (config.ledgerUrl) {
    if (!secretKey)
      throw new ConfigError(
        "LEDGER_SECRET_KEY: required with LEDGER_URL; set 64 hex digits (openssl rand -hex 32), the same on every instance sharing the ledger",
      );
    // Loaded only when configured: a SQLite deployment never loads the pg driver.
    const { openPostgresLedger } = await import("./postgres.js");
    try {
      return {
        ledger: await openPostgresLedger(config.ledgerUrl, { secretKey }),
        backend: "postgres",
        shared: true,
      };
    } catch (err) {
      // One line naming the variable; the driver's message names host, user or database, never the password.
      const why = err instanceof Error ? err.message : String(err);
      throw new ConfigError(
        `LEDGER_URL: cannot open the PostgreSQL ledger (${why}); check its host, port, credentials and database`,
      );
    }
  }
  return { ledger: openSqliteLedger(config.ledgerPath, { secretKey }), backend: "sqlite", shared: false };
}
