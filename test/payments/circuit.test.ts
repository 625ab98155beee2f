import { describe, expect, it } from "vitest";
import { admit, closedCircuit, recordFailure, recordSuccess } from "../../src/payments/circuit.js";

const opts = { failureThreshold: 3, cooldownMs: 1000 };

describe("circuit breaker", () => {
  it("opens after the threshold, fails fast during the cool-down, half-opens for one trial, closes on success", () => {
    const s = closedCircuit();
    for (let i = 0; i < 2; i++) recordFailure(s, opts, 0);
    expect(admit(s, opts, 0)).toEqual({ allowed: true, trial: false });
    recordFailure(s, opts, 100);
    expect(admit(s, opts, 500)).toEqual({ allowed: false, retryAfterMs: 600 });
    expect(admit(s, opts, 1100)).toEqual({ allowed: true, trial: true });
    expect(admit(s, opts, 1101).allowed).toBe(false); // only one trial at a time
    recordSuccess(s);
    expect(admit(s, opts, 1102)).toEqual({ allowed: true, trial: false });
  });

  it("a failed trial re-opens for another full cool-down", () => {
    const s = closedCircuit();
    for (let i = 0; i < 3; i++) recordFailure(s, opts, 0);
    expect(admit(s, opts, 1000).allowed).toBe(true);
    recordFailure(s, opts, 1000);
    expect(admit(s, opts, 1500)).toEqual({ allowed: false, retryAfterMs: 500 });
  });
});
