import { afterEach, describe, expect, it } from "vitest";
import { type TestApp, testApp } from "../helpers/app.js";

let t: TestApp | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

describe("wrong METRICS_TOKEN guesses", () => {
  it("count against the address's rate limit: past it, guesses get 429, not another 401", async () => {
    t = await testApp({ METRICS_TOKEN: "a-very-long-metrics-token-0123", RATE_LIMIT_MAX: "20" });
    const statuses: number[] = [];
    for (let i = 0; i < 30; i++) {
      const res = await t.app.inject({
        method: "GET",
        url: "/metrics",
        headers: { authorization: `Bearer guess-${i}-xxxxxxxxxxxxxxxxxxxxxx` },
        remoteAddress: "203.0.113.7",
      });
      statuses.push(res.statusCode);
    }
    expect(statuses.filter((s) => s === 401)).toHaveLength(20);
    expect(statuses.filter((s) => s === 429)).toHaveLength(10);
    // Another address is not held back by the guesser.
    const other = await t.app.inject({
      method: "GET",
      url: "/metrics",
      headers: { authorization: "Bearer a-very-long-metrics-token-0123" },
      remoteAddress: "203.0.113.8",
    });
    expect(other.statusCode).toBe(200);
  });
});
