import { randomBytes } from "node:crypto";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import type { PaymentRequirements } from "@x402/core/types";
import { appendPaymentIdentifierToExtensions, generatePaymentId } from "@x402/extensions/payment-identifier";
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type Ledger, openLedger } from "../../../src/ledger/embedded.js";
import { ALREADY_USED } from "../../../src/payments/core/core.js";
import { FacilitatorFault } from "../../../src/payments/facilitator/gateway.js";
import type { PaidRoute } from "../../../src/payments/http/plugin.js";
import { requirementsV2 } from "../../../src/payments/terms/requirements.js";
import { CORE_TERMS, paymentsApp } from "../../helpers/core.js";
import { type FakeGateway, fakeGateway } from "../../helpers/fake-gateway.js";
import { b64, v2Proof } from "../../helpers/proofs.js";

/*
 * A chain observer: once a payment settles, its authorization (from, nonce, value, validity) and the whole signature
 * are public in the transfer's calldata. Whatever it builds from them — the buyer's proof copied byte for byte, the
 * authorization with a forged signature, or a fresh envelope around the public signature — on the request that was
 * bought or on any other, it must get no content and one and the same answer, so it learns nothing either.
 */
const terms = CORE_TERMS;
const route: PaidRoute = { route: "POST /paid", amount: "20000", description: "paid", acceptsV1: true };
const SECRET_BODY = "the buyer's paid content";

let app: FastifyInstance;
let gateway: FakeGateway;
let ledger: Ledger;
let handlerRuns = 0;
/** The extensions of this server's 402, as a client reads them before signing. */
let advertised: Record<string, unknown>;
/** What an @x402/extensions client appends to its payload: the advertised extensions with its payment id. */
const withPaymentId = (id: string) => appendPaymentIdentifierToExtensions(structuredClone(advertised), id);
/** The signatures the (fake) facilitator accepts: the buyers' own, never a forged one. */
const genuine = new Set<string>();

beforeEach(async () => {
  gateway = fakeGateway();
  genuine.clear();
  gateway.verifyResult = async (p) => {
    const sig = (p.payload as { signature: string }).signature;
    return genuine.has(sig)
      ? { isValid: true, payer: "0x000000000000000000000000000000000000b0b0" }
      : { isValid: false, invalidReason: "invalid_exact_evm_signature" };
  };
  ledger = openLedger(":memory:");
  handlerRuns = 0;
  app = await paymentsApp(gateway, ledger);
  app.post("/paid", { preHandler: [app.payments.guard(route)] }, async (req) => {
    handlerRuns += 1;
    return { content: SECRET_BODY, echo: req.body };
  });
  await app.ready();
  const challenge = await app.inject({ method: "POST", url: "/paid", payload: {} });
  advertised = decodePaymentRequiredHeader(challenge.headers["payment-required"] as string)
    .extensions as Record<string, unknown>;
});

afterEach(async () => {
  await app.close();
  await ledger.close();
});

const post = (headers: Record<string, string>, payload: unknown) =>
  app.inject({ method: "POST", url: "/paid", headers, payload: payload as object });

function buyerProof(withId?: string) {
  const p = v2Proof(requirementsV2(route, terms)) as ReturnType<typeof v2Proof> & {
    extensions?: Record<string, unknown>;
  };
  p.payload.signature = `0x${randomBytes(65).toString("hex")}`;
  genuine.add(p.payload.signature);
  if (withId) p.extensions = withPaymentId(withId);
  return p;
}

/** Every proof an observer can make from what the chain shows of one settled payment, v2 and v1. */
function observerProofs(paid: ReturnType<typeof buyerProof>): Record<string, Record<string, string>> {
  const { authorization, signature } = paid.payload;
  const forged = `0x${randomBytes(65).toString("hex")}`;
  const rebuiltAuth = {
    nonce: authorization.nonce,
    validBefore: authorization.validBefore,
    validAfter: authorization.validAfter,
    value: authorization.value,
    to: authorization.to,
    from: authorization.from.toUpperCase().replace(/^0X/, "0x"),
  };
  const v1 = (sig: string) => ({
    "x-payment": b64({
      x402Version: 1,
      scheme: "exact",
      network: "base",
      payload: { authorization, signature: sig },
    }),
  });
  return {
    "v2 copied": {
      "payment-signature": b64({
        x402Version: 2,
        accepted: paid.accepted,
        payload: { signature, authorization },
      }),
    },
    "v2 forged": {
      "payment-signature": b64({
        ...paid,
        payload: { authorization, signature: forged },
        extensions: undefined,
      }),
    },
    "v2 rebuilt": {
      "payment-signature": b64({
        payload: { authorization: rebuiltAuth, signature },
        resource: { url: "https://api.example/paid" },
        accepted: paid.accepted,
        x402Version: 2,
      }),
    },
    "v2 copied + own id": {
      "payment-signature": b64({
        x402Version: 2,
        accepted: paid.accepted,
        payload: { signature, authorization },
        extensions: withPaymentId(generatePaymentId()),
      }),
    },
    "v2 copied + guessed key": {
      "payment-signature": b64({
        x402Version: 2,
        accepted: paid.accepted,
        payload: { signature, authorization },
      }),
      "idempotency-key": "retry-1",
    },
    "v1 copied": v1(signature),
    "v1 forged": v1(forged),
  };
}

/** What an answer tells its receiver: status, the 402's reason (both encodings), whether content leaked. */
function verdict(res: LightMyRequestResponse) {
  const header = res.headers["payment-required"];
  const v2Error = typeof header === "string" ? decodePaymentRequiredHeader(header).error : undefined;
  const body = res.body;
  const v1Error = res.statusCode === 402 ? (JSON.parse(body) as { error?: string }).error : undefined;
  return { status: res.statusCode, v2Error, v1Error, leaked: body.includes(SECRET_BODY) };
}

const REQUESTS = { bought: { q: "bought" }, other: { q: "another request" } };

describe("a chain observer's proofs of a settled payment get nothing and learn nothing", () => {
  for (const secret of ["issued key", "payment-identifier", "own Idempotency-Key"] as const)
    it(`buyer paid with ${secret}: every forged, copied and rebuilt proof, on any request, gets the same 402`, async () => {
      const id = secret === "payment-identifier" ? generatePaymentId() : undefined;
      const paid = buyerProof(id);
      const own: Record<string, string> =
        secret === "own Idempotency-Key"
          ? { "idempotency-key": `order-${randomBytes(8).toString("hex")}` }
          : {};
      const first = await post({ "payment-signature": b64(paid), ...own }, REQUESTS.bought);
      expect(first.statusCode).toBe(200);
      expect(first.body).toContain(SECRET_BODY);
      const calls = { ...gateway.calls };

      const answers = new Map<string, ReturnType<typeof verdict>>();
      for (const [name, headers] of Object.entries(observerProofs(paid)))
        for (const [which, body] of Object.entries(REQUESTS))
          answers.set(`${name} on ${which}`, verdict(await post(headers, body)));

      for (const [attempt, v] of answers) {
        expect(v.leaked, attempt).toBe(false);
        expect(v, attempt).toEqual({
          status: 402,
          v2Error: ALREADY_USED,
          v1Error: ALREADY_USED,
          leaked: false,
        });
      }
      expect(gateway.calls).toEqual(calls); // no facilitator call either: the same cost, the same timing class
      expect(handlerRuns).toBe(1);

      // The buyer, with its secret, still recovers exactly what it bought.
      const key: Record<string, string> =
        secret === "issued key"
          ? { "idempotency-key": first.headers["idempotency-key"] as string }
          : secret === "own Idempotency-Key"
            ? own
            : {};
      const again = await post({ "payment-signature": b64(paid), ...key }, REQUESTS.bought);
      expect(again.statusCode).toBe(200);
      expect(again.body).toBe(first.body);
      expect(again.headers["idempotent-replayed"]).toBe("true");
      expect(gateway.calls).toEqual(calls);
    });

  it("while the settlement is unconfirmed, the observer's proofs are told to wait, never served; the buyer's key then is", async () => {
    gateway.settleResult = async () => {
      throw new FacilitatorFault("facilitator_timeout", 3, "settle timed out");
    };
    const paid = buyerProof();
    const first = await post({ "payment-signature": b64(paid) }, REQUESTS.bought);
    expect(first.statusCode).toBe(409);
    const issued = first.headers["idempotency-key"] as string;
    expect(issued).toBeTruthy();
    gateway.settleResult = fakeGateway().settleResult;

    const seen = new Set<string>();
    for (const [name, headers] of Object.entries(observerProofs(paid)))
      for (const [which, body] of Object.entries(REQUESTS)) {
        const res = await post(headers, body);
        expect(res.body, `${name} on ${which}`).not.toContain(SECRET_BODY);
        expect(res.statusCode, `${name} on ${which}`).toBe(409);
        seen.add(`${res.statusCode} ${(JSON.parse(res.body) as { type: string }).type}`);
      }
    expect(seen.size).toBe(1); // one answer, whatever the proof and the request
    expect([...seen][0]).toMatch(/^409 .*settlement-unconfirmed$/);
    expect(gateway.calls.settle).toBe(1);
    expect(handlerRuns).toBe(1);

    const retry = await post({ "payment-signature": b64(paid), "idempotency-key": issued }, REQUESTS.bought);
    expect(retry.statusCode).toBe(200);
    expect(retry.body).toContain(SECRET_BODY);
    expect(gateway.calls.settle).toBe(2);
  });
});

describe("the buyer's secret", () => {
  it("the issued key with another request is the key holder's 422, never content", async () => {
    const paid = buyerProof();
    const first = await post({ "payment-signature": b64(paid) }, REQUESTS.bought);
    const key = first.headers["idempotency-key"] as string;
    const other = await post({ "payment-signature": b64(paid), "idempotency-key": key }, REQUESTS.other);
    expect(other.statusCode).toBe(422);
    expect(other.body).not.toContain(SECRET_BODY);
  });

  it("a buyer's own key or id is never replaced by an issued one", async () => {
    const withKey = await post(
      { "payment-signature": b64(buyerProof()), "idempotency-key": "my-order-0001" },
      REQUESTS.bought,
    );
    expect(withKey.statusCode).toBe(200);
    expect(withKey.headers["idempotency-key"]).toBeUndefined();
    const withId = await post({ "payment-signature": b64(buyerProof(generatePaymentId())) }, REQUESTS.bought);
    expect(withId.statusCode).toBe(200);
    expect(withId.headers["idempotency-key"]).toBeUndefined();
  });

  it("a malformed payment-identifier id is the caller's 400, before any facilitator call", async () => {
    for (const id of ["short", "x".repeat(129), "has spaces in it ok", "bad/chars/0123456789"]) {
      const p = buyerProof() as ReturnType<typeof buyerProof> & { extensions?: unknown };
      p.extensions = { "payment-identifier": { info: { required: false, id } } };
      const res = await post({ "payment-signature": b64(p) }, REQUESTS.bought);
      expect(res.statusCode, id).toBe(400);
      expect((JSON.parse(res.body) as { type: string }).type).toMatch(/invalid-payment-identifier$/);
    }
    expect(gateway.calls).toEqual({ verify: 0, settle: 0 });
  });

  it("every 402 advertises payment-identifier (optional)", async () => {
    const res = await post({}, REQUESTS.bought);
    const pr = decodePaymentRequiredHeader(res.headers["payment-required"] as string);
    expect(pr.extensions?.["payment-identifier"]).toMatchObject({ info: { required: false } });
    expect((pr.accepts[0] as PaymentRequirements).amount).toBe(route.amount);
  });
});

describe("PAYMENT-RESPONSE on a failed settlement", () => {
  const settlementOf = (res: LightMyRequestResponse, name = "payment-response") =>
    JSON.parse(Buffer.from(res.headers[name] as string, "base64").toString()) as Record<string, unknown>;

  it("refused (402): `success: false` with the reason; unknown (409): no settlement at all, never `success: false`; v2 and v1", async () => {
    gateway.settleResult = async (_p, r) => ({
      success: false,
      errorReason: "insufficient_funds",
      transaction: "",
      network: r.network,
    });
    const refused = await post({ "payment-signature": b64(buyerProof()) }, REQUESTS.bought);
    expect(refused.statusCode).toBe(402);
    expect(settlementOf(refused)).toMatchObject({
      success: false,
      errorReason: "insufficient_funds",
      transaction: "",
    });

    gateway.settleResult = async (_p, r) => ({
      success: false,
      errorReason: "invalid_exact_evm_transaction_failed",
      transaction: "",
      network: r.network,
    });
    const unknown = await post({ "payment-signature": b64(buyerProof()) }, REQUESTS.bought);
    expect(unknown.statusCode).toBe(409);
    expect(unknown.headers["payment-response"]).toBeUndefined();
    expect(unknown.json().detail).toMatch(/Do not pay again/);

    gateway.settleResult = async () => {
      throw new FacilitatorFault("facilitator_timeout", 3, "settle timed out");
    };
    const timedOut = await post({ "payment-signature": b64(buyerProof()) }, REQUESTS.bought);
    expect(timedOut.statusCode).toBe(409);
    expect(timedOut.headers["payment-response"]).toBeUndefined();
    expect(timedOut.headers["idempotency-key"]).toBeTruthy();
    expect(timedOut.body).not.toContain(SECRET_BODY);

    const v1 = buyerProof();
    const v1TimedOut = await post(
      { "x-payment": b64({ x402Version: 1, scheme: "exact", network: "base", payload: v1.payload }) },
      REQUESTS.bought,
    );
    expect(v1TimedOut.statusCode).toBe(409);
    expect(v1TimedOut.headers["x-payment-response"]).toBeUndefined();
    expect(v1TimedOut.headers["payment-response"]).toBeUndefined();
  });

  it("a v1 settlement that reverts in its gas estimate answers like v2: 402 with the reason code, never the library's text", async () => {
    // What @x402/evm's v1 scheme answers when its transfer call throws: the thrown error's whole message.
    const viemText = [
      'The contract function "transferWithAuthorization" reverted with the following reason:',
      "ERC20: transfer amount exceeds balance",
      "",
      "Contract Call:",
      "  address:   0x5FbDB2315678afecb367f032d93F642f64180aa3",
      "  sender:    0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
      "",
      "Docs: https://viem.sh/docs/contract/writeContract",
      "Version: viem@2.38.0",
    ].join("\n");
    gateway.settleResult = async (_p, r) => ({
      success: false,
      errorReason: viemText,
      transaction: "",
      network: r.network,
    });
    for (const version of [1, 2] as const) {
      const p = buyerProof();
      const headers: Record<string, string> =
        version === 1
          ? { "x-payment": b64({ x402Version: 1, scheme: "exact", network: "base", payload: p.payload }) }
          : { "payment-signature": b64(p) };
      const res = await post(headers, REQUESTS.bought);
      expect(res.statusCode, `v${version}`).toBe(402);
      const name = version === 1 ? "x-payment-response" : "payment-response";
      expect(settlementOf(res, name), `v${version}`).toEqual(
        expect.objectContaining({ success: false, errorReason: "invalid_exact_evm_insufficient_balance" }),
      );
      const raw = JSON.stringify(res.headers) + res.body;
      for (const leak of ["viem", "Contract Call", "sender", "0x5FbDB", "Docs:"])
        expect(raw, `v${version} ${leak}`).not.toContain(leak);
    }
    expect((await ledger.receipts()).map((r) => r.status)).toEqual(["failed", "failed"]);
  });
});
