import { encodePaymentRequiredHeader, encodePaymentResponseHeader } from "@x402/core/http";
import type { PaymentPayload, PaymentRequired } from "@x402/core/types";
import {
  type DiscoveryExtension,
  extractDiscoveryInfo,
  validateDiscoveryExtension,
  validateDiscoveryExtensionSpec,
} from "@x402/extensions/bazaar";
import { describe, expect, it } from "vitest";
import { headline } from "../../src/discovery/bazaar.js";
import { discoverable } from "../../src/discovery/catalog.js";
import { problem } from "../../src/http/problem.js";
import { ascii } from "../../src/mcp/discovery.js";
import { type Dispatched, NO_PAYMENT, toolResult } from "../../src/mcp/results.js";
import { httpCall, PAID_TOOLS, type PaidTool, priceMeta, toolNamed } from "../../src/mcp/tools.js";
import { decodeProof, MAX_PROOF_HEADER_LENGTH } from "../../src/payments/proof.js";
import { NETWORK, paymentRequiredV2, USDC_BASE } from "../../src/payments/requirements.js";
import { PRICES } from "../../src/routes/prices.js";
import { b64, v2Proof } from "../helpers/proofs.js";

const tool = (name: string) => {
  const t = toolNamed(name);
  if (!t) throw new Error(name);
  return t;
};

/** A call of `name` dispatched to its route's path (plus `query`), with or without a proof. */
const dispatched = (name: string, query = "", paid = false): Dispatched => ({
  tool: tool(name),
  url: `${tool(name).path}${query}`,
  paid,
});

/** What a route answers when unpaid: 402 with its PaymentRequired in PAYMENT-REQUIRED (a v1-shaped body). */
function route402(
  t: PaidTool,
  resourceUrl: string,
  error = "payment required: send an x402 proof in PAYMENT-SIGNATURE",
) {
  const price = Object.values(PRICES).find((p) => p.route === `${t.method} ${t.path}`)!;
  const pr = paymentRequiredV2(price, terms, resourceUrl, error);
  return {
    pr,
    answer: {
      statusCode: 402,
      headers: { "payment-required": encodePaymentRequiredHeader(pr) },
      body: '{"x402Version":1,"accepts":[]}',
    },
  };
}

const terms = { payTo: "0x00000000000000000000000000000000000000aa" as const, maxTimeoutSeconds: 300 };

describe("httpCall: the HTTP request a tool call stands for", () => {
  it("a GET tool's arguments become its query, as text", () => {
    expect(httpCall(tool("unlocks_upcoming"), { days: 30, minRisk: 50, pp_ref: "a.b" })).toEqual({
      method: "GET",
      url: "/v1/unlocks/upcoming?days=30&minRisk=50&pp_ref=a.b",
    });
    expect(httpCall(tool("unlocks_upcoming"), undefined)).toEqual({
      method: "GET",
      url: "/v1/unlocks/upcoming",
    });
    // Not scalars: sent as JSON text, for the route to refuse with its own 400.
    expect(httpCall(tool("unlocks_upcoming"), { days: [1, 2] }).url).toBe(
      "/v1/unlocks/upcoming?days=%5B1%2C2%5D",
    );
  });

  it("a POST tool's arguments are its JSON body, except pp_ref, which the route takes in its query", () => {
    expect(httpCall(tool("unlock_risk"), { token: "ARB", unlock_event_id: "e", pp_ref: "x" })).toEqual({
      method: "POST",
      url: "/v1/unlock-risk?pp_ref=x",
      body: JSON.stringify({ token: "ARB", unlock_event_id: "e" }),
    });
    expect(httpCall(tool("benchmark_endpoint"), undefined)).toEqual({
      method: "POST",
      url: "/v1/benchmark/endpoint",
      body: "{}",
    });
  });

  it("one tool per priced route, each at the route's price", () => {
    expect(PAID_TOOLS.map((t) => `${t.method} ${t.path} ${t.amount}`).sort()).toEqual(
      Object.values(PRICES)
        .map((p) => `${p.route} ${p.amount}`)
        .sort(),
    );
    for (const t of PAID_TOOLS) {
      expect(t.inputSchema.type).toBe("object");
      expect(t.outputSchema.type).toBe("object");
      // No $id anywhere: clients compile all tools' schemas into one validator.
      expect(JSON.stringify(t.outputSchema)).not.toContain('"$id"');
    }
  });
});

describe("toolResult: the tool result of an HTTP answer", () => {
  it("200: the body as structured content and text, the decoded settlement in _meta", () => {
    const settlement = {
      success: true,
      transaction: `0x${"ab".repeat(32)}`,
      network: "eip155:8453" as const,
      payer: "0x000000000000000000000000000000000000b0b0",
    };
    const body = JSON.stringify({ token: "ARB", risk_score: 61 });
    const r = toolResult(
      {
        statusCode: 200,
        headers: {
          "payment-response": encodePaymentResponseHeader(settlement),
          "idempotent-replayed": "true",
        },
        body,
      },
      dispatched("unlock_risk"),
    );
    expect(r).toEqual({
      content: [{ type: "text", text: body }],
      structuredContent: { token: "ARB", risk_score: 61 },
      _meta: { "x402/payment-response": settlement, "pressure402/replayed": true },
    });
  });

  it("402: the route's PaymentRequired as the tool's, in structuredContent, content[0].text and _meta['x402/error']", () => {
    const { pr, answer } = route402(tool("unlock_backtest"), "http://x/v1/unlock/backtest");
    const r = toolResult(answer, dispatched("unlock_backtest"));
    expect(r.isError).toBe(true);
    const got = r.structuredContent as unknown as PaymentRequired;
    // The same price, terms and description; the MCP endpoint as the resource; the MCP reason.
    expect(got.accepts).toEqual(pr.accepts);
    expect(got.resource).toEqual({ ...pr.resource, url: "http://x/mcp" });
    expect(got.error).toBe(NO_PAYMENT);
    expect(r.content).toEqual([{ type: "text", text: JSON.stringify(got) }]);
    expect(r._meta).toEqual({ "x402/error": got });
  });

  it("402: the resource keeps the route's origin and base path; a paid call keeps the route's reason", () => {
    const url = "https://api.example.com/p402/v1/unlocks/upcoming?days=30";
    const { answer } = route402(tool("unlocks_upcoming"), url, "payment_already_used: another request");
    const r = toolResult(answer, dispatched("unlocks_upcoming", "?days=30", true));
    const got = r.structuredContent as unknown as PaymentRequired;
    expect(got.resource.url).toBe("https://api.example.com/p402/mcp");
    expect(got.error).toBe("payment_already_used: another request");
  });

  it("a malformed proof's 400 names _meta['x402/payment'], not the header the adapter used", () => {
    const p = problem(
      400,
      "invalid-payment-header",
      "PAYMENT-SIGNATURE is not standard base64",
      "/v1/unlocks/upcoming",
    );
    const r = toolResult(
      { statusCode: 400, headers: {}, body: JSON.stringify(p) },
      dispatched("unlocks_upcoming", "", true),
    );
    expect(r.structuredContent).toEqual({ ...p, detail: '_meta["x402/payment"] is not standard base64' });
  });

  it("other statuses: the route's problem, with retryAfter when the route gave one", () => {
    const p = {
      type: "https://pressure402.dev/problems/payment-in-progress",
      title: "Conflict",
      status: 409,
    };
    const r = toolResult(
      { statusCode: 409, headers: { "retry-after": "1" }, body: JSON.stringify(p) },
      dispatched("unlock_risk"),
    );
    expect(r).toMatchObject({ isError: true, structuredContent: { ...p, retryAfter: 1 } });
    expect(JSON.parse(r.content[0]!.text)).toEqual(r.structuredContent);
  });

  it("an answer that is not what the route promises becomes a generic problem, never its text", () => {
    const call = dispatched("unlock_risk");
    const odd = toolResult({ statusCode: 500, headers: {}, body: "Error: /srv/app/x.ts:12 boom" }, call);
    expect(odd.structuredContent).toMatchObject({ status: 500, instance: "/v1/unlock-risk" });
    expect(JSON.stringify(odd)).not.toContain("boom");
    const notObject = toolResult({ statusCode: 200, headers: {}, body: "[1]" }, call);
    expect(notObject.isError).toBe(true);
  });
});

describe("each tool's Bazaar extension (x402 bazaar spec, MCP tools)", () => {
  for (const t of PAID_TOOLS) {
    it(`${t.name}: input.type "mcp" with toolName and the tool's own input schema, valid and catalogued`, () => {
      const origin = "https://api.example.com";
      const { answer } = route402(t, `${origin}${t.path}`);
      const pr = toolResult(answer, dispatched(t.name)).structuredContent as unknown as PaymentRequired;
      const bazaar = pr.extensions?.bazaar as DiscoveryExtension;
      expect(bazaar.info.input).toMatchObject({
        type: "mcp",
        toolName: t.name,
        transport: "streamable-http",
        inputSchema: ascii(t.inputSchema),
        example: discoverable(`${t.method} ${t.path}`).inputExample,
      });
      expect(validateDiscoveryExtension(bazaar)).toEqual({ valid: true });
      expect(validateDiscoveryExtensionSpec(bazaar as unknown as Record<string, unknown>)).toEqual({
        valid: true,
      });
      // The answer's headline, as in the HTTP routes' 402: the echo stays a couple of kilobytes.
      const d = discoverable(`${t.method} ${t.path}`);
      expect(bazaar.info.output?.example).toEqual(ascii(headline(d.outputExample, d.outputHeadline)));
      // What a client echoes is ASCII: btoa (Cloudflare's client) takes it, and it decodes as UTF-8 unchanged.
      expect(JSON.stringify({ resource: pr.resource, extensions: pr.extensions })).toMatch(/^[\x20-\x7e]*$/);

      // What a Bazaar facilitator reads from the payment a client builds from this PaymentRequired.
      const payment = { ...v2Proof(pr.accepts[0]!), resource: pr.resource, extensions: pr.extensions };
      const found = extractDiscoveryInfo(payment as PaymentPayload, pr.accepts[0]!);
      expect(found).toMatchObject({ resourceUrl: `${origin}/mcp`, toolName: t.name, x402Version: 2 });

      // That payment, encoded as PAYMENT-SIGNATURE, is a proof the payment core takes (within its length bound).
      const encoded = b64(payment);
      expect(encoded.length).toBeLessThan(MAX_PROOF_HEADER_LENGTH);
      expect(decodeProof("payment-signature", encoded).ok).toBe(true);
    });
  }
});

describe("ascii: what a client echoes in its payment", () => {
  it("transliterates every string, deep, and leaves other values alone", () => {
    expect(ascii({ a: ["0–100", { b: "USDⓈ-M…" }], n: 1, t: true, z: null })).toEqual({
      a: ["0-100", { b: "USDS-M..." }],
      n: 1,
      t: true,
      z: null,
    });
  });
});

describe("priceMeta: each tool's price in tools/list", () => {
  it("Cloudflare agents' keys and ours, from the route's price in atomic units", () => {
    expect(priceMeta(tool("unlock_risk"))).toEqual({
      "agents-x402/paymentRequired": true,
      "agents-x402/priceUSD": "0.1",
      "pressure402/price": {
        scheme: "exact",
        network: NETWORK,
        asset: USDC_BASE,
        amount: PRICES.unlockRisk.amount,
      },
    });
  });
});
