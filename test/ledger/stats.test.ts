import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ClaimRequest, LedgerPort } from "../../src/ledger/port.js";
import { openPostgresLedger } from "../../src/ledger/postgres.js";
import { openSqliteLedger } from "../../src/ledger/sqlite.js";
import { startTestPostgres, type TestPostgres } from "../helpers/postgres.js";

/* The read-only in-flight figures behind the ledger metrics, on both adapters: counts per in-flight state and when the
 * oldest settlement still open began. */
let server: TestPostgres;
beforeAll(async () => {
  server = await startTestPostgres();
}, 120_000);
afterAll(async () => {
  await server?.stop();
});

const T0 = new Date("2026-11-22T12:00:00.000Z");
const at = (s: number) => new Date(T0.getTime() + s * 1000);
const req = (n: number, now: Date): ClaimRequest => ({
  identity: {
    network: "eip155:8453",
    asset: "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913",
    payer: "0x000000000000000000000000000000000000b0b0",
    nonce: `0x${n.toString(16).padStart(64, "0")}`,
  },
  route: "GET /v1/unlocks/upcoming",
  requestFingerprint: `rf-${n}`,
  x402Version: 2,
  amount: "20000",
  payTo: "0x00000000000000000000000000000000000000aa",
  incarnation: "inc",
  lockTtlMs: 60_000,
  now,
});

for (const [name, open] of [
  ["sqlite", async () => openSqliteLedger(":memory:")],
  ["postgres", async () => openPostgresLedger(await server.freshSchema())],
] as const) {
  describe(`${name}: inFlightStats`, () => {
    let ledger: LedgerPort;
    beforeAll(async () => {
      ledger = await open();
      await ledger.startIncarnation("inc", T0);
    });
    afterAll(() => ledger.close());

    it("is empty for an empty ledger", async () => {
      expect(await ledger.inFlightStats?.()).toEqual({
        byStatus: { claimed: 0, settling: 0, pending: 0, unknown: 0 },
        oldestSettlingSince: null,
      });
    });

    it("counts each in-flight state and names the oldest settlement begun", async () => {
      const ids: string[] = [];
      for (let n = 1; n <= 5; n++) {
        const c = await ledger.claimAuthorization(req(n, at(n)));
        if (c.kind !== "claimed") throw new Error(c.kind);
        ids.push(c.receipt.id);
      }
      const [a, b, c, d] = ids as [string, string, string, string, string];
      expect(await ledger.beginSettlement(a, "inc", at(100))).toBe(true);
      expect(await ledger.beginSettlement(b, "inc", at(50))).toBe(true);
      expect(await ledger.beginSettlement(c, "inc", at(60))).toBe(true);
      await ledger.recordSettlement(c, {
        status: "settled",
        transaction: `0x${"c".repeat(64)}`,
        now: at(61),
      });
      expect(await ledger.beginSettlement(d, "inc", at(70))).toBe(true);
      await ledger.recordFailure(d, { status: "unknown", error: "timeout", now: at(71) });
      expect(await ledger.inFlightStats?.()).toEqual({
        byStatus: { claimed: 1, settling: 2, pending: 0, unknown: 1 },
        oldestSettlingSince: at(50).toISOString(),
      });
    });
  });
}
