import { x402Client } from "@x402/core/client";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { PaymentRequiredV2Schema } from "@x402/core/schemas";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import type { PaymentRequirementsV1 } from "@x402/core/types/v1";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { extractDiscoveryInfo, validateDiscoveryExtension } from "@x402/extensions/bazaar";
import { Compile } from "typebox/compile";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildExamples } from "../../scripts/discovery-examples.js";
import { headline } from "../../src/discovery/bazaar.js";
import { DISCOVERABLE, type DiscoverableRoute } from "../../src/discovery/catalog.js";
import { EXAMPLES } from "../../src/discovery/examples.generated.js";
import { ERROR_MAX } from "../../src/payments/http/challenge.js";
import { type TestApp, testApp } from "../helpers/app.js";

/** The contract's bounds: PAYMENT-REQUIRED and all of a 402's headers fit a 4 KiB proxy buffer. */
const PAYMENT_REQUIRED_MAX = 3000;
const HEADERS_MAX = 3584;

// A throwaway key: signing an authorization needs no chain, and nothing is ever settled here.
const signer = privateKeyToAccount(`0x${"11".repeat(32)}`);

let t: TestApp;
beforeAll(async () => {
  t = await testApp();
});
afterAll(() => t.close());

async function unpaid(method: "GET" | "POST", path: string, input: Record<string, unknown>) {
  return method === "GET"
    ? t.app.inject({ method, url: `${path}?${new URLSearchParams(input as Record<string, string>)}` })
    : t.app.inject({ method, url: path, payload: input });
}

describe("the seller in every 402's resource (v2 ResourceInfo)", () => {
  for (const d of DISCOVERABLE) {
    it(`${d.route}: serviceName, tags and an iconUrl the server serves as SVG`, async () => {
      const res = await unpaid(d.method, d.path, d.inputExample);
      expect(res.statusCode).toBe(402);
      const required = decodePaymentRequiredHeader(String(res.headers["payment-required"]));
      // The x402 schema's own bounds: name <= 32 printable ASCII, <= 5 tags of <= 32, iconUrl <= 2048.
      expect(PaymentRequiredV2Schema.safeParse(required).success).toBe(true);
      const { serviceName, tags, iconUrl } = required.resource;
      expect(serviceName).toBe("pressure402");
      expect(tags?.length).toBeGreaterThan(0);
      expect(tags?.length).toBeLessThanOrEqual(5);
      const icon = new URL(String(iconUrl));
      expect(icon.origin).toBe(new URL(required.resource.url).origin);
      const svg = await t.app.inject({ method: "GET", url: icon.pathname });
      expect(svg.statusCode).toBe(200);
      expect(svg.headers["content-type"]).toMatch(/^image\/svg\+xml/);
      expect(svg.body).toMatch(/^<svg [^>]*xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    });
  }
});

describe("Bazaar discovery on every paid route", () => {
  for (const d of DISCOVERABLE) {
    it(`${d.route}: extractDiscoveryInfo finds the declared input and output on the real 402`, async () => {
      const res = await unpaid(d.method, d.path, d.inputExample);
      expect(res.statusCode).toBe(402);
      const header = String(res.headers["payment-required"]);
      expect(header.length).toBeLessThanOrEqual(PAYMENT_REQUIRED_MAX);
      const required = decodePaymentRequiredHeader(header);
      expect(validateDiscoveryExtension(required.extensions?.bazaar as never)).toEqual({ valid: true });

      // The payload a real x402 v2 client builds from this 402 (it copies the extensions), as a facilitator sees it.
      const client = new x402Client();
      registerExactEvmScheme(client, { signer });
      const payload: PaymentPayload = await client.createPaymentPayload(required);
      // Clients echo the extensions back in PAYMENT-SIGNATURE: far below nginx's 8 KiB limit for one header line.
      expect(Buffer.from(JSON.stringify(payload)).toString("base64").length).toBeLessThan(4096);
      const found = extractDiscoveryInfo(payload, payload.accepted as PaymentRequirements);
      expect(found).not.toBeNull();
      expect(found).toMatchObject({ method: d.method, x402Version: 2 });
      expect(found?.resourceUrl).toMatch(new RegExp(`${d.path}$`));
      const info = found?.discoveryInfo as { input: Record<string, unknown>; output?: { example?: unknown } };
      expect(info.input[d.inputIn === "query" ? "queryParams" : "body"]).toEqual(d.inputExample);
      // The output example is the answer's headline: the real answer's values, cut to the fields of the route's mask.
      expect(info.output?.example).toEqual(headline(d.outputExample, d.outputHeadline));
      expect(Object.keys(info.output?.example as object)).toEqual(
        Object.keys(d.outputExample).filter((k) => k in d.outputHeadline),
      );
      expect(required.extensions?.bazaar).not.toHaveProperty(
        "schema.properties.output.properties.example.properties",
      );

      if (d.route !== "POST /v1/benchmark/endpoint") {
        // v1: the body's requirements carry the outputSchema a v1 facilitator indexes.
        const v1 = res.json() as { accepts: PaymentRequirementsV1[] };
        const v1Found = extractDiscoveryInfo(
          { x402Version: 1, accepted: v1.accepts[0], payload: {} } as unknown as PaymentPayload,
          v1.accepts[0] as PaymentRequirementsV1,
        );
        expect(v1Found).toMatchObject({ method: d.method, x402Version: 1 });
        const fields = (v1Found?.discoveryInfo.input as Record<string, unknown> | undefined)?.[
          d.inputIn === "query" ? "queryParams" : "body"
        ] as Record<string, { required: boolean }>;
        expect(Object.keys(fields).sort()).toEqual(Object.keys(d.inputSchema.properties).sort());
      }
    });

    it(`${d.route}: the examples are valid for the route's own schemas`, () => {
      expect(Compile(d.inputSchema).Check(d.inputExample)).toBe(true);
      expect(Compile(d.outputSchema).Check(d.outputExample)).toBe(true);
    });
  }

  it("headline keeps the masked fields in the value's order, an array's first item, and invents nothing", () => {
    const value = { b: 1, a: { x: 1, y: 2 }, list: [{ k: 1, z: 0 }, { k: 2 }], gone: "g" };
    expect(headline(value, { a: { y: true }, b: true, list: { k: true }, missing: true })).toEqual({
      b: 1,
      a: { y: 2 },
      list: [{ k: 1 }],
    });
    expect(JSON.stringify(headline(value, { a: { y: true }, b: true }))).toBe('{"b":1,"a":{"y":2}}');
  });

  it("the committed examples are the services' real answers (run `npm run discovery:examples` after a change)", async () => {
    expect(EXAMPLES).toEqual(JSON.parse(JSON.stringify(await buildExamples())));
  });

  it("declares each paid operation once, and the app serves every one", () => {
    for (const id of [
      (d: DiscoverableRoute) => d.route,
      (d: DiscoverableRoute) => d.operationId,
      (d: DiscoverableRoute) => d.mcp.name,
    ])
      expect(new Set(DISCOVERABLE.map(id)).size).toBe(DISCOVERABLE.length);
    for (const d of DISCOVERABLE) expect(t.app.hasRoute({ method: d.method, url: d.path })).toBe(true);
  });
});

describe("every 402 fits a 4 KiB proxy buffer (PAYMENT-REQUIRED ≤ 3,000 bytes, all headers ≤ 3,584)", () => {
  let prod: TestApp;
  beforeAll(async () => {
    prod = await testApp({ PUBLIC_BASE_URL: "https://pressure402.api.example.com" });
  });
  afterAll(() => prod.close());
  // The largest 402 a client can ask for: the longest pp_ref the schema takes and a browser's Origin (CORS headers).
  const ppRef = "r".repeat(128);

  for (const d of DISCOVERABLE) {
    it(`${d.route}: with the longest pp_ref, an Origin, and room for the longest error text`, async () => {
      const query = new URLSearchParams({
        ...(d.inputIn === "query" ? (d.inputExample as Record<string, string>) : {}),
        pp_ref: ppRef,
      });
      const res = await prod.app.inject({
        method: d.method,
        url: `${d.path}?${query}`,
        headers: { origin: "https://app.example.org" },
        ...(d.inputIn === "body" ? { payload: d.inputExample } : {}),
      });
      expect(res.statusCode).toBe(402);
      expect(res.headers["access-control-expose-headers"]).toBeDefined();
      const header = String(res.headers["payment-required"]);
      const required = decodePaymentRequiredHeader(header);
      // Recorded with the call, never echoed (its schema says so): the resource URL leaves it out.
      expect(required.resource.url).not.toContain("pp_ref");
      // Another reason (a refused proof, a facilitator's words) may be up to ERROR_MAX characters, "…" 3 bytes.
      const slack = Math.ceil(((ERROR_MAX + 2 - Buffer.byteLength(required.error ?? "")) * 4) / 3) + 4;
      expect(header.length + slack).toBeLessThanOrEqual(PAYMENT_REQUIRED_MAX);
      const head = `HTTP/1.1 402 Payment Required\r\n${Object.entries(res.headers)
        .map(([k, v]) => `${k}: ${v}\r\n`)
        .join("")}\r\n`;
      expect(Buffer.byteLength(head) + slack).toBeLessThanOrEqual(HEADERS_MAX);
    });
  }
});
