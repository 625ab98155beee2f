import type Database from "better-sqlite3";
import type pg from "pg";
import { paymentIdDigest, type SecretHasher } from "./secrets.js";

/**
 * Whether a payer other than `payer` holds a live idempotency record of this payment-identifier id. Ids are stored
 * as keyed digests, so the lookup hashes the id as a binding does; the record's own expiry bounds how long an id stays
 * taken, as it bounds the payer's own reuse of it.
 */
export type PaymentIdHolder = (paymentId: string, payer: string, now: Date) => Promise<boolean>;

export function sqlitePaymentIdHolder(db: Database.Database, hasher: SecretHasher): PaymentIdHolder {
  const held = db.prepare(
    "SELECT 1 FROM idempotency WHERE key = ? AND payer != ? AND expires_at > ? LIMIT 1",
  );
  return async (paymentId, payer, now) =>
    held.get(paymentIdDigest(hasher, paymentId), payer.toLowerCase(), now.toISOString()) !== undefined;
}

export function postgresPaymentIdHolder(pool: pg.Pool, hasher: SecretHasher): PaymentIdHolder {
  return async (paymentId, payer, now) =>
    (
      await pool.query(
        "SELECT 1 FROM idempotency WHERE key = $1 AND payer <> $2 AND expires_at > $3 LIMIT 1",
        [paymentIdDigest(hasher, paymentId), payer.toLowerCase(), now],
      )
    ).rowCount !== 0;
}
