import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { openSqliteLedger } from "../../src/store/ledger-sqlite.js";
import { ledgerContract } from "./ledger-contract.js";

const dirs: string[] = [];
const tempDb = () => {
  const dir = mkdtempSync(join(tmpdir(), "ledger-"));
  dirs.push(dir);
  return join(dir, "nested", "ledger.sqlite");
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

ledgerContract("sqlite :memory:", () => openSqliteLedger(":memory:"));
ledgerContract("sqlite file", () => openSqliteLedger(tempDb()));

describe("sqlite ledger", () => {
  const identity = {
    network: "eip155:8453",
    asset: "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913",
    payer: "0xb0b0",
    nonce: "0x01",
  };

  it("creates its file on first start and keeps receipts, responses and keys across a reopen", async () => {
    const path = tempDb();
    const a = openSqliteLedger(path);
    const now = new Date("2026-11-22T10:00:00Z");
    const c = await a.claimAuthorization({
      identity,
      route: "GET /x",
      requestFingerprint: "rf",
      x402Version: 2,
      amount: "50000",
      payTo: "0xaa",
      idempotency: { key: "k", ttlMs: 86_400_000 },
      incarnation: "i1",
      lockTtlMs: 1000,
      now,
    });
    if (c.kind !== "claimed") throw new Error(c.kind);
    await a.beginSettlement(c.receipt.id, "i1", now);
    await a.recordSettlement(c.receipt.id, {
      status: "settled",
      transaction: "0xtx",
      response: {
        value: { statusCode: 200, headers: {}, body: "{}" },
        expiresAt: new Date("2026-11-23T10:00:00Z"),
      },
      now,
    });
    await a.close();
    const b = openSqliteLedger(path);
    expect(await b.receipts()).toEqual([
      expect.objectContaining({
        id: c.receipt.id,
        status: "settled",
        transaction: "0xtx",
        settledAt: now.toISOString(),
      }),
    ]);
    const again = await b.claimAuthorization({
      identity,
      route: "GET /x",
      requestFingerprint: "other",
      x402Version: 2,
      amount: "50000",
      payTo: "0xaa",
      idempotency: { key: "k", ttlMs: 86_400_000 },
      incarnation: "i2",
      lockTtlMs: 1000,
      now,
    });
    expect(again).toEqual({ kind: "idempotency_conflict", reason: "different_request" });
    await b.close();
  });

  it("sets a pre-port ledger file aside instead of failing on it", async () => {
    const path = tempDb();
    const a = openSqliteLedger(path); // creates the directory
    await a.close();
    rmSync(path);
    const old = new Database(path);
    old.exec(
      "CREATE TABLE receipts (id TEXT PRIMARY KEY, proof_fingerprint TEXT); INSERT INTO receipts VALUES ('r', 'p');",
    );
    old.close();
    const b = openSqliteLedger(path);
    expect(await b.receipts()).toEqual([]);
    await b.close();
    const check = new Database(path);
    expect(check.prepare("SELECT COUNT(*) AS n FROM receipts_legacy").get()).toEqual({ n: 1 });
    check.close();
  });
});
