import type { FacilitatorClient } from "@x402/core/server";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import { describe, expect, it } from "vitest";
import {
  admit,
  circuitLabel,
  closedCircuit,
  recordFailure,
  recordSuccess,
} from "../../../src/payments/facilitator/circuit.js";
import { createFacilitatorGateway } from "../../../src/payments/facilitator/gateway.js";

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

describe("the gateway counts only the facilitator's own faults", () => {
  const requirements = {} as PaymentRequirements;
  const payload = {} as PaymentPayload;
  const client = (fail: () => never): FacilitatorClient =>
    ({
      verify: async () => fail(),
      settle: async () => fail(),
      getSupported: async () => ({ kinds: [], extensions: [], signers: {} }),
    }) as unknown as FacilitatorClient;

  it.each([
    [
      "its 4xx to our request",
      () => {
        throw new Error("Facilitator verify failed (400): bad request");
      },
    ],
    [
      "an error of our own process (a stack overflow in an encoder)",
      () => {
        throw new RangeError("Maximum call stack size exceeded");
      },
    ],
  ])("%s: 502 to the client, no count toward the circuit", async (_name, fail) => {
    const g = createFacilitatorGateway(
      client(fail as () => never),
      { failureThreshold: 1, cooldownMs: 1000 },
      () => 0,
    );
    for (let i = 0; i < 5; i++)
      await expect(g.verify(payload, requirements)).rejects.toMatchObject({ reason: "facilitator_error" });
    expect(g.circuit).toMatchObject({ failures: 0, openedAt: null });
  });

  it("its 5xx, timeouts and refused connections count; a neutral error during the half-open trial frees the trial", async () => {
    let now = 0;
    let fail: () => never = () => {
      throw new Error("Facilitator verify failed (503): down");
    };
    const g = createFacilitatorGateway(
      client(() => fail()),
      { failureThreshold: 2, cooldownMs: 1000 },
      () => now,
    );
    await expect(g.verify(payload, requirements)).rejects.toMatchObject({ reason: "facilitator_error" });
    fail = () => {
      throw new TypeError("fetch failed");
    };
    await expect(g.verify(payload, requirements)).rejects.toMatchObject({
      reason: "facilitator_unreachable",
    });
    expect(g.circuit.openedAt).toBe(0);
    await expect(g.verify(payload, requirements)).rejects.toMatchObject({
      reason: "facilitator_circuit_open",
    });
    now = 1000;
    fail = () => {
      throw new Error("Facilitator verify failed (400): bad request");
    };
    await expect(g.verify(payload, requirements)).rejects.toMatchObject({ reason: "facilitator_error" }); // the trial, neutral
    expect(g.circuit.trialInFlight).toBe(false); // …so the next call may try again instead of waiting forever
  });

  it("labels the position one way for metrics and readiness: open in the cool-down, half-open after it", () => {
    const s = closedCircuit();
    expect(circuitLabel(s, opts.cooldownMs, 0)).toBe("closed");
    for (let i = 0; i < 3; i++) recordFailure(s, opts, 0);
    expect(circuitLabel(s, opts.cooldownMs, 999)).toBe("open");
    expect(circuitLabel(s, opts.cooldownMs, 1000)).toBe("half_open"); // the next call is the trial
    expect(admit(s, opts, 1000)).toEqual({ allowed: true, trial: true });
    expect(circuitLabel(s, opts.cooldownMs, 1000)).toBe("half_open");
    recordSuccess(s);
    expect(circuitLabel(s, opts.cooldownMs, 1000)).toBe("closed");
  });
});

describe("faults met by payers' proofs open the circuit only across several payers", () => {
  const o = { failureThreshold: 3, cooldownMs: 1000, minWitnesses: 3 };
  it("one payer's faults, however many, never open it; three payers' do", () => {
    const s = closedCircuit();
    for (let i = 0; i < 50; i++) recordFailure(s, o, 0, "0xattacker");
    expect(s.openedAt).toBeNull();
    recordFailure(s, o, 1, "0xB");
    expect(s.openedAt).toBeNull();
    recordFailure(s, o, 2, "0xC");
    expect(s.openedAt).toBe(2);
  });
  it("a fault of the facilitator's own (no payer: unreachable, health probe) needs no witness", () => {
    const s = closedCircuit();
    recordFailure(s, o, 0, "0xA");
    recordFailure(s, o, 0, "0xA");
    recordFailure(s, o, 5);
    expect(s.openedAt).toBe(5);
  });
  it("an answer clears the run of faults and its witnesses", () => {
    const s = closedCircuit();
    recordFailure(s, o, 0, "0xA");
    recordFailure(s, o, 0, "0xB");
    recordSuccess(s);
    recordFailure(s, o, 0, "0xC");
    recordFailure(s, o, 0, "0xC");
    recordFailure(s, o, 0, "0xC");
    expect(s.openedAt).toBeNull();
  });
});
