import { randomUUID } from "node:crypto";
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";

/**
 * The ledger: receipts of paid calls, idempotency records and in-flight proof locks, in SQLite (WAL). Every write
 * is synchronous and committed before the HTTP response leaves, so a crash never loses a receipt a client received.
 */
export type ReceiptStatus = "settling" | "settled" | "pending" | "failed" | "unknown";

export interface ReceiptDraft {
  route: string;
  requestFingerprint: string;
  proofFingerprint: string;
  x402Version: number;
  amount: string;
  network: string;
  asset: string;
  payTo: string;
  ppRef: string | undefined;
  idempotencyKey: string | undefined;
}

export interface Receipt extends ReceiptDraft {
  id: string;
  status: ReceiptStatus;
  payer: string | null;
  transaction: string | null;
  error: string | null;
  createdAt: string;
  settledAt: string | null;
  responseDigest: string | null;
}

export interface StoredResponse {
  statusCode: number;
  headers: Record<string, string>;
  body: string;
}

export interface IdempotencyRecord {
  key: string;
  requestFingerprint: string;
  proofFingerprint: string;
  state: "in_flight" | "complete";
  response: StoredResponse | null;
  expiresAt: number;
}

export interface Ledger {
  /** Takes the in-flight lock for a proof; false when another request holds it. */
  acquireProofLock(proofFingerprint: string, ttlMs: number, now?: number): boolean;
  releaseProofLock(proofFingerprint: string): void;
  /** The receipt that consumed this proof, if any (any status but "failed"). */
  receiptForProof(proofFingerprint: string): Receipt | undefined;
  beginReceipt(draft: ReceiptDraft, now?: Date): string;
  finishReceipt(
    id: string,
    outcome: {
      status: Exclude<ReceiptStatus, "settling">;
      payer?: string | undefined;
      transaction?: string | undefined;
      error?: string | undefined;
      responseDigest?: string | undefined;
    },
    now?: Date,
  ): void;
  receipts(): Receipt[];
  /** Paid (settled or pending) calls of a route since an ISO time, plus the ones in progress. */
  countPaidSince(route: string, sinceIso: string): number;
  getIdempotency(key: string, now?: number): IdempotencyRecord | undefined;
  /** Inserts an in-flight record; false when the key is already taken (and not expired). */
  startIdempotency(
    key: string,
    requestFingerprint: string,
    proofFingerprint: string,
    ttlMs: number,
    now?: number,
  ): boolean;
  completeIdempotency(key: string, response: StoredResponse): void;
  dropIdempotency(key: string): void;
  close(): void;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS receipts (
  id TEXT PRIMARY KEY,
  route TEXT NOT NULL,
  request_fingerprint TEXT NOT NULL,
  proof_fingerprint TEXT NOT NULL,
  x402_version INTEGER NOT NULL,
  payer TEXT,
  amount TEXT NOT NULL,
  network TEXT NOT NULL,
  asset TEXT NOT NULL,
  pay_to TEXT NOT NULL,
  "transaction" TEXT,
  status TEXT NOT NULL,
  error TEXT,
  created_at TEXT NOT NULL,
  settled_at TEXT,
  pp_ref TEXT,
  idempotency_key TEXT,
  response_digest TEXT
);
CREATE INDEX IF NOT EXISTS receipts_proof ON receipts(proof_fingerprint);
CREATE INDEX IF NOT EXISTS receipts_route_created ON receipts(route, created_at);
CREATE TABLE IF NOT EXISTS idempotency (
  key TEXT PRIMARY KEY,
  request_fingerprint TEXT NOT NULL,
  proof_fingerprint TEXT NOT NULL,
  state TEXT NOT NULL,
  response TEXT,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS idempotency_expiry ON idempotency(expires_at);
CREATE TABLE IF NOT EXISTS proof_locks (
  proof_fingerprint TEXT PRIMARY KEY,
  expires_at INTEGER NOT NULL
);
`;

interface ReceiptRow {
  id: string;
  route: string;
  request_fingerprint: string;
  proof_fingerprint: string;
  x402_version: number;
  payer: string | null;
  amount: string;
  network: string;
  asset: string;
  pay_to: string;
  transaction: string | null;
  status: ReceiptStatus;
  error: string | null;
  created_at: string;
  settled_at: string | null;
  pp_ref: string | null;
  idempotency_key: string | null;
  response_digest: string | null;
}

const toReceipt = (r: ReceiptRow): Receipt => ({
  id: r.id,
  route: r.route,
  requestFingerprint: r.request_fingerprint,
  proofFingerprint: r.proof_fingerprint,
  x402Version: r.x402_version,
  amount: r.amount,
  network: r.network,
  asset: r.asset,
  payTo: r.pay_to,
  ppRef: r.pp_ref ?? undefined,
  idempotencyKey: r.idempotency_key ?? undefined,
  status: r.status,
  payer: r.payer,
  transaction: r.transaction,
  error: r.error,
  createdAt: r.created_at,
  settledAt: r.settled_at,
  responseDigest: r.response_digest,
});

export function openLedger(path: string): Ledger {
  if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
  db.pragma("journal_mode = WAL");
  // FULL: a receipt is on disk before the paid response is sent, even across a power loss.
  db.pragma("synchronous = FULL");
  db.pragma("busy_timeout = 5000");
  db.exec(SCHEMA);

  const st = {
    purgeLocks: db.prepare("DELETE FROM proof_locks WHERE expires_at <= ?"),
    insertLock: db.prepare("INSERT OR IGNORE INTO proof_locks (proof_fingerprint, expires_at) VALUES (?, ?)"),
    deleteLock: db.prepare("DELETE FROM proof_locks WHERE proof_fingerprint = ?"),
    receiptByProof: db.prepare(
      "SELECT * FROM receipts WHERE proof_fingerprint = ? AND status != 'failed' ORDER BY created_at DESC LIMIT 1",
    ),
    insertReceipt:
      db.prepare(`INSERT INTO receipts (id, route, request_fingerprint, proof_fingerprint, x402_version,
      amount, network, asset, pay_to, status, created_at, pp_ref, idempotency_key)
      VALUES (@id, @route, @request_fingerprint, @proof_fingerprint, @x402_version, @amount, @network, @asset, @pay_to,
      'settling', @created_at, @pp_ref, @idempotency_key)`),
    finishReceipt:
      db.prepare(`UPDATE receipts SET status = @status, payer = @payer, "transaction" = @transaction,
      error = @error, settled_at = @settled_at, response_digest = @response_digest WHERE id = @id`),
    allReceipts: db.prepare("SELECT * FROM receipts ORDER BY created_at, id"),
    countPaid: db.prepare(
      "SELECT COUNT(*) AS n FROM receipts WHERE route = ? AND created_at >= ? AND status IN ('settling', 'settled', 'pending', 'unknown')",
    ),
    purgeIdem: db.prepare("DELETE FROM idempotency WHERE expires_at <= ?"),
    getIdem: db.prepare("SELECT * FROM idempotency WHERE key = ? AND expires_at > ?"),
    insertIdem:
      db.prepare(`INSERT OR IGNORE INTO idempotency (key, request_fingerprint, proof_fingerprint, state,
      response, created_at, expires_at) VALUES (?, ?, ?, 'in_flight', NULL, ?, ?)`),
    completeIdem: db.prepare("UPDATE idempotency SET state = 'complete', response = ? WHERE key = ?"),
    dropIdem: db.prepare("DELETE FROM idempotency WHERE key = ?"),
  };

  const startIdem = db.transaction(
    (key: string, rf: string, pf: string, ttlMs: number, now: number): boolean => {
      st.purgeIdem.run(now);
      return st.insertIdem.run(key, rf, pf, now, now + ttlMs).changes === 1;
    },
  );

  const acquire = db.transaction((pf: string, ttlMs: number, now: number): boolean => {
    st.purgeLocks.run(now);
    return st.insertLock.run(pf, now + ttlMs).changes === 1;
  });

  return {
    acquireProofLock: (pf, ttlMs, now = Date.now()) => acquire(pf, ttlMs, now),
    releaseProofLock: (pf) => void st.deleteLock.run(pf),
    receiptForProof: (pf) => {
      const row = st.receiptByProof.get(pf) as ReceiptRow | undefined;
      return row ? toReceipt(row) : undefined;
    },
    beginReceipt: (d, now = new Date()) => {
      const id = randomUUID();
      st.insertReceipt.run({
        id,
        route: d.route,
        request_fingerprint: d.requestFingerprint,
        proof_fingerprint: d.proofFingerprint,
        x402_version: d.x402Version,
        amount: d.amount,
        network: d.network,
        asset: d.asset,
        pay_to: d.payTo,
        created_at: now.toISOString(),
        pp_ref: d.ppRef ?? null,
        idempotency_key: d.idempotencyKey ?? null,
      });
      return id;
    },
    finishReceipt: (id, o, now = new Date()) => {
      st.finishReceipt.run({
        id,
        status: o.status,
        payer: o.payer ?? null,
        transaction: o.transaction || null,
        error: o.error ?? null,
        settled_at: o.status === "settled" || o.status === "pending" ? now.toISOString() : null,
        response_digest: o.responseDigest ?? null,
      });
    },
    receipts: () => (st.allReceipts.all() as ReceiptRow[]).map(toReceipt),
    countPaidSince: (route, sinceIso) => (st.countPaid.get(route, sinceIso) as { n: number }).n,
    getIdempotency: (key, now = Date.now()) => {
      const row = st.getIdem.get(key, now) as
        | {
            key: string;
            request_fingerprint: string;
            proof_fingerprint: string;
            state: "in_flight" | "complete";
            response: string | null;
            expires_at: number;
          }
        | undefined;
      if (!row) return undefined;
      return {
        key: row.key,
        requestFingerprint: row.request_fingerprint,
        proofFingerprint: row.proof_fingerprint,
        state: row.state,
        response: row.response ? (JSON.parse(row.response) as StoredResponse) : null,
        expiresAt: row.expires_at,
      };
    },
    startIdempotency: (key, rf, pf, ttlMs, now = Date.now()) => startIdem(key, rf, pf, ttlMs, now),
    completeIdempotency: (key, response) => void st.completeIdem.run(JSON.stringify(response), key),
    dropIdempotency: (key) => void st.dropIdem.run(key),
    close: () => db.close(),
  };
}
