import { decodePaymentRequiredHeader, encodePaymentRequiredHeader } from "@x402/core/http";
import { describe, expect, it } from "vitest";
import { challengeCache } from "../../src/payments/challenge.js";
import { paymentRequiredV1, paymentRequiredV2 } from "../../src/payments/requirements.js";

const route = { amount: "20000", description: "d", acceptsV1: true };
const terms = { payTo: "0x00000000000000000000000000000000000000aa" as const, maxTimeoutSeconds: 300 };

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
    challenge("https://x/r?a=3", "e"); // over the bound: the least recently used (a=1) goes
    expect(challenge("https://x/r?a=1", "payment required")).not.toBe(a); // bounded: a=1 was evicted
    expect(Object.isFrozen(a.body)).toBe(true);
    expect(JSON.parse(a.bytes.toString("utf8"))).toEqual(a.body);
  });
});
