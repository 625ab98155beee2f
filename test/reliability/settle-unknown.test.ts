import { decodePaymentResponseHeader } from "@x402/core/http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openPostgresLedger } from "../../src/ledger/postgres.js";
import { PRICES } from "../../src/operations/prices.js";
import { requirementsV2 } from "../../src/payments/terms/requirements.js";
import {
  type FaultFacilitator,
  type HttpApp,
  startFaultFacilitator,
  startHttpApp,
  UPCOMING_PATH,
} from "../helpers/fault-facilitator.js";
import { useFaultStack } from "../helpers/fault-stack.js";
import { startTestPostgres, type TestPostgres } from "../helpers/postgres.js";
import { b64, v2Proof } from "../helpers/proofs.js";

/*
 * The facilitator answers /settle `success: false` (transaction_failed, no hash) — what @x402/evm
 * answers when its broadcast call throws — and the transfer lands later. The landing is the fake's: `landAfterMs`
 * after the answer and after `landGate` opens, which the test holds closed while it checks what the buyer is told.
 * Every wait is that gate or a barrier on the transfer, never a sleep an assertion depends on.
 */

/** No settlement happened for this answer: no PAYMENT-RESPONSE, or one that says `success: false` and why. */
function expectNoSettlement(res: Response) {
  const header = res.headers.get("payment-response");
  if (header === null) return;
  const settlement = decodePaymentResponseHeader(header);
  expect(settlement.success).toBe(false);
  expect(settlement.errorReason).toBeTruthy();
  expect(settlement.transaction).toBe("");
}

const stack = useFaultStack();
const PAYER = "0x000000000000000000000000000000000000b0b0";

const pay = (app: HttpApp, proof: string, headers: Record<string, string> = {}) =>
  fetch(`${app.url}${UPCOMING_PATH}`, { headers: { "payment-signature": proof, ...headers } });

function gate() {
  let open: () => void = () => {};
  const promise = new Promise<void>((r) => {
    open = r;
  });
  return { promise, open };
}

function proofFor(app: HttpApp, validBefore?: number) {
  const p = v2Proof(
    requirementsV2(PRICES.upcoming, {
      payTo: "0x00000000000000000000000000000000000000aa",
      maxTimeoutSeconds: app.config.paymentTimeoutSeconds,
      network: app.config.network,
    }),
  );
  if (validBefore !== undefined) p.payload.authorization.validBefore = String(validBefore);
  return { encoded: b64(p), nonce: p.payload.authorization.nonce };
}

/** "Being confirmed, retry with the same proof": a 409 with Retry-After, no fresh PAYMENT-REQUIRED, no content. */
async function expectConfirming(res: Response) {
  expect(res.status).toBe(409);
  expect(res.headers.get("payment-required")).toBeNull();
  expectNoSettlement(res); // no settlement: at most PAYMENT-RESPONSE `success: false` with its reason
  expect(Number(res.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
  const body = (await res.json()) as { type: string; detail: string; unlocks?: unknown };
  expect(body.type).toMatch(/settlement-unconfirmed$/);
  expect(body.detail).toMatch(/same proof/);
  expect(body.unlocks).toBeUndefined();
}

async function expectDelivered(res: Response, fac: FaultFacilitator, nonce: string) {
  expect(res.status).toBe(200);
  const settlement = decodePaymentResponseHeader(res.headers.get("payment-response") as string);
  expect(settlement.transaction).toBe(fac.transfers.get(nonce));
  expect(((await res.json()) as { unlocks: unknown[] }).unlocks).toBeInstanceOf(Array);
}

/** A stack whose first settle of a fresh proof failed with no hash; its transfer waits for `land.open()`. */
async function failedOnce() {
  const fac = await startFaultFacilitator();
  stack.fac = fac;
  const http = await startHttpApp(fac.url, {}, { chain: fac.chain });
  stack.http = http;
  const land = gate();
  fac.settle = "fail-then-transfer";
  fac.landGate = land.promise;
  const proof = proofFor(http);
  const first = await pay(http, proof.encoded);
  // Sent without a key: the answer issues one, and only a retry that sends it back recovers the payment.
  const key = { "idempotency-key": first.headers.get("idempotency-key") as string };
  await expectConfirming(first);
  return { fac, http, land, proof, key };
}

describe("a settle failure with no transaction is an unknown until the chain proves it", () => {
  for (const landAfterMs of [300, 1500])
    for (const key of [undefined, "order-19"])
      it(`transfer lands ${landAfterMs} ms after the failed answer, ${key ? "with" : "without"} an Idempotency-Key: confirming until it lands, then the retry delivers it`, async () => {
        const fac = await startFaultFacilitator();
        stack.fac = fac;
        const http = await startHttpApp(fac.url, {}, { chain: fac.chain });
        stack.http = http;
        let headers: Record<string, string> = key ? { "idempotency-key": key } : {};
        const land = gate();
        fac.settle = "fail-then-transfer";
        fac.landAfterMs = landAfterMs;
        fac.landGate = land.promise;
        const proof = proofFor(http);

        const first = await pay(http, proof.encoded, headers);
        // Without a key of its own, the buyer retries with the one the answer issued.
        if (key)
          expect(first.headers.get("idempotency-key")).toBeNull(); // the buyer's own key stands
        else headers = { "idempotency-key": first.headers.get("idempotency-key") as string };
        await expectConfirming(first);
        expect((await http.ledger.receipts()).map((r) => r.status)).toEqual(["unknown"]);
        // A retry before the transfer lands: still confirming (the second broadcast is refused like the first).
        await expectConfirming(await pay(http, proof.encoded, headers));
        expect(fac.transfers.size).toBe(0);

        land.open();
        await fac.untilTransferred(proof.nonce);
        const settles = fac.calls.settle;
        const retry = await pay(http, proof.encoded, headers);
        await expectDelivered(retry, fac, proof.nonce);
        expect(fac.calls.settle).toBe(settles); // found on chain: delivered, not settled again
        expect(fac.billedBy(PAYER)).toBe(1);
        expect(await http.ledger.receipts()).toMatchObject([
          { status: "settled", transaction: fac.transfers.get(proof.nonce) },
        ]);
        // At least once: the same proof replays the same response.
        const again = await pay(http, proof.encoded, headers);
        expect(again.status).toBe(200);
        expect(again.headers.get("idempotent-replayed")).toBe("true");
        await again.text(); // read to the end, so the keep-alive socket is idle when the app closes
      });

  it("a retry whose own settle meets nonce_already_used looks the transfer up and delivers it", async () => {
    const { fac, http, land, proof, key } = await failedOnce();

    // The retry finds the authorization unused, verifies, and is held at settle while the first transfer lands.
    const hold = gate();
    fac.settleGate = hold.promise;
    const retry = pay(http, proof.encoded, key);
    await fac.untilCalls("settle", 2);
    land.open();
    await fac.untilTransferred(proof.nonce);
    hold.open();
    await expectDelivered(await retry, fac, proof.nonce);
    expect(fac.billedBy(PAYER)).toBe(1);
    expect(await http.ledger.receipts()).toMatchObject([{ status: "settled" }]);
  });

  it("the reconciler alone resolves it: settled from the chain, and the buyer's retry costs no facilitator call", async () => {
    const { fac, http, land, proof, key } = await failedOnce();
    expect(await http.app.payments.reconcileNow()).toEqual({ resolved: 0, remaining: 1 }); // not on chain yet

    land.open();
    await fac.untilTransferred(proof.nonce);
    expect(await http.app.payments.reconcileNow()).toEqual({ resolved: 1, remaining: 0 });
    expect(await http.ledger.receipts()).toMatchObject([
      { status: "settled", transaction: fac.transfers.get(proof.nonce) },
    ]);
    fac.resetCounters();
    await expectDelivered(await pay(http, proof.encoded, key), fac, proof.nonce);
    expect(fac.calls).toEqual({ verify: 0, settle: 0, supported: 0 });
  });

  it("failed only once the validity window has passed with no transfer on chain", async () => {
    let now = Date.now();
    const fac = await startFaultFacilitator();
    stack.fac = fac;
    const http = await startHttpApp(fac.url, {}, { chain: fac.chain, paymentsClock: () => new Date(now) });
    stack.http = http;
    fac.settle = "fail-then-transfer";
    fac.landGate = new Promise(() => {}); // the broadcast never lands
    const validBefore = Math.floor(now / 1000) + 120;
    const proof = proofFor(http, validBefore);
    await expectConfirming(await pay(http, proof.encoded));
    // Inside the window the reconciler keeps asking.
    expect(await http.app.payments.reconcileNow()).toEqual({ resolved: 0, remaining: 1 });
    expect((await http.ledger.receipts())[0]?.status).toBe("unknown");

    now = (validBefore + 1) * 1000;
    expect(await http.app.payments.reconcileNow()).toEqual({ resolved: 1, remaining: 0 });
    expect(await http.ledger.receipts()).toMatchObject([
      { status: "failed", error: "authorization_expired_unused" },
    ]);
    expect(fac.billedBy(PAYER)).toBe(0);
  });
});

describe("two instances on one PostgreSQL ledger", () => {
  let pg: TestPostgres;
  beforeAll(async () => {
    pg = await startTestPostgres();
  }, 120_000);
  afterAll(async () => {
    await pg?.stop();
  });

  it("the failed answer on one instance, the retry on the other: confirming, then delivered once", async () => {
    const fac = await startFaultFacilitator();
    stack.fac = fac;
    const url = await pg.freshSchema();
    const shared = { chain: fac.chain, ledgerShared: true };
    const a = await startHttpApp(fac.url, {}, { ...shared, ledger: await openPostgresLedger(url) });
    stack.http = a;
    const b = await startHttpApp(fac.url, {}, { ...shared, ledger: await openPostgresLedger(url) });
    try {
      const land = gate();
      fac.settle = "fail-then-transfer";
      fac.landGate = land.promise;
      const proof = proofFor(a);
      await expectConfirming(await pay(a, proof.encoded, { "idempotency-key": "two-1" }));
      await expectConfirming(await pay(b, proof.encoded, { "idempotency-key": "two-1" }));

      land.open();
      await fac.untilTransferred(proof.nonce);
      await expectDelivered(await pay(b, proof.encoded, { "idempotency-key": "two-1" }), fac, proof.nonce);
      const replay = await pay(a, proof.encoded, { "idempotency-key": "two-1" });
      expect(replay.status).toBe(200);
      expect(replay.headers.get("idempotent-replayed")).toBe("true");
      await replay.text();
      expect(fac.billedBy(PAYER)).toBe(1);
      expect(await a.ledger.receipts()).toMatchObject([
        { status: "settled", transaction: fac.transfers.get(proof.nonce) },
      ]);
    } finally {
      await b.close();
    }
  });
});
