import { createHash, randomUUID } from "node:crypto";
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";
import {
  type BindResult,
  type ClaimRequest,
  type ClaimResult,
  type Incarnation,
  type KeyBinding,
  type LedgerPort,
  normalizeIdentity,
  type PaymentIdentity,
  type Receipt,
  type StoredResponse,
} from "./port.js";
import {
  bindingRecords,
  existingReceiptAnswer,
  type ReceiptRow as GenericReceiptRow,
  type IdempotencyRecord,
  idempotencyConflict,
  type KeyRecord,
  keyRecordValues,
  LIVE_STATUSES_SQL,
  receiptFromRow,
  UNDELIVERED_SQL,
} from "./rows.js";
import {
  boundSecret,
  hashedBinding,
  hashedClaim,
  keyFileOf,
  loadOrCreateKeyFile,
  migratedSecret,
  processSecretKey,
  type SecretHasher,
  secretHasher,
} from "./secrets.js";
import { PAYMENT_IDS_MIGRATION } from "./migrations/payment-ids.js";
import { sqlitePaymentIdHolder } from "./payment-ids.js";
import { noCheckpointer, type WalCheckpointerOptions, walCheckpointer } from "./wal-checkpointer.js";
import { noFlush, walFlusher } from "./wal-flush.js";

/**
 * The ledger port on SQLite (WAL, synchronous NORMAL, group commit): one process, one file. Every operation is one
 * synchronous transaction (better-sqlite3), so it is atomic against every other request of the process. Every commit
 * survives the process dying (kill -9) as soon as it returns; the writes that matter across a power loss (the start of
 * a settlement, its outcome, a delivered response) also wait for a shared `fdatasync` of the WAL (`wal-flush.ts`)
 * before their promise resolves, so a receipt a client saw is on disk. A claim and its release are not synced: losing
 * them loses nothing that happened on chain.
 *
 * Stored responses are content-addressed (`response_bodies`, keyed by the body's SHA-256): a paid route answers the
 * same body to many buyers (one upcoming list per day), and each receipt keeps only its status line and headers.
 */
const SCHEMA = `
CREATE TABLE IF NOT EXISTS receipts (
  id TEXT PRIMARY KEY,
  network TEXT NOT NULL,
  asset TEXT NOT NULL,
  payer TEXT NOT NULL,
  nonce TEXT NOT NULL,
  route TEXT NOT NULL,
  request_fingerprint TEXT NOT NULL,
  x402_version INTEGER NOT NULL,
  amount TEXT NOT NULL,
  pay_to TEXT NOT NULL,
  pp_ref TEXT,
  idempotency_key TEXT,
  status TEXT NOT NULL,
  "transaction" TEXT,
  error TEXT,
  incarnation TEXT,
  lock_expires_at TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  settled_at TEXT,
  response TEXT,
  response_expires_at TEXT,
  valid_before TEXT,
  UNIQUE (network, asset, payer, nonce)
);
CREATE UNIQUE INDEX IF NOT EXISTS receipts_transaction ON receipts("transaction") WHERE "transaction" IS NOT NULL;
CREATE INDEX IF NOT EXISTS receipts_route_created ON receipts(route, created_at);
CREATE INDEX IF NOT EXISTS receipts_status ON receipts(status, created_at);
CREATE INDEX IF NOT EXISTS receipts_incarnation ON receipts(incarnation, status);
CREATE TABLE IF NOT EXISTS idempotency (
  payer TEXT NOT NULL,
  key TEXT NOT NULL,
  request_fingerprint TEXT NOT NULL,
  network TEXT NOT NULL,
  asset TEXT NOT NULL,
  nonce TEXT NOT NULL,
  receipt_id TEXT NOT NULL,
  incarnation TEXT NOT NULL,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  PRIMARY KEY (payer, key)
);
CREATE INDEX IF NOT EXISTS idempotency_receipt ON idempotency(receipt_id);
CREATE INDEX IF NOT EXISTS idempotency_expiry ON idempotency(expires_at);
CREATE TABLE IF NOT EXISTS response_bodies (
  digest TEXT PRIMARY KEY,
  body TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS incarnations (
  id TEXT PRIMARY KEY,
  started_at TEXT NOT NULL,
  heartbeat_at TEXT NOT NULL,
  ended_at TEXT
);
`;

/** `response` holds the status line and headers; the body is in `response_bodies` under `response_digest`. */
type ReceiptRow = GenericReceiptRow<string, string> & { response_digest: string | null };
type StoredHead = Omit<StoredResponse, "body">;

const RECENT_BODIES = 32;
const bodyDigest = (body: string) => createHash("sha256").update(body).digest("base64url");

/**
 * A ledger file from before the port (receipts keyed by a proof hash, without the authorization's nonce) is kept
 * aside in `receipts_legacy`, not mixed in: its rows cannot be claimed or reconciled, but they are revenue, so the
 * receipts export reads them there (src/ops/legacy-receipts.ts). What was moved is logged with its billed total.
 */
function migrateLegacy(db: Database.Database, log: (line: string) => void): void {
  const cols = db.prepare("PRAGMA table_info(receipts)").all() as { name: string }[];
  if (cols.length === 0 || cols.some((c) => c.name === "nonce")) return;
  db.exec(`ALTER TABLE receipts RENAME TO receipts_legacy;
    DROP TABLE IF EXISTS idempotency; DROP TABLE IF EXISTS proof_locks;`);
  const has = (name: string) => cols.some((c) => c.name === name);
  const rows = (
    has("status") && has("amount")
      ? db.prepare("SELECT status, CAST(amount AS TEXT) AS amount FROM receipts_legacy").all()
      : db.prepare("SELECT NULL AS status, '0' AS amount FROM receipts_legacy").all()
  ) as { status: string | null; amount: string }[];
  const billed = rows.filter((r) => r.status === "settled" || r.status === "pending");
  const atomic = billed.reduce((sum, r) => sum + BigInt(r.amount), 0n);
  log(
    `ledger upgrade: the pre-ledger-port schema (receipts keyed by proof hash) was found; its ${rows.length} receipts (${billed.length} settled or pending, ${atomic} atomic USDC) were moved to receipts_legacy, which \`npm run receipts\` exports with the rest; in-flight locks and idempotency records of that schema were dropped`,
  );
}

/** The columns later versions of the schema added to `receipts`, each added (and logged) when missing. */
const ADDED_COLUMNS = [
  ["valid_before", "the authorization's validBefore (unknown for older receipts)"],
  ["response_digest", "stored responses kept once per body in response_bodies"],
  ["payment_id", "the payment-identifier id a replay must present"],
] as const;

/**
 * Indexes that hold only the rows their queries look for, so a paid call's writes do not touch them: a claim is not
 * undelivered (only a paid receipt without its response is) and has no stored body yet, and a settlement that keeps
 * its response leaves both as they were. Each index written by a commit is another b-tree page in its WAL frames
 * (`ledger-calls.ts`: the claim and the settlement each wrote one more before). Their WHERE repeats the queries'
 * own terms, which is how SQLite knows it may use them (`UNDELIVERED_SQL`; `response_digest = ?` implies NOT NULL).
 */
const PARTIAL_INDEXES = [
  ["receipts_undelivered", `receipts(payer, request_fingerprint) WHERE ${UNDELIVERED_SQL}`],
  ["receipts_response_digest", "receipts(response_digest) WHERE response_digest IS NOT NULL"],
] as const;

/** `PRAGMA user_version` once the secrets are stored as keyed digests (a ledger before that is 0). */
const SECRETS_HASHED_VERSION = 1;

/**
 * Replaces the plaintext secrets an older ledger stored (receipts' Idempotency-Key and payment-identifier id, the
 * idempotency rows' keys, the legacy table's keys) by their keyed digests, in one transaction with the version mark,
 * so it runs exactly once. No receipt is added, removed or otherwise changed.
 */
function hashStoredSecrets(
  db: Database.Database,
  h: SecretHasher,
  log: (line: string) => void,
  existed: boolean,
) {
  if ((db.pragma("user_version", { simple: true }) as number) >= SECRETS_HASHED_VERSION) return;
  const counts = { receipts: 0, idempotency: 0, legacy: 0 };
  db.transaction(() => {
    const rows = db
      .prepare(
        "SELECT id, idempotency_key, payment_id FROM receipts WHERE idempotency_key IS NOT NULL OR payment_id IS NOT NULL",
      )
      .all() as { id: string; idempotency_key: string | null; payment_id: string | null }[];
    const setReceipt = db.prepare("UPDATE receipts SET idempotency_key = ?, payment_id = ? WHERE id = ?");
    for (const r of rows) {
      setReceipt.run(
        r.idempotency_key === null ? null : migratedSecret.receiptKey(h, r.idempotency_key),
        r.payment_id === null ? null : migratedSecret.receiptPaymentId(h, r.payment_id),
        r.id,
      );
      counts.receipts += 1;
    }
    const keys = db.prepare("SELECT payer, key FROM idempotency").all() as { payer: string; key: string }[];
    const setKey = db.prepare("UPDATE idempotency SET key = ? WHERE payer = ? AND key = ?");
    for (const k of keys) {
      setKey.run(migratedSecret.idempotencyRow(h, k.key), k.payer, k.key);
      counts.idempotency += 1;
    }
    const legacyCols = db.prepare("PRAGMA table_info(receipts_legacy)").all() as { name: string }[];
    if (legacyCols.some((c) => c.name === "idempotency_key")) {
      const legacy = db
        .prepare(
          "SELECT rowid AS rid, idempotency_key FROM receipts_legacy WHERE idempotency_key IS NOT NULL",
        )
        .all() as { rid: number; idempotency_key: string }[];
      const setLegacy = db.prepare("UPDATE receipts_legacy SET idempotency_key = ? WHERE rowid = ?");
      for (const r of legacy) {
        setLegacy.run(migratedSecret.receiptKey(h, r.idempotency_key), r.rid);
        counts.legacy += 1;
      }
    }
    db.pragma(`user_version = ${SECRETS_HASHED_VERSION}`);
  })();
  if (existed)
    log(
      `ledger upgrade: secrets stored as keyed digests (${counts.receipts} receipts, ${counts.idempotency} idempotency records, ${counts.legacy} legacy receipts); every receipt is kept`,
    );
}

/**
 * SQLite's own automatic checkpoint, in WAL pages. Checkpoints normally run in a worker (`wal-checkpointer.ts`); this
 * one only bounds the WAL (~40 MB) if the worker lags, and SQLite's default comes back if the worker fails.
 */
const BACKSTOP_AUTOCHECKPOINT = 10_000;
const DEFAULT_AUTOCHECKPOINT = 1_000;

export interface SqliteLedgerOptions {
  /** How the checkpoint worker is triggered and where its failure is reported (default: a process warning). */
  checkpoint?: WalCheckpointerOptions;
  /** Where schema upgrades are reported, one line each (default: stderr). */
  log?: (line: string) => void;
  /**
   * The key secrets are hashed under (LEDGER_SECRET_KEY). Default: the key file beside the ledger (`<path>.key`,
   * created on first open, mode 0600); for `:memory:`, a key of this process only.
   */
  secretKey?: Buffer | undefined;
}

export function openSqliteLedger(path: string, options: SqliteLedgerOptions = {}): LedgerPort {
  if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
  db.pragma("journal_mode = WAL");
  // NORMAL: commits survive kill -9; `durable()` below adds the power-loss guarantee where it matters, in groups.
  db.pragma("synchronous = NORMAL");
  db.pragma("busy_timeout = 5000");
  const log = options.log ?? ((line: string) => process.stderr.write(`pressure402: ${line} (${path})\n`));
  const hasher = secretHasher(
    options.secretKey ?? (path === ":memory:" ? processSecretKey() : loadOrCreateKeyFile(keyFileOf(path))),
  );
  migrateLegacy(db, log);
  const existed = (db.prepare("PRAGMA table_info(receipts)").all() as unknown[]).length > 0;
  db.exec(SCHEMA);
  const cols = db.prepare("PRAGMA table_info(receipts)").all() as { name: string }[];
  for (const [column, why] of ADDED_COLUMNS) {
    if (cols.some((c) => c.name === column)) continue;
    db.exec(`ALTER TABLE receipts ADD COLUMN ${column} TEXT`);
    if (existed) log(`ledger upgrade: added receipts.${column} (${why}); every receipt is kept`);
  }
  for (const [name, definition] of PARTIAL_INDEXES) {
    const sql = `CREATE INDEX ${name} ON ${definition}`;
    const now = db
      .prepare("SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?")
      .pluck()
      .get(name);
    if (now === sql) continue;
    // An earlier definition (it held every claim) is replaced; the index is derived data, no row changes.
    db.transaction(() => {
      db.exec(`DROP INDEX IF EXISTS ${name}`);
      db.exec(sql);
    })();
  }
  db.exec(
    "CREATE INDEX IF NOT EXISTS receipts_purchases ON receipts(payer, request_fingerprint, created_at)",
  );
  db.exec(PAYMENT_IDS_MIGRATION.sql);
  hashStoredSecrets(db, hasher, log, existed);
  const wal = path === ":memory:" ? noFlush : walFlusher(`${path}-wal`);
  /** Resolves once every commit made so far is on disk (shared with concurrent callers). */
  const durable = <T>(value: T): Promise<T> => wal.flush().then(() => value);
  let open = true;
  const report =
    options.checkpoint?.onError ??
    ((err: Error) => process.emitWarning(`ledger: WAL checkpoint worker failed (${err.message})`));
  const checkpointer =
    path === ":memory:"
      ? noCheckpointer
      : walCheckpointer(path, {
          ...options.checkpoint,
          onError: (err) => {
            // Back to checkpoints on the event loop: slower at the tail, but the WAL stays small.
            if (open) db.pragma(`wal_autocheckpoint = ${DEFAULT_AUTOCHECKPOINT}`);
            report(err);
          },
        });
  if (path !== ":memory:") db.pragma(`wal_autocheckpoint = ${BACKSTOP_AUTOCHECKPOINT}`);
  /** Every write goes through here: the checkpointer counts commits to decide when to run. */
  const written = <T>(value: T): T => {
    checkpointer.wrote();
    return value;
  };

  const st = {
    byId: db.prepare("SELECT * FROM receipts WHERE id = ?"),
    byIdentity: db.prepare(
      "SELECT * FROM receipts WHERE network = ? AND asset = ? AND payer = ? AND nonce = ?",
    ),
    byTransaction: db.prepare(`SELECT id FROM receipts WHERE "transaction" = ? AND id != ?`),
    idem: db.prepare("SELECT * FROM idempotency WHERE payer = ? AND key = ? AND expires_at > ?"),
    countLive: db.prepare(
      `SELECT COUNT(*) AS n FROM receipts WHERE route = ? AND created_at >= ? AND status IN ${LIVE_STATUSES_SQL} AND id != ?`,
    ),
    insertClaim:
      db.prepare(`INSERT INTO receipts (id, network, asset, payer, nonce, route, request_fingerprint,
      x402_version, amount, pay_to, pp_ref, idempotency_key, status, incarnation, lock_expires_at, created_at, updated_at,
      valid_before)
      VALUES (@id, @network, @asset, @payer, @nonce, @route, @request_fingerprint, @x402_version, @amount, @pay_to,
      @pp_ref, @idempotency_key, 'claimed', @incarnation, @lock_expires_at, @now, @now, @valid_before)`),
    retakeClaim: db.prepare(`UPDATE receipts SET route = @route, request_fingerprint = @request_fingerprint,
      x402_version = @x402_version, amount = @amount, pay_to = @pay_to, pp_ref = @pp_ref,
      idempotency_key = @idempotency_key, payment_id = NULL, status = 'claimed', "transaction" = NULL, error = NULL,
      incarnation = @incarnation, lock_expires_at = @lock_expires_at, updated_at = @now, valid_before = @valid_before
      WHERE id = @id`),
    upsertIdem:
      db.prepare(`INSERT OR REPLACE INTO idempotency (payer, key, request_fingerprint, network, asset, nonce,
      receipt_id, incarnation, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
    deleteIdemOf: db.prepare("DELETE FROM idempotency WHERE receipt_id = ?"),
    nameKey: db.prepare(
      "UPDATE receipts SET idempotency_key = COALESCE(?, idempotency_key), payment_id = COALESCE(?, payment_id) WHERE id = ?",
    ),
    deleteClaim: db.prepare("DELETE FROM receipts WHERE id = ? AND status = 'claimed' AND incarnation = ?"),
    beginSettle: db.prepare(
      "UPDATE receipts SET status = 'settling', updated_at = ? WHERE id = ? AND status = 'claimed' AND incarnation = ?",
    ),
    settle: db.prepare(`UPDATE receipts SET status = @status, "transaction" = @transaction, error = NULL,
      updated_at = @now, settled_at = COALESCE(settled_at, @now),
      response = COALESCE(@response, response), response_digest = COALESCE(@response_digest, response_digest),
      response_expires_at = COALESCE(@response_expires_at, response_expires_at)
      WHERE id = @id`),
    fail: db.prepare("UPDATE receipts SET status = ?, error = ?, updated_at = ? WHERE id = ?"),
    storeResponse: db.prepare(
      "UPDATE receipts SET response = ?, response_digest = ?, response_expires_at = ?, updated_at = ? WHERE id = ? AND status IN ('settled', 'pending')",
    ),
    insertBody: db.prepare("INSERT OR IGNORE INTO response_bodies (digest, body) VALUES (?, ?)"),
    bodyOf: db.prepare("SELECT body FROM response_bodies WHERE digest = ?").pluck(),
    reclaim: db.prepare(
      "UPDATE receipts SET status = 'claimed', incarnation = ?, lock_expires_at = ?, updated_at = ? WHERE id = ? AND status = 'unknown'",
    ),
    undelivered: db.prepare(
      // The partial index holds only what this asks for; without statistics the planner would walk the payer's every
      // purchase of the request instead.
      `SELECT * FROM receipts INDEXED BY receipts_undelivered WHERE payer = ? AND request_fingerprint = ? AND ${UNDELIVERED_SQL} ORDER BY created_at, id LIMIT 1`,
    ),
    countPaid: db.prepare(
      `SELECT COUNT(*) AS n FROM receipts WHERE route = ? AND created_at >= ? AND status IN ${LIVE_STATUSES_SQL}`,
    ),
    all: db.prepare("SELECT * FROM receipts ORDER BY created_at, id"),
    // The in-flight states only: index range scans of small sets, cheap enough for every scrape.
    inFlight: db.prepare(
      "SELECT status, COUNT(*) AS n FROM receipts WHERE status IN ('claimed', 'settling', 'pending', 'unknown') GROUP BY status",
    ),
    oldestSettling: db.prepare("SELECT MIN(updated_at) AS at FROM receipts WHERE status = 'settling'"),
    startInc: db.prepare(
      "INSERT OR REPLACE INTO incarnations (id, started_at, heartbeat_at, ended_at) VALUES (?, ?, ?, NULL)",
    ),
    heartbeat: db.prepare("UPDATE incarnations SET heartbeat_at = ? WHERE id = ?"),
    endInc: db.prepare("UPDATE incarnations SET ended_at = ?, heartbeat_at = ? WHERE id = ?"),
    incarnations: db.prepare("SELECT * FROM incarnations ORDER BY started_at, id"),
    claimsOf: db.prepare("SELECT id FROM receipts WHERE incarnation = ? AND status = 'claimed'"),
    deleteReceipt: db.prepare("DELETE FROM receipts WHERE id = ?"),
    orphanSettling: db.prepare(
      "UPDATE receipts SET status = 'unknown', error = 'incarnation_died', updated_at = ? WHERE incarnation = ? AND status = 'settling'",
    ),
    unknownOf: db.prepare(
      "SELECT * FROM receipts WHERE incarnation = ? AND status = 'unknown' ORDER BY created_at, id",
    ),
    purgeIdem: db.prepare("DELETE FROM idempotency WHERE expires_at <= ?"),
    purgeResponses: db.prepare(
      "UPDATE receipts SET response = NULL, response_digest = NULL WHERE response IS NOT NULL AND response_expires_at <= ?",
    ),
    purgeBodies: db.prepare(
      "DELETE FROM response_bodies WHERE NOT EXISTS (SELECT 1 FROM receipts WHERE response_digest = response_bodies.digest)",
    ),
  };

  /**
   * A statement per LIMIT, the limit written into its SQL: SQLite prepares a statement whose LIMIT is a bound parameter
   * again on every run (its plan depends on the value), about 65 µs of every paid call's CPU for `purchasesOf`, which
   * every fresh claim asks (5–8 µs with the limit written in). The limits are the callers' few constants.
   */
  const limited = new Map<string, Database.Statement>();
  const withLimit = (sql: string, limit: number): Database.Statement => {
    if (!Number.isSafeInteger(limit) || limit < 0) throw new RangeError(`invalid limit ${limit}`);
    const text = `${sql} LIMIT ${limit}`;
    let statement = limited.get(text);
    if (statement === undefined) {
      statement = db.prepare(text);
      limited.set(text, statement);
    }
    return statement;
  };
  const PURCHASES_SQL = `SELECT * FROM receipts WHERE payer = ? AND request_fingerprint = ? AND created_at >= ? AND status IN ${LIVE_STATUSES_SQL} ORDER BY created_at, id`;
  const UNRESOLVED_SQL = "SELECT * FROM receipts WHERE status = 'unknown' ORDER BY created_at, id";

  // Bodies stored lately, by content: a cached route body (the same string each time) is hashed and written once, not
  // on every paid call. Cleared whenever bodies are purged, so a remembered digest always has its row.
  const recentBodies = new Map<string, string>();
  /** Keeps the body once per content; returns what the receipt row holds. */
  const keepResponse = (value: StoredResponse) => {
    const { body, ...head } = value;
    let digest = recentBodies.get(body);
    if (digest === undefined) {
      digest = bodyDigest(body);
      st.insertBody.run(digest, body);
      recentBodies.set(body, digest);
      if (recentBodies.size > RECENT_BODIES) recentBodies.delete(recentBodies.keys().next().value as string);
    }
    return { response: JSON.stringify(head satisfies StoredHead), response_digest: digest };
  };
  const readResponse = (r: ReceiptRow): StoredResponse | null => {
    if (r.response === null) return null;
    const stored = JSON.parse(r.response) as StoredHead & { body?: string };
    if (typeof stored.body === "string") return stored as StoredResponse; // a row written before response_bodies
    const body =
      r.response_digest === null ? undefined : (st.bodyOf.get(r.response_digest) as string | undefined);
    return body === undefined ? null : { ...stored, body };
  };
  /** `known`: the response just written, so it is not read back and parsed again. */
  const receiptWith = (r: ReceiptRow, known: StoredResponse | null): Receipt =>
    receiptFromRow(r, { time: (t) => t, response: () => known });
  const toReceipt = (r: ReceiptRow): Receipt => receiptWith(r, readResponse(r));

  const getRow = (id: string) => st.byId.get(id) as ReceiptRow | undefined;
  const row = (id: string) => getRow(id) as ReceiptRow;
  const rowFor = (i: PaymentIdentity) =>
    st.byIdentity.get(i.network, i.asset, i.payer, i.nonce) as ReceiptRow | undefined;

  /** The payer's key record (identity already normalized), replacing an expired one. */
  const writeKey = (b: KeyRecord) => st.upsertIdem.run(...keyRecordValues(b, (d) => d.toISOString()));

  const claim = db.transaction((req: ClaimRequest): ClaimResult => {
    const identity = normalizeIdentity(req.identity);
    const now = req.now.toISOString();
    if (req.idempotency) {
      const rec = st.idem.get(identity.payer, req.idempotency.key, now) as IdempotencyRecord | undefined;
      const conflict = idempotencyConflict(rec, req.requestFingerprint, identity);
      if (conflict) return conflict;
    }
    const existing = rowFor(identity);
    if (existing) {
      const lockLive = existing.lock_expires_at !== null && existing.lock_expires_at > now;
      const answer = existingReceiptAnswer(existing, lockLive, toReceipt);
      if (answer) return answer;
    }
    if (req.cap) {
      const used = (
        st.countLive.get(req.route, req.cap.since.toISOString(), existing?.id ?? "") as { n: number }
      ).n;
      if (used >= req.cap.limit) return { kind: "cap_reached", used };
    }
    const id = existing?.id ?? randomUUID();
    const params = {
      id,
      ...identity,
      route: req.route,
      request_fingerprint: req.requestFingerprint,
      x402_version: req.x402Version,
      amount: req.amount,
      pay_to: req.payTo,
      pp_ref: req.ppRef ?? null,
      idempotency_key: req.idempotency?.key ?? null,
      incarnation: req.incarnation,
      lock_expires_at: new Date(req.now.getTime() + req.lockTtlMs).toISOString(),
      valid_before: req.validBefore ?? null,
      now,
    };
    if (existing) st.retakeClaim.run(params);
    else st.insertClaim.run(params);
    if (req.idempotency)
      writeKey({
        receiptId: id,
        identity,
        key: req.idempotency.key,
        requestFingerprint: req.requestFingerprint,
        ttlMs: req.idempotency.ttlMs,
        incarnation: req.incarnation,
        now: req.now,
      });
    // A fresh row holds exactly what was just inserted: it is mapped as it stands, not read back.
    if (!existing) {
      const inserted: ReceiptRow = {
        ...params,
        status: "claimed",
        payment_id: null,
        transaction: null,
        error: null,
        created_at: now,
        updated_at: now,
        settled_at: null,
        response: null,
        response_expires_at: null,
        response_digest: null,
      };
      return { kind: "claimed", receipt: receiptWith(inserted, null) };
    }
    return { kind: "claimed", receipt: toReceipt(row(id)) };
  });

  const bindKey = db.transaction((b: KeyBinding): BindResult => {
    const identity = normalizeIdentity(b.identity);
    const now = b.now.toISOString();
    const records = bindingRecords({ ...b, identity });
    for (const { record, secret } of records) {
      const rec = st.idem.get(identity.payer, record.key, now) as IdempotencyRecord | undefined;
      const conflict = idempotencyConflict(rec, b.requestFingerprint, identity);
      if (conflict?.kind === "idempotency_conflict") return { ok: false, reason: conflict.reason, secret };
    }
    for (const { record } of records) writeKey(record);
    st.nameKey.run(b.key ?? null, b.paymentId ?? null, b.receiptId);
    return { ok: true };
  });

  const release = db.transaction((id: string, incarnation: string) => {
    if (st.deleteClaim.run(id, incarnation).changes === 1) st.deleteIdemOf.run(id);
  });

  const settle = db.transaction((id: string, r: Parameters<LedgerPort["recordSettlement"]>[1]) => {
    const other = st.byTransaction.get(r.transaction, id) as { id: string } | undefined;
    if (other)
      return getRow(id)
        ? { ok: false as const, reason: "transaction_already_credited" as const, receiptId: other.id }
        : { ok: false as const, reason: "not_found" as const };
    const kept = r.response ? keepResponse(r.response.value) : { response: null, response_digest: null };
    const { changes } = st.settle.run({
      id,
      status: r.status,
      transaction: r.transaction,
      now: r.now.toISOString(),
      ...kept,
      response_expires_at: r.response ? r.response.expiresAt.toISOString() : null,
    });
    // No such receipt: the update touched nothing (a body it may have kept is purged with the unreferenced ones).
    if (changes === 0) return { ok: false as const, reason: "not_found" as const };
    return {
      ok: true as const,
      receipt: r.response ? receiptWith(row(id), r.response.value) : toReceipt(row(id)),
    };
  });

  const fail = db.transaction((id: string, status: "failed" | "unknown", error: string, now: string) => {
    st.fail.run(status, error, now, id);
    // A refused settlement frees the payer's key: nothing was bought with it.
    if (status === "failed") st.deleteIdemOf.run(id);
  });

  const releaseIncarnation = db.transaction((id: string, now: string) => {
    const claims = st.claimsOf.all(id) as { id: string }[];
    for (const c of claims) {
      st.deleteIdemOf.run(c.id);
      st.deleteReceipt.run(c.id);
    }
    st.orphanSettling.run(now, id);
    st.endInc.run(now, now, id);
    return {
      releasedClaims: claims.length,
      unresolved: (st.unknownOf.all(id) as ReceiptRow[]).map(toReceipt),
    };
  });

  const purge = db.transaction((now: string) => {
    const result = {
      idempotency: st.purgeIdem.run(now).changes,
      responses: st.purgeResponses.run(now).changes,
    };
    if (result.responses > 0) {
      st.purgeBodies.run();
      recentBodies.clear();
    }
    return result;
  });

  const storeResponse = db.transaction(
    (id: string, value: StoredResponse, expiresAt: string, now: string) => {
      const kept = keepResponse(value);
      st.storeResponse.run(kept.response, kept.response_digest, expiresAt, now, id);
    },
  );

  return {
    claimAuthorization: async (req) => written(claim(hashedClaim(hasher, req))),
    bindIdempotencyKey: async (binding) => written(bindKey(hashedBinding(hasher, binding))),
    boundSecret: (receipt, presented) => boundSecret(hasher, receipt, presented),
    releaseClaim: async (id, incarnation) => written(release(id, incarnation)),
    // On disk before the facilitator is asked to settle: after a power loss the settlement is still known as possible.
    beginSettlement: async (id, incarnation, now) =>
      durable(written(st.beginSettle.run(now.toISOString(), id, incarnation).changes === 1)),
    recordSettlement: async (id, record) => durable(written(settle(id, record))),
    recordFailure: async (id, o) => durable(written(fail(id, o.status, o.error, o.now.toISOString()))),
    storeResponse: async (id, response, expiresAt, now) =>
      durable(written(storeResponse(id, response, expiresAt.toISOString(), now.toISOString()))),
    reclaimUnresolved: async (id, incarnation, lockTtlMs, now) =>
      written(
        st.reclaim.run(incarnation, new Date(now.getTime() + lockTtlMs).toISOString(), now.toISOString(), id)
          .changes === 1,
      ),
    receipt: async (id) => {
      const row = getRow(id);
      return row ? toReceipt(row) : undefined;
    },
    receiptFor: async (identity) => {
      const row = rowFor(normalizeIdentity(identity));
      return row ? toReceipt(row) : undefined;
    },
    undeliveredFor: async (payer, fingerprint) => {
      const row = st.undelivered.get(payer.toLowerCase(), fingerprint) as ReceiptRow | undefined;
      return row ? toReceipt(row) : undefined;
    },
    purchasesOf: async (payer, fingerprint, since, limit) =>
      (
        withLimit(PURCHASES_SQL, limit).all(
          payer.toLowerCase(),
          fingerprint,
          since.toISOString(),
        ) as ReceiptRow[]
      ).map(toReceipt),
    paymentIdHeldByOther: sqlitePaymentIdHolder(db, hasher),
    unresolvedReceipts: async (limit) =>
      (withLimit(UNRESOLVED_SQL, limit).all() as ReceiptRow[]).map(toReceipt),
    countPaidSince: async (route, since) => (st.countPaid.get(route, since.toISOString()) as { n: number }).n,
    receipts: async () => (st.all.all() as ReceiptRow[]).map(toReceipt),
    inFlightStats: async () => {
      const byStatus = { claimed: 0, settling: 0, pending: 0, unknown: 0 };
      for (const r of st.inFlight.all() as { status: keyof typeof byStatus; n: number }[])
        byStatus[r.status] = r.n;
      const oldest = (st.oldestSettling.get() as { at: string | null }).at;
      return { byStatus, oldestSettlingSince: oldest };
    },
    startIncarnation: async (id, now) =>
      void written(st.startInc.run(id, now.toISOString(), now.toISOString())),
    heartbeat: async (id, now) => void written(st.heartbeat.run(now.toISOString(), id)),
    endIncarnation: async (id, now) => void written(st.endInc.run(now.toISOString(), now.toISOString(), id)),
    incarnations: async () =>
      (
        st.incarnations.all() as {
          id: string;
          started_at: string;
          heartbeat_at: string;
          ended_at: string | null;
        }[]
      ).map(
        (r): Incarnation => ({
          id: r.id,
          startedAt: r.started_at,
          heartbeatAt: r.heartbeat_at,
          endedAt: r.ended_at,
        }),
      ),
    releaseIncarnation: async (id, now) => written(releaseIncarnation(id, now.toISOString())),
    purgeExpired: async (now) => written(purge(now.toISOString())),
    close: async () => {
      // The worker's connection closes first: the last one to close checkpoints and removes the WAL.
      await checkpointer.close();
      open = false;
      await wal.flush();
      wal.close();
      db.close();
    },
  };
}
