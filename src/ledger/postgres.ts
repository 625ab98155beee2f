import { randomUUID } from "node:crypto";
import pg from "pg";
import { type Migration, POSTGRES_MIGRATIONS } from "./migrations/postgres.js";
import { postgresPaymentIdHolder } from "./payment-ids.js";
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
  type SettlementRecord,
  type SettlementResult,
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
  processSecretKey,
  type SecretHasher,
  secretHasher,
} from "./secrets.js";

/**
 * The ledger port on PostgreSQL, for several instances sharing one ledger. The guarantees are the SQLite adapter's,
 * held across processes by the database itself:
 *
 * - unique constraints: one receipt per payment identity, one receipt per transaction, one record per payer's key;
 * - a claim is one READ COMMITTED transaction that first takes transaction-scoped advisory locks, always in the same
 *   order (payer's key, payment identity, route when capped), so its read-then-write runs as if alone against any
 *   other claim touching the same key, authorization or capped route, and lock order rules out deadlocks;
 * - the rows a transaction changes conditionally are row-locked (`FOR UPDATE`) or changed by one guarded statement.
 */

type Queryable = pg.Pool | pg.PoolClient;

/** Advisory lock namespaces (the first key of the two-key form). */
const LOCK_IDEMPOTENCY = 40201;
const LOCK_IDENTITY = 40202;
const LOCK_ROUTE = 40203;
/** Held for its whole life by the process an incarnation belongs to, on a connection of its own. */
const LOCK_INCARNATION = 40204;
/** Session lock serialising migrations between instances that start together. */
const MIGRATION_LOCK = 4_020_402;

type ReceiptRow = GenericReceiptRow<Date, StoredResponse>;

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

const toReceipt = (r: ReceiptRow): Receipt =>
  receiptFromRow(r, { time: (t) => t.toISOString(), response: (v) => v });

const UNIQUE_VIOLATION = "23505";
const isUniqueViolation = (err: unknown): boolean =>
  typeof err === "object" && err !== null && (err as { code?: unknown }).code === UNIQUE_VIOLATION;

/** Applies the migrations this database lacks, once, even when several instances start at the same moment. */
export async function migratePostgres(
  pool: pg.Pool,
  migrations: readonly Migration[] = POSTGRES_MIGRATIONS,
  hasher: SecretHasher = secretHasher(processSecretKey()),
): Promise<number[]> {
  const client = await pool.connect();
  const applied: number[] = [];
  try {
    await client.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK]);
    try {
      await client.query(`CREATE TABLE IF NOT EXISTS ledger_migrations (
        version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`);
      const done = new Set(
        (await client.query<{ version: number }>("SELECT version FROM ledger_migrations")).rows.map(
          (r) => r.version,
        ),
      );
      for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
        if (done.has(m.version)) continue;
        await client.query("BEGIN");
        try {
          if (m.sql) await client.query(m.sql);
          await m.run?.(client, { hasher });
          await client.query("INSERT INTO ledger_migrations (version, name) VALUES ($1, $2)", [
            m.version,
            m.name,
          ]);
          await client.query("COMMIT");
        } catch (err) {
          await client.query("ROLLBACK");
          throw err;
        }
        applied.push(m.version);
      }
    } finally {
      await client.query("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK]);
    }
  } finally {
    client.release();
  }
  return applied;
}

export interface PostgresLedgerOptions {
  /** Connections per instance; every port operation holds one for its transaction. */
  maxConnections?: number;
  /** Where upgrade steps are reported (default: stderr); an operator must see that the schema changed. */
  log?: (line: string) => void;
  /**
   * The key secrets are hashed under (LEDGER_SECRET_KEY): every instance sharing the database must be given the same
   * one. Default: a key of this process only (tests), under which no other process can match a stored secret.
   */
  secretKey?: Buffer | undefined;
}

/** Connects, applies pending migrations and returns the port. `url` is a `postgres://` connection string. */
export async function openPostgresLedger(url: string, opts: PostgresLedgerOptions = {}): Promise<LedgerPort> {
  const pool = new pg.Pool({ connectionString: url, max: opts.maxConnections ?? 10 });
  // An idle connection dropped by the server must not crash the process; the next query reconnects.
  pool.on("error", () => undefined);
  const log = opts.log ?? ((line: string) => process.stderr.write(`pressure402: ${line}\n`));
  const hasher = secretHasher(opts.secretKey ?? processSecretKey());
  try {
    const existed = await hasLedger(pool);
    const applied = await migratePostgres(pool, POSTGRES_MIGRATIONS, hasher);
    if (existed)
      for (const version of applied) {
        const m = POSTGRES_MIGRATIONS.find((x) => x.version === version);
        log(
          `ledger upgrade: applied PostgreSQL migration ${version} (${m?.name ?? "?"}); every receipt is kept`,
        );
      }
  } catch (err) {
    await pool.end();
    throw err;
  }
  return postgresLedger(pool, url, hasher);
}

/** Whether this database already held a ledger before this start (so a migration is an upgrade, not a creation). */
async function hasLedger(pool: pg.Pool): Promise<boolean> {
  const r = await pool.query<{ t: string | null }>("SELECT to_regclass('ledger_migrations')::text AS t");
  return r.rows[0]?.t != null;
}

async function inTransaction<T>(pool: pg.Pool, fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    const result = await fn(client);
    await client.query("COMMIT");
    return result;
  } catch (err) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

const lock = (c: pg.PoolClient, space: number, key: string) =>
  c.query("SELECT pg_advisory_xact_lock($1, hashtext($2))", [space, key]);

async function rowById(q: Queryable, id: string, forUpdate = false): Promise<ReceiptRow | undefined> {
  const r = await q.query<ReceiptRow>(
    `SELECT * FROM receipts WHERE id = $1${forUpdate ? " FOR UPDATE" : ""}`,
    [id],
  );
  return r.rows[0];
}

async function rowFor(q: Queryable, i: PaymentIdentity, forUpdate = false): Promise<ReceiptRow | undefined> {
  const r = await q.query<ReceiptRow>(
    `SELECT * FROM receipts WHERE network = $1 AND asset = $2 AND payer = $3 AND nonce = $4${forUpdate ? " FOR UPDATE" : ""}`,
    [i.network, i.asset, i.payer, i.nonce],
  );
  return r.rows[0];
}

/**
 * An incarnation's liveness as PostgreSQL sees it: a session advisory lock on a connection of its own. The server
 * drops the lock when that connection ends, however the process ended (kill -9, lost host), so another instance
 * knows at once, without waiting for a heartbeat to go stale. A connection lost while the process lives is
 * re-established and the lock taken again; in between the incarnation looks dead (its claims may be released, its
 * settling receipts go to the reconciler, which only ever records what the chain shows).
 */
function incarnationLocks(url: string) {
  /** Incarnations this process runs (started, not ended), and the connection holding each one's lock. */
  const wanted = new Set<string>();
  const held = new Map<string, pg.Client>();

  async function connectAndLock(id: string): Promise<pg.Client> {
    const client = new pg.Client({ connectionString: url });
    client.on("error", () => undefined); // a dropped connection ends it; "end" below takes it from there
    try {
      await client.connect();
      const got = await client.query<{ ok: boolean }>("SELECT pg_try_advisory_lock($1, hashtext($2)) AS ok", [
        LOCK_INCARNATION,
        id,
      ]);
      if (!got.rows[0]?.ok) throw new Error(`incarnation ${id} is held by another live process`);
      return client;
    } catch (err) {
      await client.end().catch(() => undefined);
      throw err;
    }
  }

  function watch(id: string, client: pg.Client): void {
    held.set(id, client);
    client.once("end", () => {
      if (held.get(id) !== client) return;
      held.delete(id);
      if (wanted.has(id)) void retake(id);
    });
  }

  async function retake(id: string): Promise<void> {
    while (wanted.has(id) && !held.has(id)) {
      await new Promise((r) => setTimeout(r, 500).unref());
      if (!wanted.has(id)) return;
      let client: pg.Client;
      try {
        client = await connectAndLock(id);
      } catch {
        continue; // the server is away, or has not yet noticed the old connection is gone
      }
      if (!wanted.has(id)) {
        await client.end().catch(() => undefined);
        return;
      }
      watch(id, client);
      // Another instance may have taken this one for dead meanwhile and ended it: it is not.
      await client
        .query("UPDATE incarnations SET ended_at = NULL WHERE id = $1", [id])
        .catch(() => undefined);
    }
  }

  return {
    hold: async (id: string) => {
      if (held.has(id)) return;
      const client = await connectAndLock(id);
      wanted.add(id);
      watch(id, client);
    },
    release: async (id: string) => {
      wanted.delete(id);
      const client = held.get(id);
      held.delete(id);
      await client?.end().catch(() => undefined);
    },
    releaseAll: async () => {
      const clients = [...held.values()];
      wanted.clear();
      held.clear();
      await Promise.all(clients.map((c) => c.end().catch(() => undefined)));
    },
  };
}

/** The payer's key record (identity already normalized), replacing an expired one. */
const writeKey = (c: pg.PoolClient, b: KeyRecord) =>
  c.query(
    `INSERT INTO idempotency (payer, key, request_fingerprint, network, asset, nonce, receipt_id, incarnation,
       created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
     ON CONFLICT (payer, key) DO UPDATE SET request_fingerprint = EXCLUDED.request_fingerprint,
       network = EXCLUDED.network, asset = EXCLUDED.asset, nonce = EXCLUDED.nonce,
       receipt_id = EXCLUDED.receipt_id, incarnation = EXCLUDED.incarnation,
       created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at`,
    [...keyRecordValues(b, (d) => d)],
  );

function postgresLedger(pool: pg.Pool, url: string, hasher: SecretHasher): LedgerPort {
  const locks = incarnationLocks(url);
  const claim = (req: ClaimRequest): Promise<ClaimResult> =>
    inTransaction(pool, async (c) => {
      const identity = normalizeIdentity(req.identity);
      const now = req.now;
      if (req.idempotency) await lock(c, LOCK_IDEMPOTENCY, `${identity.payer}\n${req.idempotency.key}`);
      await lock(
        c,
        LOCK_IDENTITY,
        `${identity.network}\n${identity.asset}\n${identity.payer}\n${identity.nonce}`,
      );
      if (req.cap) await lock(c, LOCK_ROUTE, req.route);

      if (req.idempotency) {
        const rec = (
          await c.query<IdempotencyRecord>(
            "SELECT * FROM idempotency WHERE payer = $1 AND key = $2 AND expires_at > $3",
            [identity.payer, req.idempotency.key, now],
          )
        ).rows[0];
        const conflict = idempotencyConflict(rec, req.requestFingerprint, identity);
        if (conflict) return conflict;
      }

      const existing = await rowFor(c, identity, true);
      if (existing) {
        const lockLive = existing.lock_expires_at !== null && existing.lock_expires_at > now;
        const answer = existingReceiptAnswer(existing, lockLive, toReceipt);
        if (answer) return answer;
      }
      if (req.cap) {
        const used = (
          await c.query<{ n: number }>(
            `SELECT COUNT(*)::int AS n FROM receipts WHERE route = $1 AND created_at >= $2 AND status IN ${LIVE_STATUSES_SQL} AND id != $3`,
            [req.route, req.cap.since, existing?.id ?? ""],
          )
        ).rows[0]?.n as number;
        if (used >= req.cap.limit) return { kind: "cap_reached", used };
      }

      const id = existing?.id ?? randomUUID();
      const lockExpiresAt = new Date(now.getTime() + req.lockTtlMs);
      const values = [
        id,
        req.route,
        req.requestFingerprint,
        req.x402Version,
        req.amount,
        req.payTo,
        req.ppRef ?? null,
        req.idempotency?.key ?? null,
        req.incarnation,
        lockExpiresAt,
        now,
        req.validBefore ?? null,
      ];
      const row = existing
        ? (
            await c.query<ReceiptRow>(
              `UPDATE receipts SET route = $2, request_fingerprint = $3, x402_version = $4, amount = $5, pay_to = $6,
                pp_ref = $7, idempotency_key = $8, payment_id = NULL, status = 'claimed', "transaction" = NULL, error = NULL,
                incarnation = $9, lock_expires_at = $10, updated_at = $11, valid_before = $12
               WHERE id = $1 RETURNING *`,
              values,
            )
          ).rows[0]
        : (
            await c.query<ReceiptRow>(
              `INSERT INTO receipts (id, route, request_fingerprint, x402_version, amount, pay_to, pp_ref,
                idempotency_key, incarnation, lock_expires_at, created_at, updated_at, valid_before,
                network, asset, payer, nonce, status)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11, $12, $13, $14, $15, $16, 'claimed')
               RETURNING *`,
              [...values, identity.network, identity.asset, identity.payer, identity.nonce],
            )
          ).rows[0];
      if (req.idempotency)
        await writeKey(c, {
          receiptId: id,
          identity,
          key: req.idempotency.key,
          requestFingerprint: req.requestFingerprint,
          ttlMs: req.idempotency.ttlMs,
          incarnation: req.incarnation,
          now,
        });
      return { kind: "claimed", receipt: toReceipt(row as ReceiptRow) };
    });

  const bindIdempotencyKey = (b: KeyBinding): Promise<BindResult> =>
    inTransaction(pool, async (c) => {
      const identity = normalizeIdentity(b.identity);
      const records = bindingRecords({ ...b, identity });
      for (const { record } of records) await lock(c, LOCK_IDEMPOTENCY, `${identity.payer}\n${record.key}`);
      for (const { record, secret } of records) {
        const rec = (
          await c.query<IdempotencyRecord>(
            "SELECT * FROM idempotency WHERE payer = $1 AND key = $2 AND expires_at > $3",
            [identity.payer, record.key, b.now],
          )
        ).rows[0];
        const conflict = idempotencyConflict(rec, b.requestFingerprint, identity);
        if (conflict?.kind === "idempotency_conflict") return { ok: false, reason: conflict.reason, secret };
      }
      for (const { record } of records) await writeKey(c, record);
      await c.query(
        "UPDATE receipts SET idempotency_key = COALESCE($1, idempotency_key), payment_id = COALESCE($2, payment_id) WHERE id = $3",
        [b.key ?? null, b.paymentId ?? null, b.receiptId],
      );
      return { ok: true };
    });

  const settleOnce = (id: string, r: SettlementRecord): Promise<SettlementResult> =>
    inTransaction(pool, async (c) => {
      if (!(await rowById(c, id, true))) return { ok: false, reason: "not_found" };
      const other = (
        await c.query<{ id: string }>(`SELECT id FROM receipts WHERE "transaction" = $1 AND id != $2`, [
          r.transaction,
          id,
        ])
      ).rows[0];
      if (other) return { ok: false, reason: "transaction_already_credited", receiptId: other.id };
      const row = (
        await c.query<ReceiptRow>(
          `UPDATE receipts SET status = $2, "transaction" = $3, error = NULL, updated_at = $4,
             settled_at = COALESCE(settled_at, $4), response = COALESCE($5::jsonb, response),
             response_expires_at = COALESCE($6, response_expires_at)
           WHERE id = $1 RETURNING *`,
          [
            id,
            r.status,
            r.transaction,
            r.now,
            r.response ? JSON.stringify(r.response.value) : null,
            r.response ? r.response.expiresAt : null,
          ],
        )
      ).rows[0] as ReceiptRow;
      return { ok: true, receipt: toReceipt(row) };
    });

  const recordSettlement = async (id: string, r: SettlementRecord): Promise<SettlementResult> => {
    try {
      return await settleOnce(id, r);
    } catch (err) {
      // Two receipts crediting one transaction at the same moment: the unique index let one commit; this one lost.
      if (!isUniqueViolation(err)) throw err;
      const other = (
        await pool.query<{ id: string }>(`SELECT id FROM receipts WHERE "transaction" = $1 AND id != $2`, [
          r.transaction,
          id,
        ])
      ).rows[0];
      if (!other) throw err;
      return { ok: false, reason: "transaction_already_credited", receiptId: other.id };
    }
  };

  const releaseIncarnation = (id: string, now: Date) =>
    inTransaction(pool, async (c) => {
      const claims = (
        await c.query<{ id: string }>(
          "DELETE FROM receipts WHERE incarnation = $1 AND status = 'claimed' RETURNING id",
          [id],
        )
      ).rows.map((r) => r.id);
      if (claims.length > 0) await c.query("DELETE FROM idempotency WHERE receipt_id = ANY($1)", [claims]);
      await c.query(
        "UPDATE receipts SET status = 'unknown', error = 'incarnation_died', updated_at = $1 WHERE incarnation = $2 AND status = 'settling'",
        [now, id],
      );
      await c.query("UPDATE incarnations SET ended_at = $1, heartbeat_at = $1 WHERE id = $2", [now, id]);
      const unresolved = (
        await c.query<ReceiptRow>(
          "SELECT * FROM receipts WHERE incarnation = $1 AND status = 'unknown' ORDER BY created_at, id",
          [id],
        )
      ).rows.map(toReceipt);
      return { releasedClaims: claims.length, unresolved };
    });

  return {
    claimAuthorization: (req) => claim(hashedClaim(hasher, req)),
    bindIdempotencyKey: (binding) => bindIdempotencyKey(hashedBinding(hasher, binding)),
    boundSecret: (receipt, presented) => boundSecret(hasher, receipt, presented),
    releaseClaim: (id, incarnation) =>
      inTransaction(pool, async (c) => {
        const gone = await c.query(
          "DELETE FROM receipts WHERE id = $1 AND status = 'claimed' AND incarnation = $2",
          [id, incarnation],
        );
        if (gone.rowCount === 1) await c.query("DELETE FROM idempotency WHERE receipt_id = $1", [id]);
      }),
    beginSettlement: async (id, incarnation, now) =>
      (
        await pool.query(
          "UPDATE receipts SET status = 'settling', updated_at = $1 WHERE id = $2 AND status = 'claimed' AND incarnation = $3",
          [now, id, incarnation],
        )
      ).rowCount === 1,
    recordSettlement,
    recordFailure: (id, o) =>
      inTransaction(pool, async (c) => {
        await c.query("UPDATE receipts SET status = $1, error = $2, updated_at = $3 WHERE id = $4", [
          o.status,
          o.error,
          o.now,
          id,
        ]);
        // A refused settlement frees the payer's key: nothing was bought with it.
        if (o.status === "failed") await c.query("DELETE FROM idempotency WHERE receipt_id = $1", [id]);
      }),
    storeResponse: async (id, response, expiresAt, now) => {
      await pool.query(
        "UPDATE receipts SET response = $1::jsonb, response_expires_at = $2, updated_at = $3 WHERE id = $4 AND status IN ('settled', 'pending')",
        [JSON.stringify(response), expiresAt, now, id],
      );
    },
    reclaimUnresolved: async (id, incarnation, lockTtlMs, now) =>
      (
        await pool.query(
          "UPDATE receipts SET status = 'claimed', incarnation = $1, lock_expires_at = $2, updated_at = $3 WHERE id = $4 AND status = 'unknown'",
          [incarnation, new Date(now.getTime() + lockTtlMs), now, id],
        )
      ).rowCount === 1,
    receipt: async (id) => {
      const row = await rowById(pool, id);
      return row ? toReceipt(row) : undefined;
    },
    receiptFor: async (identity) => {
      const row = await rowFor(pool, normalizeIdentity(identity));
      return row ? toReceipt(row) : undefined;
    },
    undeliveredFor: async (payer, fingerprint) => {
      const row = (
        await pool.query<ReceiptRow>(
          `SELECT * FROM receipts WHERE payer = $1 AND request_fingerprint = $2 AND ${UNDELIVERED_SQL}
           ORDER BY created_at, id LIMIT 1`,
          [payer.toLowerCase(), fingerprint],
        )
      ).rows[0];
      return row ? toReceipt(row) : undefined;
    },
    purchasesOf: async (payer, fingerprint, since, limit) =>
      (
        await pool.query<ReceiptRow>(
          `SELECT * FROM receipts WHERE payer = $1 AND request_fingerprint = $2 AND created_at >= $3
           AND status IN ${LIVE_STATUSES_SQL} ORDER BY created_at, id LIMIT $4`,
          [payer.toLowerCase(), fingerprint, since, limit],
        )
      ).rows.map(toReceipt),
    paymentIdHeldByOther: postgresPaymentIdHolder(pool, hasher),
    unresolvedReceipts: async (limit) =>
      (
        await pool.query<ReceiptRow>(
          "SELECT * FROM receipts WHERE status = 'unknown' ORDER BY created_at, id LIMIT $1",
          [limit],
        )
      ).rows.map(toReceipt),
    countPaidSince: async (route, since) =>
      (
        await pool.query<{ n: number }>(
          `SELECT COUNT(*)::int AS n FROM receipts WHERE route = $1 AND created_at >= $2 AND status IN ${LIVE_STATUSES_SQL}`,
          [route, since],
        )
      ).rows[0]?.n ?? 0,
    receipts: async () =>
      (await pool.query<ReceiptRow>("SELECT * FROM receipts ORDER BY created_at, id")).rows.map(toReceipt),
    inFlightStats: async () => {
      const byStatus = { claimed: 0, settling: 0, pending: 0, unknown: 0 };
      const counts = await pool.query<{ status: keyof typeof byStatus; n: number }>(
        "SELECT status, COUNT(*)::int AS n FROM receipts WHERE status IN ('claimed', 'settling', 'pending', 'unknown') GROUP BY status",
      );
      for (const r of counts.rows) byStatus[r.status] = r.n;
      const oldest = await pool.query<{ at: Date | null }>(
        "SELECT MIN(updated_at) AS at FROM receipts WHERE status = 'settling'",
      );
      const at = oldest.rows[0]?.at;
      return { byStatus, oldestSettlingSince: at ? new Date(at).toISOString() : null };
    },
    startIncarnation: async (id, now) => {
      await locks.hold(id);
      await pool.query(
        `INSERT INTO incarnations (id, started_at, heartbeat_at, ended_at) VALUES ($1, $2, $2, NULL)
         ON CONFLICT (id) DO UPDATE SET started_at = $2, heartbeat_at = $2, ended_at = NULL`,
        [id, now],
      );
    },
    heartbeat: async (id, now) => {
      await pool.query("UPDATE incarnations SET heartbeat_at = $1 WHERE id = $2", [now, id]);
    },
    endIncarnation: async (id, now) => {
      await pool.query("UPDATE incarnations SET ended_at = $1, heartbeat_at = $1 WHERE id = $2", [now, id]);
      await locks.release(id);
    },
    incarnations: async () =>
      (
        await pool.query<{
          id: string;
          started_at: Date;
          heartbeat_at: Date;
          ended_at: Date | null;
          alive: boolean;
        }>(
          `SELECT i.*, EXISTS (SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted
             AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
             AND l.classid = $1::oid AND l.objid = hashtext(i.id)::oid AND l.objsubid = 2) AS alive
           FROM incarnations i ORDER BY started_at, id`,
          [LOCK_INCARNATION],
        )
      ).rows.map(
        (r): Incarnation => ({
          id: r.id,
          startedAt: r.started_at.toISOString(),
          heartbeatAt: r.heartbeat_at.toISOString(),
          endedAt: iso(r.ended_at),
          alive: r.alive,
        }),
      ),
    releaseIncarnation,
    purgeExpired: (now) =>
      inTransaction(pool, async (c) => ({
        idempotency: (await c.query("DELETE FROM idempotency WHERE expires_at <= $1", [now])).rowCount ?? 0,
        responses:
          (
            await c.query(
              "UPDATE receipts SET response = NULL WHERE response IS NOT NULL AND response_expires_at <= $1",
              [now],
            )
          ).rowCount ?? 0,
      })),
    close: async () => {
      await locks.releaseAll();
      await pool.end();
    },
  };
}
