/**
 * What one payer's proofs may cost the facilitator. A verify that times out or fails for a proof is charged to its
 * payer, not to the facilitator's circuit: each payer has at most `maxInFlight` verifications running (unless the
 * caller lifts the cap: see `admit`), and after
 * `faultsBeforeBackoff` consecutive faults it waits (1 s, 2 s, 4 s … up to `maxBackoffMs`) before the next one is
 * let through. Any answer of the facilitator (valid or not) clears the payer's record. Pure state, no timers; the
 * table is bounded (the payers not seen for longest are forgotten first).
 */
export interface PayerLimitOptions {
  maxInFlight: number;
  faultsBeforeBackoff: number;
  baseBackoffMs: number;
  maxBackoffMs: number;
  /** Payers remembered at most. */
  maxPayers: number;
}

export const DEFAULT_PAYER_LIMITS: PayerLimitOptions = {
  maxInFlight: 4,
  faultsBeforeBackoff: 2,
  baseBackoffMs: 1000,
  maxBackoffMs: 60_000,
  maxPayers: 10_000,
};

interface PayerRecord {
  inFlight: number;
  faults: number;
  /** No new verification before this time (ms). */
  until: number;
}

export type PayerAdmission =
  | { allowed: true }
  | { allowed: false; retryAfterMs: number; why: "busy" | "backoff" };

export interface PayerLimits {
  /**
   * Takes a verification slot for `payer`, or says why not and for how long. `capped: false` skips the in-flight cap
   * (back-off still applies): for a payer whose own signature was checked, whose parallel calls are honest traffic.
   */
  admit(payer: string, now: number, capped?: boolean): PayerAdmission;
  /** The verification ended: `fault` when it timed out or failed on this proof; `neutral` frees the slot only. */
  settle(payer: string, outcome: "answer" | "fault" | "neutral", now: number): void;
  /** The payer's record (tests, logs). */
  peek(payer: string): Readonly<PayerRecord> | undefined;
}

export function createPayerLimits(opts: Partial<PayerLimitOptions> = {}): PayerLimits {
  const o = { ...DEFAULT_PAYER_LIMITS, ...opts };
  const table = new Map<string, PayerRecord>();

  const touch = (key: string): PayerRecord => {
    let r = table.get(key);
    if (r)
      table.delete(key); // re-inserted last: the map's order is least recently seen first
    else r = { inFlight: 0, faults: 0, until: 0 };
    table.set(key, r);
    if (table.size > o.maxPayers) {
      // Forget the longest-unseen payer that has nothing running (its back-off, if any, is forgiven).
      for (const [k, v] of table)
        if (v.inFlight === 0) {
          table.delete(k);
          break;
        }
    }
    return r;
  };

  return {
    admit(payer, now, capped = true) {
      const r = touch(payer.toLowerCase());
      if (r.until > now) return { allowed: false, retryAfterMs: r.until - now, why: "backoff" };
      if (capped && r.inFlight >= o.maxInFlight) return { allowed: false, retryAfterMs: 1000, why: "busy" };
      r.inFlight += 1;
      return { allowed: true };
    },
    settle(payer, outcome, now) {
      const r = table.get(payer.toLowerCase());
      if (!r) return;
      r.inFlight = Math.max(0, r.inFlight - 1);
      if (outcome === "neutral") return;
      if (outcome === "answer") {
        r.faults = 0;
        r.until = 0;
        return;
      }
      r.faults += 1;
      if (r.faults >= o.faultsBeforeBackoff) {
        const wait = Math.min(o.maxBackoffMs, o.baseBackoffMs * 2 ** (r.faults - o.faultsBeforeBackoff));
        r.until = Math.max(r.until, now + wait);
      }
    },
    peek: (payer) => table.get(payer.toLowerCase()),
  };
}
