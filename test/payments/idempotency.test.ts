import { describe, expect, it } from "vitest";
import { decideIdempotency } from "../../src/payments/idempotency.js";

const rec = (state: "in_flight" | "complete") => ({
  key: "k",
  requestFingerprint: "r",
  proofFingerprint: "p",
  state,
  response: state === "complete" ? { statusCode: 200, headers: {}, body: "{}" } : null,
  expiresAt: 0,
});

describe("decideIdempotency", () => {
  it("follows DESIGN.md", () => {
    expect(decideIdempotency(undefined, "r", "p")).toEqual({ kind: "proceed" });
    expect(decideIdempotency(rec("complete"), "r", "p").kind).toBe("replay");
    expect(decideIdempotency(rec("in_flight"), "r", "p").kind).toBe("in_flight");
    expect(decideIdempotency(rec("complete"), "other", "p").kind).toBe("mismatch");
    expect(decideIdempotency(rec("complete"), "r", "other").kind).toBe("mismatch");
  });
});
