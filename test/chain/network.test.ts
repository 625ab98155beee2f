import { decodePaymentRequiredHeader } from "@x402/core/http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BASE_MAINNET, BASE_SEPOLIA, paymentNetwork, v1NameOf } from "../../src/chain/networks.js";
import { ConfigError } from "../../src/config.js";
import { openLedger } from "../../src/ledger/embedded.js";
import { settlementHeader } from "../../src/payments/http/http-answers.js";
import { inlineScripts } from "../../src/payments/http/paywall.js";
import { authorizationDomainOf } from "../../src/payments/terms/signature.js";
import { appWith, type TestApp, testApp, testConfig } from "../helpers/app.js";
import { fakeGateway } from "../helpers/fake-gateway.js";

const SEPOLIA_USDC = "0x036CbD53842c5426634e7929541eC2318f3dCF7e";
const UPCOMING = "/v1/unlocks/upcoming?days=30";
const CHROME = {
  accept: "text/html,application/xhtml+xml",
  "user-agent": "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/141.0.0.0",
};

describe("NETWORK", () => {
  it("defaults to Base mainnet and takes Base Sepolia; the devnet refuses any network but its own", () => {
    expect(testConfig().network).toBe(BASE_MAINNET);
    expect(
      testConfig({ NETWORK: "eip155:84532", FACILITATOR_URL: "https://x402.org/facilitator" }).network,
    ).toBe(BASE_SEPOLIA);
    expect(() => testConfig({ NETWORK: "eip155:84532" })).toThrow(/embedded devnet runs as Base mainnet/);
    expect(() =>
      testConfig({ NETWORK: "eip155:1", FACILITATOR_URL: "https://x402.org/facilitator" }),
    ).toThrow(ConfigError);
    expect(() => testConfig({ NETWORK: "base-sepolia", FACILITATOR_URL: "https://x" })).toThrow(/NETWORK/);
  });

  it("knows each network by CAIP-2 id and x402 v1 name, and the domain Base Sepolia USDC signs with", () => {
    expect(paymentNetwork("base-sepolia")).toBe(BASE_SEPOLIA);
    expect(v1NameOf("eip155:84532")).toBe("base-sepolia");
    expect(v1NameOf("eip155:8453")).toBe("base");
    expect(BASE_SEPOLIA.usdc).toEqual({ address: SEPOLIA_USDC, name: "USDC", version: "2", decimals: 6 });
    expect(
      authorizationDomainOf({
        network: "base-sepolia",
        asset: SEPOLIA_USDC,
        extra: { name: "USDC", version: "2" },
      }),
    ).toEqual({ name: "USDC", version: "2", chainId: 84532, verifyingContract: SEPOLIA_USDC });
    // The v1 settlement header names the network the facilitator settled on, in v1's words.
    const [, v1] = settlementHeader(1, {
      success: true,
      transaction: `0x${"1".repeat(64)}`,
      network: "eip155:84532",
      payer: `0x${"2".repeat(40)}`,
    });
    expect(JSON.parse(Buffer.from(v1, "base64").toString()).network).toBe("base-sepolia");
  });
});

describe("a server with NETWORK=eip155:84532", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await testApp({ NETWORK: "eip155:84532", FACILITATOR_URL: "https://x402.org/facilitator" });
  });
  afterAll(() => t.close());

  it("asks for Base Sepolia USDC in its v2 402", async () => {
    const res = await t.app.inject({ method: "GET", url: UPCOMING });
    expect(res.statusCode).toBe(402);
    const required = decodePaymentRequiredHeader(String(res.headers["payment-required"]));
    expect(required.accepts).toHaveLength(1);
    expect(required.accepts[0]).toMatchObject({
      network: "eip155:84532",
      asset: SEPOLIA_USDC,
      extra: { name: "USDC", version: "2" },
    });
  });

  it("asks for base-sepolia in its v1 402 body, and refuses a v1 proof for base", async () => {
    const res = await t.app.inject({ method: "GET", url: UPCOMING });
    const body = res.json() as { x402Version: number; accepts: Record<string, unknown>[] };
    expect(body.x402Version).toBe(1);
    expect(body.accepts[0]).toMatchObject({
      network: "base-sepolia",
      asset: SEPOLIA_USDC,
      extra: { name: "USDC", version: "2" },
    });
    const v1 = body.accepts[0] as Record<string, string>;
    const proof = {
      x402Version: 1,
      scheme: "exact",
      network: "base",
      payload: {
        signature: `0x${"1".repeat(130)}`,
        authorization: {
          from: `0x${"3".repeat(40)}`,
          to: v1.payTo,
          value: v1.maxAmountRequired,
          validAfter: "0",
          validBefore: "9999999999",
          nonce: `0x${"4".repeat(64)}`,
        },
      },
    };
    const paid = await t.app.inject({
      method: "GET",
      url: UPCOMING,
      headers: { "x-payment": Buffer.from(JSON.stringify(proof)).toString("base64") },
    });
    expect(paid.statusCode).toBe(402);
    expect(paid.body).toContain("use exact on base-sepolia");
    expect(t.gateway.calls.verify).toBe(0);
  });

  it("states Base Sepolia in discovery: GET /, /.well-known/x402, /llms.txt, /openapi.json", async () => {
    const root = (await t.app.inject({ url: "/" })).json() as Record<string, string>;
    expect(root.network).toBe("eip155:84532");
    expect(root.asset).toBe(SEPOLIA_USDC);
    const wellKnown = (await t.app.inject({ url: "/.well-known/x402" })).json() as { instructions: string };
    expect(wellKnown.instructions).toContain("network eip155:84532");
    const llms = (await t.app.inject({ url: "/llms.txt" })).body;
    expect(llms).toContain(`network \`eip155:84532\`, asset USDC \`${SEPOLIA_USDC}\``);
    expect(llms).toContain("USDC on Base Sepolia");
    expect(llms).not.toContain("eip155:8453`");
    const openapi = (await t.app.inject({ url: "/openapi.json" })).body;
    // (Benchmark examples quote other sellers' mainnet offers; only our own terms follow NETWORK.)
    expect(openapi).toContain("settled with x402 in USDC on Base Sepolia (eip155:84532)");
    const doc = JSON.parse(openapi) as {
      paths: Record<string, Record<string, { "x-payment-info"?: { network: string; asset: string } }>>;
    };
    const info = doc.paths["/v1/unlocks/upcoming"]?.get?.["x-payment-info"];
    expect(info).toMatchObject({ network: "eip155:84532", asset: SEPOLIA_USDC });
  });

  it("offers Base Sepolia on the browser paywall, marked as a testnet", async () => {
    const res = await t.app.inject({ method: "GET", url: UPCOMING, headers: CHROME });
    expect(res.statusCode).toBe(402);
    const script = inlineScripts(res.body).find((s) => s.includes("window.x402 = {")) ?? "";
    expect(script).toContain("testnet: true");
    expect(script).toContain('"network":"eip155:84532"');
    expect(script).toContain(SEPOLIA_USDC);
  });

  it("names Base Sepolia in MCP tools/list prices", async () => {
    const res = await t.app.inject({
      method: "POST",
      url: "/mcp",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      payload: { jsonrpc: "2.0", id: 1, method: "tools/list" },
    });
    expect(res.body).toContain('"network":"eip155:84532"');
    expect(res.body).not.toContain('"network":"eip155:8453"');
  });
});

describe("the default server", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await testApp();
  });
  afterAll(() => t.close());

  it("still asks for Base mainnet USDC, v1 name base, and its paywall is not a testnet", async () => {
    const res = await t.app.inject({ method: "GET", url: UPCOMING });
    const required = decodePaymentRequiredHeader(String(res.headers["payment-required"]));
    expect(required.accepts[0]).toMatchObject({ network: "eip155:8453", asset: BASE_MAINNET.usdc.address });
    expect((res.json() as { accepts: { network: string }[] }).accepts[0]?.network).toBe("base");
    const page = await t.app.inject({ method: "GET", url: UPCOMING, headers: CHROME });
    expect(page.body).toContain("testnet: false");
  });
});

describe("readiness on NETWORK=eip155:84532", () => {
  it("is ready only when the facilitator supports exact on Base Sepolia", async () => {
    const config = testConfig({ NETWORK: "eip155:84532", FACILITATOR_URL: "https://x402.org/facilitator" });
    for (const [network, status] of [
      ["eip155:84532", 200],
      ["eip155:8453", 503],
    ] as const) {
      const ledger = openLedger(":memory:");
      const app = await appWith({
        config,
        gateway: fakeGateway(),
        ledger,
        supported: async () => ({
          kinds: [{ x402Version: 2, scheme: "exact", network }],
          extensions: [],
          signers: {},
        }),
      });
      try {
        await app.ready();
        await app.observability.health.refresh();
        const res = await app.inject({ url: "/ready" });
        expect(res.statusCode, res.body).toBe(status);
      } finally {
        await app.close();
        await ledger.close();
      }
    }
  });
});
