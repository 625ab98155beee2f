import type { Migration } from "./postgres.js";

/**
 * Idempotency records found by their key digest alone, whatever the payer: a payment-identifier id is one payer's, so
 * the same id from another payer is refused (paymentIdHeldByOther). SQLite runs the same statement on open.
 */
export const PAYMENT_IDS_MIGRATION: Migration = {
  version: 5,
  name: "idempotency records are found by key across payers, so a payment-identifier id belongs to one payer",
  sql: "CREATE INDEX IF NOT EXISTS idempotency_key ON idempotency (key);",
};
