import type pg from "pg";
import { migratedSecret, type SecretHasher } from "../secrets.js";

/**
 * PostgreSQL ledger schema, as numbered migrations. Applied in order at start-up under an advisory lock, each in its
 * own transaction with its version row, so instances starting together apply each exactly once. Append only: a
 * deployed migration is never edited; a change is a new version.
 */
import { PAYMENT_IDS_MIGRATION } from "./payment-ids.js";
import { PURCHASES_MIGRATION } from "./purchases.js";

export interface Migration {
  version: number;
  name: string;
  sql: string;
  /** A step SQL cannot do alone (hashing under the server's key), run after `sql` in the same transaction. */
  run?: (client: pg.PoolClient, ctx: { hasher: SecretHasher }) => Promise<void>;
}

/**
 * Replaces the plaintext secrets of a ledger written before migration 4 by their keyed digests, as today's code writes
 * them; no receipt is added, removed or otherwise changed.
 */
async function hashStoredSecrets(c: pg.PoolClient, { hasher }: { hasher: SecretHasher }): Promise<void> {
  const receipts = (
    await c.query<{ id: string; idempotency_key: string | null; payment_id: string | null }>(
      "SELECT id, idempotency_key, payment_id FROM receipts WHERE idempotency_key IS NOT NULL OR payment_id IS NOT NULL",
    )
  ).rows;
  if (receipts.length > 0)
    await c.query(
      `UPDATE receipts r SET idempotency_key = v.k, payment_id = v.p
       FROM unnest($1::text[], $2::text[], $3::text[]) AS v(id, k, p) WHERE r.id = v.id`,
      [
        receipts.map((r) => r.id),
        receipts.map((r) =>
          r.idempotency_key === null ? null : migratedSecret.receiptKey(hasher, r.idempotency_key),
        ),
        receipts.map((r) =>
          r.payment_id === null ? null : migratedSecret.receiptPaymentId(hasher, r.payment_id),
        ),
      ],
    );
  const keys = (await c.query<{ payer: string; key: string }>("SELECT payer, key FROM idempotency")).rows;
  if (keys.length > 0)
    await c.query(
      `UPDATE idempotency i SET key = v.h FROM unnest($1::text[], $2::text[], $3::text[]) AS v(payer, k, h)
       WHERE i.payer = v.payer AND i.key = v.k`,
      [
        keys.map((k) => k.payer),
        keys.map((k) => k.key),
        keys.map((k) => migratedSecret.idempotencyRow(hasher, k.key)),
      ],
    );
}

export const POSTGRES_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "ledger port: receipts, idempotency, incarnations",
    sql: `
CREATE TABLE receipts (
  id TEXT PRIMARY KEY,
  network TEXT NOT NULL,
  asset TEXT NOT NULL,
  payer TEXT NOT NULL,
  nonce TEXT NOT NULL,
  route TEXT NOT NULL,
  request_fingerprint TEXT NOT NULL,
  x402_version INTEGER NOT NULL,
  amount NUMERIC(78, 0) NOT NULL CHECK (amount >= 0),
  pay_to TEXT NOT NULL,
  pp_ref TEXT,
  idempotency_key TEXT,
  status TEXT NOT NULL CHECK (status IN ('claimed', 'settling', 'settled', 'pending', 'failed', 'unknown')),
  "transaction" TEXT,
  error TEXT,
  incarnation TEXT,
  lock_expires_at TIMESTAMPTZ,
  created_at TIMESTAMPTZ NOT NULL,
  updated_at TIMESTAMPTZ NOT NULL,
  settled_at TIMESTAMPTZ,
  response JSONB,
  response_expires_at TIMESTAMPTZ,
  valid_before NUMERIC(78, 0),
  CONSTRAINT receipts_payment_identity UNIQUE (network, asset, payer, nonce)
);
CREATE UNIQUE INDEX receipts_transaction ON receipts ("transaction") WHERE "transaction" IS NOT NULL;
CREATE INDEX receipts_route_created ON receipts (route, created_at);
CREATE INDEX receipts_status ON receipts (status, created_at);
CREATE INDEX receipts_incarnation ON receipts (incarnation, status);

CREATE TABLE idempotency (
  payer TEXT NOT NULL,
  key TEXT NOT NULL,
  request_fingerprint TEXT NOT NULL,
  network TEXT NOT NULL,
  asset TEXT NOT NULL,
  nonce TEXT NOT NULL,
  receipt_id TEXT NOT NULL,
  incarnation TEXT NOT NULL,
  created_at TIMESTAMPTZ NOT NULL,
  expires_at TIMESTAMPTZ NOT NULL,
  PRIMARY KEY (payer, key)
);
CREATE INDEX idempotency_receipt ON idempotency (receipt_id);
CREATE INDEX idempotency_expiry ON idempotency (expires_at);

CREATE TABLE incarnations (
  id TEXT PRIMARY KEY,
  started_at TIMESTAMPTZ NOT NULL,
  heartbeat_at TIMESTAMPTZ NOT NULL,
  ended_at TIMESTAMPTZ
);
`,
  },
  {
    version: 2,
    name: "receipts name the payment-identifier id of the paying request",
    sql: `ALTER TABLE receipts ADD COLUMN payment_id TEXT;
CREATE INDEX receipts_undelivered ON receipts (payer, request_fingerprint) WHERE response_expires_at IS NULL;`,
  },
  PURCHASES_MIGRATION,
  {
    version: 4,
    name: "secrets (Idempotency-Keys, retry keys, payment-identifier ids) stored as keyed digests",
    sql: "",
    run: hashStoredSecrets,
  },
  PAYMENT_IDS_MIGRATION,
];
