import { encodePaymentResponseHeader } from "@x402/core/http";
import type { PaymentPayload, PaymentRequired } from "@x402/core/types";
import {
  type DiscoveryExtension,
  extractDiscoveryInfo,
  validateDiscoveryExtension,
  validateDiscoveryExtensionSpec,
} from "@x402/extensions/bazaar";
import type { FastifyRequest } from "fastify";
import { describe, expect, it } from "vitest";
import { BASE_MAINNET } from "../../src/chain/networks.js";
import { headline } from "../../src/discovery/bazaar.js";
import { discoverable } from "../../src/discovery/catalog.js";
import { ascii } from "../../src/mcp/discovery.js";
import { NO_PAYMENT, type ToolAnswer, toolChallenge, toolResult } from "../../src/mcp/results.js";
import { PAID_TOOLS, type PaidTool, priceMeta, toolInput, toolNamed } from "../../src/mcp/tools.js";
import { PRICES } from "../../src/operations/prices.js";
import { unlockHandlers } from "../../src/operations/unlocks.js";
import { decodeProof, MAX_PROOF_HEADER_LENGTH } from "../../src/payments/proof.js";
import { paymentRequiredV2 } from "../../src/payments/requirements.js";
import { loadUnlockStore } from "../../src/unlocks/data/snapshot.js";
import { createUnlockService } from "../../src/unlocks/service.js";
import { b64, TEST_NETWORK, v2Proof } from "../helpers/proofs.js";

const tool = (name: string) => {
  const t = toolNamed(name);
  if (!t) throw new Error(name);
  return t;
};

/** A core answer (HTTP-shaped) with its status, as a tool call gets it. */
const answer = (
  status: number,
  headers: Record<string, string>,
  body: unknown,
  x402?: ToolAnswer["x402"],
) => ({
  status,
  headers: Object.entries(headers),
  body,
  ...(x402 ? { x402 } : {}),
});

/** A tool's 402 for a call (paid or not) at an origin and base path. */
function tool402(
  t: PaidTool,
  base: string,
  paid: boolean,
  error = "payment required: send an x402 proof in PAYMENT-SIGNATURE",
) {
  const price = Object.values(PRICES).find((p) => p.route === `${t.method} ${t.path}`)!;
  const pr = paymentRequiredV2(price, terms, `${base}${t.path}`, error);
  const required = toolChallenge(t, price, terms, base, paid)(error).required;
  return { pr, answer: answer(402, {}, undefined, { required }) };
}

const terms = {
  payTo: "0x00000000000000000000000000000000000000aa" as const,
  maxTimeoutSeconds: 300,
  network: TEST_NETWORK,
};

describe("toolInput: the route request a tool call stands for", () => {
  it("a GET tool's arguments become its query, as text", () => {
    expect(toolInput(tool("unlocks_upcoming"), { days: 30, minRisk: 50, pp_ref: "a.b" })).toEqual({
      query: { days: "30", minRisk: "50", pp_ref: "a.b" },
    });
    expect(toolInput(tool("unlocks_upcoming"), undefined)).toEqual({ query: {} });
    // Not scalars: sent as JSON text, for the route's query schema to refuse with its own 400.
    expect(toolInput(tool("unlocks_upcoming"), { days: [1, 2] }).query.days).toBe("[1,2]");
  });

  it("a POST tool's arguments are its JSON body, except pp_ref, which the route takes in its query", () => {
    expect(toolInput(tool("unlock_risk"), { token: "ARB", unlock_event_id: "e", pp_ref: "x" })).toEqual({
      query: { pp_ref: "x" },
      body: { token: "ARB", unlock_event_id: "e" },
    });
    expect(toolInput(tool("benchmark_endpoint"), undefined)).toEqual({ query: {}, body: {} });
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

describe("toolResult: the tool result of the core's answer", () => {
  it("200: the body as structured content and text, the settlement in _meta", () => {
    const settlement = {
      success: true,
      transaction: `0x${"ab".repeat(32)}`,
      network: "eip155:8453" as const,
      payer: "0x000000000000000000000000000000000000b0b0",
    };
    const body = JSON.stringify({ token: "ARB", risk_score: 61 });
    const r = toolResult(
      answer(200, { "Idempotent-Replayed": "true" }, body, { settlement }),
      tool("unlock_risk"),
    );
    expect(r).toEqual({
      content: [{ type: "text", text: body }],
      structuredContent: { token: "ARB", risk_score: 61 },
      _meta: { "x402/payment-response": settlement, "pressure402/replayed": true },
    });
    // A replay: the settlement as it was kept with the response (PAYMENT-RESPONSE), decoded once.
    const replay = toolResult(
      answer(200, { "PAYMENT-RESPONSE": encodePaymentResponseHeader(settlement) }, body),
      tool("unlock_risk"),
    );
    expect(replay._meta).toEqual({ "x402/payment-response": settlement });
  });

  it("402: the operation's PaymentRequired as the tool's, in structuredContent, content[0].text and _meta['x402/error']", () => {
    const { pr, answer: a } = tool402(tool("unlock_backtest"), "http://x", false);
    const r = toolResult(a, tool("unlock_backtest"));
    expect(r.isError).toBe(true);
    const got = r.structuredContent as unknown as PaymentRequired;
    // The same price, terms and description; the MCP endpoint as the resource; the MCP reason.
    expect(got.accepts).toEqual(pr.accepts);
    expect(got.resource).toEqual({ ...pr.resource, url: "http://x/mcp" });
    expect(got.error).toBe(NO_PAYMENT);
    expect(r.content).toEqual([{ type: "text", text: JSON.stringify(got) }]);
    expect(r._meta).toEqual({ "x402/error": got });
  });

  it("402: the resource keeps the route's origin and base path; a paid call keeps the core's reason", () => {
    const base = "https://api.example.com/p402";
    const { answer: a } = tool402(
      tool("unlocks_upcoming"),
      base,
      true,
      "payment_already_used: another request",
    );
    const r = toolResult(a, tool("unlocks_upcoming"));
    const got = r.structuredContent as unknown as PaymentRequired;
    expect(got.resource.url).toBe("https://api.example.com/p402/mcp");
    expect(got.error).toBe("payment_already_used: another request");
  });

  it("a malformed proof's 400 names _meta['x402/payment'], not a header", () => {
    const decoded = decodeProof("payment-signature", "not base64!", '_meta["x402/payment"]');
    expect(decoded).toEqual({ ok: false, detail: '_meta["x402/payment"] is not standard base64' });
  });

  it("other statuses: the problem, with retryAfter when the answer gave one", () => {
    const p = {
      type: "https://pressure402.dev/problems/payment-in-progress",
      title: "Conflict",
      status: 409,
    };
    const r = toolResult(answer(409, { "Retry-After": "1" }, JSON.stringify(p)), tool("unlock_risk"));
    expect(r).toMatchObject({ isError: true, structuredContent: { ...p, retryAfter: 1 } });
    expect(JSON.parse(r.content[0]!.text)).toEqual(r.structuredContent);
  });

  it("an answer that is not what the route promises becomes a generic problem, never its text", () => {
    const odd = toolResult(answer(500, {}, "Error: /srv/app/x.ts:12 boom"), tool("unlock_risk"));
    expect(odd.structuredContent).toMatchObject({ status: 500, instance: "/v1/unlock-risk" });
    expect(JSON.stringify(odd)).not.toContain("boom");
    const notObject = toolResult(answer(200, {}, "[1]"), tool("unlock_risk"));
    expect(notObject.isError).toBe(true);
  });
});

describe("each tool's Bazaar extension (x402 bazaar spec, MCP tools)", () => {
  for (const t of PAID_TOOLS) {
    it(`${t.name}: input.type "mcp" with toolName and the tool's own input schema, valid and catalogued`, () => {
      const origin = "https://api.example.com";
      const { answer: a } = tool402(t, origin, false);
      const pr = toolResult(a, t).structuredContent as unknown as PaymentRequired;
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
    expect(priceMeta(tool("unlock_risk"), BASE_MAINNET)).toEqual({
      "agents-x402/paymentRequired": true,
      "agents-x402/priceUSD": "0.1",
      "pressure402/price": {
        scheme: "exact",
        network: BASE_MAINNET.caip2,
        asset: BASE_MAINNET.usdc.address,
        amount: PRICES.unlockRisk.amount,
      },
    });
  });
});

describe("a paid tool's text result: a short quotable summary, the whole answer in structuredContent", () => {
  const service = createUnlockService(loadUnlockStore(), () => new Date("2026-11-22T12:00:00Z"));
  const handlers = unlockHandlers({ unlocksFor: () => service });
  const request = {} as FastifyRequest;

  it("unlocks_upcoming: totals, the top events by USD with their ids, the legend's key points", () => {
    const body = handlers.upcoming.answer({ days: 30, minRisk: 0, limit: 500 }, request) as {
      total: number;
      unlocks: { unlock_event_id: string; amount_usd: number }[];
      legend: { codes: Record<string, string> };
    };
    const json = JSON.stringify(body);
    const r = toolResult(answer(200, {}, json), tool("unlocks_upcoming"));
    expect(r.structuredContent).toEqual(JSON.parse(json));
    const text = r.content[0]!.text;
    expect(text.length).toBeLessThan(json.length / 10);
    expect(text).toContain(`${body.total} unlock events`);
    const top = [...body.unlocks].sort((a, b) => b.amount_usd - a.amount_usd).slice(0, 5);
    for (const u of top) expect(text).toContain(u.unlock_event_id);
    expect(text).toMatch(/not a forecast/);
    for (const code of Object.keys(body.legend.codes)) expect(text).toContain(`${code} = `);
    expect(text).toMatch(/structuredContent/);
  });

  it("risk summary, unlock risk and backtest summarise too; a benchmark answer stays its JSON", async () => {
    const event = service.upcoming(90, 0).unlocks.find((u) => u.token === "ARB")!;
    const summary = JSON.stringify(
      await handlers.riskSummary.answer({ token: "ARB", lookbackDays: 90 }, request),
    );
    expect(toolResult(answer(200, {}, summary), tool("token_risk_summary")).content[0]!.text).toMatch(
      /^ARB, 2026-11-22\.\.2027-02-20: \d+ unlock events/,
    );
    const risk = JSON.stringify(
      await handlers.unlockRisk.answer(
        { token: "ARB", unlock_event_id: event.unlock_event_id, includeEvidence: true },
        request,
      ),
    );
    const riskText = toolResult(answer(200, {}, risk), tool("unlock_risk")).content[0]!.text;
    expect(riskText).toContain(event.unlock_event_id);
    expect(riskText).toMatch(/Score contributions: unlock_size /);
    const bt = JSON.stringify(
      await handlers.backtest.answer(
        { token: "ARB", unlock_event_id: event.unlock_event_id, windowDays: 14 },
        request,
      ),
    );
    expect(toolResult(answer(200, {}, bt), tool("unlock_backtest")).content[0]!.text).toMatch(
      /Median abnormal return/,
    );
    const bench = JSON.stringify({ endpoint_url: "https://a.example/x", price_usd: "0.01" });
    expect(toolResult(answer(200, {}, bench), tool("benchmark_endpoint")).content[0]!.text).toBe(bench);
  });
});

describe("the MCP tool list mirrors the routes' new parameters", () => {
  it("unlocks_upcoming takes every filter of GET /v1/unlocks/upcoming; the POST tools take view", () => {
    const props = Object.keys(
      (tool("unlocks_upcoming").inputSchema as unknown as { properties: Record<string, unknown> }).properties,
    );
    expect(props).toEqual(
      expect.arrayContaining([
        "days",
        "minRisk",
        "minUsd",
        "minPctCirculating",
        "tokens",
        "category",
        "type",
        "sort",
        "limit",
        "cursor",
        "view",
      ]),
    );
    for (const name of ["unlock_risk", "token_risk_summary", "unlock_backtest"])
      expect(
        (tool(name).inputSchema as unknown as { properties: Record<string, unknown> }).properties.view,
      ).toBeDefined();
    expect(tool("unlocks_upcoming").description).toMatch(
      /short summary; the whole answer is in structuredContent/,
    );
    expect(toolInput(tool("unlocks_upcoming"), { tokens: "ARB,OP", sort: "usd", limit: 10 })).toEqual({
      query: { tokens: "ARB,OP", sort: "usd", limit: "10" },
    });
  });
});
