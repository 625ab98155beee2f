import { decodePaymentResponseHeader } from "@x402/core/http";
import { generatePaymentId } from "@x402/extensions/payment-identifier";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { openPostgresLedger } from "../../src/ledger/postgres.js";
import { PRICES } from "../../src/operations/prices.js";
import { requirementsV2 } from "../../src/payments/terms/requirements.js";
import {
  type FaultFacilitator,
  type HttpApp,
  startFaultFacilitator,
  startHttpApp,
  UPCOMING_PATH,
  upcomingProof,
} from "../helpers/fault-facilitator.js";
import { startTestPostgres, type TestPostgres } from "../helpers/postgres.js";
import { b64, v2Proof } from "../helpers/proofs.js";

/*
 * A buyer whose answer was lost entirely — the retry key it carried never arrived — still recovers what it paid for:
 * a fresh proof from the same payer for the same request (what an x402 client sends on its next try) delivers the
 * earlier payment, found on chain, and is itself given back unused. Nobody else can sign one.
 */
const PAYER = "0x000000000000000000000000000000000000b0b0";
let fac: FaultFacilitator | undefined;
let http: HttpApp | undefined;

afterEach(async () => {
  await http?.close();
  await fac?.close();
  http = undefined;
  fac = undefined;
});

const pay = (app: HttpApp, proof: string, headers: Record<string, string> = {}) =>
  fetch(`${app.url}${UPCOMING_PATH}`, { headers: { "payment-signature": proof, ...headers } });

describe("a lost answer without any secret", () => {
  it("a fresh proof of the same payer for the same request delivers the earlier payment, charging nothing more", async () => {
    fac = await startFaultFacilitator();
    http = await startHttpApp(fac.url, { FACILITATOR_TIMEOUT_MS: "2000" }, { chain: fac.chain });
    fac.settle = "transfer-then-hang"; // charged on chain, the answer lost
    const first = await pay(http, upcomingProof(http.config));
    expect(first.status).toBe(409); // unknown, not failed: do not pay again
    await first.text(); // its retry key is dropped: as if the connection had died
    expect(fac.transfers.size).toBe(1);
    const [tx] = [...fac.transfers.values()];

    fac.settle = "ok";
    const fresh = await pay(http, upcomingProof(http.config));
    expect(fresh.status).toBe(200);
    expect(decodePaymentResponseHeader(fresh.headers.get("payment-response") as string).transaction).toBe(tx);
    expect(((await fresh.json()) as { unlocks: unknown[] }).unlocks).toBeInstanceOf(Array);
    expect(fac.transfers.size).toBe(1); // the fresh authorization was not settled
    expect(fac.billedBy(PAYER)).toBe(1);
    const receipts = await http.ledger.receipts();
    expect(receipts).toMatchObject([{ status: "settled", transaction: tx }]);
    expect(receipts[0]?.responseExpiresAt).not.toBeNull();

    // Delivered now: the next fresh proof buys the request again, as a buyer who wants it twice expects.
    const next = await pay(http, upcomingProof(http.config));
    expect(next.status).toBe(200);
    expect(fac.transfers.size).toBe(2);
    await next.text();
  });

  it("a proof the facilitator refuses recovers nothing (another address cannot sign for the payer)", async () => {
    fac = await startFaultFacilitator();
    http = await startHttpApp(fac.url, { FACILITATOR_TIMEOUT_MS: "2000" }, { chain: fac.chain });
    fac.settle = "transfer-then-hang";
    const first = await pay(http, upcomingProof(http.config));
    expect(first.status).toBe(409); // unknown, not failed: do not pay again
    await first.text();
    fac.settle = "ok";
    fac.verify = "invalid";
    const forged = await pay(http, upcomingProof(http.config));
    expect(forged.status).toBe(402);
    expect(forged.headers.get("payment-response")).toBeNull();
    expect(((await forged.json()) as { unlocks?: unknown }).unlocks).toBeUndefined();
    expect((await http.ledger.receipts()).map((r) => r.responseExpiresAt)).toEqual([null]);
  });
});

describe("payment-identifier across two instances on one PostgreSQL ledger", () => {
  let pg: TestPostgres;
  beforeAll(async () => {
    pg = await startTestPostgres();
  }, 120_000);
  afterAll(async () => {
    await pg?.stop();
  });

  it("same id and payment at the other instance → the stored response; same id with another payment → 409, nothing charged", async () => {
    fac = await startFaultFacilitator();
    const url = await pg.freshSchema();
    const a = await startHttpApp(fac.url, {}, { ledger: await openPostgresLedger(url), ledgerShared: true });
    http = a;
    const b = await startHttpApp(fac.url, {}, { ledger: await openPostgresLedger(url), ledgerShared: true });
    try {
      const accepted = requirementsV2(PRICES.upcoming, {
        payTo: "0x00000000000000000000000000000000000000aa",
        maxTimeoutSeconds: a.config.paymentTimeoutSeconds,
        network: a.config.network,
      });
      const id = generatePaymentId();
      const withId = (p: ReturnType<typeof v2Proof>) =>
        b64({ ...p, extensions: { "payment-identifier": { info: { required: false, id } } } });
      const proof = withId(v2Proof(accepted));
      const first = await pay(a, proof);
      expect(first.status).toBe(200);
      const body = await first.text();
      expect(first.headers.get("idempotency-key")).toBeNull(); // the buyer's id is its secret: nothing issued

      const again = await pay(b, proof);
      expect(again.status).toBe(200);
      expect(again.headers.get("idempotent-replayed")).toBe("true");
      expect(await again.text()).toBe(body);

      const conflict = await pay(b, withId(v2Proof(accepted)));
      expect(conflict.status).toBe(409);
      expect(((await conflict.json()) as { type: string }).type).toMatch(/payment-identifier-reused$/);
      expect(fac.transfers.size).toBe(1);
      expect(fac.billedBy(PAYER)).toBe(1);
      expect(fac.calls.settle).toBe(1);
    } finally {
      await b.close();
    }
  });
});
