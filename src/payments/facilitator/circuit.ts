/**
 * A small circuit breaker for the facilitator: after `failureThreshold` consecutive faults it opens and requests
 * fail fast (unavailable, with Retry-After) instead of queueing behind a dead dependency; after `cooldownMs` one trial call is
 * let through (half-open) and its outcome closes or re-opens the circuit. Pure state + transitions, no timers.
 *
 * A fault seen on one payer's proof may be that proof's own cost (a slow contract signature), so such faults open the
 * circuit only when they come from `minWitnesses` different payers (witnesses); a fault with no payer — the
 * facilitator unreachable, its health probe failing — is the facilitator's own and needs no witness.
 */
export interface CircuitState {
  failures: number;
  openedAt: number | null;
  trialInFlight: boolean;
  /** Distinct payers among the current run of faults. */
  witnesses: Set<string>;
  /** The current run holds a fault of the facilitator's own (no payer). */
  ownFault: boolean;
}

export interface CircuitOptions {
  failureThreshold: number;
  cooldownMs: number;
  /** Distinct payers whose proofs must have met faults before those faults open the circuit (default 3). */
  minWitnesses?: number;
}

export const closedCircuit = (): CircuitState => ({
  failures: 0,
  openedAt: null,
  trialInFlight: false,
  witnesses: new Set(),
  ownFault: false,
});

export type Admission = { allowed: true; trial: boolean } | { allowed: false; retryAfterMs: number };

export function admit(state: CircuitState, opts: CircuitOptions, now: number): Admission {
  if (state.openedAt === null) return { allowed: true, trial: false };
  const elapsed = now - state.openedAt;
  if (elapsed < opts.cooldownMs) return { allowed: false, retryAfterMs: opts.cooldownMs - elapsed };
  if (state.trialInFlight) return { allowed: false, retryAfterMs: Math.min(1000, opts.cooldownMs) };
  state.trialInFlight = true;
  return { allowed: true, trial: true };
}

export function recordSuccess(state: CircuitState): void {
  state.failures = 0;
  state.openedAt = null;
  state.trialInFlight = false;
  state.witnesses.clear();
  state.ownFault = false;
}

/** Bounds the witness set: past this many, more payers add nothing to the verdict. */
const MAX_WITNESSES = 64;

/**
 * A fault of the facilitator: `witness` is the payer whose proof met it, undefined for a fault of its own (no
 * answer at all, a failed health probe).
 */
export function recordFailure(
  state: CircuitState,
  opts: CircuitOptions,
  now: number,
  witness?: string,
): void {
  state.failures += 1;
  state.trialInFlight = false;
  if (witness === undefined) state.ownFault = true;
  else if (state.witnesses.size < MAX_WITNESSES) state.witnesses.add(witness.toLowerCase());
  const needed = Math.min(opts.minWitnesses ?? 3, opts.failureThreshold);
  const corroborated = state.ownFault || state.witnesses.size >= needed;
  if (state.openedAt !== null || (state.failures >= opts.failureThreshold && corroborated))
    state.openedAt = now;
}

/** A call that failed for a reason of ours or the sender's: no verdict on the facilitator, but a trial slot is freed. */
export function recordNeutral(state: CircuitState): void {
  state.trialInFlight = false;
}

export type CircuitLabel = "closed" | "open" | "half_open";

/** Half-open once the cool-down is over (the next call is the trial, see `admit`) or while the trial runs. */
export function circuitLabel(state: Readonly<CircuitState>, cooldownMs: number, now: number): CircuitLabel {
  if (state.openedAt === null) return "closed";
  if (state.trialInFlight || now - state.openedAt >= cooldownMs) return "half_open";
  return "open";
}
