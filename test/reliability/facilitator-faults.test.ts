import { decodePaymentResponseHeader } from "@x402/core/http";
import { afterEach, describe, expect, it } from "vitest";
import {
  type Behaviour,
  type FaultFacilitator,
  type HttpApp,
  signedUpcomingProof,
  startFaultFacilitator,
  startHttpApp,
  UPCOMING_PATH,
  upcomingProof,
} from "../helpers/fault-facilitator.js";

// The real HTTP facilitator client + gateway against a facilitator that misbehaves on purpose, over loopback HTTP.
// Long enough that a loaded machine never turns a fault answer into a timeout; a hang still always times out.

/** No settlement happened for this answer: no PAYMENT-RESPONSE, or one that says `success: false` and why. */
function expectNoSettlement(res: Response) {
  const header = res.headers.get("payment-response");
  if (header === null) return;
  const settlement = decodePaymentResponseHeader(header);
  expect(settlement.success).toBe(false);
  expect(settlement.errorReason).toBeTruthy();
  expect(settlement.transaction).toBe("");
}

const TIMEOUT_MS = 2000;
const PAYER = "0x000000000000000000000000000000000000b0b0";

let fac: FaultFacilitator | undefined;
let http: HttpApp | undefined;

afterEach(async () => {
  await http?.close();
  await fac?.close();
  http = undefined;
  fac = undefined;
});

async function setup(env: Record<string, string> = {}) {
  fac = await startFaultFacilitator();
  http = await startHttpApp(fac.url, {
    FACILITATOR_TIMEOUT_MS: String(TIMEOUT_MS),
    CIRCUIT_FAILURE_THRESHOLD: "1000",
    ...env,
  });
  return { fac, http };
}

/** `retryKey`: the Idempotency-Key the paying request's answer issued (only it recovers a paid response). */
const pay = (app: HttpApp, proof: string, retryKey?: string | null) =>
  fetch(`${app.url}${UPCOMING_PATH}`, {
    headers: { "payment-signature": proof, ...(retryKey ? { "idempotency-key": retryKey } : {}) },
  });
const issuedKey = (res: Response) => res.headers.get("idempotency-key");

/** What a fail-closed answer must look like: 502/503, problem+json, a usable Retry-After, no content, no settlement header. */
async function expectFailClosed(res: Response): Promise<string> {
  expect([502, 503]).toContain(res.status);
  expect(res.headers.get("content-type")).toMatch(/application\/problem\+json/);
  expect(Number(res.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
  expectNoSettlement(res); // no settlement: at most PAYMENT-RESPONSE `success: false` with its reason
  const body = (await res.json()) as { type: string; status: number; unlocks?: unknown };
  expect(body.status).toBe(res.status);
  expect(body.unlocks).toBeUndefined();
  return body.type.split("/").pop() as string;
}

/** A settlement whose outcome is unknown: 409 "do not pay again", the retry key, and no settlement at all. */
async function expectUnknown(res: Response): Promise<string> {
  expect(res.status).toBe(409);
  expect(res.headers.get("content-type")).toMatch(/application\/problem\+json/);
  expect(Number(res.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
  expect(res.headers.get("payment-response")).toBeNull();
  expect(res.headers.get("idempotency-key")).toBeTruthy();
  const body = (await res.json()) as { type: string; status: number; detail: string; unlocks?: unknown };
  expect(body.status).toBe(409);
  expect(body.detail).toMatch(/Do not pay again/);
  expect(body.unlocks).toBeUndefined();
  return body.type.split("/").pop() as string;
}

describe("verify faults fail closed, bill nothing, and recover", () => {
  const cases: [Behaviour, number, string][] = [
    ["hang", 503, "facilitator-timeout"],
    ["reset", 503, "facilitator-unreachable"],
    ["http500", 502, "facilitator-error"],
    ["http503", 502, "facilitator-error"],
    ["malformed", 502, "facilitator-bad-response"],
    ["wrong-shape", 502, "facilitator-bad-response"],
  ];
  for (const [behaviour, status, slug] of cases) {
    it(`${behaviour} → ${status} ${slug}, then the same proof pays once the facilitator is healthy`, async () => {
      const { fac, http } = await setup();
      fac.verify = behaviour;
      const proof = upcomingProof(http.config);
      const res = await pay(http, proof);
      expect(res.status).toBe(status);
      expect(await expectFailClosed(res)).toBe(slug);
      expect(fac.calls.settle).toBe(0);
      expect(fac.transfers.size).toBe(0);
      expect(await http.ledger.receipts()).toHaveLength(0);

      fac.verify = "ok";
      const retry = await pay(http, proof);
      expect(retry.status).toBe(200);
      expect(decodePaymentResponseHeader(retry.headers.get("payment-response") as string).success).toBe(true);
      expect(((await retry.json()) as { unlocks: unknown[] }).unlocks).toBeInstanceOf(Array);
      expect(fac.transfers.size).toBe(1);
      expect((await http.ledger.receipts()).map((r) => r.status)).toEqual(["settled"]);
    });
  }

  it("a refused connection → 503 facilitator-unreachable; recovery when it listens again on the same port", async () => {
    const probe = await startFaultFacilitator();
    const port = Number(new URL(probe.url).port);
    await probe.close();
    http = await startHttpApp(probe.url, {
      FACILITATOR_TIMEOUT_MS: String(TIMEOUT_MS),
      CIRCUIT_FAILURE_THRESHOLD: "1000",
    });
    const proof = upcomingProof(http.config);
    const res = await pay(http, proof);
    expect(res.status).toBe(503);
    expect(await expectFailClosed(res)).toBe("facilitator-unreachable");

    fac = await startFaultFacilitator(port);
    const retry = await pay(http, proof);
    expect(retry.status).toBe(200);
    expect(fac.transfers.size).toBe(1);
  });

  it("an invalid verdict is a 402 (the buyer's fault), not a 5xx, and nothing settles", async () => {
    const { fac, http } = await setup();
    fac.verify = "invalid";
    const res = await pay(http, upcomingProof(http.config));
    expect(res.status).toBe(402);
    expect(res.headers.get("payment-required")).toBeTruthy();
    expect(fac.calls.settle).toBe(0);
  });
});

describe("settle faults withhold the response and never bill twice", () => {
  const cases: [Behaviour, string][] = [
    ["hang", "facilitator-timeout"],
    ["reset", "facilitator-unreachable"],
    ["http500", "facilitator-error"],
    ["malformed", "facilitator-bad-response"],
    ["wrong-shape", "facilitator-bad-response"],
  ];
  for (const [behaviour, slug] of cases) {
    it(`${behaviour}: ${slug}, receipt "unknown", and a retry of the same proof settles exactly once`, async () => {
      const { fac, http } = await setup();
      fac.settle = behaviour;
      const proof = upcomingProof(http.config);
      const res = await pay(http, proof);
      // The facilitator's fault (`slug`) is logged; the buyer hears the truth: unknown, not failed.
      expect(await expectUnknown(res)).toBe("settlement-unconfirmed");
      expect((await http.ledger.receipts()).map((r) => r.status)).toEqual(["unknown"]);
      const key = issuedKey(res);
      expect(key).toBeTruthy();

      fac.settle = "ok";
      const retry = await pay(http, proof, key);
      expect(retry.status).toBe(200);
      expect(fac.transfers.size).toBe(1);
      expect(fac.billedBy(PAYER)).toBe(1);
      const body = await retry.text();
      // Delivered at least once: the same proof and request replay the response, with no facilitator call.
      const callsBefore = { ...fac.calls };
      const again = await pay(http, proof, key);
      expect(again.status).toBe(200);
      expect(await again.text()).toBe(body);
      expect(fac.calls).toEqual(callsBefore);
      expect(fac.transfers.size).toBe(1);
    });
  }

  it("a settlement that went through but timed out: no content, no second transfer for that proof", async () => {
    const { fac, http } = await setup();
    fac.settle = "transfer-then-hang";
    const proof = upcomingProof(http.config);
    const res = await pay(http, proof);
    const key = issuedKey(res);
    expect(await expectUnknown(res)).toBe("settlement-unconfirmed");
    expect(fac.transfers.size).toBe(1); // the buyer's money moved…
    expect((await http.ledger.receipts())[0]?.status).toBe("unknown"); // …and the ledger says the outcome is unknown

    fac.settle = "ok";
    const retry = await pay(http, proof, key);
    // The chain refuses the used authorisation, so the same proof can neither be charged twice nor unlock content;
    // and the answer is not a fresh 402, which would make a paying client pay a second time.
    expect(retry.status).toBe(409);
    expect(((await retry.json()) as { type: string }).type).toMatch(/settlement-unconfirmed$/);
    expect(retry.headers.get("payment-required")).toBeNull();
    expectNoSettlement(retry); // no settlement: at most PAYMENT-RESPONSE `success: false` with its reason
    expect(fac.transfers.size).toBe(1);
    expect(fac.billedBy(PAYER)).toBe(1);
  });

  it("…and with the chain to ask, the retry delivers that settlement: one transfer, one 200, one receipt", async () => {
    fac = await startFaultFacilitator();
    http = await startHttpApp(fac.url, { FACILITATOR_TIMEOUT_MS: String(TIMEOUT_MS) }, { chain: fac.chain });
    fac.settle = "transfer-then-hang";
    const proof = upcomingProof(http.config);
    const res = await pay(http, proof);
    const key = issuedKey(res);
    expect(await expectUnknown(res)).toBe("settlement-unconfirmed");
    fac.settle = "ok";
    const callsBefore = { ...fac.calls };
    const retry = await pay(http, proof, key);
    expect(retry.status).toBe(200);
    const [tx] = [...fac.transfers.values()];
    expect(decodePaymentResponseHeader(retry.headers.get("payment-response") as string).transaction).toBe(tx);
    expect(fac.calls).toEqual(callsBefore); // recovered from the chain: no verify, no second settle
    expect(await http.ledger.receipts()).toMatchObject([{ status: "settled", transaction: tx }]);
  });

  it("a pending settlement delivers once, records the transaction as pending, and the proof is spent", async () => {
    const { fac, http } = await setup();
    fac.settle = "pending";
    const proof = upcomingProof(http.config);
    const res = await pay(http, proof);
    expect(res.status).toBe(200);
    const settlement = decodePaymentResponseHeader(res.headers.get("payment-response") as string);
    const [tx] = [...fac.transfers.values()];
    expect(settlement.transaction).toBe(tx);
    expect(await http.ledger.receipts()).toMatchObject([{ status: "pending", transaction: tx }]);
    expect(fac.calls.settle).toBe(2); // one reconciliation retry with the same payload, no new payload
    expect(fac.transfers.size).toBe(1);

    const callsBefore = { ...fac.calls };
    const again = await pay(http, proof, issuedKey(res));
    expect(again.status).toBe(200);
    expect(again.headers.get("payment-response")).toBe(res.headers.get("payment-response"));
    expect(fac.calls).toEqual(callsBefore);
    await again.text(); // read to the end, or its keep-alive socket holds app.close() for keepAliveTimeout (72 s)
  });
});

describe("circuit breaker", () => {
  it("after the threshold, requests fail fast without touching the facilitator; a half-open probe closes it", async () => {
    const THRESHOLD = 3;
    const COOLDOWN_MS = 1500;
    let now = Date.now();
    fac = await startFaultFacilitator();
    http = await startHttpApp(
      fac.url,
      {
        FACILITATOR_TIMEOUT_MS: String(TIMEOUT_MS),
        CIRCUIT_FAILURE_THRESHOLD: String(THRESHOLD),
        CIRCUIT_COOLDOWN_MS: String(COOLDOWN_MS),
      },
      { paymentsClock: () => new Date(now) }, // the breaker's time is the test's
    );
    fac.verify = "hang";
    // Timeouts met by THRESHOLD different payers' proven (EOA-signed) proofs: the facilitator's fault.
    for (let i = 0; i < THRESHOLD; i++) {
      const res = await pay(http, await signedUpcomingProof(http.config));
      expect(await expectFailClosed(res)).toBe("facilitator-timeout");
    }
    expect(fac.calls.verify).toBe(THRESHOLD);

    // 20 concurrent requests while open: all answered circuit-open (a call would have hung into a timeout instead).
    const answers = await Promise.all(
      Array.from({ length: 20 }, async () =>
        expectFailClosed(await pay(http as HttpApp, upcomingProof((http as HttpApp).config))),
      ),
    );
    expect(new Set(answers)).toEqual(new Set(["facilitator-circuit-open"]));
    expect(fac.calls.verify).toBe(THRESHOLD);

    // Healthy again; once the cool-down has passed, one trial call goes through and closes the circuit.
    fac.verify = "ok";
    now += COOLDOWN_MS;
    const trial = await pay(http, upcomingProof(http.config));
    expect(trial.status).toBe(200);
    expect(http.gateway.circuit.openedAt).toBeNull();
    const next = await pay(http, upcomingProof(http.config));
    expect(next.status).toBe(200);
    expect(fac.transfers.size).toBe(2);
  });
});
