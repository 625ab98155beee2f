import { createHash } from "node:crypto";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inlineScripts, paywallPages } from "../../../src/payments/http/paywall.js";
import { type TestApp, testApp } from "../../helpers/app.js";

const CHROME = {
  accept: "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8",
  "user-agent":
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/141.0.0.0 Safari/537.36",
};
const UPCOMING = "/v1/unlocks/upcoming?days=30";

let t: TestApp;
beforeAll(async () => {
  t = await testApp();
});
afterAll(() => t.close());

/** The config object the paywall page hands its script (`window.x402 = {...}`), read back from the HTML. */
function pageConfig(html: string): {
  amount: number;
  paymentRequired: { resource: Record<string, unknown> };
} {
  const script = inlineScripts(html).find((s) => s.includes("window.x402 = {"));
  if (!script) throw new Error("no window.x402 configuration in the page");
  const json = /paymentRequired: (\{.*\}),\n/.exec(script)?.[1];
  const amount = /amount: ([0-9.]+),/.exec(script)?.[1];
  return { amount: Number(amount), paymentRequired: JSON.parse(json ?? "null") };
}

describe("the browser paywall", () => {
  it("answers a browser's GET of a paid route with the @x402/paywall page: price, description, 402 kept", async () => {
    const res = await t.app.inject({ method: "GET", url: UPCOMING, headers: CHROME });
    expect(res.statusCode).toBe(402);
    expect(res.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(res.headers.vary).toMatch(/Accept/);
    expect(res.headers["cache-control"]).toBe("no-store");
    // The header an agent reads is still there, and the page offers exactly the same terms.
    const required = decodePaymentRequiredHeader(String(res.headers["payment-required"]));
    const config = pageConfig(res.body);
    expect(config.amount).toBe(0.02);
    // The same terms; the URL only re-serialised (the page never gets raw request-line characters).
    const { url, ...resource } = required.resource;
    expect(config.paymentRequired).toEqual(
      JSON.parse(JSON.stringify({ ...required, resource: { ...resource, url: new URL(url).href } })),
    );
    expect(config.paymentRequired.resource.description).toBe(
      "Upcoming token unlock events with modelled sell-pressure risk",
    );
    expect(res.body).toContain("<title>Payment Required</title>");
    expect(res.body).toContain('appName: "pressure402"');
  });

  it("pins every inline script of the page by hash in its CSP, and keeps the page unframeable", async () => {
    const res = await t.app.inject({ method: "GET", url: UPCOMING, headers: CHROME });
    const csp = String(res.headers["content-security-policy"]);
    const scripts = inlineScripts(res.body);
    expect(scripts.length).toBeGreaterThanOrEqual(2);
    for (const s of scripts)
      expect(csp).toContain(`'sha256-${createHash("sha256").update(s).digest("base64")}'`);
    expect(csp).not.toContain("unsafe-eval");
    expect(csp).toMatch(/frame-ancestors 'none'/);
    expect(csp).not.toContain("upgrade-insecure-requests"); // plain http (inject)
  });

  it("never serves the page to API clients, to non-browsers or to POST routes", async () => {
    const answers = await Promise.all([
      t.app.inject({
        method: "GET",
        url: UPCOMING,
        headers: { accept: "application/json", "user-agent": CHROME["user-agent"] },
      }),
      t.app.inject({
        method: "GET",
        url: UPCOMING,
        headers: { accept: "*/*", "user-agent": CHROME["user-agent"] },
      }),
      t.app.inject({ method: "GET", url: UPCOMING }),
      // text/html without a browser's User-Agent: a crawler or CLI, not a person.
      t.app.inject({
        method: "GET",
        url: UPCOMING,
        headers: { accept: "text/html", "user-agent": "curl/8.5.0" },
      }),
      t.app.inject({
        method: "POST",
        url: "/v1/token/risk-summary",
        headers: { ...CHROME, "content-type": "application/json" },
        payload: { token: "ARB" },
      }),
    ]);
    for (const a of answers) {
      expect(a.statusCode).toBe(402);
      expect(a.headers["content-type"]).toMatch(/^application\/json/);
      expect(a.json().x402Version).toBe(1);
    }
    // Invalid input is still a 400 problem, before any 402 or page.
    const bad = await t.app.inject({ method: "GET", url: "/v1/unlocks/upcoming?days=0", headers: CHROME });
    expect(bad.statusCode).toBe(400);
    expect(bad.headers["content-type"]).toMatch(/problem\+json/);
  });

  it("hands the page a resource URL with no raw markup, whatever the request line held", async () => {
    // The routes' schemas reject unknown query fields (400 before any 402), so the page builder is fed directly.
    const res = await t.app.inject({ method: "GET", url: UPCOMING, headers: { accept: "application/json" } });
    const required = decodePaymentRequiredHeader(String(res.headers["payment-required"]));
    const hostile = {
      ...required,
      resource: {
        ...required.resource,
        url: `${required.resource.url}&x=</script><script>alert(1)</script>"`,
      },
    };
    const built = await paywallPages()(hostile, "http");
    expect(built?.html).not.toContain("<script>alert(1)");
    expect(pageConfig(built?.html ?? "").paymentRequired.resource.url).toBe(
      "http://localhost/v1/unlocks/upcoming?days=30&x=%3C/script%3E%3Cscript%3Ealert(1)%3C/script%3E%22",
    );
  });
});
