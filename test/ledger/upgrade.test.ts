import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import type { Receipt } from "../../src/ledger/port.js";
import { openSqliteLedger } from "../../src/ledger/sqlite.js";
import { mergeReceipts, readLedgerReceipts } from "../../src/ops/ledger-reader.js";
import { readLegacyReceipts } from "../../src/ops/legacy-receipts.js";
import { BILLED_STATUSES, buildReport } from "../../src/ops/receipts.js";

/*
 * Every SQLite schema the project has shipped (test/fixtures/ledger-schemas, copied from the history of src/store),
 * filled with receipts and opened by today's adapter: every billed receipt is still exported, the money adds up to
 * the same total, and each step of the upgrade is logged.
 */
const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "p402-upgrade-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const schema = (name: string) =>
  readFileSync(join(ROOT, "test/fixtures/ledger-schemas", `${name}.sql`), "utf8");
const USDC = "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913";
const PAY_TO = "0x00000000000000000000000000000000000000aa";
const tx = (i: number) => `0x${i.toString(16).padStart(64, "0")}`;

async function exported(path: string) {
  const ledger = openSqliteLedger(path, { log: () => {} });
  try {
    const rows = mergeReceipts(
      await readLedgerReceipts(ledger, BILLED_STATUSES),
      readLegacyReceipts(path, BILLED_STATUSES),
    );
    return buildReport(rows, { links: false }).total;
  } finally {
    await ledger.close();
  }
}

describe("upgrading a ledger of every shipped schema", () => {
  it("pre-ledger-port (receipts keyed by proof hash): moved aside, logged with its total, and still exported", async () => {
    const path = join(dir, "pre-port.sqlite");
    const db = new Database(path);
    db.exec(schema("1-pre-port"));
    const insert =
      db.prepare(`INSERT INTO receipts (id, route, request_fingerprint, proof_fingerprint, x402_version,
      payer, amount, network, asset, pay_to, "transaction", status, error, created_at, settled_at, pp_ref)
      VALUES (?, ?, 'rf', ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, ?)`);
    // 12 receipts: 10 billed (v1 "base" and v2 "eip155:8453"), one failed, one still settling.
    let billed = 0n;
    for (let i = 1; i <= 12; i++) {
      const status = i === 11 ? "failed" : i === 12 ? "settling" : i === 10 ? "pending" : "settled";
      const amount = i % 2 ? "20000" : "250000";
      if (status === "settled" || status === "pending") billed += BigInt(amount);
      insert.run(
        `legacy-${i}`,
        i % 2 ? "GET /v1/unlocks/upcoming" : "POST /v1/token/risk-summary",
        `proof-${i}`,
        i % 3 ? 2 : 1,
        `0x${"b".repeat(40)}`,
        amount,
        i % 3 ? "eip155:8453" : "base",
        "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
        PAY_TO,
        status === "failed" || status === "settling" ? null : tx(i),
        status,
        `2026-11-0${1 + (i % 5)}T10:00:00.000Z`,
        status === "settled" ? `2026-11-0${1 + (i % 5)}T10:00:01.000Z` : null,
        i === 1 ? "acct.1" : null,
      );
    }
    db.close();

    const lines: string[] = [];
    const ledger = openSqliteLedger(path, { log: (l) => lines.push(l) });
    await ledger.close();
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(
      "its 12 receipts (10 settled or pending, 1350000 atomic USDC) were moved to receipts_legacy",
    );

    const total = await exported(path);
    expect(total.calls).toBe(10);
    expect(total.amountAtomic).toBe(billed.toString());
    expect(total.amountUsd).toBe("1.350000");

    // A second start moves nothing and logs nothing; the export is the same.
    const again: string[] = [];
    await openSqliteLedger(path, { log: (l) => again.push(l) }).close();
    expect(again).toEqual([]);
    expect((await exported(path)).amountAtomic).toBe(billed.toString());

    // `npm run receipts` itself exports them, with v1's "base" as eip155:8453.
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ["--import", "tsx", "scripts/receipts.ts", "--ledger", path],
      { cwd: ROOT, env: { ...process.env, LEDGER_URL: "" } },
    );
    const report = JSON.parse(stdout) as {
      total: { calls: number; amountAtomic: string };
      rows: { network: string }[];
    };
    expect(report.total).toMatchObject({ calls: 10, amountAtomic: billed.toString() });
    expect(new Set(report.rows.map((r) => r.network))).toEqual(new Set(["eip155:8453"]));
  }, 60_000);

  for (const [name, added] of [
    ["2-port", ["valid_before", "response_digest", "payment_id"]],
    ["3-valid-before", ["response_digest", "payment_id"]],
    ["4-response-digest", ["payment_id"]],
  ] as const) {
    it(`${name}: the missing columns are added and logged, every receipt kept and exported`, async () => {
      const path = join(dir, `${name}.sqlite`);
      const db = new Database(path);
      db.exec(schema(name));
      const insert =
        db.prepare(`INSERT INTO receipts (id, network, asset, payer, nonce, route, request_fingerprint,
        x402_version, amount, pay_to, status, "transaction", created_at, updated_at, settled_at)
        VALUES (?, 'eip155:8453', ?, ?, ?, 'GET /v1/unlocks/upcoming', 'rf', 2, ?, ?, ?, ?, ?, ?, ?)`);
      for (let i = 1; i <= 5; i++)
        insert.run(
          `r-${i}`,
          USDC,
          `0x${"c".repeat(40)}`,
          `0x${i.toString(16).padStart(64, "0")}`,
          "20000",
          PAY_TO,
          i === 5 ? "failed" : "settled",
          i === 5 ? null : tx(100 + i),
          "2026-11-10T00:00:00.000Z",
          "2026-11-10T00:00:00.000Z",
          i === 5 ? null : "2026-11-10T00:00:01.000Z",
        );
      db.close();

      const lines: string[] = [];
      const ledger = openSqliteLedger(path, { log: (l) => lines.push(l) });
      expect((await ledger.receipts()).map((r) => r.id).sort()).toEqual(["r-1", "r-2", "r-3", "r-4", "r-5"]);
      await ledger.close();
      expect(lines.slice(0, -1).map((l) => /receipts\.(\w+)/.exec(l)?.[1])).toEqual([...added]);
      expect(lines.at(-1)).toMatch(/^ledger upgrade: secrets stored as keyed digests \(0 receipts, /);
      const total = await exported(path);
      expect(total).toMatchObject({ calls: 4, amountAtomic: "80000" });
    });
  }

  it("secrets stored in plaintext by the previous schema become keyed digests in place; every receipt is kept", async () => {
    const path = join(dir, "plain-secrets.sqlite");
    const db = new Database(path);
    db.exec(schema("4-response-digest"));
    db.exec("ALTER TABLE receipts ADD COLUMN payment_id TEXT"); // what the previous release added at start-up
    const payer = `0x${"c".repeat(40)}`;
    const insert =
      db.prepare(`INSERT INTO receipts (id, network, asset, payer, nonce, route, request_fingerprint, x402_version,
      amount, pay_to, idempotency_key, payment_id, status, "transaction", created_at, updated_at, settled_at)
      VALUES (?, 'eip155:8453', ?, ?, ?, 'GET /v1/unlocks/upcoming', 'rf', 2, '20000', ?, ?, ?, 'settled', ?, ?, ?, ?)`);
    const at = "2026-11-10T00:00:00.000Z";
    const oldKey = "old-order-key-1";
    const oldId = "pay_old0000000000000002";
    const nonceOf = (i: number) => `0x${i.toString(16).padStart(64, "0")}`;
    insert.run("r-1", USDC, payer, nonceOf(1), PAY_TO, oldKey, null, tx(201), at, at, at);
    insert.run("r-2", USDC, payer, nonceOf(2), PAY_TO, null, oldId, tx(202), at, at, at);
    insert.run("r-3", USDC, payer, nonceOf(3), PAY_TO, null, null, tx(203), at, at, at);
    const idem = db.prepare(`INSERT INTO idempotency (payer, key, request_fingerprint, network, asset, nonce,
      receipt_id, incarnation, created_at, expires_at) VALUES (?, ?, 'rf', 'eip155:8453', ?, ?, ?, 'old', ?, ?)`);
    idem.run(payer, oldKey, USDC, nonceOf(1), "r-1", at, "2099-01-01T00:00:00.000Z");
    idem.run(payer, `payment-identifier ${oldId}`, USDC, nonceOf(2), "r-2", at, "2099-01-01T00:00:00.000Z");
    db.close();

    const secretKey = Buffer.alloc(32, 7);
    const lines: string[] = [];
    const ledger = openSqliteLedger(path, { log: (l) => lines.push(l), secretKey });
    const receipts = await ledger.receipts();
    expect(receipts.map((r) => [r.id, r.status, r.amount, r.transaction])).toEqual([
      ["r-1", "settled", "20000", tx(201)],
      ["r-2", "settled", "20000", tx(202)],
      ["r-3", "settled", "20000", tx(203)],
    ]);
    expect(lines).toEqual([
      "ledger upgrade: secrets stored as keyed digests (2 receipts, 2 idempotency records, 0 legacy receipts); every receipt is kept",
    ]);
    // The buyers' secrets still name their payments, for a replay and against reuse.
    const [r1, r2, r3] = receipts as [Receipt, Receipt, Receipt];
    expect(ledger.boundSecret(r1, { key: oldKey })).toBe("key");
    expect(ledger.boundSecret(r2, { paymentId: oldId })).toBe("payment_id");
    expect(ledger.boundSecret(r3, { key: oldKey, paymentId: oldId })).toBeUndefined();
    const claimWith = (nonce: number, key: string, requestFingerprint: string) =>
      ledger.claimAuthorization({
        identity: { network: "eip155:8453", asset: USDC, payer, nonce: nonceOf(nonce) },
        route: "GET /v1/unlocks/upcoming",
        requestFingerprint,
        x402Version: 2,
        amount: "20000",
        payTo: PAY_TO,
        idempotency: { key, ttlMs: 60_000 },
        incarnation: "new",
        lockTtlMs: 60_000,
        now: new Date("2026-11-11T00:00:00Z"),
      });
    expect(await claimWith(9, oldKey, "rf-other")).toEqual({
      kind: "idempotency_conflict",
      reason: "different_request",
    });
    const fresh = await claimWith(10, "new-key", "rf");
    if (fresh.kind !== "claimed") throw new Error(fresh.kind);
    expect(
      await ledger.bindIdempotencyKey({
        receiptId: fresh.receipt.id,
        identity: fresh.receipt.identity,
        paymentId: oldId,
        requestFingerprint: "rf",
        ttlMs: 60_000,
        incarnation: "new",
        now: new Date("2026-11-11T00:00:00Z"),
      }),
    ).toEqual({ ok: false, reason: "different_payment", secret: "payment_id" });
    await ledger.close();

    // No plaintext secret is left in the file, and a second open hashes nothing again.
    const raw = new Database(path, { readonly: true });
    const text = JSON.stringify([
      raw.prepare("SELECT * FROM receipts").all(),
      raw.prepare("SELECT * FROM idempotency").all(),
    ]);
    raw.close();
    expect(text).not.toContain(oldKey);
    expect(text).not.toContain(oldId);
    const again: string[] = [];
    const reopened = openSqliteLedger(path, { log: (l) => again.push(l), secretKey });
    expect(again).toEqual([]);
    expect(reopened.boundSecret((await reopened.receipt("r-1")) as Receipt, { key: oldKey })).toBe("key");
    await reopened.close();
  });

  it("today's schema opens without an upgrade line", async () => {
    const path = join(dir, "current.sqlite");
    await openSqliteLedger(path, { log: () => {} }).close();
    const lines: string[] = [];
    await openSqliteLedger(path, { log: (l) => lines.push(l) }).close();
    expect(lines).toEqual([]);
  });
});
