import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { discoverOriginSchema } from "@agentcash/discovery";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DISCOVERABLE } from "../../src/discovery/catalog.js";
import { PROBLEM_TYPES } from "../../src/discovery/problems.js";
import { openLedger } from "../../src/ledger/embedded.js";
import { appWith, type TestApp, testApp, testConfig } from "../helpers/app.js";
import { fakeGateway } from "../helpers/fake-gateway.js";

const ORIGIN = "https://api.example.com";
const payee = privateKeyToAccount(`0x${"22".repeat(32)}`);
const stranger = privateKeyToAccount(`0x${"33".repeat(32)}`);

let t: TestApp;
beforeAll(async () => {
  t = await testApp({ PUBLIC_BASE_URL: ORIGIN });
});
afterAll(() => t.close());

async function wellKnownWith(proofs: string[]) {
  const ledger = openLedger(":memory:");
  const app = await appWith({
    config: testConfig({ PUBLIC_BASE_URL: ORIGIN, OWNERSHIP_PROOF: proofs.join(",") }),
    gateway: fakeGateway(),
    ledger,
    payTo: payee.address,
  });
  const res = await app.inject({ method: "GET", url: "/.well-known/x402" });
  await app.close();
  ledger.close();
  return res;
}

describe("/.well-known/x402", () => {
  it("lists the five paid resources as absolute URLs on the public origin, with instructions", async () => {
    const res = await t.app.inject({ method: "GET", url: "/.well-known/x402" });
    expect(res.statusCode).toBe(200);
    const doc = res.json();
    expect(doc.version).toBe(1);
    expect(doc.resources).toEqual(DISCOVERABLE.map((d) => `${ORIGIN}${d.path}`));
    expect(doc.ownershipProofs).toBeUndefined();
    expect(doc.instructions).toContain("PAYMENT-SIGNATURE");
  });

  it("publishes the operator's ownership proof when it is the PAY_TO key's signature of the origin", async () => {
    const good = await payee.signMessage({ message: ORIGIN });
    const wrongOrigin = await payee.signMessage({ message: "https://elsewhere.example" });
    const wrongKey = await stranger.signMessage({ message: ORIGIN });
    const res = await wellKnownWith([wrongKey, good, wrongOrigin]);
    expect(res.json().ownershipProofs).toEqual([good]);
  });

  it("publishes no proof when none verifies", async () => {
    const res = await wellKnownWith([await stranger.signMessage({ message: ORIGIN })]);
    expect(res.json().ownershipProofs).toBeUndefined();
  });
});

describe("agent-wallet discovery (@agentcash/discovery) reads the OpenAPI document", () => {
  /** The server on 127.0.0.1 as `ORIGIN` (its PUBLIC_BASE_URL), discovered the way agent wallets discover it. */
  async function discover(env: Record<string, string>) {
    const ledger = openLedger(":memory:");
    const app = await appWith({
      config: testConfig({ PUBLIC_BASE_URL: ORIGIN, ...env }),
      gateway: fakeGateway(),
      ledger,
      payTo: payee.address,
    });
    try {
      const address = await app.listen({ host: "127.0.0.1", port: 0 });
      const found = await discoverOriginSchema({
        target: ORIGIN,
        specificationOverrideUrl: `${address}/openapi.json`,
      });
      if (!found.found) throw new Error(`not discovered: ${JSON.stringify(found)}`);
      return found;
    } finally {
      await app.close();
      ledger.close();
    }
  }

  it("puts a verified payee in the ownership_verified tier, with the contact from configuration", async () => {
    const good = await payee.signMessage({ message: ORIGIN });
    const wrongKey = await stranger.signMessage({ message: ORIGIN });
    const found = await discover({
      OWNERSHIP_PROOF: [wrongKey, good].join(","),
      CONTACT_EMAIL: "api@example.com",
      CONTACT_URL: "https://example.com/support",
    });
    expect(found.trustTier).toBe("ownership_verified");
    expect(found.ownershipProofs).toEqual([good]);
    expect(found.info?.contactEmail).toBe("api@example.com");
    const endpoints = found.endpoints.map((e) => `${e.method} ${e.path}`);
    for (const d of DISCOVERABLE) expect(endpoints).toContain(d.route);
  });

  it("leaves an origin without a verifying proof in the origin_hosted tier", async () => {
    const found = await discover({ OWNERSHIP_PROOF: await stranger.signMessage({ message: ORIGIN }) });
    expect(found.trustTier).toBe("origin_hosted");
    expect(found.ownershipProofs).toBeUndefined();
  });
});

describe("/llms.txt", () => {
  it("tells an agent each route's price, proofs, input and the order to call them in", async () => {
    const res = await t.app.inject({ method: "GET", url: "/llms.txt" });
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^text\/plain/);
    const text = res.body;
    expect(text.startsWith("# pressure402\n\n> ")).toBe(true);
    const positions = DISCOVERABLE.map((d) => text.indexOf(`[${d.route}](${ORIGIN}${d.path})`));
    expect(positions.every((p) => p > 0)).toBe(true);
    expect([...positions].sort((a, b) => a - b)).toEqual(positions);
    for (const usd of ["0.02 USD", "0.1 USD", "0.25 USD", "0.5 USD", "0.05 USD"]) expect(text).toContain(usd);
    expect(text).toContain("PAYMENT-SIGNATURE (v2 only)");
    expect(text).toContain("`days` (integer, default 30)");
    expect(text).toContain(`${ORIGIN}/openapi.json`);
    // The 402 carries only a headline of each answer: the full output schema is one link away.
    for (const d of DISCOVERABLE)
      expect(text).toContain(`operation \`${d.operationId}\` in ${ORIGIN}/openapi.json`);
    // The free map, the MCP endpoint and how to retry without paying twice.
    expect(text).toContain(`[Covered tokens](${ORIGIN}/v1/tokens)`);
    expect(text).toContain(`[MCP endpoint](${ORIGIN}/mcp)`);
    expect(text).toMatch(/`payment-identifier` extension's id/);
    expect(text).toMatch(/the retry key/);
    for (const param of ["minUsd", "minPctCirculating", "tokens", "category", "sort", "cursor", "view=full"])
      expect(text).toContain(param);
  });
});

describe("problem type URIs resolve to a page", () => {
  const SRC = fileURLToPath(new URL("../../src/", import.meta.url));
  const files = (dir: string): string[] =>
    readdirSync(dir).flatMap((f) => {
      const p = join(dir, f);
      return statSync(p).isDirectory() ? files(p) : p.endsWith(".ts") ? [p] : [];
    });

  it("every slug the code sends has a page", () => {
    const slugs = new Set<string>();
    for (const file of files(SRC)) {
      const text = readFileSync(file, "utf8");
      for (const m of text.matchAll(/(?:HttpProblem|problem)\(\s*\d{3},\s*"([a-z0-9-]+)"/g))
        slugs.add(m[1] as string);
      for (const m of text.matchAll(/"(facilitator_[a-z_]+)"/g))
        slugs.add((m[1] as string).replace(/_/g, "-"));
    }
    expect(slugs.size).toBeGreaterThan(10);
    expect([...slugs].filter((s) => !(s in PROBLEM_TYPES))).toEqual([]);
  });

  it("the type of real problem answers (400, 404, 415) is a served page that explains it", async () => {
    const answers = await Promise.all([
      t.app.inject({ method: "GET", url: "/v1/unlocks/upcoming?days=0" }),
      t.app.inject({ method: "POST", url: "/v1/token/risk-summary", payload: { token: "NOPE" } }),
      t.app.inject({
        method: "POST",
        url: "/v1/unlock-risk",
        payload: "x",
        headers: { "content-type": "text/plain" },
      }),
    ]);
    expect(answers.map((a) => a.statusCode)).toEqual([400, 404, 415]);
    for (const a of answers) {
      const type = a.json().type as string;
      const page = await t.app.inject({ method: "GET", url: new URL(type, ORIGIN).pathname });
      expect(page.statusCode, type).toBe(200);
      expect(page.headers["content-type"]).toMatch(/^text\/html/);
      expect(page.body).toContain(`<strong>${a.statusCode}</strong>`);
    }
  });

  it("an unknown problem type is a 404, not a page", async () => {
    expect((await t.app.inject({ method: "GET", url: "/problems/constructor" })).statusCode).toBe(404);
  });
});
