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
import { EXAMPLES } from "../../src/discovery/examples.generated.js";
import { DISCOVERABLE } from "../../src/discovery/catalog.js";
import { type TestApp, testApp } from "../helpers/app.js";

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
      // Clients echo the extensions back in PAYMENT-SIGNATURE: both headers must stay far below Node's 16 KiB limit.
      expect(header.length).toBeLessThan(8192);
      const required = decodePaymentRequiredHeader(header);
      expect(validateDiscoveryExtension(required.extensions?.bazaar as never)).toEqual({ valid: true });

      // The payload a real x402 v2 client builds from this 402 (it copies the extensions), as a facilitator sees it.
      const client = new x402Client();
      registerExactEvmScheme(client, { signer });
      const payload: PaymentPayload = await client.createPaymentPayload(required);
      expect(Buffer.from(JSON.stringify(payload)).toString("base64").length).toBeLessThan(8192);
      const found = extractDiscoveryInfo(payload, payload.accepted as PaymentRequirements);
      expect(found).not.toBeNull();
      expect(found).toMatchObject({ method: d.method, x402Version: 2 });
      expect(found?.resourceUrl).toMatch(new RegExp(`${d.path}$`));
      const info = found?.discoveryInfo as { input: Record<string, unknown>; output?: { example?: unknown } };
      expect(info.input[d.inputIn === "query" ? "queryParams" : "body"]).toEqual(d.inputExample);
      expect(info.output?.example).toEqual(d.outputExample);

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

  it("the committed examples are the services' real answers (run `npm run discovery:examples` after a change)", async () => {
    expect(EXAMPLES).toEqual(JSON.parse(JSON.stringify(await buildExamples())));
  });

  it("declares exactly the five paid routes", () => {
    expect(DISCOVERABLE.map((d) => d.route)).toEqual([
      "GET /v1/unlocks/upcoming",
      "POST /v1/unlock-risk",
      "POST /v1/token/risk-summary",
      "POST /v1/unlock/backtest",
      "POST /v1/benchmark/endpoint",
    ]);
  });
});
