import { describe, expect, it } from "vitest";
import { validIdempotencyKey } from "../../../src/payments/core/idempotency.js";

describe("Idempotency-Key format (1–255 visible ASCII)", () => {
  it("accepts visible ASCII up to 255 characters and nothing else", () => {
    expect(validIdempotencyKey("a")).toBe(true);
    expect(validIdempotencyKey("order-42_~!")).toBe(true);
    expect(validIdempotencyKey("x".repeat(255))).toBe(true);
    expect(validIdempotencyKey("")).toBe(false);
    expect(validIdempotencyKey("x".repeat(256))).toBe(false);
    expect(validIdempotencyKey("a b")).toBe(false);
    expect(validIdempotencyKey("é")).toBe(false);
    expect(validIdempotencyKey("a\tb")).toBe(false);
  });
});
