import type { SettleResponse } from "@x402/core/types";
import type { StoredResponse } from "../../ledger/port.js";

/**
 * What a paid call ends in, in x402 terms and free of any transport: the payment decision (decide.ts, core.ts) returns
 * these, http-answers.ts is the one table that turns each into an HTTP status, headers and body, and src/mcp turns the
 * same outcome into a tool result. Durations are seconds; reasons are x402 error codes or this server's problem slugs.
 */
export type Outcome =
  /** A fresh PaymentRequired naming why; a failed settlement's `success: false` rides with it. */
  | {
      kind: "payment_required";
      error: string;
      /** The reason a v1 client reads, when it differs (an unpaid call names the v1 header). */
      v1Error?: string;
      settlement?: Settlement;
      retryKey?: string;
    }
  /** The call itself is malformed: nothing was claimed, verified or charged. */
  | { kind: "invalid_request"; code: InvalidCode; detail: string }
  /**
   * The answer this payment already bought, as kept (`response`), to a proof of `version`; `paid` is the settlement
   * of its transaction, for a client of the other x402 version than the one that paid.
   */
  | { kind: "replay"; response: StoredResponse; version: 1 | 2; paid: SettleResponse | undefined }
  /** Another live request holds this payment (`withKey`: one sent with the same retry key). */
  | { kind: "busy"; withKey: boolean; retryAfterSeconds: number }
  /** Refused before anything was charged, for a reason of this server's (a reused secret, a cap, …). */
  | {
      kind: "refused";
      code: RefusalCode;
      detail: string;
      retryAfterSeconds?: number;
      /** RFC 9457 extension members the operation adds (e.g. its availability label). */
      extensions?: Record<string, string>;
    }
  /** A settlement of this payment has no known outcome yet: retry with the same proof (never `success: false`). */
  | { kind: "unconfirmed"; retryAfterSeconds: number; retryKey?: string }
  /** The facilitator or the ledger failed; `consequence` tells the buyer where its money stands. */
  | {
      kind: "fault";
      reason: FaultReason;
      retryAfterSeconds: number;
      consequence: string;
      /** The failure's own words, for the operator's log only. */
      message: string;
      settlement?: Settlement;
      retryKey?: string;
    }
  /** Paid: the handler's answer goes out with this settlement. */
  | { kind: "delivered"; settlement: Settlement; retryKey?: string }
  /** The handler failed: its answer goes out as it is, nothing was settled. */
  | { kind: "unpaid"; retryKey?: string }
  /** The claim lapsed and another request took the payment over: it settles, not this one. */
  | { kind: "taken_over"; retryAfterSeconds: number; retryKey?: string };

/** A settlement as x402 states it, and the x402 version of the proof it answers (which names its header). */
export interface Settlement {
  response: SettleResponse;
  version: 1 | 2;
}

export type OutcomeKind = Outcome["kind"];
export type OutcomeOf<K extends OutcomeKind> = Extract<Outcome, { kind: K }>;

/** Every kind once: a new kind fails to compile here until it is listed (and the outcome table test renders it). */
const KINDS: { [K in OutcomeKind]: true } = {
  payment_required: true,
  invalid_request: true,
  replay: true,
  busy: true,
  refused: true,
  unconfirmed: true,
  fault: true,
  delivered: true,
  unpaid: true,
  taken_over: true,
};
export const OUTCOME_KINDS = Object.keys(KINDS) as OutcomeKind[];

/** The call's own mistakes, each a problem slug. */
export const INVALID_CODES = [
  "invalid-payment-header",
  "invalid-idempotency-key",
  "invalid-payment-identifier",
  "invalid-host",
] as const;
export type InvalidCode = (typeof INVALID_CODES)[number];

/** This server's refusals before anything is charged, each a problem slug. */
export const REFUSAL_CODES = [
  "idempotency-key-reused",
  "payment-identifier-reused",
  "payment-already-used",
  "purchase-in-progress",
  "provisional-cap-reached",
] as const;
export type RefusalCode = (typeof REFUSAL_CODES)[number];

/** Why the facilitator (or the ledger) gave no answer; gateway.ts names the first seven. */
export const FAULT_REASONS = [
  "facilitator_timeout",
  "facilitator_unreachable",
  "facilitator_bad_response",
  "facilitator_circuit_open",
  "facilitator_error",
  "facilitator_chain_unavailable",
  "payer_limited",
  "ledger_unavailable",
] as const;
export type FaultReason = (typeof FAULT_REASONS)[number];

export const NOTHING_CHARGED = "Nothing was charged; retry later.";
export const BEING_CONFIRMED =
  "An earlier settlement of this payment is still being confirmed; do not pay again, retry later with the same proof.";
export const NOT_CONFIRMED =
  "The settlement could not be confirmed and nothing was delivered; retry later with the same proof.";

/** How long a buyer waits before asking again about a settlement being confirmed on chain. */
export const UNCONFIRMED_RETRY_SECONDS = 5;
/** How long before retrying a payment another live request holds. */
export const BUSY_RETRY_SECONDS = 1;

/** What a payment whose settlement has no known outcome yet is answered. */
export const unconfirmed = (retryKey?: string): OutcomeOf<"unconfirmed"> => ({
  kind: "unconfirmed",
  retryAfterSeconds: UNCONFIRMED_RETRY_SECONDS,
  ...(retryKey === undefined ? {} : { retryKey }),
});

/** A provisional cap of paid calls, as its operation states it: `limit` calls from `since` until `until`. */
export interface ProvisionalCap {
  limit: number;
  since: Date;
  /** When the cap's window reopens: what Retry-After counts down to. */
  until: Date;
  /** The operation's own words for the cap (e.g. "per UTC day, reopens at 00:00 UTC"). */
  detail: string;
  extensions?: Record<string, string>;
}

/**
 * The one answer to a reached provisional cap, whether the operation's check saw it before any PaymentRequired or the
 * claim found the cap taken by a concurrent call.
 */
export const capReached = (cap: ProvisionalCap, now: Date): OutcomeOf<"refused"> => ({
  kind: "refused",
  code: "provisional-cap-reached",
  detail: cap.detail,
  retryAfterSeconds: Math.max(1, Math.ceil((cap.until.getTime() - now.getTime()) / 1000)),
  ...(cap.extensions ? { extensions: cap.extensions } : {}),
});
