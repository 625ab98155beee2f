import type { Migration } from "./postgres.js";

/** A payer's purchases of one request, found by payer and request, newest window first (purchasesOf). */
export const PURCHASES_MIGRATION: Migration = {
  version: 3,
  name: "receipts are found by payer and request for a re-read of a bought answer",
  sql: "CREATE INDEX IF NOT EXISTS receipts_purchases ON receipts (payer, request_fingerprint, created_at);",
};
