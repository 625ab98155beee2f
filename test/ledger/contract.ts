import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ClaimRequest, LedgerPort, PaymentIdentity, Receipt } from "../../src/ledger/port.js";

/**
 * The ledger port's contract, run against every adapter (SQLite here, PostgreSQL where a database is available):
 * `ledgerContract("sqlite", () => openLedger(":memory:"))`. The factory returns an empty ledger each time.
 */
export function ledgerContract(name: string, factory: () => Promise<LedgerPort> | LedgerPort): void {
  describe(`ledger port contract: ${name}`, () => {
    let ledger: LedgerPort;
    beforeEach(async () => {
      ledger = await factory();
    });
    afterEach(async () => {
      await ledger.close();
    });

    const T0 = new Date("2026-11-22T12:00:00.000Z");
    const at = (ms: number) => new Date(T0.getTime() + ms);
    const PAYER = "0x000000000000000000000000000000000000B0B0";
    const nonce = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;
    const identity = (n: number, over: Partial<PaymentIdentity> = {}): PaymentIdentity => ({
      network: "eip155:8453",
      asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
      payer: PAYER,
      nonce: nonce(n),
      ...over,
    });
    const req = (n: number, over: Partial<ClaimRequest> = {}): ClaimRequest => ({
      identity: identity(n),
      route: "GET /v1/unlocks/upcoming",
      requestFingerprint: "rf-1",
      x402Version: 2,
      amount: "20000",
      payTo: "0x00000000000000000000000000000000000000aa",
      ppRef: "ref",
      validBefore: "9999999999",
      incarnation: "inc-a",
      lockTtlMs: 60_000,
      now: T0,
      ...over,
    });
    const response = { statusCode: 200, headers: { "content-type": "application/json" }, body: '{"a":1}' };

    async function claimed(r: ClaimRequest) {
      const c = await ledger.claimAuthorization(r);
      if (c.kind !== "claimed") throw new Error(`expected claimed, got ${c.kind}`);
      return c.receipt;
    }

    it("stores the identity normalised: CAIP-2 network, lower-case hex", async () => {
      const r = await claimed(
        req(1, {
          identity: identity(1, { network: "base", nonce: nonce(1).toUpperCase().replace("0X", "0x") }),
        }),
      );
      expect(r.identity).toEqual({
        network: "eip155:8453",
        asset: "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913",
        payer: PAYER.toLowerCase(),
        nonce: nonce(1),
      });
      expect(r.status).toBe("claimed");
      expect(r.incarnation).toBe("inc-a");
      expect(r.validBefore).toBe("9999999999");
      // The same authorization in another spelling is the same payment.
      expect((await ledger.claimAuthorization(req(1))).kind).toBe("in_progress");
      expect((await ledger.receiptFor(identity(1, { network: "BASE" })))?.id).toBe(r.id);
    });

    it("one authorization, one claim: concurrent claims of the same identity, exactly one wins", async () => {
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          ledger.claimAuthorization(req(7, { requestFingerprint: `rf-${i}` })),
        ),
      );
      expect(results.filter((r) => r.kind === "claimed")).toHaveLength(1);
      expect(results.filter((r) => r.kind === "in_progress")).toHaveLength(19);
      expect(await ledger.receipts()).toHaveLength(1);
    });

    it("a different nonce, payer, asset or network is a different payment", async () => {
      await claimed(req(1));
      await claimed(req(2));
      await claimed(
        req(1, { identity: identity(1, { payer: "0x000000000000000000000000000000000000c0c0" }) }),
      );
      await claimed(req(1, { identity: identity(1, { network: "eip155:84532" }) }));
      await claimed(
        req(1, { identity: identity(1, { asset: "0x0000000000000000000000000000000000000001" }) }),
      );
      expect(await ledger.receipts()).toHaveLength(5);
    });

    it("a released claim is gone and the authorization can be claimed again", async () => {
      const r = await claimed(req(1, { idempotency: { key: "k", ttlMs: 60_000 } }));
      await ledger.releaseClaim(r.id, "inc-b"); // not the holder: nothing happens
      expect((await ledger.claimAuthorization(req(1))).kind).toBe("in_progress");
      await ledger.releaseClaim(r.id, "inc-a");
      expect(await ledger.receipts()).toEqual([]);
      // The key went with it: another proof may use it now.
      await claimed(req(2, { idempotency: { key: "k", ttlMs: 60_000 } }));
    });

    it("an expired claim (hung request) is taken over; a settling one never expires", async () => {
      const r = await claimed(req(1, { lockTtlMs: 1000 }));
      expect((await ledger.claimAuthorization(req(1, { now: at(999), incarnation: "inc-b" }))).kind).toBe(
        "in_progress",
      );
      const again = await claimed(req(1, { now: at(1000), incarnation: "inc-b" }));
      expect(again.id).toBe(r.id);
      expect(again.incarnation).toBe("inc-b");
      expect(await ledger.beginSettlement(r.id, "inc-a", at(1001))).toBe(false); // the old holder lost it
      expect(await ledger.beginSettlement(r.id, "inc-b", at(1001))).toBe(true);
      const later = await ledger.claimAuthorization(req(1, { now: at(10_000_000), incarnation: "inc-c" }));
      expect(later.kind).toBe("in_progress");
    });

    it("settles with its response in one write and answers later claims with it (paid)", async () => {
      const r = await claimed(req(1));
      expect(await ledger.beginSettlement(r.id, "inc-a", at(1))).toBe(true);
      const s = await ledger.recordSettlement(r.id, {
        status: "settled",
        transaction: "0xaaa",
        response: { value: response, expiresAt: at(86_400_000) },
        now: at(2),
      });
      expect(s.ok).toBe(true);
      const c = await ledger.claimAuthorization(req(1, { requestFingerprint: "other", now: at(3) }));
      expect(c).toMatchObject({
        kind: "paid",
        receipt: {
          status: "settled",
          transaction: "0xaaa",
          requestFingerprint: "rf-1",
          response,
          settledAt: at(2).toISOString(),
          responseExpiresAt: at(86_400_000).toISOString(),
        },
      });
    });

    it("credits a transaction to one receipt only", async () => {
      const a = await claimed(req(1));
      const b = await claimed(req(2));
      await ledger.beginSettlement(a.id, "inc-a", T0);
      await ledger.beginSettlement(b.id, "inc-a", T0);
      expect(
        (await ledger.recordSettlement(a.id, { status: "settled", transaction: "0xt", now: T0 })).ok,
      ).toBe(true);
      expect(await ledger.recordSettlement(b.id, { status: "settled", transaction: "0xt", now: T0 })).toEqual(
        {
          ok: false,
          reason: "transaction_already_credited",
          receiptId: a.id,
        },
      );
      expect((await ledger.receipt(b.id))?.status).toBe("settling");
      // Recording the same transaction again on its own receipt is harmless (pending → settled).
      expect(
        (await ledger.recordSettlement(a.id, { status: "settled", transaction: "0xt", now: T0 })).ok,
      ).toBe(true);
      expect(
        await ledger.recordSettlement("nope", { status: "settled", transaction: "0xu", now: T0 }),
      ).toEqual({
        ok: false,
        reason: "not_found",
      });
    });

    it("a failed settlement frees the authorization and the key; an unknown one is unresolved until reclaimed", async () => {
      const a = await claimed(req(1, { idempotency: { key: "k", ttlMs: 60_000 } }));
      await ledger.beginSettlement(a.id, "inc-a", T0);
      await ledger.recordFailure(a.id, { status: "failed", error: "insufficient_funds", now: at(1) });
      expect((await ledger.receipt(a.id))?.error).toBe("insufficient_funds");
      const again = await claimed(req(1, { now: at(2) }));
      expect(again.id).toBe(a.id);
      await ledger.beginSettlement(a.id, "inc-a", at(3));
      await ledger.recordFailure(a.id, { status: "unknown", error: "timeout", now: at(4) });
      const u = await ledger.claimAuthorization(req(1, { now: at(5) }));
      expect(u).toMatchObject({ kind: "unresolved", receipt: { id: a.id, status: "unknown" } });
      expect((await ledger.unresolvedReceipts(10)).map((r) => r.id)).toEqual([a.id]);
      expect(await ledger.reclaimUnresolved(a.id, "inc-b", 1000, at(6))).toBe(true);
      expect(await ledger.reclaimUnresolved(a.id, "inc-c", 1000, at(6))).toBe(false);
      expect((await ledger.receipt(a.id))?.status).toBe("claimed");
      expect(await ledger.unresolvedReceipts(10)).toEqual([]);
    });

    it("an unknown receipt resolved from the chain becomes paid, and keeps the response delivered later", async () => {
      const a = await claimed(req(1));
      await ledger.beginSettlement(a.id, "inc-a", T0);
      await ledger.recordFailure(a.id, { status: "unknown", error: "timeout", now: T0 });
      expect(
        (await ledger.recordSettlement(a.id, { status: "settled", transaction: "0xc", now: at(1) })).ok,
      ).toBe(true);
      const paid = await ledger.claimAuthorization(req(1, { now: at(2) }));
      expect(paid).toMatchObject({ kind: "paid", receipt: { response: null, responseExpiresAt: null } });
      await ledger.storeResponse(a.id, response, at(1000), at(3));
      expect(await ledger.receipt(a.id)).toMatchObject({
        response,
        responseExpiresAt: at(1000).toISOString(),
      });
    });

    it("Idempotency-Keys are scoped to the payer and bound to one request and one authorization", async () => {
      const key = { key: "key-1", ttlMs: 60_000 };
      await claimed(req(1, { idempotency: key }));
      expect(await ledger.claimAuthorization(req(2, { idempotency: key }))).toEqual({
        kind: "idempotency_conflict",
        reason: "different_payment",
      });
      expect(
        await ledger.claimAuthorization(req(1, { idempotency: key, requestFingerprint: "rf-2" })),
      ).toEqual({
        kind: "idempotency_conflict",
        reason: "different_request",
      });
      expect((await ledger.claimAuthorization(req(1, { idempotency: key }))).kind).toBe("in_progress");
      // Another payer's identical key is another key.
      const other = identity(1, { payer: "0x000000000000000000000000000000000000c0c0" });
      await claimed(req(1, { identity: other, idempotency: key }));
    });

    it("binds a key after verification: one request and one authorization per payer's key, named on the receipt", async () => {
      const a = await claimed(req(1));
      const b = await claimed(req(2));
      const bind = (receiptId: string, n: number, over: { requestFingerprint?: string; now?: Date } = {}) =>
        ledger.bindIdempotencyKey({
          receiptId,
          identity: identity(n),
          key: "bound-1",
          requestFingerprint: over.requestFingerprint ?? "rf-1",
          ttlMs: 1000,
          incarnation: "inc-a",
          now: over.now ?? T0,
        });
      expect((await ledger.receipt(a.id))?.idempotencyKey).toBeNull(); // the claim alone writes no key
      expect(await bind(a.id, 1)).toEqual({ ok: true });
      const boundA = (await ledger.receipt(a.id)) as Receipt;
      expect(ledger.boundSecret(boundA, { key: "bound-1" })).toBe("key");
      expect(boundA.idempotencyKey).not.toContain("bound-1"); // only a keyed digest is stored
      expect(ledger.boundSecret(boundA, { key: "bound-2" })).toBeUndefined();
      expect(await bind(a.id, 1)).toEqual({ ok: true }); // the same binding again (a reclaimed retry)
      expect(await bind(b.id, 2)).toEqual({ ok: false, reason: "different_payment", secret: "key" });
      expect(await bind(a.id, 1, { requestFingerprint: "rf-2" })).toEqual({
        ok: false,
        reason: "different_request",
        secret: "key",
      });
      expect(await bind(b.id, 2, { now: at(1000) })).toEqual({ ok: true }); // expired: free again
    });

    it("binds a payment-identifier id like a key: same id and payment again is fine, another payment conflicts", async () => {
      const a = await claimed(req(1));
      const b = await claimed(req(2));
      const id = "pay_7d5d747be160e280504c099d984bcfe0";
      const bind = (receiptId: string, n: number, over: { key?: string; paymentId?: string } = {}) =>
        ledger.bindIdempotencyKey({
          receiptId,
          identity: identity(n),
          ...over,
          requestFingerprint: "rf-1",
          ttlMs: 1000,
          incarnation: "inc-a",
          now: T0,
        });
      expect(await bind(a.id, 1, { paymentId: id })).toEqual({ ok: true });
      const boundA = (await ledger.receipt(a.id)) as Receipt;
      expect(boundA).toMatchObject({ idempotencyKey: null });
      expect(ledger.boundSecret(boundA, { paymentId: id })).toBe("payment_id");
      expect(ledger.boundSecret(boundA, { key: id })).toBeUndefined(); // an id is not a key of the same text
      expect(await bind(a.id, 1, { paymentId: id })).toEqual({ ok: true });
      expect(await bind(b.id, 2, { paymentId: id })).toEqual({
        ok: false,
        reason: "different_payment",
        secret: "payment_id",
      });
      // A key and an id together: both are checked before either is written, and both name the receipt.
      expect(await bind(b.id, 2, { key: "k-2", paymentId: id })).toMatchObject({ ok: false });
      expect(await ledger.receipt(b.id)).toMatchObject({ paymentId: null, idempotencyKey: null });
      expect(await bind(b.id, 2, { key: "k-2", paymentId: "pay_0000000000000000000002" })).toEqual({
        ok: true,
      });
      const boundB = (await ledger.receipt(b.id)) as Receipt;
      expect(ledger.boundSecret(boundB, { paymentId: "pay_0000000000000000000002" })).toBe("payment_id");
      expect(ledger.boundSecret(boundB, { key: "k-2" })).toBe("key");
      // An id and a key with the same text are different secrets.
      const c = await claimed(req(3));
      expect(await bind(c.id, 3, { key: id })).toEqual({ ok: true });
      // The binding itself is scoped to the payer: the payments core refuses another payer's id before it binds
      // (paymentIdHeldByOther).
      const d = await claimed(
        req(4, { identity: identity(4, { payer: "0x000000000000000000000000000000000000c0c0" }) }),
      );
      expect(
        await ledger.bindIdempotencyKey({
          receiptId: d.id,
          identity: identity(4, { payer: "0x000000000000000000000000000000000000c0c0" }),
          paymentId: id,
          requestFingerprint: "rf-1",
          ttlMs: 1000,
          incarnation: "inc-a",
          now: T0,
        }),
      ).toEqual({ ok: true });
      // A reclaimed receipt starts with no secret of its own until its new request binds one.
      await ledger.recordFailure(a.id, { status: "failed", error: "x", now: T0 });
      expect((await ledger.receipt((await claimed(req(1, { now: at(1) }))).id))?.paymentId).toBeNull();
    });

    it("tells whether another payer holds a payment-identifier id (a live record of it), across payers", async () => {
      const OTHER = "0x000000000000000000000000000000000000C0C0";
      const id = "pay_3b1f0c5e9a7d4c2b8e6f1a0d9c8b7a65";
      expect(await ledger.paymentIdHeldByOther(id, OTHER, T0)).toBe(false);
      const a = await claimed(req(1));
      // A key of the same text is not the id.
      const asKey = await ledger.bindIdempotencyKey({
        receiptId: a.id,
        identity: identity(1),
        key: id,
        requestFingerprint: "rf-1",
        ttlMs: 1000,
        incarnation: "inc-a",
        now: T0,
      });
      expect(asKey).toEqual({ ok: true });
      expect(await ledger.paymentIdHeldByOther(id, OTHER, T0)).toBe(false);
      const b = await claimed(req(2));
      await ledger.bindIdempotencyKey({
        receiptId: b.id,
        identity: identity(2),
        paymentId: id,
        requestFingerprint: "rf-1",
        ttlMs: 1000,
        incarnation: "inc-a",
        now: T0,
      });
      expect(await ledger.paymentIdHeldByOther(id, OTHER, T0)).toBe(true);
      expect(await ledger.paymentIdHeldByOther(id, OTHER.toLowerCase(), at(999))).toBe(true);
      // The holder itself, however its address is spelled, is not "another payer".
      expect(await ledger.paymentIdHeldByOther(id, PAYER, T0)).toBe(false);
      expect(await ledger.paymentIdHeldByOther(id, PAYER.toLowerCase(), T0)).toBe(false);
      expect(await ledger.paymentIdHeldByOther("pay_00000000000000000000000000000000", OTHER, T0)).toBe(
        false,
      );
      // Released with its record when the record expires, as the payer's own reuse of it is.
      expect(await ledger.paymentIdHeldByOther(id, OTHER, at(1000))).toBe(false);
      // And when the claim that bound it is given back (its proof refused): nothing was bought with it.
      const c = await claimed(req(3, { now: at(2000) }));
      await ledger.bindIdempotencyKey({
        receiptId: c.id,
        identity: identity(3),
        paymentId: id,
        requestFingerprint: "rf-1",
        ttlMs: 1000,
        incarnation: "inc-a",
        now: at(2000),
      });
      expect(await ledger.paymentIdHeldByOther(id, OTHER, at(2000))).toBe(true);
      await ledger.releaseClaim(c.id, "inc-a");
      expect(await ledger.paymentIdHeldByOther(id, OTHER, at(2000))).toBe(false);
    });

    it("expires idempotency records and stored responses at their time, not before", async () => {
      const a = await claimed(req(1, { idempotency: { key: "k", ttlMs: 1000 } }));
      await ledger.beginSettlement(a.id, "inc-a", T0);
      await ledger.recordSettlement(a.id, {
        status: "settled",
        transaction: "0x1",
        response: { value: response, expiresAt: at(2000) },
        now: T0,
      });
      expect(
        (await ledger.claimAuthorization(req(2, { idempotency: { key: "k", ttlMs: 1000 }, now: at(999) })))
          .kind,
      ).toBe("idempotency_conflict");
      expect(await ledger.purgeExpired(at(999))).toEqual({ idempotency: 0, responses: 0 });
      // Past its TTL the key no longer binds, even before a purge.
      expect(
        (await ledger.claimAuthorization(req(2, { idempotency: { key: "k", ttlMs: 1000 }, now: at(1000) })))
          .kind,
      ).toBe("claimed");
      expect(await ledger.purgeExpired(at(2000))).toEqual({ idempotency: 1, responses: 1 });
      expect(await ledger.receipt(a.id)).toMatchObject({
        status: "settled",
        response: null,
        responseExpiresAt: at(2000).toISOString(),
      });
    });

    it("reserves provisional cap slots atomically: 50 concurrent claims under a cap of 3 → 3 claimed", async () => {
      const cap = { limit: 3, since: new Date("2026-11-22T00:00:00.000Z") };
      const results = await Promise.all(
        Array.from({ length: 50 }, (_, i) => ledger.claimAuthorization(req(100 + i, { cap }))),
      );
      expect(results.filter((r) => r.kind === "claimed")).toHaveLength(3);
      expect(results.filter((r) => r.kind === "cap_reached")).toHaveLength(47);
      // A released slot is free again; a failed settlement frees its slot too.
      const first = results.find((r) => r.kind === "claimed");
      if (first?.kind !== "claimed") throw new Error("unreachable");
      await ledger.releaseClaim(first.receipt.id, "inc-a");
      expect((await ledger.claimAuthorization(req(200, { cap }))).kind).toBe("claimed");
      expect((await ledger.claimAuthorization(req(201, { cap }))).kind).toBe("cap_reached");
      expect(await ledger.countPaidSince("GET /v1/unlocks/upcoming", cap.since)).toBe(3);
      expect(await ledger.countPaidSince("GET /v1/unlocks/upcoming", at(1))).toBe(0);
      expect(await ledger.countPaidSince("POST /other", cap.since)).toBe(0);
    });

    it("releases a dead incarnation's claims and keys, hands its settling receipts over as unknown", async () => {
      await ledger.startIncarnation("inc-a", T0);
      await ledger.startIncarnation("inc-b", at(1));
      const held = await claimed(req(1, { idempotency: { key: "k", ttlMs: 86_400_000 } }));
      const settling = await claimed(req(2));
      await ledger.beginSettlement(settling.id, "inc-a", T0);
      const live = await claimed(req(3, { incarnation: "inc-b" }));
      const done = await claimed(req(4));
      await ledger.beginSettlement(done.id, "inc-a", T0);
      await ledger.recordSettlement(done.id, { status: "settled", transaction: "0xd", now: T0 });

      const released = await ledger.releaseIncarnation("inc-a", at(5));
      expect(released.releasedClaims).toBe(1);
      expect(released.unresolved.map((r) => [r.id, r.status])).toEqual([[settling.id, "unknown"]]);
      expect(await ledger.receipt(held.id)).toBeUndefined();
      expect((await ledger.receipt(live.id))?.status).toBe("claimed"); // the live incarnation's are untouched
      expect((await ledger.receipt(done.id))?.status).toBe("settled");
      // The buyer's retry is not blocked: same key, same proof → claimed at once.
      expect(
        (
          await ledger.claimAuthorization(
            req(1, { idempotency: { key: "k", ttlMs: 1000 }, incarnation: "inc-b", now: at(6) }),
          )
        ).kind,
      ).toBe("claimed");
      const incs = await ledger.incarnations();
      expect(incs.find((i) => i.id === "inc-a")?.endedAt).toBe(at(5).toISOString());
      expect(incs.find((i) => i.id === "inc-b")?.endedAt).toBeNull();
      await ledger.heartbeat("inc-b", at(9));
      await ledger.endIncarnation("inc-b", at(10));
      expect((await ledger.incarnations()).find((i) => i.id === "inc-b")).toMatchObject({
        heartbeatAt: at(10).toISOString(),
        endedAt: at(10).toISOString(),
      });
    });
  });
}
