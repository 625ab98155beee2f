import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from "@x402/core/http";
import Fastify, { type FastifyInstance } from "fastify";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { HttpProblem, registerProblemHandlers } from "../../../src/http/problem.js";
import { validatorCompiler } from "../../../src/http/validation.js";
import { type Ledger, openLedger } from "../../../src/ledger/embedded.js";
import { FacilitatorFault } from "../../../src/payments/facilitator/gateway.js";
import type { PaidRoute } from "../../../src/payments/http/plugin.js";
import { requirementsV2 } from "../../../src/payments/terms/requirements.js";
import { CORE_TERMS, paymentsApp } from "../../helpers/core.js";
import { type FakeGateway, fakeGateway } from "../../helpers/fake-gateway.js";
import { b64, signedV2Proof, v1Proof, v2Proof } from "../../helpers/proofs.js";

const PAY_TO = "0x00000000000000000000000000000000000000aa" as const;
const terms = CORE_TERMS;
const both: PaidRoute = { route: "POST /both", amount: "20000", description: "v1 and v2", acceptsV1: true };
const v2only: PaidRoute = {
  route: "POST /v2only",
  amount: "50000",
  description: "v2 only",
  acceptsV1: false,
};
const failing: PaidRoute = {
  route: "POST /fails",
  amount: "20000",
  description: "handler fails",
  acceptsV1: true,
};
const capped: PaidRoute = {
  route: "POST /capped",
  amount: "20000",
  description: "capped, no pre-check",
  acceptsV1: false,
  cap: () => ({
    limit: 3,
    since: new Date(0),
    until: new Date("2100-01-01T00:00:00Z"),
    detail: "This route's provisional cap of paid calls is reached.",
  }),
};
const getRoute: PaidRoute = { route: "GET /g", amount: "20000", description: "a GET", acceptsV1: true };

let app: FastifyInstance;
let gateway: FakeGateway;
let ledger: Ledger;
let handlerRuns = 0;

beforeEach(async () => {
  gateway = fakeGateway();
  ledger = openLedger(":memory:");
  handlerRuns = 0;
  app = await paymentsApp(gateway, ledger);
  const body = { type: "object", properties: { q: { type: "string" } }, additionalProperties: false };
  app.post("/both", { schema: { body }, preHandler: [app.payments.guard(both)] }, async (req) => {
    handlerRuns += 1;
    return { paid: true, echo: req.body };
  });
  app.post("/v2only", { schema: { body }, preHandler: [app.payments.guard(v2only)] }, async () => {
    handlerRuns += 1;
    return { paid: true };
  });
  app.post("/capped", { preHandler: [app.payments.guard(capped)] }, async () => ({ paid: true }));
  app.get("/g", { preHandler: [app.payments.guard(getRoute)] }, async () => {
    handlerRuns += 1;
    return { got: true };
  });
  app.post("/fails", { preHandler: [app.payments.guard(failing)] }, async () => {
    handlerRuns += 1;
    throw new HttpProblem(404, "gone", "disappeared while paying");
  });
  await app.ready();
});

afterEach(async () => {
  await app.close();
  await ledger.close();
});

const post = (url: string, headers: Record<string, string> = {}, payload: unknown = { q: "x" }) =>
  app.inject({
    method: "POST",
    url,
    headers: { "content-type": "application/json", ...headers },
    payload: JSON.stringify(payload),
  });

describe("402 without a proof", () => {
  it("answers with a v2 PAYMENT-REQUIRED header and a v1 body on v1-capable routes", async () => {
    const res = await post("/both?pp_ref=abc");
    expect(res.statusCode).toBe(402);
    expect(res.headers["cache-control"]).toBe("no-store");
    const required = decodePaymentRequiredHeader(res.headers["payment-required"] as string);
    expect(required.x402Version).toBe(2);
    expect(required.accepts).toEqual([requirementsV2(both, terms)]);
    expect(required.accepts[0]?.amount).toBe("20000");
    // pp_ref is recorded, never echoed in the resource URL.
    expect(required.resource.url).toBe("https://api.example/both");
    const v1 = res.json();
    expect(v1).toMatchObject({
      x402Version: 1,
      accepts: [{ network: "base", maxAmountRequired: "20000", payTo: PAY_TO }],
    });
    expect(v1.accepts[0].extra).toEqual({ name: "USD Coin", version: "2" });
    expect(gateway.calls).toEqual({ verify: 0, settle: 0 });
    expect(handlerRuns).toBe(0);
  });

  it("answers a v1 body whose only scheme is the 'v2 only' refusal on the v2-only route, still with PAYMENT-REQUIRED", async () => {
    const res = await post("/v2only");
    expect(res.statusCode).toBe(402);
    expect(res.headers["content-type"]).toMatch(/application\/json/);
    expect(res.json()).toMatchObject({
      x402Version: 1,
      accepts: [{ scheme: expect.stringMatching(/^x402_v2_only: /) }],
      error: expect.stringMatching(/^x402_v2_only: /),
    });
    expect(decodePaymentRequiredHeader(res.headers["payment-required"] as string).accepts[0]?.amount).toBe(
      "50000",
    );
  });
});

describe("malformed payment headers are 400 and never reach the facilitator", () => {
  const cases: [string, string][] = [
    ["not base64", "%%%not-base64%%%"],
    ["base64 of non-JSON", Buffer.from("hello world").toString("base64")],
    ["JSON of the wrong shape", b64({ hello: "world" })],
    ["a JSON array", b64([1, 2, 3])],
    ["wrong x402Version", b64({ x402Version: 7, payload: {} })],
  ];
  for (const [name, value] of cases) {
    it(name, async () => {
      const res = await post("/both", { "payment-signature": value });
      expect(res.statusCode).toBe(400);
      expect(res.headers["content-type"]).toMatch(/application\/problem\+json/);
      expect(res.headers["payment-required"]).toBeUndefined();
      expect(gateway.calls.verify).toBe(0);
    });
  }

  it("both headers at once", async () => {
    const proof = b64(v2Proof(requirementsV2(both, terms)));
    const res = await post("/both", { "payment-signature": proof, "x-payment": proof });
    expect(res.statusCode).toBe(400);
  });
});

describe("paid calls", () => {
  it("verifies, runs the handler, settles, and returns PAYMENT-RESPONSE with a receipt", async () => {
    const res = await post("/both?pp_ref=camp.1", {
      "payment-signature": b64(v2Proof(requirementsV2(both, terms))),
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ paid: true, echo: { q: "x" } });
    const settlement = decodePaymentResponseHeader(res.headers["payment-response"] as string);
    expect(settlement.success).toBe(true);
    expect(gateway.calls).toEqual({ verify: 1, settle: 1 });
    const [receipt] = await ledger.receipts();
    expect(receipt).toMatchObject({
      route: "POST /both",
      amount: "20000",
      status: "settled",
      ppRef: "camp.1",
      x402Version: 2,
    });
    expect(receipt?.transaction).toBe(settlement.transaction);
    expect(receipt?.response?.body).toBe(res.body);
    expect(receipt?.identity).toMatchObject({
      network: "eip155:8453",
      payer: "0x000000000000000000000000000000000000b0b0",
    });
  });

  it("takes a v1 proof in X-PAYMENT and answers X-PAYMENT-RESPONSE", async () => {
    const res = await post("/both", { "x-payment": b64(v1Proof("20000", PAY_TO)) });
    expect(res.statusCode).toBe(200);
    const settlement = JSON.parse(
      Buffer.from(res.headers["x-payment-response"] as string, "base64").toString(),
    );
    expect(settlement).toMatchObject({ success: true, network: "base" });
    expect(res.headers["payment-response"]).toBeUndefined();
    expect((await ledger.receipts())[0]?.x402Version).toBe(1);
  });

  it("refuses X-PAYMENT on the v2-only route with a 402 and no facilitator call", async () => {
    const res = await post("/v2only", { "x-payment": b64(v1Proof("50000", PAY_TO)) });
    expect(res.statusCode).toBe(402);
    expect(res.json().error).toMatch(/v1 proofs \(X-PAYMENT\) are not accepted/);
    expect(gateway.calls.verify).toBe(0);
  });

  it("refuses a v1 payload inside PAYMENT-SIGNATURE on the v2-only route", async () => {
    const res = await post("/v2only", { "payment-signature": b64(v1Proof("50000", PAY_TO)) });
    expect(res.statusCode).toBe(402);
    expect(gateway.calls.verify).toBe(0);
  });

  it("refuses a proof for the wrong amount or payee before calling the facilitator", async () => {
    const wrongAmount = { ...requirementsV2(both, terms), amount: "1" };
    const r1 = await post("/both", { "payment-signature": b64(v2Proof(wrongAmount)) });
    expect(r1.statusCode).toBe(402);
    const e1 = decodePaymentRequiredHeader(r1.headers["payment-required"] as string).error;
    expect(e1).toMatch(/amount 1 ≠ 20000/);
    const wrongPayee = {
      ...requirementsV2(both, terms),
      payTo: "0x00000000000000000000000000000000000000bb",
    };
    const r2 = await post("/both", { "payment-signature": b64(v2Proof(wrongPayee)) });
    expect(r2.statusCode).toBe(402);
    expect(gateway.calls.verify).toBe(0);
  });

  it("names the facilitator's reason when verification fails, with a fresh PAYMENT-REQUIRED", async () => {
    gateway.verifyResult = async () => ({
      isValid: false,
      invalidReason: "invalid_exact_evm_payload_signature",
    });
    const res = await post("/both", { "payment-signature": b64(v2Proof(requirementsV2(both, terms))) });
    expect(res.statusCode).toBe(402);
    expect(res.json().error).toBe("invalid_exact_evm_payload_signature");
    expect(decodePaymentRequiredHeader(res.headers["payment-required"] as string).error).toBe(
      "invalid_exact_evm_payload_signature",
    );
    expect(handlerRuns).toBe(0);
    expect(gateway.calls.settle).toBe(0);
  });

  it("does not settle when the handler fails", async () => {
    const res = await post("/fails", { "payment-signature": b64(v2Proof(requirementsV2(failing, terms))) });
    expect(res.statusCode).toBe(404);
    expect(gateway.calls).toEqual({ verify: 1, settle: 0 });
    expect(await ledger.receipts()).toHaveLength(0);
  });

  it("withholds the body with a 402 when settlement fails", async () => {
    gateway.settleResult = async (_p, r) => ({
      success: false,
      errorReason: "insufficient_funds",
      transaction: "",
      network: r.network,
    });
    const res = await post("/both", { "payment-signature": b64(v2Proof(requirementsV2(both, terms))) });
    expect(res.statusCode).toBe(402);
    expect(res.body).not.toContain("paid");
    expect(res.json().error).toMatch(/insufficient_funds/);
    expect((await ledger.receipts())[0]?.status).toBe("failed");
  });

  it("delivers on a pending settlement (the transaction exists), records it pending, and settles once", async () => {
    gateway.settleResult = async (_p, r) => ({
      success: false,
      errorReason: "settlement_pending",
      transaction: `0x${"cd".repeat(32)}`,
      network: r.network,
    });
    const proof = b64(v2Proof(requirementsV2(both, terms)));
    const res = await post("/both", { "payment-signature": proof });
    expect(res.statusCode).toBe(200);
    expect((await ledger.receipts())[0]).toMatchObject({
      status: "pending",
      transaction: `0x${"cd".repeat(32)}`,
    });
    // Delivered at least once: the same proof, request and retry key get the same answer, never a second settlement.
    const again = await post("/both", {
      "payment-signature": proof,
      "idempotency-key": res.headers["idempotency-key"] as string,
    });
    expect(again.statusCode).toBe(200);
    expect(again.body).toBe(res.body);
    expect(again.headers["payment-response"]).toBe(res.headers["payment-response"]);
    expect(gateway.calls.settle).toBe(1);
  });

  it("fails closed with 503 + Retry-After when the facilitator is unreachable", async () => {
    gateway.verifyResult = async () => {
      throw new FacilitatorFault("facilitator_unreachable", 7, "connect ECONNREFUSED");
    };
    const res = await post("/both", { "payment-signature": b64(v2Proof(requirementsV2(both, terms))) });
    expect(res.statusCode).toBe(503);
    expect(res.headers["retry-after"]).toBe("7");
    expect(handlerRuns).toBe(0);
  });

  it("withholds the body when settlement faults, and lets the same proof be retried", async () => {
    gateway.settleResult = async () => {
      throw new FacilitatorFault("facilitator_timeout", 3, "settle timed out");
    };
    const proof = b64(v2Proof(requirementsV2(both, terms)));
    const res = await post("/both", { "payment-signature": proof });
    // Unknown is not failure: 409 "do not pay again" with the retry key, and no `success: false` settlement.
    expect(res.statusCode).toBe(409);
    expect(res.json().type).toMatch(/settlement-unconfirmed$/);
    expect(res.json().detail).toMatch(/Do not pay again/);
    expect(res.headers["payment-response"]).toBeUndefined();
    expect(res.headers["idempotency-key"]).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(res.body).not.toContain("paid");
    expect((await ledger.receipts())[0]?.status).toBe("unknown");
    gateway.settleResult = fakeGateway().settleResult;
    const retry = await post("/both", {
      "payment-signature": proof,
      "idempotency-key": res.headers["idempotency-key"] as string,
    });
    expect(retry.statusCode).toBe(200);
  });

  it("a proof that paid: the same request with the issued retry key gets the same response again; nothing else does", async () => {
    const proof = b64(v2Proof(requirementsV2(both, terms)));
    const first = await post("/both", { "payment-signature": proof });
    expect(first.statusCode).toBe(200);
    const issued = first.headers["idempotency-key"] as string;
    expect(issued).toMatch(/^[A-Za-z0-9_-]{32}$/);
    // The proof alone is public once settled: without the key, the same request gets what any other request gets.
    const bare = await post("/both", { "payment-signature": proof });
    expect(bare.statusCode).toBe(402);
    expect(bare.json().error).toMatch(/payment_already_used/);
    const again = await post("/both", { "payment-signature": proof, "idempotency-key": issued });
    expect(again.statusCode).toBe(200);
    expect(again.body).toBe(first.body);
    expect(again.headers["payment-response"]).toBe(first.headers["payment-response"]);
    expect(again.headers["idempotent-replayed"]).toBe("true");
    expect(again.headers["payment-required"]).toBeUndefined();
    const other = await post("/both", { "payment-signature": proof }, { q: "another request" });
    expect(other.statusCode).toBe(402);
    expect(other.json().error).toMatch(/payment_already_used/);
    expect(gateway.calls).toEqual({ verify: 1, settle: 1 });
    expect(handlerRuns).toBe(1);
  });

  it("the same authorization re-encoded (other key order, extra envelope fields) is the same payment", async () => {
    const base = v2Proof(requirementsV2(both, terms));
    const first = await post("/both", { "payment-signature": b64(base) });
    expect(first.statusCode).toBe(200);
    const key = { "idempotency-key": first.headers["idempotency-key"] as string };
    const reordered = {
      payload: { authorization: { ...base.payload.authorization }, signature: base.payload.signature },
      accepted: base.accepted,
      x402Version: 2,
      resource: { url: "https://elsewhere.example/x" },
      extensions: { anything: { x: 1 } },
    };
    const again = await post("/both", { "payment-signature": b64(reordered), ...key });
    expect(again.statusCode).toBe(200);
    expect(again.body).toBe(first.body);
    // Same authorization sent as v1 (X-PAYMENT): still the same payment (network "base" = eip155:8453).
    const v1 = { x402Version: 1, scheme: "exact", network: "base", payload: base.payload };
    expect((await post("/both", { "x-payment": b64(v1), ...key })).statusCode).toBe(200);
    expect(gateway.calls).toEqual({ verify: 1, settle: 1 });
    expect(await ledger.receipts()).toHaveLength(1);
  });

  it("sends reason codes only: the facilitator's words stay out of bodies and headers", async () => {
    gateway.verifyResult = async () => ({
      isValid: false,
      invalidReason: "invalid_exact_evm_insufficient_balance",
      invalidMessage: "viem@2.57.20: execution reverted 0xdeadbeefsignature",
    });
    const res = await post("/both", { "payment-signature": b64(v2Proof(requirementsV2(both, terms))) });
    expect(res.statusCode).toBe(402);
    expect(res.json().error).toBe("invalid_exact_evm_insufficient_balance");
    const everything = `${res.body}${JSON.stringify(res.headers)}${Buffer.from(res.headers["payment-required"] as string, "base64")}`;
    expect(everything).not.toMatch(/viem|reverted|deadbeef/);
    gateway.verifyResult = fakeGateway().verifyResult;
    gateway.settleResult = async (_p, r) => ({
      success: false,
      errorReason: "invalid_exact_evm_insufficient_balance",
      errorMessage: "viem@2.57.20 RPC error at /home/x/node_modules",
      transaction: "",
      network: r.network,
    });
    const s = await post("/both", { "payment-signature": b64(v2Proof(requirementsV2(both, terms))) });
    expect(s.statusCode).toBe(402);
    const all = `${s.body}${Buffer.from(s.headers["payment-required"] as string, "base64")}`;
    expect(all).toContain("invalid_exact_evm_insufficient_balance");
    expect(all).not.toMatch(/viem|node_modules|RPC/);
  });

  it("a settle failure that may hide a transfer (transaction_failed, no hash) is unknown: 409, never a fresh 402", async () => {
    gateway.settleResult = async (_p, r) => ({
      success: false,
      errorReason: "invalid_exact_evm_transaction_failed",
      errorMessage: "viem@2.57.20 RPC error at /home/x/node_modules",
      transaction: "",
      network: r.network,
    });
    const s = await post("/both", { "payment-signature": b64(v2Proof(requirementsV2(both, terms))) });
    expect(s.statusCode).toBe(409);
    expect(s.json().type).toMatch(/settlement-unconfirmed$/);
    expect(s.headers["payment-required"]).toBeUndefined();
    expect(s.headers["retry-after"]).toBeDefined();
    expect(s.body).not.toMatch(/viem|node_modules|RPC|"paid"/);
    expect((await ledger.receipts())[0]?.status).toBe("unknown");
  });

  it("HEAD never verifies nor settles, even with a proof", async () => {
    const proof = b64(v2Proof(requirementsV2(getRoute, terms)));
    const head = await app.inject({ method: "HEAD", url: "/g", headers: { "payment-signature": proof } });
    expect(head.statusCode).toBe(402);
    expect(head.headers["payment-required"]).toBeDefined();
    expect(gateway.calls).toEqual({ verify: 0, settle: 0 });
    const get = await app.inject({ method: "GET", url: "/g", headers: { "payment-signature": proof } });
    expect(get.statusCode).toBe(200);
    expect(gateway.calls).toEqual({ verify: 1, settle: 1 });
  });

  it("a valid signature the facilitator calls invalid (its chain is down) is a 503, not the buyer's bad signature", async () => {
    gateway.verifyResult = async () => ({ isValid: false, invalidReason: "invalid_exact_evm_signature" });
    const signed = await signedV2Proof(requirementsV2(both, terms));
    const res = await post("/both", { "payment-signature": b64(signed) });
    expect(res.statusCode).toBe(503);
    expect(res.json().type).toMatch(/facilitator-chain-unavailable$/);
    expect(res.headers["retry-after"]).toBeDefined();
    expect(res.headers["payment-required"]).toBeUndefined();
    // A signature that is not the payer's stays the buyer's 402.
    const forged = await post("/both", { "payment-signature": b64(v2Proof(requirementsV2(both, terms))) });
    expect(forged.statusCode).toBe(402);
    expect(forged.json().error).toBe("invalid_exact_evm_signature");
    // Nothing was held: the signed proof pays once the facilitator sees the chain again.
    gateway.verifyResult = fakeGateway().verifyResult;
    expect((await post("/both", { "payment-signature": b64(signed) })).statusCode).toBe(200);
  });
});

describe("a chain outage and a v1 retry of a v2 payment", () => {
  it("with the chain down, a buyer whose earlier settlement is unknown is never told nothing was charged", async () => {
    gateway.settleResult = async () => {
      throw new FacilitatorFault("facilitator_timeout", 3, "settle timed out");
    };
    const signed = b64(await signedV2Proof(requirementsV2(both, terms)));
    const first = await post("/both", { "payment-signature": signed });
    expect(first.statusCode).toBe(409);
    const key = { "idempotency-key": first.headers["idempotency-key"] as string };
    expect((await ledger.receipts())[0]?.status).toBe("unknown"); // the buyer may have been charged
    // The facilitator's chain is down: it calls the payer's own signature invalid.
    gateway.verifyResult = async () => ({ isValid: false, invalidReason: "invalid_exact_evm_signature" });
    const retry = await post("/both", { "payment-signature": signed, ...key });
    expect(retry.statusCode).toBe(503);
    expect(retry.headers["payment-required"]).toBeUndefined();
    expect(retry.json().detail).not.toMatch(/nothing was charged/i);
    expect(retry.json().detail).toMatch(/same proof/);
    // …and a facilitator that cannot be reached at all says the same.
    gateway.verifyResult = async () => {
      throw new FacilitatorFault("facilitator_unreachable", 7, "connect ECONNREFUSED");
    };
    const again = await post("/both", { "payment-signature": signed, ...key });
    expect(again.statusCode).toBe(503);
    expect(again.json().detail).not.toMatch(/nothing was charged/i);
    expect((await ledger.receipts())[0]?.status).toBe("unknown");
  });

  it("a v1 retry of an authorization that paid as v2 replays X-PAYMENT-RESPONSE, not PAYMENT-RESPONSE", async () => {
    const base = v2Proof(requirementsV2(both, terms));
    const first = await post("/both", { "payment-signature": b64(base) });
    expect(first.statusCode).toBe(200);
    const v2 = decodePaymentResponseHeader(first.headers["payment-response"] as string);
    const v1 = { x402Version: 1, scheme: "exact", network: "base", payload: base.payload };
    const key = { "idempotency-key": first.headers["idempotency-key"] as string };
    const retry = await post("/both", { "x-payment": b64(v1), ...key });
    expect(retry.statusCode).toBe(200);
    expect(retry.headers["idempotent-replayed"]).toBe("true");
    expect(retry.headers["payment-response"]).toBeUndefined();
    const settlement = JSON.parse(
      Buffer.from(retry.headers["x-payment-response"] as string, "base64").toString(),
    );
    expect(settlement).toMatchObject({ success: true, network: "base", transaction: v2.transaction });
    expect(retry.body).toBe(first.body);
    // And the other way round: the v2 retry still gets its own header.
    const back = await post("/both", { "payment-signature": b64(base), ...key });
    expect(back.headers["payment-response"]).toBe(first.headers["payment-response"]);
    expect(back.headers["x-payment-response"]).toBeUndefined();
    expect(gateway.calls).toEqual({ verify: 1, settle: 1 });
  });
});

describe("provisional cap", () => {
  it("is reserved with the claim, before verification: 50 concurrent proofs under a cap of 3 → 3 verified, 3 settled", async () => {
    let open: () => void = () => {};
    const gate = new Promise<void>((r) => (open = r));
    gateway.verifyResult = async () => {
      await gate; // every request reaches the claim while the first three are still verifying
      return { isValid: true };
    };
    // 50 payers: one payer's proofs for one request would re-read the first purchase rather than buy again.
    const calls = Array.from({ length: 50 }, (_, i) => {
      const proof = v2Proof(requirementsV2(capped, terms));
      proof.payload.authorization.from = `0x${(0xc000 + i).toString(16).padStart(40, "0")}`;
      return post("/capped", { "payment-signature": b64(proof) });
    });
    while (gateway.calls.verify < 3) await new Promise((r) => setImmediate(r));
    open();
    const statuses = (await Promise.all(calls)).map((r) => r.statusCode);
    expect(statuses.filter((s) => s === 200)).toHaveLength(3);
    expect(statuses.filter((s) => s === 503)).toHaveLength(47);
    expect(gateway.calls).toEqual({ verify: 3, settle: 3 });
  });
});

describe("idempotency", () => {
  it("replays the stored response for the same key, proof and request, without the facilitator", async () => {
    const headers = {
      "payment-signature": b64(v2Proof(requirementsV2(both, terms))),
      "idempotency-key": "order-1",
    };
    const first = await post("/both", headers);
    expect(first.statusCode).toBe(200);
    const second = await post("/both", headers);
    expect(second.statusCode).toBe(200);
    expect(second.body).toBe(first.body);
    expect(second.headers["payment-response"]).toBe(first.headers["payment-response"]);
    expect(second.headers["idempotent-replayed"]).toBe("true");
    expect(gateway.calls).toEqual({ verify: 1, settle: 1 });
  });

  it("422 for the same key with another body; the ordinary 402 for the key without its proof", async () => {
    const proof = b64(v2Proof(requirementsV2(both, terms)));
    await post("/both", { "payment-signature": proof, "idempotency-key": "k2" });
    const other = await post(
      "/both",
      { "payment-signature": proof, "idempotency-key": "k2" },
      { q: "different" },
    );
    expect(other.statusCode).toBe(422);
    const noProof = await post("/both", { "idempotency-key": "k2" });
    expect(noProof.statusCode).toBe(402);
    expect(gateway.calls).toEqual({ verify: 1, settle: 1 });
  });

  it("the same key with another proof of the same payer: the stored answer, the other authorization unused", async () => {
    const first = await post("/both", {
      "payment-signature": b64(v2Proof(requirementsV2(both, terms))),
      "idempotency-key": "k3",
    });
    const res = await post("/both", {
      "payment-signature": b64(v2Proof(requirementsV2(both, terms))),
      "idempotency-key": "k3",
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers["idempotent-replayed"]).toBe("true");
    expect(res.headers["payment-response"]).toBe(first.headers["payment-response"]);
    expect(gateway.calls.settle).toBe(1);
    expect((await ledger.receipts()).map((r) => r.status)).toEqual(["settled"]);
  });

  it("422 for the same key with a different proof when re-reading is off (PAID_REREAD_SECONDS=0)", async () => {
    app.payments.core.rereadWindowMs = 0;
    await post("/both", {
      "payment-signature": b64(v2Proof(requirementsV2(both, terms))),
      "idempotency-key": "k3",
    });
    const res = await post("/both", {
      "payment-signature": b64(v2Proof(requirementsV2(both, terms))),
      "idempotency-key": "k3",
    });
    expect(res.statusCode).toBe(422);
  });

  it("keys are scoped to the payer: two payers may use the same key", async () => {
    const mine = v2Proof(requirementsV2(both, terms));
    const theirs = v2Proof(requirementsV2(both, terms));
    theirs.payload.authorization.from = "0x000000000000000000000000000000000000c0c0";
    expect(
      (await post("/both", { "payment-signature": b64(mine), "idempotency-key": "same" })).statusCode,
    ).toBe(200);
    expect(
      (await post("/both", { "payment-signature": b64(theirs), "idempotency-key": "same" })).statusCode,
    ).toBe(200);
    expect(gateway.calls.settle).toBe(2);
  });

  it("409 while the first request with the key (or proof) is still running", async () => {
    let release: () => void = () => {};
    let entered: () => void = () => {};
    const inVerify = new Promise<void>((r) => (entered = r));
    gateway.verifyResult = () =>
      new Promise((resolve) => {
        release = () => resolve({ isValid: true });
        entered();
      });
    const proof = b64(v2Proof(requirementsV2(both, terms)));
    const first = post("/both", { "payment-signature": proof, "idempotency-key": "slow" });
    await inVerify; // a barrier, not a sleep: the first request holds the claim now
    const sameKey = await post("/both", { "payment-signature": proof, "idempotency-key": "slow" });
    const sameProof = await post("/both", { "payment-signature": proof });
    release();
    expect(sameKey.statusCode).toBe(409);
    expect(sameKey.headers["retry-after"]).toBe("1");
    expect(sameProof.statusCode).toBe(409);
    expect((await first).statusCode).toBe(200);
    expect(gateway.calls.settle).toBe(1);
  });

  it("an invalid Idempotency-Key is a 400 when the route declares the header schema", async () => {
    const local = Fastify({ logger: false });
    local.setValidatorCompiler(validatorCompiler);
    registerProblemHandlers(local);
    local.get(
      "/h",
      {
        schema: {
          headers: {
            type: "object",
            properties: { "idempotency-key": { type: "string", pattern: "^[\\x21-\\x7E]{1,255}$" } },
          },
        },
      },
      async () => ({ ok: true }),
    );
    const res = await local.inject({ method: "GET", url: "/h", headers: { "idempotency-key": "has space" } });
    expect(res.statusCode).toBe(400);
    expect(res.json().errors[0]).toMatchObject({ in: "header", pointer: "/idempotency-key" });
    await local.close();
  });
});
