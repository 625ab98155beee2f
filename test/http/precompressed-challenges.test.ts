import { brotliDecompressSync, gunzipSync } from "node:zlib";
import { afterEach, describe, expect, it } from "vitest";
import { type TestApp, testApp } from "../helpers/app.js";

/* A route's 402 body is one Buffer per resource URL: compressed once per encoding, never per answer. */
let t: TestApp | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

const RISK = { token: "ARB", unlock_event_id: "unlock_arb_2026_12_16" };

describe("402 answers to clients that accept compression", () => {
  it("carry the same JSON, compressed, with the challenge header unchanged", async () => {
    t = await testApp();
    const app = t.app;
    const ask = (encoding?: string) =>
      app.inject({
        method: "POST",
        url: "/v1/unlock-risk",
        headers: { "content-type": "application/json", ...(encoding ? { "accept-encoding": encoding } : {}) },
        payload: RISK,
      });
    const plain = await ask();
    expect(plain.statusCode).toBe(402);
    expect(plain.headers["content-encoding"]).toBeUndefined();
    expect(plain.rawPayload.length).toBeGreaterThan(2048);
    for (const [encoding, decode] of [
      ["br", brotliDecompressSync],
      ["gzip", gunzipSync],
      ["gzip, deflate, br", brotliDecompressSync],
    ] as const) {
      const first = await ask(encoding);
      const again = await ask(encoding);
      for (const res of [first, again]) {
        expect(res.statusCode).toBe(402);
        expect(res.headers["content-encoding"]).toBe(encoding === "gzip" ? "gzip" : "br");
        expect(String(res.headers.vary)).toMatch(/accept-encoding/i);
        expect(res.headers["payment-required"]).toBe(plain.headers["payment-required"]);
        expect(Number(res.headers["content-length"])).toBe(res.rawPayload.length);
        expect(decode(res.rawPayload).equals(plain.rawPayload)).toBe(true);
      }
      expect(again.rawPayload.equals(first.rawPayload)).toBe(true);
    }
  });

  it("are sent as they are to a client that asks for no compression", async () => {
    t = await testApp();
    const res = await t.app.inject({
      method: "POST",
      url: "/v1/unlock-risk",
      headers: { "content-type": "application/json", "accept-encoding": "br", "x-no-compression": "1" },
      payload: RISK,
    });
    expect(res.statusCode).toBe(402);
    expect(res.headers["content-encoding"]).toBeUndefined();
    expect(() => JSON.parse(res.payload)).not.toThrow();
  });
});
