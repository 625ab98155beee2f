import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { openSqliteLedger } from "../../src/ledger/sqlite.js";
import { claimNew, settleNew, testClaim } from "../helpers/ledger.js";
import { ledgerContract } from "./contract.js";

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

  it("keeps one copy of a body many receipts delivered, and drops it once no receipt keeps it", async () => {
    const path = tempDb();
    const ledger = openSqliteLedger(path);
    const now = new Date("2026-11-22T10:00:00Z");
    const body = JSON.stringify({
      items: Array.from({ length: 200 }, (_, i) => ({ i, note: "x".repeat(50) })),
    });
    const ids: string[] = [];
    for (const nonce of ["0x01", "0x02", "0x03"]) {
      const rec = await settleNew(ledger, testClaim(nonce, now), {
        status: "settled",
        transaction: `0xtx${nonce}`,
        response: {
          value: { statusCode: 200, headers: { "Content-Type": "application/json" }, body },
          expiresAt: new Date(now.getTime() + (nonce === "0x03" ? 7_200_000 : 3_600_000)),
        },
      });
      if (!rec.ok) throw new Error(rec.reason);
      ids.push(rec.receipt.id);
      expect(rec.receipt.response?.body).toBe(body);
    }
    const db = new Database(path, { readonly: true });
    const bodies = db.prepare("SELECT COUNT(*) AS n FROM response_bodies");
    expect(bodies.get()).toEqual({ n: 1 });
    // Read back from the file, each receipt has the whole response.
    for (const id of ids) expect((await ledger.receipt(id))?.response?.body).toBe(body);

    // Two of three responses expire: the body stays for the third; then it goes too.
    await ledger.purgeExpired(new Date(now.getTime() + 3_600_000));
    expect(bodies.get()).toEqual({ n: 1 });
    expect((await ledger.receipt(ids[2] as string))?.response?.body).toBe(body);
    await ledger.purgeExpired(new Date(now.getTime() + 7_200_000));
    expect(bodies.get()).toEqual({ n: 0 });
    expect((await ledger.receipt(ids[2] as string))?.response).toBeNull();
    db.close();
    await ledger.close();
  });

  it("still reads a response stored whole in the receipt row (a ledger written before response_bodies)", async () => {
    const path = tempDb();
    const a = openSqliteLedger(path);
    const claimed = await claimNew(a, testClaim("0x01", new Date("2026-11-22T10:00:00Z")));
    await a.close();
    const old = { statusCode: 200, headers: { "Cache-Control": "private, no-store" }, body: '{"old":true}' };
    const db = new Database(path);
    db.prepare(
      "UPDATE receipts SET status = 'settled', \"transaction\" = '0xold', response = ?, response_expires_at = ? WHERE id = ?",
    ).run(JSON.stringify(old), "2026-11-23T10:00:00.000Z", claimed.id);
    db.close();
    const b = openSqliteLedger(path);
    expect((await b.receipt(claimed.id))?.response).toEqual(old);
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
