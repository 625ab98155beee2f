import { decodePaymentRequiredHeader, encodePaymentRequiredHeader } from "@x402/core/http";
import { describe, expect, it } from "vitest";
import { challengeCache, ERROR_MAX } from "../../../src/payments/http/challenge.js";
import { paymentRequiredV1, paymentRequiredV2 } from "../../../src/payments/terms/requirements.js";
import { TEST_NETWORK } from "../../helpers/proofs.js";

const route = { amount: "20000", description: "d", acceptsV1: true };
const terms = {
  payTo: "0x00000000000000000000000000000000000000aa" as const,
  maxTimeoutSeconds: 300,
  network: TEST_NETWORK,
};

describe("402 challenge cache", () => {
  it("gives exactly what building it per request gives, built once per resource and error", () => {
    const challenge = challengeCache(route, terms, 2);
    const a = challenge("https://x/r?a=1", "payment required");
    expect(a.header).toBe(
      encodePaymentRequiredHeader(paymentRequiredV2(route, terms, "https://x/r?a=1", "payment required")),
    );
    expect(a.body).toEqual(paymentRequiredV1(route, terms, "https://x/r?a=1", "payment required"));
    expect(challenge("https://x/r?a=1", "payment required")).toBe(a); // the same object: not rebuilt
    const other = challenge("https://x/r?a=2", "payment required");
    expect(decodePaymentRequiredHeader(other.header).resource.url).toBe("https://x/r?a=2");
    const third = challenge("https://x/r?a=3", "e"); // over the bound: the cache starts over from this one
    expect(challenge("https://x/r?a=3", "e")).toBe(third);
    expect(challenge("https://x/r?a=1", "payment required")).not.toBe(a); // bounded: a=1 was dropped
    expect(Object.isFrozen(a.body)).toBe(true);
    expect(JSON.parse(a.bytes.toString("utf8"))).toEqual(a.body);
  });

  it("cuts an error text of any length (a facilitator's reason) to ERROR_MAX characters, in the header and the body", () => {
    const challenge = challengeCache(route, terms);
    const long = `settlement_failed: ${"x".repeat(5000)}`;
    const c = challenge("https://x/r", long, long);
    const v2Error = decodePaymentRequiredHeader(c.header).error as string;
    expect(v2Error).toHaveLength(ERROR_MAX);
    expect(v2Error).toBe(`${long.slice(0, ERROR_MAX - 1)}…`);
    expect(c.body.error).toBe(v2Error);
    expect(challenge("https://x/r", "short").body.error).toBe("short");
  });
});
