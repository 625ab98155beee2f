import { afterEach, describe, expect, it } from "vitest";
import { type TestApp, testApp } from "../helpers/app.js";

let t: TestApp | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

describe("a malformed Host without PUBLIC_BASE_URL", () => {
  it("is the caller's 400 problem on a paid route, never a 500", async () => {
    t = await testApp({ PUBLIC_BASE_URL: "" });
    for (const host of ["exa mple.com", "[::1", "a@b", "host:99999999", "%zz"]) {
      const res = await t.app.inject({
        method: "GET",
        url: "/v1/unlocks/upcoming?days=30",
        headers: { host },
      });
      expect(res.statusCode, host).toBe(400);
      expect(res.headers["content-type"]).toMatch(/problem\+json/);
      expect(res.json().type).toMatch(/invalid-host$/);
    }
    const ok = await t.app.inject({
      method: "GET",
      url: "/v1/unlocks/upcoming?days=30",
      headers: { host: "api.example" },
    });
    expect(ok.statusCode).toBe(402);
  });
});
