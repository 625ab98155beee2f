import { decodePaymentRequiredHeader } from "@x402/core/http";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type Ledger, openLedger } from "../../../src/ledger/embedded.js";
import { completePayment, type PaymentCore } from "../../../src/payments/core/core.js";
import {
  type CallDecision,
  decideCall,
  type PaidCall,
  type ProofOffer,
} from "../../../src/payments/core/decide.js";
import { challengeCache } from "../../../src/payments/http/challenge.js";
import {
  type Challenge,
  completionAnswer,
  type HttpAnswer,
  httpAnswer,
} from "../../../src/payments/http/http-answers.js";
import { HEADER_V2 } from "../../../src/payments/terms/matching.js";
import { proofObject } from "../../../src/payments/terms/proof.js";
import { requirementsV2 } from "../../../src/payments/terms/requirements.js";
import { CORE_ROUTE, CORE_TERMS, HANDLER_OK, silentLog, testCore } from "../../helpers/core.js";
import { type FakeGateway, fakeGateway } from "../../helpers/fake-gateway.js";
import { v2Proof } from "../../helpers/proofs.js";

// One paid call decided by the core for any transport: no HTTP, no Fastify, no MCP SDK. The offer is what a transport
// found (here built directly), the decisions are outcomes, rendered here as HTTP renders them.

const route = CORE_ROUTE;
const RESOURCE = "https://api.example/score";
const challenges = challengeCache(route, CORE_TERMS);
const challenge: Challenge = (error, v1Error) => challenges(RESOURCE, error, v1Error);
const ok = HANDLER_OK;

let gateway: FakeGateway;
let ledger: Ledger;
let core: PaymentCore;

beforeEach(async () => {
  gateway = fakeGateway();
  ledger = openLedger(":memory:");
  core = testCore(gateway, ledger);
  await ledger.startIncarnation(core.incarnation, core.clock());
});

afterEach(async () => {
  await ledger.close();
});

const offer = (proof: unknown): ProofOffer => ({
  kind: "pay",
  name: HEADER_V2,
  decoded: proofObject(proof, "the proof"),
});

const call = (o: ProofOffer, secret?: string, body: unknown = { token: "ARB" }): PaidCall => ({
  method: "POST",
  offer: o,
  idempotencyKey: secret,
  query: {},
  body,
  resourceUrl: RESOURCE,
  client: "192.0.2.1",
  log: silentLog,
});

function answered(d: CallDecision): HttpAnswer {
  if (d.kind !== "answer") throw new Error("expected an answer, got proceed");
  return httpAnswer(d.outcome, "/score", challenge);
}

/** The PaymentRequired a 402 carries in PAYMENT-REQUIRED. */
const requiredOf = (a: HttpAnswer) => decodePaymentRequiredHeader(header(a, "payment-required") ?? "");

const header = (a: HttpAnswer, name: string) => a.headers.find(([n]) => n.toLowerCase() === name)?.[1];
const accepted = () => requirementsV2(route, CORE_TERMS);

describe("decideCall: one paid call, whatever its transport", () => {
  it("no proof: the 402 with the PaymentRequired object, nothing asked of the facilitator", async () => {
    const a = answered(await decideCall(core, route, call({ kind: "none" })));
    expect(a.status).toBe(402);
    expect(requiredOf(a).accepts).toEqual([accepted()]);
    expect(requiredOf(a).error).toMatch(/payment required/);
    expect(gateway.calls).toEqual({ verify: 0, settle: 0 });
  });

  it("a malformed proof is the caller's 400 naming where it came from; a mismatched one a 402; neither verified", async () => {
    const junk = answered(await decideCall(core, route, call(offer({ x402Version: 2 }))));
    expect(junk.status).toBe(400);
    expect(junk.body).toMatchObject({ type: "/problems/invalid-payment-header", detail: /^the proof / });
    const cheap = v2Proof({ ...accepted(), amount: "1" });
    const mismatch = answered(await decideCall(core, route, call(offer(cheap))));
    expect(mismatch.status).toBe(402);
    expect(requiredOf(mismatch).error).toMatch(/amount 1 ≠ 100000/);
    expect(gateway.calls).toEqual({ verify: 0, settle: 0 });
  });

  it("a valid proof proceeds; after the answer the settlement comes back as an object and a header", async () => {
    const d = await decideCall(core, route, call(offer(v2Proof(accepted())), "key-1"));
    expect(d.kind).toBe("proceed");
    if (d.kind !== "proceed") return;
    const completion = await completePayment(core, d.payment, ok);
    if (completion.kind !== "delivered") throw new Error(completion.kind);
    expect(completion.settlement.response).toMatchObject({
      success: true,
      transaction: expect.stringMatching(/^0x/),
    });
    const done = completionAnswer(completion, "/score", challenge);
    expect(done.status).toBeUndefined(); // the handler's own status and body go out
    expect(header(done, "payment-response")).toBeDefined();
    expect(gateway.calls).toEqual({ verify: 1, settle: 1 });
  });

  it("the same proof again: the stored answer only with its secret; without it, payment_already_used", async () => {
    const proof = v2Proof(accepted());
    const first = await decideCall(core, route, call(offer(proof), "key-2"));
    if (first.kind !== "proceed") throw new Error(first.kind);
    await completePayment(core, first.payment, ok);

    const replay = answered(await decideCall(core, route, call(offer(proof), "key-2")));
    expect(replay.status).toBe(200);
    expect(replay.body).toBe(ok.body);
    expect(header(replay, "idempotent-replayed")).toBe("true");
    const observer = answered(await decideCall(core, route, call(offer(proof))));
    expect(observer.status).toBe(402);
    expect(requiredOf(observer).error).toMatch(/^payment_already_used/);
    expect(gateway.calls).toEqual({ verify: 1, settle: 1 });
  });

  it("an invalid retry secret is the caller's 400 before any claim", async () => {
    const a = answered(await decideCall(core, route, call(offer(v2Proof(accepted())), "bad key")));
    expect(a.status).toBe(400);
    expect(a.body).toMatchObject({ type: "/problems/invalid-idempotency-key" });
    expect(gateway.calls.verify).toBe(0);
  });
});
