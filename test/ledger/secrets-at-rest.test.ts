import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { keyFileOf } from "../../src/ledger/secrets.js";
import { PRICES } from "../../src/operations/prices.js";
import { backupSqlite } from "../../src/ops/ledger-ops.js";
import { requirementsV2 } from "../../src/payments/terms/requirements.js";
import { TEST_PAY_TO, type TestApp, testApp } from "../helpers/app.js";
import { b64, v2Proof } from "../helpers/proofs.js";

/*
 * A copy of the ledger (the backup command's, or the file itself) holds no secret a client can present: every value
 * of every column a secret was stored in, tried as Idempotency-Key / retry key and as payment-identifier id with the
 * very proofs that paid, gets no stored response. The buyers' own secrets still replay.
 */
const dir = mkdtempSync(join(tmpdir(), "p402-secrets-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let t: TestApp | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

type Proof = ReturnType<typeof v2Proof> & { extensions?: unknown };
const withPaymentId = (p: Proof, id: string): Proof => ({
  ...p,
  extensions: { "payment-identifier": { info: { required: false, id } } },
});

describe("secrets at rest", () => {
  it("a copied ledger replays nothing; the buyers' own secrets still do", async () => {
    const path = join(dir, "ledger.sqlite");
    // Each call buys anew (the payer's re-read of an unchanged answer is tested in test/payments/core/reread.test.ts).
    t = await testApp({ LEDGER_PATH: path, PAID_REREAD_SECONDS: "0" });
    const app = t.app;
    const accepted = requirementsV2(PRICES.upcoming, {
      payTo: TEST_PAY_TO,
      maxTimeoutSeconds: t.config.paymentTimeoutSeconds,
      network: t.config.network,
    });
    const call = (proof: Proof, key?: string) =>
      app.inject({
        method: "GET",
        url: "/v1/unlocks/upcoming?days=30",
        headers: {
          "payment-signature": b64(proof),
          ...(key === undefined ? {} : { "idempotency-key": key }),
        },
      });

    // Three paid calls, one per kind of secret: the buyer's key, an issued retry key, a payment-identifier id.
    const withKey = v2Proof(accepted);
    const ownKey = "buyer-order-0001";
    const bare = v2Proof(accepted);
    const ownId = "pay_0123456789abcdef0123";
    const withId = withPaymentId(v2Proof(accepted), ownId);
    const first = [await call(withKey, ownKey), await call(bare), await call(withId)];
    expect(first.map((r) => r.statusCode)).toEqual([200, 200, 200]);
    const issued = first[1]?.headers["idempotency-key"] as string;
    expect(issued).toMatch(/^[A-Za-z0-9_-]{32}$/);
    const secrets = [ownKey, issued, ownId];

    const copy = join(dir, "stolen.sqlite");
    await backupSqlite(path, copy);
    const db = new Database(copy, { readonly: true });
    const stored = [
      ...db
        .prepare("SELECT idempotency_key AS v FROM receipts WHERE idempotency_key IS NOT NULL")
        .pluck()
        .all(),
      ...db.prepare("SELECT payment_id AS v FROM receipts WHERE payment_id IS NOT NULL").pluck().all(),
      ...db.prepare("SELECT key AS v FROM idempotency").pluck().all(),
    ] as string[];
    db.close();
    // Each secret left its digest on its receipt and in its idempotency row: 3 + 3 values, none a secret.
    expect(stored).toHaveLength(6);
    for (const v of stored) for (const s of secrets) expect(v).not.toContain(s);

    // What a thief would try: each stored value, and its body without the prefix, as key and as id, on every proof.
    const tries = [...new Set(stored.flatMap((v) => [v, v.slice(v.indexOf(":") + 1)]))];
    const replays: number[] = [];
    for (const v of tries)
      for (const proof of [withKey, bare, withId] as Proof[]) {
        const { extensions: _own, ...noId } = proof; // the thief has the proof (public on chain), not the id
        replays.push((await call(noId, v)).statusCode);
        replays.push((await call(withPaymentId(proof, v))).statusCode);
      }
    expect(replays.length).toBe(tries.length * 6);
    expect(replays.filter((s) => s === 200)).toEqual([]);

    // The buyers' own secrets replay their responses, byte for byte.
    const again = [await call(withKey, ownKey), await call(bare, issued), await call(withId)];
    expect(again.map((r) => r.statusCode)).toEqual([200, 200, 200]);
    expect(again.map((r) => r.body)).toEqual(first.map((r) => r.body));

    // The key that makes a digest checkable is not in the ledger or its backup: it is in its own owner-only file.
    expect(statSync(keyFileOf(path)).mode & 0o777).toBe(0o600);
  });
});
