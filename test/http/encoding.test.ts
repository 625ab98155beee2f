import { brotliDecompressSync, gunzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { compressBody, negotiateEncoding } from "../../src/http/encoding.js";

describe("negotiateEncoding", () => {
  it.each([
    [undefined, undefined],
    ["", undefined],
    ["identity", undefined],
    ["deflate", undefined],
    ["br", "br"],
    ["gzip", "gzip"],
    ["gzip, deflate, br", "br"],
    ["br;q=0.5, gzip", "gzip"],
    ["br;q=0, gzip;q=0", undefined],
    ["gzip;q=0.8, br;q=0.8", "br"],
    ["*", "br"],
    ["*;q=0.1, gzip;q=0.5", "gzip"],
    ["BR ; Q=1", "br"],
    ["br;q=abc, gzip", "gzip"],
  ] as const)("%s → %s", (header, expected) => {
    expect(negotiateEncoding(header)).toBe(expected);
  });
});

describe("compressBody", () => {
  it("round-trips through brotli and gzip", () => {
    const body = JSON.stringify({
      unlocks: Array.from({ length: 200 }, (_, i) => ({ id: `e${i}`, score: i })),
    });
    expect(brotliDecompressSync(compressBody(body, "br")).toString("utf8")).toBe(body);
    expect(gunzipSync(compressBody(body, "gzip")).toString("utf8")).toBe(body);
  });
});
