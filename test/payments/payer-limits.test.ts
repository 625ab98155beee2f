import { describe, expect, it } from "vitest";
import { createPayerLimits } from "../../src/payments/payer-limits.js";

describe("per-payer verification limits", () => {
  it("at most maxInFlight verifications per payer; other payers are not affected", () => {
    const l = createPayerLimits({ maxInFlight: 2 });
    expect(l.admit("0xA", 0)).toEqual({ allowed: true });
    expect(l.admit("0xa", 0)).toEqual({ allowed: true }); // one payer, whatever the case
    expect(l.admit("0xA", 0)).toMatchObject({ allowed: false, why: "busy" });
    expect(l.admit("0xB", 0)).toEqual({ allowed: true });
    l.settle("0xA", "neutral", 0);
    expect(l.admit("0xA", 0)).toEqual({ allowed: true });
  });

  it("backs off after consecutive faults, doubling up to the maximum; an answer clears it", () => {
    const l = createPayerLimits({ faultsBeforeBackoff: 2, baseBackoffMs: 1000, maxBackoffMs: 4000 });
    const fault = (now: number) => {
      expect(l.admit("0xA", now)).toEqual({ allowed: true });
      l.settle("0xA", "fault", now);
    };
    fault(0); // the first fault: no wait yet (a single timeout may be the facilitator's)
    fault(0);
    expect(l.admit("0xA", 999)).toEqual({ allowed: false, retryAfterMs: 1, why: "backoff" });
    fault(1000);
    expect(l.admit("0xA", 2999)).toMatchObject({ allowed: false, why: "backoff" });
    fault(3000);
    fault(7000);
    expect(l.admit("0xA", 10_999)).toMatchObject({ allowed: false, retryAfterMs: 1 }); // capped at 4 s
    expect(l.admit("0xA", 11_000)).toEqual({ allowed: true });
    l.settle("0xA", "answer", 11_000);
    expect(l.peek("0xA")).toEqual({ inFlight: 0, faults: 0, until: 0 });
  });

  it("remembers a bounded number of payers", () => {
    const l = createPayerLimits({ maxPayers: 100 });
    for (let i = 0; i < 1000; i++) l.settle(`0x${i}`, "neutral", l.admit(`0x${i}`, 0) ? 0 : 0);
    expect(l.peek("0x0")).toBeUndefined();
    expect(l.peek("0x999")).toBeDefined();
  });
});
