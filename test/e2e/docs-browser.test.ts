import { existsSync, mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { FastifyInstance } from "fastify";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DISCOVERABLE } from "../../src/discovery/catalog.js";
import { openLedger } from "../../src/ledger/embedded.js";
import { appWith, testConfig } from "../helpers/app.js";
import { fakeGateway } from "../helpers/fake-gateway.js";

/*
 * /docs and the problem pages in a real headless browser (Debian's chromium, driven by playwright-core). A missing
 * browser is a failure, not a skip: `apt-get install -y chromium` (README, build prerequisites).
 */
const CHROMIUM = "/usr/bin/chromium";
const OUT_DIR = fileURLToPath(new URL("../../test-output/", import.meta.url));
const SCREENSHOT = `${OUT_DIR}docs.png`;

let app: FastifyInstance;
let base: string;
let browser: Browser;
const ledger = openLedger(":memory:");

beforeAll(async () => {
  if (!existsSync(CHROMIUM))
    throw new Error(
      `${CHROMIUM} is missing: install it with \`apt-get update && apt-get install -y chromium\``,
    );
  app = await appWith({ config: testConfig(), gateway: fakeGateway(), ledger, clock: () => new Date() });
  base = await app.listen({ host: "127.0.0.1", port: 0 });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await app?.close();
  ledger.close();
});

describe("/docs in headless Chromium", () => {
  it("renders the five paid routes from the OpenAPI document, and a screenshot is written", async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 2000 } });
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(e.message));
    page.on("console", (m) => {
      if (m.type() === "error") errors.push(m.text());
    });
    await page.goto(`${base}/docs`);
    // Swagger UI builds the page in the browser: one .opblock per operation once the document is fetched and parsed.
    await page.waitForSelector(".opblock", { timeout: 30_000 });
    const operations = await page.$$eval(".opblock", (blocks) =>
      blocks.map((b) => {
        const method = b.querySelector(".opblock-summary-method")?.textContent?.trim() ?? "";
        const path = b.querySelector(".opblock-summary-path")?.getAttribute("data-path") ?? "";
        return `${method} ${path}`;
      }),
    );
    for (const d of DISCOVERABLE) expect(operations).toContain(`${d.method} ${d.path}`);
    expect(await page.locator(".info .title").innerText()).toContain("pressure402");
    expect(errors).toEqual([]);
    mkdirSync(OUT_DIR, { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: false });
    console.log(`docs screenshot: ${SCREENSHOT}`);
    expect(existsSync(SCREENSHOT)).toBe(true);
    await page.close();
  }, 60_000);

  it("links the paid GET operation to its paywall page, which a browser opens with the price", async () => {
    const page = await browser.newPage();
    await page.goto(`${base}/docs`);
    const upcoming = page.locator("#operations-unlocks-listUpcomingUnlocks");
    await upcoming.locator(".opblock-summary").click({ timeout: 30_000 });
    const link = upcoming.locator('a[href="/v1/unlocks/upcoming?days=30&minRisk=50"]');
    await link.waitFor({ timeout: 30_000 });
    // Swagger UI opens description links in a new tab.
    const [paywall] = await Promise.all([page.context().waitForEvent("page"), link.click()]);
    await paywall.waitForSelector("text=Payment Required", { timeout: 30_000 });
    expect(await paywall.locator(".header").innerText()).toContain("$0.02");
    await paywall.close();
    await page.close();
  }, 60_000);

  it("follows a real problem's type URI to the page that explains it", async () => {
    const page = await browser.newPage();
    const res = await fetch(`${base}/v1/token/risk-summary`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ token: "NOPE" }),
    });
    expect(res.status).toBe(404);
    const { type } = (await res.json()) as { type: string };
    const answer = await page.goto(new URL(type, base).href);
    expect(answer?.status()).toBe(200);
    expect(await page.locator("h1").innerText()).toBe("Unknown token");
    await page.close();
  }, 30_000);

  it("loads every asset of /docs over plain http under a host name other than localhost", async () => {
    // A name Chromium resolves to 127.0.0.1 itself: the page is an ordinary insecure http origin (not localhost,
    // which browsers treat as secure), as when an operator opens a container by its machine's name.
    const host = "pressure402.lan.test";
    const named = await chromium.launch({
      executablePath: CHROMIUM,
      args: ["--no-sandbox", `--host-resolver-rules=MAP ${host} 127.0.0.1`],
    });
    try {
      const page = await named.newPage();
      const failed: string[] = [];
      const loaded: string[] = [];
      page.on("requestfailed", (r) => failed.push(`${r.url()} ${r.failure()?.errorText ?? ""}`));
      page.on("response", (r) => {
        if (r.status() >= 400) failed.push(`${r.url()} ${r.status()}`);
        else loaded.push(r.url());
      });
      const origin = `http://${host}:${new URL(base).port}`;
      await page.goto(`${origin}/docs`);
      await page.waitForSelector(".opblock", { timeout: 30_000 });
      expect(failed).toEqual([]);
      // Every asset came from the same plain-http origin: nothing was rewritten to https.
      expect(loaded.length).toBeGreaterThanOrEqual(5);
      for (const url of loaded) expect(url.startsWith(`${origin}/`), url).toBe(true);
      for (const asset of ["swagger-ui.css", "swagger-ui-bundle.js", "swagger-initializer.js", "/docs/json"])
        expect(
          loaded.some((u) => u.includes(asset)),
          asset,
        ).toBe(true);
      await page.close();
    } finally {
      await named.close();
    }
  }, 60_000);
});
