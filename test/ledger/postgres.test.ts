import { spawn } from "node:child_process";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, parseConfig } from "../../src/config.js";
import { openConfiguredLedger } from "../../src/ledger/factory.js";
import { POSTGRES_MIGRATIONS } from "../../src/ledger/migrations/postgres.js";
import type { ClaimRequest, LedgerPort, Receipt } from "../../src/ledger/port.js";
import { migratePostgres, openPostgresLedger } from "../../src/ledger/postgres.js";
import { startTestPostgres, type TestPostgres } from "../helpers/postgres.js";
import { ledgerContract } from "./contract.js";

const KEY_HEX = "4b".repeat(32);
let server: TestPostgres;
beforeAll(async () => {
  server = await startTestPostgres();
});
afterAll(async () => {
  await server?.stop();
});

ledgerContract("postgres", async () => openPostgresLedger(await server.freshSchema()));

describe("postgres ledger", () => {
  const T0 = new Date("2026-11-22T12:00:00.000Z");
  const nonce = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;
  const req = (n: number, over: Partial<ClaimRequest> = {}): ClaimRequest => ({
    identity: {
      network: "eip155:8453",
      asset: "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913",
      payer: "0x000000000000000000000000000000000000b0b0",
      nonce: nonce(n),
    },
    route: "POST /v1/benchmark/endpoint",
    requestFingerprint: "rf",
    x402Version: 2,
    amount: "500000",
    payTo: "0x00000000000000000000000000000000000000aa",
    incarnation: "inc-a",
    lockTtlMs: 60_000,
    now: T0,
    ...over,
  });

  /** Two ledgers on one schema, each with its own connection pool: two instances as the database sees them. */
  async function twoInstances(): Promise<[LedgerPort, LedgerPort, () => Promise<void>]> {
    const url = await server.freshSchema();
    const a = await openPostgresLedger(url);
    const b = await openPostgresLedger(url);
    return [a, b, async () => void (await Promise.all([a.close(), b.close()]))];
  }

  it("applies each migration once when instances start together, and again finds nothing to do", async () => {
    const url = await server.freshSchema();
    const pools = Array.from({ length: 5 }, () => new pg.Pool({ connectionString: url, max: 2 }));
    try {
      const applied = await Promise.all(pools.map((p) => migratePostgres(p)));
      expect(applied.flat()).toEqual(POSTGRES_MIGRATIONS.map((m) => m.version));
      expect(await migratePostgres(pools[0] as pg.Pool)).toEqual([]);
      const rows = await (pools[0] as pg.Pool).query(
        "SELECT version FROM ledger_migrations ORDER BY version",
      );
      expect(rows.rows.map((r) => r.version)).toEqual(POSTGRES_MIGRATIONS.map((m) => m.version));
    } finally {
      await Promise.all(pools.map((p) => p.end()));
    }
  });

  it("a ledger of the first shipped schema (migration 1) is upgraded on open and keeps every receipt", async () => {
    const url = await server.freshSchema();
    const pool = new pg.Pool({ connectionString: url, max: 1 });
    try {
      expect(await migratePostgres(pool, POSTGRES_MIGRATIONS.slice(0, 1))).toEqual([1]);
      // Written as that schema's code wrote it: today's code would apply migration 2 first.
      await pool.query(
        `INSERT INTO receipts (id, network, asset, payer, nonce, route, request_fingerprint, x402_version, amount, pay_to,
          status, "transaction", created_at, updated_at, settled_at)
         VALUES ('r-old', 'eip155:8453', $1, $2, $3, 'POST /v1/benchmark/endpoint', 'rf', 2, 50000, $4, 'settled', $5,
          $6, $6, $6)`,
        [req(7).identity.asset, req(7).identity.payer, nonce(7), req(7).payTo, `0x${"7".repeat(64)}`, T0],
      );
    } finally {
      await pool.end();
    }

    const lines: string[] = [];
    const upgraded = await openPostgresLedger(url, { log: (l) => lines.push(l) });
    try {
      expect(lines).toEqual([
        expect.stringMatching(/^ledger upgrade: applied PostgreSQL migration 2 /),
        expect.stringMatching(/^ledger upgrade: applied PostgreSQL migration 3 /),
        expect.stringMatching(/^ledger upgrade: applied PostgreSQL migration 4 /),
        expect.stringMatching(/^ledger upgrade: applied PostgreSQL migration 5 /),
      ]);
      const receipts = await upgraded.receipts();
      expect(receipts.map((r) => [r.id, r.status, r.amount, r.transaction])).toEqual([
        ["r-old", "settled", "50000", `0x${"7".repeat(64)}`],
      ]);
    } finally {
      await upgraded.close();
    }
  });

  it("keeps receipts, responses and keys across a reopen", async () => {
    const url = await server.freshSchema();
    const a = await openPostgresLedger(url);
    const c = await a.claimAuthorization(req(1, { idempotency: { key: "k", ttlMs: 86_400_000 } }));
    if (c.kind !== "claimed") throw new Error(c.kind);
    await a.beginSettlement(c.receipt.id, "inc-a", T0);
    const response = { statusCode: 200, headers: { "x-a": "1" }, body: "{}" };
    await a.recordSettlement(c.receipt.id, {
      status: "settled",
      transaction: "0xabc",
      response: { value: response, expiresAt: new Date(T0.getTime() + 1000) },
      now: T0,
    });
    await a.close();
    const b = await openPostgresLedger(url);
    try {
      expect(await b.claimAuthorization(req(1, { idempotency: { key: "k", ttlMs: 1000 } }))).toMatchObject({
        kind: "paid",
        receipt: { id: c.receipt.id, transaction: "0xabc", response, amount: "500000" },
      });
      expect((await b.claimAuthorization(req(2, { idempotency: { key: "k", ttlMs: 1000 } }))).kind).toBe(
        "idempotency_conflict",
      );
    } finally {
      await b.close();
    }
  });

  it("two instances, one authorization: 100 concurrent claims split across both → exactly one claimed", async () => {
    const [a, b, close] = await twoInstances();
    try {
      const results = await Promise.all(
        Array.from({ length: 100 }, (_, i) =>
          (i % 2 === 0 ? a : b).claimAuthorization(
            req(7, { incarnation: i % 2 === 0 ? "inc-a" : "inc-b", requestFingerprint: `rf-${i}` }),
          ),
        ),
      );
      expect(results.filter((r) => r.kind === "claimed")).toHaveLength(1);
      expect(results.filter((r) => r.kind === "in_progress")).toHaveLength(99);
      expect(await a.receipts()).toHaveLength(1);
    } finally {
      await close();
    }
  });

  it("two instances, one Idempotency-Key: concurrent claims with different proofs → one claimed, the rest refused", async () => {
    const [a, b, close] = await twoInstances();
    try {
      const key = { key: "same-key", ttlMs: 60_000 };
      const results = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          (i % 2 === 0 ? a : b).claimAuthorization(req(300 + i, { idempotency: key })),
        ),
      );
      expect(results.filter((r) => r.kind === "claimed")).toHaveLength(1);
      expect(results.filter((r) => r.kind === "idempotency_conflict")).toHaveLength(39);
    } finally {
      await close();
    }
  });

  it("two instances share the provisional cap: 50 concurrent proofs under a cap of 3 → 3 claimed", async () => {
    const [a, b, close] = await twoInstances();
    try {
      const cap = { limit: 3, since: new Date("2026-11-22T00:00:00.000Z") };
      const results = await Promise.all(
        Array.from({ length: 50 }, (_, i) => (i % 2 === 0 ? a : b).claimAuthorization(req(100 + i, { cap }))),
      );
      expect(results.filter((r) => r.kind === "claimed")).toHaveLength(3);
      expect(results.filter((r) => r.kind === "cap_reached")).toHaveLength(47);
      expect(await b.countPaidSince("POST /v1/benchmark/endpoint", cap.since)).toBe(3);
    } finally {
      await close();
    }
  });

  it("one transaction credited once when two instances record it at the same moment", async () => {
    const [a, b, close] = await twoInstances();
    try {
      const ids: string[] = [];
      for (const n of [1, 2]) {
        const c = await a.claimAuthorization(req(n));
        if (c.kind !== "claimed") throw new Error(c.kind);
        await a.beginSettlement(c.receipt.id, "inc-a", T0);
        ids.push(c.receipt.id);
      }
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          (i % 2 === 0 ? a : b).recordSettlement(ids[i % 2] as string, {
            status: "settled",
            transaction: "0xsame",
            now: T0,
          }),
        ),
      );
      const winners = new Set(results.flatMap((r) => (r.ok ? [r.receipt.id] : [])));
      expect(winners.size).toBe(1);
      const loser = ids.find((id) => !winners.has(id));
      expect(results.filter((r) => !r.ok)).toSatisfy((xs: typeof results) =>
        xs.every((r) => !r.ok && r.reason === "transaction_already_credited"),
      );
      expect((await b.receipt(loser as string))?.status).toBe("settling");
      expect((await b.receipts()).filter((r) => r.transaction === "0xsame")).toHaveLength(1);
    } finally {
      await close();
    }
  });

  it("a surviving instance releases a dead one's claims and takes over its settling receipts", async () => {
    const [a, b, close] = await twoInstances();
    try {
      await a.startIncarnation("inc-a", T0);
      await b.startIncarnation("inc-b", T0);
      const held = await a.claimAuthorization(req(1, { idempotency: { key: "k", ttlMs: 86_400_000 } }));
      const settling = await a.claimAuthorization(req(2));
      if (held.kind !== "claimed" || settling.kind !== "claimed") throw new Error("claims");
      await a.beginSettlement(settling.receipt.id, "inc-a", T0);
      // b sees a's work as in progress while a is alive...
      expect((await b.claimAuthorization(req(2, { incarnation: "inc-b" }))).kind).toBe("in_progress");
      // ...and, once it declares a dead, releases it and reconciles what a left settling.
      const released = await b.releaseIncarnation("inc-a", new Date(T0.getTime() + 1));
      expect(released.releasedClaims).toBe(1);
      expect(released.unresolved.map((r) => r.id)).toEqual([settling.receipt.id]);
      expect((await b.unresolvedReceipts(10)).map((r) => r.id)).toEqual([settling.receipt.id]);
      expect(
        (await b.claimAuthorization(req(1, { incarnation: "inc-b", idempotency: { key: "k", ttlMs: 1000 } })))
          .kind,
      ).toBe("claimed");
      expect(await b.reclaimUnresolved(settling.receipt.id, "inc-b", 1000, T0)).toBe(true);
      expect(await a.reclaimUnresolved(settling.receipt.id, "inc-a", 1000, T0)).toBe(false);
    } finally {
      await close();
    }
  });

  it("tells a live incarnation from a dead one at once: a closed instance, and a process killed with SIGKILL", async () => {
    const [a, b, close] = await twoInstances();
    const url = await server.freshSchema();
    try {
      await a.startIncarnation("inc-a", T0);
      await b.startIncarnation("inc-b", T0);
      const alive = async (l: LedgerPort) =>
        Object.fromEntries((await l.incarnations()).map((i) => [i.id, i.alive]));
      expect(await alive(b)).toEqual({ "inc-a": true, "inc-b": true });
      await expect(b.startIncarnation("inc-a", T0)).rejects.toThrow(/held by another live process/);
      await a.close(); // a process that stops without ending its incarnation (its heartbeat is still fresh)
      expect(await alive(b)).toEqual({ "inc-a": false, "inc-b": true });

      // A separate process holding an incarnation, then kill -9.
      const child = spawn(
        process.execPath,
        [
          "--import",
          "tsx",
          "-e",
          `const { openPostgresLedger } = await import("./src/ledger/postgres.ts");
           const l = await openPostgresLedger(process.env.URL);
           await l.startIncarnation("inc-child", new Date());
           process.stdout.write("holding\\n");
           setInterval(() => {}, 1000);`,
        ],
        { env: { ...process.env, URL: url }, stdio: ["ignore", "pipe", "pipe"] },
      );
      const exited = new Promise((r) => child.once("exit", (code, signal) => r(signal ?? code)));
      await new Promise<void>((resolve, reject) => {
        let out = "";
        child.stdout?.on("data", (d: Buffer) => {
          out += d.toString();
          if (out.includes("holding")) resolve();
        });
        child.stderr?.on("data", (d: Buffer) => {
          out += d.toString();
        });
        void exited.then(() => reject(new Error(`child exited before holding: ${out}`)));
      });
      const c = await openPostgresLedger(url);
      try {
        expect(await alive(c)).toEqual({ "inc-child": true });
        child.kill("SIGKILL");
        expect(await exited).toBe("SIGKILL");
        // The server notices the dropped connection as soon as it reads from it: wait for that event, bounded.
        let seen: Record<string, boolean | undefined> = {};
        for (let i = 0; i < 200; i++) {
          seen = await alive(c);
          if (seen["inc-child"] === false) break;
          await new Promise((r) => setTimeout(r, 25));
        }
        expect(seen).toEqual({ "inc-child": false });
        expect((await c.incarnations())[0]?.endedAt).toBeNull(); // it never ended itself: dead, not finished
      } finally {
        await c.close();
      }
    } finally {
      await close().catch(() => undefined);
    }
  });

  it("a live instance whose lock connection drops takes its lock back, and is no longer taken for dead", async () => {
    const [a, b, close] = await twoInstances();
    const admin = new pg.Client({ connectionString: server.url });
    await admin.connect();
    try {
      await a.startIncarnation("inc-r", T0);
      // Another instance wrongly ended it (say, during a network split), then the lock's connection is cut.
      await b.releaseIncarnation("inc-r", T0);
      const killed = await admin.query(
        `SELECT pg_terminate_backend(pid) AS ok FROM pg_locks
         WHERE locktype = 'advisory' AND classid = 40204 AND objid = hashtext('inc-r')::oid AND granted`,
      );
      expect(killed.rows).toEqual([{ ok: true }]);
      for (let i = 0; i < 400; i++) {
        const inc = (await b.incarnations()).find((x) => x.id === "inc-r");
        if (inc?.alive && inc.endedAt === null) break;
        await new Promise((r) => setTimeout(r, 25));
      }
      expect((await b.incarnations()).find((x) => x.id === "inc-r")).toMatchObject({
        alive: true,
        endedAt: null,
      });
      await a.endIncarnation("inc-r", T0); // a clean end lets go for good: nothing takes it back
      expect((await b.incarnations()).find((x) => x.id === "inc-r")?.alive).toBe(false);
    } finally {
      await admin.end();
      await close();
    }
  });

  it("LEDGER_URL selects PostgreSQL (shared by instances); without it the ledger is the SQLite file", async () => {
    const url = await server.freshSchema();
    const opened = await openConfiguredLedger(parseConfig({ LEDGER_URL: url, LEDGER_SECRET_KEY: KEY_HEX }));
    try {
      expect([opened.backend, opened.shared]).toEqual(["postgres", true]);
      expect((await opened.ledger.claimAuthorization(req(1))).kind).toBe("claimed");
      const direct = await openPostgresLedger(url);
      expect(await direct.receipts()).toHaveLength(1); // it wrote to that database, not to a file
      await direct.close();
    } finally {
      await opened.ledger.close();
    }
    const sqlite = await openConfiguredLedger(parseConfig({ LEDGER_PATH: ":memory:" }));
    expect([sqlite.backend, sqlite.shared]).toEqual(["sqlite", false]);
    await sqlite.ledger.close();
  });

  it("LEDGER_URL needs LEDGER_SECRET_KEY (instances must hash alike), whose value is never shown", async () => {
    expect(() => parseConfig({ LEDGER_URL: "postgres://db/x" })).toThrow(
      /^LEDGER_SECRET_KEY: required with LEDGER_URL/,
    );
    await expect(
      openConfiguredLedger({ ledgerPath: "x", ledgerUrl: "postgres://db/x", ledgerSecretKey: undefined }),
    ).rejects.toThrow(/^LEDGER_SECRET_KEY: required with LEDGER_URL/);
    const short = "ab".repeat(16);
    expect(() => parseConfig({ LEDGER_SECRET_KEY: short })).toThrow(
      /LEDGER_SECRET_KEY: invalid value \(got "\(hidden\)"\)/,
    );
    expect(() => parseConfig({ LEDGER_SECRET_KEY: short })).not.toThrow(new RegExp(short));
  });

  it("secrets stored in plaintext before migration 4 become keyed digests in place; every receipt is kept", async () => {
    const url = await server.freshSchema();
    const pool = new pg.Pool({ connectionString: url, max: 1 });
    const oldKey = "old-order-key-1";
    const oldId = "pay_old0000000000000002";
    const payer = req(1).identity.payer;
    try {
      expect(await migratePostgres(pool, POSTGRES_MIGRATIONS.slice(0, 2))).toEqual([1, 2]);
      const insert = (id: string, n: number, key: string | null, paymentId: string | null) =>
        pool.query(
          `INSERT INTO receipts (id, network, asset, payer, nonce, route, request_fingerprint, x402_version, amount,
            pay_to, idempotency_key, payment_id, status, "transaction", created_at, updated_at, settled_at)
           VALUES ($1, 'eip155:8453', $2, $3, $4, 'POST /v1/benchmark/endpoint', 'rf', 2, 500000, $5, $6, $7,
            'settled', $8, $9, $9, $9)`,
          [
            id,
            req(n).identity.asset,
            payer,
            nonce(n),
            req(n).payTo,
            key,
            paymentId,
            `0x${String(n).repeat(64)}`,
            T0,
          ],
        );
      await insert("r-1", 1, oldKey, null);
      await insert("r-2", 2, null, oldId);
      await insert("r-3", 3, null, null);
      const idem = (key: string, n: number, receipt: string) =>
        pool.query(
          `INSERT INTO idempotency (payer, key, request_fingerprint, network, asset, nonce, receipt_id, incarnation,
            created_at, expires_at) VALUES ($1, $2, 'rf', 'eip155:8453', $3, $4, $5, 'old', $6, $7)`,
          [payer, key, req(n).identity.asset, nonce(n), receipt, T0, new Date("2099-01-01T00:00:00Z")],
        );
      await idem(oldKey, 1, "r-1");
      await idem(`payment-identifier ${oldId}`, 2, "r-2");
    } finally {
      await pool.end();
    }

    const lines: string[] = [];
    const secretKey = Buffer.alloc(32, 9);
    const a = await openPostgresLedger(url, { log: (l) => lines.push(l), secretKey });
    const b = await openPostgresLedger(url, { secretKey }); // a second instance, same key
    try {
      expect(lines).toEqual([
        expect.stringMatching(/^ledger upgrade: applied PostgreSQL migration 3 /),
        expect.stringMatching(/^ledger upgrade: applied PostgreSQL migration 4 \(secrets/),
        expect.stringMatching(/^ledger upgrade: applied PostgreSQL migration 5 /),
      ]);
      const receipts = await a.receipts();
      expect(receipts.map((r) => [r.id, r.status, r.amount, r.transaction])).toEqual([
        ["r-1", "settled", "500000", `0x${"1".repeat(64)}`],
        ["r-2", "settled", "500000", `0x${"2".repeat(64)}`],
        ["r-3", "settled", "500000", `0x${"3".repeat(64)}`],
      ]);
      const [r1, r2, r3] = receipts as [Receipt, Receipt, Receipt];
      expect(b.boundSecret(r1, { key: oldKey })).toBe("key");
      expect(b.boundSecret(r2, { paymentId: oldId })).toBe("payment_id");
      expect(b.boundSecret(r3, { key: oldKey, paymentId: oldId })).toBeUndefined();
      // The old key still guards its request on every instance.
      expect(
        await b.claimAuthorization(
          req(9, { requestFingerprint: "rf-other", idempotency: { key: oldKey, ttlMs: 60_000 } }),
        ),
      ).toEqual({ kind: "idempotency_conflict", reason: "different_request" });
      const check = new pg.Pool({ connectionString: url, max: 1 });
      try {
        const text = JSON.stringify([
          (await check.query("SELECT * FROM receipts")).rows,
          (await check.query("SELECT * FROM idempotency")).rows,
        ]);
        expect(text).not.toContain(oldKey);
        expect(text).not.toContain(oldId);
      } finally {
        await check.end();
      }
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it("a LEDGER_URL error names the variable without showing its password", () => {
    expect(() => parseConfig({ LEDGER_URL: "mysql://app:s3cret@db:3306/x" })).toThrow(
      /LEDGER_URL: .*mysql:\/\/app:\*\*\*@db:3306\/x/,
    );
    expect(() => parseConfig({ LEDGER_URL: "mysql://app:s3cret@db:3306/x" })).not.toThrow(/s3cret/);
  });

  it("refuses to start on an unreachable database or wrong password: one line naming LEDGER_URL, no password", async () => {
    const url = new URL(server.url);
    url.port = "1"; // nothing listens on port 1 of loopback
    await expect(openPostgresLedger(url.toString())).rejects.toThrow();
    await expect(
      openConfiguredLedger(parseConfig({ LEDGER_URL: url.toString(), LEDGER_SECRET_KEY: KEY_HEX })),
    ).rejects.toThrow(/^LEDGER_URL: cannot open the PostgreSQL ledger \(.*ECONNREFUSED.*\)/);
    const wrong = new URL(server.url);
    wrong.password = "not-the-password";
    const err = await openConfiguredLedger(
      parseConfig({ LEDGER_URL: wrong.toString(), LEDGER_SECRET_KEY: KEY_HEX }),
    ).catch((e: Error) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(/^LEDGER_URL: .*password authentication failed/);
    expect((err as Error).message).not.toContain("not-the-password");
    expect((err as Error).message).not.toContain("\n");
  });
});
