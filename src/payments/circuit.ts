/**
 * A small circuit breaker for the facilitator: after `failureThreshold` consecutive faults it opens and requests
 * fail fast (503 + Retry-After) instead of queueing behind a dead dependency; after `cooldownMs` one trial call is
 * let through (half-open) and its outcome closes or re-opens the circuit. Pure state + transitions, no timers.
 */
export interface CircuitState {
  failures: number;
  openedAt: number | null;
  trialInFlight: boolean;
}

export interface CircuitOptions {
  failureThreshold: number;
  cooldownMs: number;
}

export const closedCircuit = (): CircuitState => ({ failures: 0, openedAt: null, trialInFlight: false });

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
}

export function recordFailure(state: CircuitState, opts: CircuitOptions, now: number): void {
  state.failures += 1;
  state.trialInFlight = false;
  if (state.openedAt !== null || state.failures >= opts.failureThreshold) state.openedAt = now;
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
