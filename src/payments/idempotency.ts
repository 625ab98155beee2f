import type { IdempotencyRecord, StoredResponse } from "../store/ledger.js";

export type IdempotencyDecision =
  | { kind: "proceed" }
  | { kind: "replay"; response: StoredResponse }
  | { kind: "in_flight" }
  | { kind: "mismatch"; detail: string };

/**
 * The rules of DESIGN.md "Idempotency and replay", as one pure function: a key replays only the response that the
 * same proof bought for the same request; anything else with that key is refused.
 */
export function decideIdempotency(
  record: IdempotencyRecord | undefined,
  requestFingerprint: string,
  proofFingerprint: string,
): IdempotencyDecision {
  if (!record) return { kind: "proceed" };
  if (record.requestFingerprint !== requestFingerprint)
    return { kind: "mismatch", detail: "this Idempotency-Key was used with a different request" };
  if (record.proofFingerprint !== proofFingerprint)
    return { kind: "mismatch", detail: "this Idempotency-Key was used with a different payment proof" };
  if (record.state === "in_flight" || !record.response) return { kind: "in_flight" };
  return { kind: "replay", response: record.response };
}
