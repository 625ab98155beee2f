import { decodePaymentResponseHeader, encodePaymentResponseHeader } from "@x402/core/http";
import type { PaymentRequired, SettleResponse } from "@x402/core/types";
import { v1NameOf } from "../../chain/networks.js";
import { HttpProblem, PROBLEM_CONTENT_TYPE, type Problem, problem } from "../../http/problem.js";
import type { StoredResponse } from "../../ledger/port.js";
import type { AnswerKeeping, HandlerResponse } from "../core/core.js";
import type {
  FaultReason,
  InvalidCode,
  Outcome,
  OutcomeKind,
  OutcomeOf,
  RefusalCode,
  Settlement,
} from "../core/outcomes.js";

/**
 * The one table from a payment outcome (outcomes.ts) to what HTTP sends: status, headers and body, problems as RFC 9457
 * problem+json, settlements and PaymentRequired encoded as the x402 HTTP transport names them. The Fastify plugin only
 * copies these; src/mcp renders the same outcomes as tool results and takes only the problem bodies from here.
 */
export interface HttpAnswer {
  /** Absent: the handler's own status. */
  status?: number;
  headers: Array<[string, string]>;
  /** Absent: the handler's own payload. A problem is a `Problem` object the route's serializer writes. */
  body?: unknown;
}

/**
 * The PaymentRequired of a route (or tool) for one request, and over HTTP its PAYMENT-REQUIRED header and JSON body
 * bytes (see challenge.ts).
 */
export type Challenge = (
  error: string,
  v1Error?: string,
) => { required: PaymentRequired; header?: string; bytes?: Buffer };

/** x402's status for a request that must pay first. */
export const PAYMENT_REQUIRED_STATUS = 402;
const BAD_REQUEST = 400;
const CONFLICT = 409;
const INTERNAL = 500;
const BAD_GATEWAY = 502;
const UNAVAILABLE = 503;

/**
 * The MCP endpoint's own HTTP refusals, which are not payment outcomes: a JSON-RPC batch (one POST is at most one tool
 * call) and a method other than POST (the endpoint is stateless). Kept here so every status the payments and MCP code
 * sends is read from this file.
 */
export const MCP_ENDPOINT_STATUS = { batchRefused: BAD_REQUEST, methodNotAllowed: 405 } as const;

/** Each refusal's status, and whether an intermediary must not keep it (it answers one payment, not the URL). */
const REFUSALS: Record<RefusalCode, { status: number; noStore: boolean }> = {
  "idempotency-key-reused": { status: 422, noStore: false },
  // The extension's "same id, different payload".
  "payment-identifier-reused": { status: CONFLICT, noStore: true },
  "payment-already-used": { status: CONFLICT, noStore: true },
  "purchase-in-progress": { status: CONFLICT, noStore: true },
  "provisional-cap-reached": { status: UNAVAILABLE, noStore: false },
};

/** Each fault's status: the buyer's own rate (429), a facilitator that answered badly (502), or unavailable (503). */
const FAULTS: Record<FaultReason, { status: number; detail: string }> = {
  facilitator_timeout: { status: UNAVAILABLE, detail: "The payment facilitator did not answer in time." },
  facilitator_unreachable: { status: UNAVAILABLE, detail: "The payment facilitator is unreachable." },
  facilitator_bad_response: {
    status: BAD_GATEWAY,
    detail: "The payment facilitator answered with malformed data.",
  },
  facilitator_circuit_open: {
    status: UNAVAILABLE,
    detail: "The payment facilitator is failing; calls are paused for a short cool-down.",
  },
  facilitator_error: { status: BAD_GATEWAY, detail: "The payment facilitator answered with an error." },
  facilitator_chain_unavailable: {
    status: UNAVAILABLE,
    detail: "The payment facilitator could not reach the chain to check the payment.",
  },
  payer_limited: {
    status: 429,
    detail: "Too many payment checks of this payer are running or recently failed.",
  },
  ledger_unavailable: { status: UNAVAILABLE, detail: "The payment ledger is unavailable." },
};

const INVALID: Record<InvalidCode, number> = {
  "invalid-payment-header": BAD_REQUEST,
  "invalid-idempotency-key": BAD_REQUEST,
  "invalid-payment-identifier": BAD_REQUEST,
  "invalid-host": BAD_REQUEST,
};

/** The problem of a call that did not pass (every outcome but a PaymentRequired, a replay, a delivery, unpaid). */
export type ProblemOutcome = OutcomeOf<
  "invalid_request" | "busy" | "refused" | "unconfirmed" | "fault" | "taken_over"
>;

const PROBLEM_KINDS: ReadonlySet<OutcomeKind> = new Set<ProblemOutcome["kind"]>([
  "invalid_request",
  "busy",
  "refused",
  "unconfirmed",
  "fault",
  "taken_over",
]);

export const isProblemOutcome = (o: Outcome): o is ProblemOutcome => PROBLEM_KINDS.has(o.kind);

/** The RFC 9457 problem a buyer gets for an outcome, over HTTP and as an MCP tool result alike. */
export function outcomeProblem(o: ProblemOutcome, instance: string): Problem {
  switch (o.kind) {
    case "invalid_request":
      return problem(INVALID[o.code], o.code, o.detail, instance);
    case "busy":
      return o.withKey
        ? problem(
            CONFLICT,
            "request-in-progress",
            "A request with this Idempotency-Key is still running.",
            instance,
          )
        : problem(
            CONFLICT,
            "payment-in-progress",
            "This payment is already being used by another request.",
            instance,
          );
    case "taken_over":
      return problem(
        CONFLICT,
        "payment-in-progress",
        "This payment is being settled by another request.",
        instance,
      );
    case "refused":
      return problem(REFUSALS[o.code].status, o.code, o.detail, instance, o.extensions);
    case "unconfirmed":
      // x402 has no pending settlement: never `success: false`, which would invite paying again.
      return problem(
        CONFLICT,
        "settlement-unconfirmed",
        "The settlement of this payment is being confirmed on chain; you may already be charged. Do not pay again: retry shortly with the same proof, or with this answer's Idempotency-Key.",
        instance,
      );
    case "fault": {
      // The failure's own words stay in the log: they may carry internals a client has no use for.
      const f = FAULTS[o.reason];
      return problem(f.status, o.reason.replace(/_/g, "-"), `${f.detail} ${o.consequence}`, instance);
    }
  }
}

/** A problem answer with its headers (Retry-After as the outcome states it; no-store where the table says). */
function problemAnswer(o: ProblemOutcome, instance: string): HttpAnswer {
  const p = outcomeProblem(o, instance);
  const headers: Array<[string, string]> = [["content-type", PROBLEM_CONTENT_TYPE]];
  if ("retryAfterSeconds" in o && o.retryAfterSeconds !== undefined)
    headers.push(["Retry-After", String(o.retryAfterSeconds)]);
  const noStore =
    o.kind === "unconfirmed" || o.kind === "fault" || (o.kind === "refused" && REFUSALS[o.code].noStore);
  if (noStore) headers.push(["Cache-Control", "no-store"]);
  return { status: p.status, headers, body: p };
}

/**
 * A refusal an operation's own check throws before any PaymentRequired (a cap it sees reached): the problem and headers
 * of the same outcome, so a buyer is told the same whether the check or the claim saw it.
 */
export function refusalError(o: OutcomeOf<"refused">): HttpProblem {
  const headers: Record<string, string> = {};
  if (o.retryAfterSeconds !== undefined) headers["Retry-After"] = String(o.retryAfterSeconds);
  if (REFUSALS[o.code].noStore) headers["Cache-Control"] = "no-store";
  return new HttpProblem(REFUSALS[o.code].status, o.code, o.detail, headers, o.extensions ?? {});
}

/** The settlement header of an x402 version: PAYMENT-RESPONSE (v2) or X-PAYMENT-RESPONSE (v1, network "base"). */
export function settlementHeader(version: 1 | 2, result: SettleResponse): [string, string] {
  if (version === 2) return ["PAYMENT-RESPONSE", encodePaymentResponseHeader(result)];
  const v1 = { ...result, network: v1NameOf(result.network) };
  return ["X-PAYMENT-RESPONSE", Buffer.from(JSON.stringify(v1)).toString("base64")];
}

const SETTLEMENT_HEADERS = { 1: "X-PAYMENT-RESPONSE", 2: "PAYMENT-RESPONSE" } as const;

/**
 * What the ledger keeps of a delivered answer for a retry: the HTTP answer as sent (status, content type, the
 * settlement header), so a replay on any transport gives the same bytes.
 */
export function keptAnswer(
  response: HandlerResponse,
  settlement: Settlement,
  generation: string | undefined,
): StoredResponse {
  const [name, value] = settlementHeader(settlement.version, settlement.response);
  const headers: Record<string, string> = { [name]: value, "Cache-Control": "private, no-store" };
  if (response.contentType) headers["Content-Type"] = response.contentType;
  return {
    statusCode: response.statusCode,
    headers,
    body: response.body,
    ...(generation === undefined ? {} : { generation }),
  };
}

/**
 * A kept answer's headers for a proof of `version`: the same authorization may come back as v1 (X-PAYMENT) after
 * paying as v2 or the other way round, and each client reads only its own version's settlement header.
 */
function replayHeaders(o: OutcomeOf<"replay">): Record<string, string> {
  const stored = o.response.headers;
  const wanted = SETTLEMENT_HEADERS[o.version];
  const other = SETTLEMENT_HEADERS[o.version === 1 ? 2 : 1];
  if (stored[wanted] !== undefined || stored[other] === undefined || !o.paid) return stored;
  const { [other]: _dropped, ...rest } = stored;
  const [name, value] = settlementHeader(o.version, o.paid);
  return { ...rest, [name]: value };
}

/** The settlement a replay carries, as an x402 object (what a transport without headers hands its client). */
export function replaySettlement(o: OutcomeOf<"replay">): SettleResponse | undefined {
  const kept = replayHeaders(o)[SETTLEMENT_HEADERS[o.version]];
  if (kept === undefined) return undefined;
  return o.version === 2 ? decodePaymentResponseHeader(kept) : o.paid;
}

/** Whether the handler answered successfully: only such an answer is settled and kept. */
const handlerSucceeded = (response: HandlerResponse): boolean => response.statusCode < BAD_REQUEST;

/** The payment core's answers, kept as sent over HTTP; MCP replays read the same stored form. */
export const KEPT_AS_SENT: AnswerKeeping = { succeeded: handlerSucceeded, kept: keptAnswer };

/** What any transport answers when the server itself failed: a problem without internals. */
export const internalProblem = (instance: string, detail: string): Problem =>
  problem(INTERNAL, "internal", detail, instance);

/** What a transport answers when an operation's answer was not what its route promises. */
export const malformedAnswerProblem = (instance: string): Problem =>
  problem(BAD_GATEWAY, "internal", "The route answered without a JSON object.", instance);

/** An answer with `lead`'s headers first (a module function: no closure made per answer). */
function led(lead: Array<[string, string]>, a: HttpAnswer): HttpAnswer {
  return lead.length ? { ...a, headers: [...lead, ...a.headers] } : a;
}

/**
 * What HTTP sends for an outcome. `challenge` builds the PaymentRequired; `instance` is the problem's. Absent
 * status/body (a delivery, an unpaid answer): the handler's own go out, with the headers given here.
 */
export function httpAnswer(o: Outcome, instance: string, challenge: Challenge): HttpAnswer {
  const lead: Array<[string, string]> = [];
  if ("retryKey" in o && o.retryKey !== undefined) lead.push(["Idempotency-Key", o.retryKey]);
  // A failed settlement still answers its settlement header (`success: false` and the reason), as x402 clients expect.
  if ((o.kind === "payment_required" || o.kind === "fault") && o.settlement)
    lead.push(settlementHeader(o.settlement.version, o.settlement.response));
  switch (o.kind) {
    case "payment_required": {
      const c = challenge(o.error, o.v1Error);
      return led(lead, {
        status: PAYMENT_REQUIRED_STATUS,
        headers: [
          ...(c.header === undefined ? [] : [["PAYMENT-REQUIRED", c.header] as [string, string]]),
          ["Cache-Control", "no-store"],
          ["content-type", "application/json"],
        ],
        body: c.bytes,
      });
    }
    case "replay":
      return {
        status: o.response.statusCode,
        headers: [...Object.entries(replayHeaders(o)), ["Idempotent-Replayed", "true"]],
        body: o.response.body,
      };
    case "delivered":
      return led(lead, {
        headers: [
          settlementHeader(o.settlement.version, o.settlement.response),
          ["Cache-Control", "private, no-store"],
        ],
      });
    case "unpaid":
      return led(lead, { headers: [] });
    default:
      return led(lead, problemAnswer(o, instance));
  }
}

/**
 * What goes out once the handler answered and the core completed the payment, from the onSend hook, where no
 * serializer runs: a problem body already as JSON text.
 */
export function completionAnswer(o: Outcome, instance: string, challenge: Challenge): HttpAnswer {
  const a = httpAnswer(o, instance, challenge);
  return isProblemOutcome(o) ? { ...a, body: JSON.stringify(a.body) } : a;
}
