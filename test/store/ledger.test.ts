import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openLedger, type ReceiptDraft } from "../../src/store/ledger.js";

const dirs: string[] = [];
const tempDb = () => {
  const dir = mkdtempSync(join(tmpdir(), "ledger-"));
  dirs.push(dir);
  return join(dir, "nested", "ledger.sqlite");
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const draft = (over: Partial<ReceiptDraft> = {}): ReceiptDraft => ({
  route: "POST /v1/benchmark/endpoint",
  requestFingerprint: "rf",
  proofFingerprint: "pf",
  x402Version: 2,
  amount: "50000",
  network: "eip155:8453",
  asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
  payTo: "0xaa",
  ppRef: "ref",
  idempotencyKey: undefined,
  ...over,
});

describe("ledger", () => {
  it("creates its file on first start and keeps receipts and idempotency records across a reopen", () => {
    const path = tempDb();
    const a = openLedger(path);
    const id = a.beginReceipt(draft(), new Date("2026-11-22T10:00:00Z"));
    a.finishReceipt(id, { status: "settled", payer: "0xb0b", transaction: "0xtx", responseDigest: "d" }, new Date("2026-11-22T10:00:01Z"));
    a.startIdempotency("key", "rf", "pf", 60_000, 1000);
    a.completeIdempotency("key", { statusCode: 200, headers: { a: "b" }, body: "{}" });
    a.close();
    const b = openLedger(path);
    expect(b.receipts()).toEqual([
      expect.objectContaining({ id, status: "settled", transaction: "0xtx", payer: "0xb0b", settledAt: "2026-11-22T10:00:01.000Z", ppRef: "ref" }),
    ]);
    expect(b.receiptForProof("pf")?.id).toBe(id);
    expect(b.getIdempotency("key", 2000)?.response).toEqual({ statusCode: 200, headers: { a: "b" }, body: "{}" });
    b.close();
  });

  it("locks a proof once until released or expired", () => {
    const l = openLedger(":memory:");
    expect(l.acquireProofLock("p", 1000, 0)).toBe(true);
    expect(l.acquireProofLock("p", 1000, 500)).toBe(false);
    expect(l.acquireProofLock("p", 1000, 1000)).toBe(true); // expired lock is taken over
    l.releaseProofLock("p");
    expect(l.acquireProofLock("p", 1000, 1001)).toBe(true);
    l.close();
  });

  it("expires idempotency records after their TTL", () => {
    const l = openLedger(":memory:");
    expect(l.startIdempotency("k", "r", "p", 1000, 0)).toBe(true);
    expect(l.startIdempotency("k", "r", "p", 1000, 10)).toBe(false);
    expect(l.getIdempotency("k", 999)).toBeDefined();
    expect(l.getIdempotency("k", 1000)).toBeUndefined();
    expect(l.startIdempotency("k", "r2", "p2", 1000, 1000)).toBe(true);
    l.close();
  });

  it("counts paid calls of a route since a time, ignoring failed ones", () => {
    const l = openLedger(":memory:");
    const t = new Date("2026-11-22T00:00:05Z");
    l.finishReceipt(l.beginReceipt(draft({ proofFingerprint: "1" }), t), { status: "settled" });
    l.finishReceipt(l.beginReceipt(draft({ proofFingerprint: "2" }), t), { status: "failed" });
    l.beginReceipt(draft({ proofFingerprint: "3" }), t); // settling counts: it is being paid
    l.beginReceipt(draft({ proofFingerprint: "4" }), new Date("2026-11-21T23:59:59Z"));
    l.beginReceipt(draft({ proofFingerprint: "5", route: "GET /other" }), t);
    expect(l.countPaidSince("POST /v1/benchmark/endpoint", "2026-11-22T00:00:00.000Z")).toBe(2);
    expect(l.receiptForProof("2")).toBeUndefined(); // a failed settlement does not consume the proof
    l.close();
  });
});
