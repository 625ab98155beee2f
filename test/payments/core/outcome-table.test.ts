import { encodePaymentResponseHeader } from "@x402/core/http";
import { describe, expect, it } from "vitest";
import { toolChallenge, toolResult } from "../../../src/mcp/results.js";
import { toolNamed } from "../../../src/mcp/tools.js";
import { PRICES } from "../../../src/operations/prices.js";
import type { HandlerResponse } from "../../../src/payments/core/core.js";
import {
  FAULT_REASONS,
  type FaultReason,
  INVALID_CODES,
  type InvalidCode,
  OUTCOME_KINDS,
  type Outcome,
  type OutcomeKind,
  type OutcomeOf,
  REFUSAL_CODES,
  type RefusalCode,
} from "../../../src/payments/core/outcomes.js";
import { challengeCache } from "../../../src/payments/http/challenge.js";
import {
  type Challenge,
  completionAnswer,
  type HttpAnswer,
  httpAnswer,
} from "../../../src/payments/http/http-answers.js";
import { CORE_TERMS } from "../../helpers/core.js";

// The outcome table: every outcome the payment decision can end in, with what a buyer gets for it over HTTP (status,
// headers, problem type) and as an MCP tool result (error or not, what it carries). A new outcome kind, refusal, fault
// or invalid-request code does not compile here until its row is written, and a row that lost its kind fails.

const TOOL = toolNamed("unlock_risk")!;
const PRICE = PRICES.unlockRisk;
const INSTANCE = TOOL.path;
const httpChallenges = challengeCache(PRICE, CORE_TERMS);
const httpChallenge: Challenge = (error, v1Error) =>
  httpChallenges(`https://api.example${INSTANCE}`, error, v1Error);
const mcpChallenge = toolChallenge(TOOL, PRICE, CORE_TERMS, "https://api.example", true);

const TX = `0x${"ab".repeat(32)}`;
const PAID = { success: true, transaction: TX, network: "eip155:8453" as const, payer: "0xb0b0" };
const FAILED = {
  success: false,
  errorReason: "invalid_exact_evm_insufficient_balance",
  transaction: "",
  network: "eip155:8453" as const,
  payer: "0xb0b0",
};
const OK: HandlerResponse = { statusCode: 200, contentType: "application/json", body: '{"token":"ARB"}' };
const HANDLER_PROBLEM: HandlerResponse = {
  statusCode: 404,
  contentType: "application/problem+json",
  body: JSON.stringify({
    type: "/problems/unknown-token",
    title: "Not Found",
    status: 404,
    detail: "no such token",
    instance: INSTANCE,
  }),
};

/** What HTTP sends: its status ("handler": the handler's own), headers it must carry, the problem type if any. */
interface HttpRendering {
  status: number | "handler";
  headers: Record<string, string | RegExp>;
  problem?: string;
}
/** What an MCP tool result is: an error or not, the problem type or a PaymentRequired, retryAfter, `_meta` keys. */
interface McpRendering {
  isError: boolean;
  problem?: string;
  paymentRequired?: true;
  status?: number;
  retryAfter?: number;
  meta: string[];
}
interface Row<K extends OutcomeKind> {
  name: string;
  outcome: OutcomeOf<K>;
  /** The operation's answer, for outcomes that send it. */
  response?: HandlerResponse;
  http: HttpRendering;
  mcp: McpRendering;
}

const NO_STORE = "no-store";
/** A fault's own words: for the operator's log, never for the buyer. */
const INTERNAL = "connect ECONNREFUSED 10.0.0.7:4021 (viem@2.0.0)";
const problemJson = /^application\/problem\+json/;
const PAY_RESPONSE = "x402/payment-response";
const RETRY_KEY = "pressure402/idempotency-key";

const refusals: { [C in RefusalCode]: Row<"refused"> } = {
  "idempotency-key-reused": {
    name: "an Idempotency-Key reused for another request",
    outcome: { kind: "refused", code: "idempotency-key-reused", detail: "reused" },
    http: { status: 422, headers: { "content-type": problemJson }, problem: "idempotency-key-reused" },
    mcp: { isError: true, problem: "idempotency-key-reused", status: 422, meta: [] },
  },
  "payment-identifier-reused": {
    name: "a payment-identifier id reused with another payer, request or payment",
    outcome: { kind: "refused", code: "payment-identifier-reused", detail: "reused" },
    http: { status: 409, headers: { "Cache-Control": NO_STORE }, problem: "payment-identifier-reused" },
    mcp: { isError: true, problem: "payment-identifier-reused", status: 409, meta: [] },
  },
  "payment-already-used": {
    name: "a paid authorization whose kept answer has expired",
    outcome: { kind: "refused", code: "payment-already-used", detail: "expired" },
    http: { status: 409, headers: { "Cache-Control": NO_STORE }, problem: "payment-already-used" },
    mcp: { isError: true, problem: "payment-already-used", status: 409, meta: [] },
  },
  "purchase-in-progress": {
    name: "the payer's earlier purchase of the same request still settling after the wait",
    outcome: { kind: "refused", code: "purchase-in-progress", detail: "wait", retryAfterSeconds: 2 },
    http: {
      status: 409,
      headers: { "Retry-After": "2", "Cache-Control": NO_STORE },
      problem: "purchase-in-progress",
    },
    mcp: { isError: true, problem: "purchase-in-progress", status: 409, retryAfter: 2, meta: [] },
  },
  "provisional-cap-reached": {
    name: "a provisional cap reached (the operation's check or the claim)",
    outcome: {
      kind: "refused",
      code: "provisional-cap-reached",
      detail: "cap",
      retryAfterSeconds: 3600,
      extensions: { availability: "capped" },
    },
    http: { status: 503, headers: { "Retry-After": "3600" }, problem: "provisional-cap-reached" },
    mcp: { isError: true, problem: "provisional-cap-reached", status: 503, retryAfter: 3600, meta: [] },
  },
};

const FAULT_STATUS: { [R in FaultReason]: number } = {
  facilitator_timeout: 503,
  facilitator_unreachable: 503,
  facilitator_bad_response: 502,
  facilitator_circuit_open: 503,
  facilitator_error: 502,
  facilitator_chain_unavailable: 503,
  payer_limited: 429,
  ledger_unavailable: 503,
};
const faults = FAULT_REASONS.map(
  (reason): Row<"fault"> => ({
    name: `a fault: ${reason}`,
    outcome: {
      kind: "fault",
      reason,
      retryAfterSeconds: 7,
      consequence: "Nothing was charged.",
      message: INTERNAL,
    },
    http: {
      status: FAULT_STATUS[reason],
      headers: { "Retry-After": "7", "Cache-Control": NO_STORE },
      problem: reason.replace(/_/g, "-"),
    },
    mcp: {
      isError: true,
      problem: reason.replace(/_/g, "-"),
      status: FAULT_STATUS[reason],
      retryAfter: 7,
      meta: [],
    },
  }),
);

const invalids = INVALID_CODES.map(
  (code: InvalidCode): Row<"invalid_request"> => ({
    name: `the call's own mistake: ${code}`,
    outcome: { kind: "invalid_request", code, detail: "bad" },
    http: { status: 400, headers: { "content-type": problemJson }, problem: code },
    mcp: { isError: true, problem: code, status: 400, meta: [] },
  }),
);

const TABLE: { [K in OutcomeKind]: Row<K>[] } = {
  payment_required: [
    {
      name: "no proof, a mismatched or refused proof: a fresh PaymentRequired naming why",
      outcome: { kind: "payment_required", error: "invalid_exact_evm_signature" },
      http: { status: 402, headers: { "PAYMENT-REQUIRED": /./, "Cache-Control": NO_STORE } },
      mcp: { isError: true, paymentRequired: true, meta: ["x402/error"] },
    },
    {
      name: "a settlement refused before anything moved: the PaymentRequired and the `success: false` settlement",
      outcome: {
        kind: "payment_required",
        error: "settlement_failed: invalid_exact_evm_insufficient_balance",
        settlement: { response: FAILED, version: 2 },
        retryKey: "k-issued",
      },
      http: {
        status: 402,
        headers: {
          "PAYMENT-REQUIRED": /./,
          "PAYMENT-RESPONSE": encodePaymentResponseHeader(FAILED),
          "Idempotency-Key": "k-issued",
        },
      },
      mcp: { isError: true, paymentRequired: true, meta: ["x402/error", PAY_RESPONSE, RETRY_KEY] },
    },
  ],
  invalid_request: invalids,
  replay: [
    {
      name: "the answer this payment bought, again (its secret, or the payer's own fresh proof)",
      outcome: {
        kind: "replay",
        response: {
          statusCode: 200,
          headers: {
            "PAYMENT-RESPONSE": encodePaymentResponseHeader(PAID),
            "Content-Type": "application/json",
          },
          body: OK.body,
        },
        version: 2,
        paid: PAID,
      },
      http: {
        status: 200,
        headers: { "PAYMENT-RESPONSE": encodePaymentResponseHeader(PAID), "Idempotent-Replayed": "true" },
      },
      mcp: { isError: false, meta: [PAY_RESPONSE, "pressure402/replayed"] },
    },
  ],
  busy: [
    {
      name: "the same Idempotency-Key on a live request",
      outcome: { kind: "busy", withKey: true, retryAfterSeconds: 1 },
      http: { status: 409, headers: { "Retry-After": "1" }, problem: "request-in-progress" },
      mcp: { isError: true, problem: "request-in-progress", status: 409, retryAfter: 1, meta: [] },
    },
    {
      name: "the same payment on a live request",
      outcome: { kind: "busy", withKey: false, retryAfterSeconds: 1 },
      http: { status: 409, headers: { "Retry-After": "1" }, problem: "payment-in-progress" },
      mcp: { isError: true, problem: "payment-in-progress", status: 409, retryAfter: 1, meta: [] },
    },
  ],
  refused: Object.values(refusals),
  unconfirmed: [
    {
      name: "a settlement with no known outcome yet: never `success: false`",
      outcome: { kind: "unconfirmed", retryAfterSeconds: 5, retryKey: "k-issued" },
      http: {
        status: 409,
        headers: { "Retry-After": "5", "Cache-Control": NO_STORE, "Idempotency-Key": "k-issued" },
        problem: "settlement-unconfirmed",
      },
      mcp: {
        isError: true,
        problem: "settlement-unconfirmed",
        status: 409,
        retryAfter: 5,
        meta: [RETRY_KEY],
      },
    },
  ],
  fault: [
    ...faults,
    {
      name: "a settlement credited elsewhere: the fault and the `success: false` settlement",
      outcome: {
        kind: "fault",
        reason: "facilitator_bad_response",
        retryAfterSeconds: 5,
        consequence: "Nothing was delivered; retry later.",
        message: INTERNAL,
        settlement: { response: FAILED, version: 1 },
      },
      http: { status: 502, headers: { "X-PAYMENT-RESPONSE": /./ }, problem: "facilitator-bad-response" },
      mcp: {
        isError: true,
        problem: "facilitator-bad-response",
        status: 502,
        retryAfter: 5,
        meta: [PAY_RESPONSE],
      },
    },
  ],
  delivered: [
    {
      name: "paid: the handler's answer with its settlement",
      outcome: { kind: "delivered", settlement: { response: PAID, version: 2 }, retryKey: "k-issued" },
      response: OK,
      http: {
        status: "handler",
        headers: {
          "PAYMENT-RESPONSE": encodePaymentResponseHeader(PAID),
          "Cache-Control": "private, no-store",
          "Idempotency-Key": "k-issued",
        },
      },
      mcp: { isError: false, meta: [PAY_RESPONSE, RETRY_KEY] },
    },
  ],
  unpaid: [
    {
      name: "the handler failed: its own problem, nothing settled",
      outcome: { kind: "unpaid" },
      response: HANDLER_PROBLEM,
      http: { status: "handler", headers: {} },
      mcp: { isError: true, problem: "unknown-token", status: 404, meta: [] },
    },
  ],
  taken_over: [
    {
      name: "the claim lapsed and another request settles this payment",
      outcome: { kind: "taken_over", retryAfterSeconds: 1 },
      http: { status: 409, headers: { "Retry-After": "1" }, problem: "payment-in-progress" },
      mcp: { isError: true, problem: "payment-in-progress", status: 409, retryAfter: 1, meta: [] },
    },
  ],
};

const header = (a: HttpAnswer, name: string) =>
  a.headers.find(([n]) => n.toLowerCase() === name.toLowerCase())?.[1];

const rows = Object.values(TABLE).flat() as Row<OutcomeKind>[];

describe("the outcome table: every outcome, over HTTP and MCP", () => {
  it("lists every outcome kind, every refusal, every fault and every invalid request", () => {
    expect(Object.keys(TABLE).sort()).toEqual([...OUTCOME_KINDS].sort());
    for (const kind of OUTCOME_KINDS) expect(TABLE[kind].length).toBeGreaterThan(0);
    expect(Object.keys(refusals).sort()).toEqual([...REFUSAL_CODES].sort());
    expect(TABLE.fault.map((r) => r.outcome.reason)).toEqual(expect.arrayContaining([...FAULT_REASONS]));
    expect(TABLE.invalid_request.map((r) => r.outcome.code)).toEqual([...INVALID_CODES]);
  });

  for (const row of rows) {
    it(`${row.outcome.kind}: ${row.name}`, () => {
      const o: Outcome = row.outcome;
      // HTTP, as the route's guard sends it and as onSend sends it after the handler (problem bodies as text).
      for (const a of [
        httpAnswer(o, INSTANCE, httpChallenge),
        completionAnswer(o, INSTANCE, httpChallenge),
      ]) {
        expect(a.status).toBe(row.http.status === "handler" ? undefined : row.http.status);
        for (const [name, value] of Object.entries(row.http.headers))
          if (value instanceof RegExp) expect(header(a, name)).toMatch(value);
          else expect(header(a, name)).toBe(value);
        if (row.http.problem) {
          const body = typeof a.body === "string" ? JSON.parse(a.body) : a.body;
          expect(body).toMatchObject({
            type: `/problems/${row.http.problem}`,
            status: row.http.status,
            instance: INSTANCE,
            ...(o.kind === "refused" ? o.extensions : {}),
          });
          expect(header(a, "content-type")).toMatch(problemJson);
        }
        if (row.http.status === "handler") expect(a.body).toBeUndefined();
        // The failure's own words never reach the buyer.
        expect(JSON.stringify(a)).not.toContain(INTERNAL);
      }
      if (!("retryAfterSeconds" in o) || o.retryAfterSeconds === undefined)
        expect(header(httpAnswer(o, INSTANCE, httpChallenge), "Retry-After")).toBeUndefined();

      // MCP: the same outcome as a tool result, with no HTTP header or status read back.
      const r = toolResult(o, TOOL, mcpChallenge, row.response);
      expect(r.isError ?? false).toBe(row.mcp.isError);
      expect(Object.keys(r._meta ?? {}).sort()).toEqual([...row.mcp.meta].sort());
      expect(JSON.stringify(r)).not.toContain(INTERNAL);
      const sc = r.structuredContent ?? {};
      if (row.mcp.paymentRequired) {
        expect(sc).toMatchObject({ x402Version: 2, resource: { url: "https://api.example/mcp" } });
        expect((sc as { error?: string }).error).toBe((o as OutcomeOf<"payment_required">).error);
      }
      if (row.mcp.problem) {
        expect(sc).toMatchObject({ type: `/problems/${row.mcp.problem}`, status: row.mcp.status });
        if (o.kind === "refused" && o.extensions) expect(sc).toMatchObject(o.extensions);
      }
      expect(sc.retryAfter).toBe(row.mcp.retryAfter);
      if (!row.mcp.isError) expect(sc).toEqual({ token: "ARB" });
    });
  }
});
