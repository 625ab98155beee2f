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
import { NO_PAYMENT, toolChallenge, toolResult } from "../../src/mcp/results.js";
import { PAID_TOOLS, type PaidTool, priceMeta, toolInput, toolNamed } from "../../src/mcp/tools.js";
import { PRICES } from "../../src/operations/prices.js";
import { unlockHandlers } from "../../src/operations/unlocks.js";
import type { Challenge } from "../../src/payments/http/http-answers.js";
import { decodeProof, MAX_PROOF_HEADER_LENGTH } from "../../src/payments/terms/proof.js";
import { paymentRequiredV2 } from "../../src/payments/terms/requirements.js";
import { loadUnlockStore } from "../../src/unlocks/data/snapshot.js";
import { createUnlockService } from "../../src/unlocks/service.js";
import { b64, TEST_NETWORK, v2Proof } from "../helpers/proofs.js";

const tool = (name: string) => {
  const t = toolNamed(name);
  if (!t) throw new Error(name);
  return t;
};

const SETTLEMENT = {
  success: true,
  transaction: `0x${"ab".repeat(32)}`,
  network: "eip155:8453" as const,
  payer: "0x000000000000000000000000000000000000b0b0",
};

/** A challenge no outcome of these tests may ask for. */
const noChallenge: Challenge = () => {
  throw new Error("no PaymentRequired expected");
};

/** The tool result of a paid call delivered with `body` (the operation's JSON answer). */
const delivered = (t: PaidTool, body: string) =>
  toolResult({ kind: "delivered", settlement: { response: SETTLEMENT, version: 2 } }, t, noChallenge, {
    statusCode: 200,
    contentType: "application/json; charset=utf-8",
    body,
  });

/** A tool's PaymentRequired for a call (paid or not) at an origin and base path, and its tool result. */
function tool402(
  t: PaidTool,
  base: string,
  paid: boolean,
  error = "payment required: send an x402 proof in PAYMENT-SIGNATURE",
) {
  const price = Object.values(PRICES).find((p) => p.route === `${t.method} ${t.path}`)!;
  const pr = paymentRequiredV2(price, terms, `${base}${t.path}`, error);
  const result = toolResult(
    { kind: "payment_required", error },
    t,
    toolChallenge(t, price, terms, base, paid),
  );
  return { pr, result };
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

describe("toolResult: the tool result of the core's outcome", () => {
  it("delivered: the body as structured content and text, the settlement in _meta", () => {
    const body = JSON.stringify({ token: "ARB", risk_score: 61 });
    expect(delivered(tool("unlock_risk"), body)).toEqual({
      content: [{ type: "text", text: body }],
      structuredContent: { token: "ARB", risk_score: 61 },
      _meta: { "x402/payment-response": SETTLEMENT },
    });
  });

  it("a replay: the settlement as it was kept with the response, decoded once, and marked replayed", () => {
    const body = JSON.stringify({ token: "ARB", risk_score: 61 });
    const response = {
      statusCode: 200,
      headers: { "PAYMENT-RESPONSE": encodePaymentResponseHeader(SETTLEMENT) },
      body,
    };
    const replay = toolResult(
      { kind: "replay", response, version: 2, paid: undefined },
      tool("unlock_risk"),
      noChallenge,
    );
    expect(replay._meta).toEqual({ "x402/payment-response": SETTLEMENT, "pressure402/replayed": true });
    // Kept by a v1 payment (X-PAYMENT-RESPONSE): the tool call (v2) gets the settlement of the transaction that paid.
    const v1Kept = toolResult(
      {
        kind: "replay",
        response: { ...response, headers: { "X-PAYMENT-RESPONSE": "e30=" } },
        version: 2,
        paid: SETTLEMENT,
      },
      tool("unlock_risk"),
      noChallenge,
    );
    expect(v1Kept._meta).toEqual({ "x402/payment-response": SETTLEMENT, "pressure402/replayed": true });
  });

  it("402: the operation's PaymentRequired as the tool's, in structuredContent, content[0].text and _meta['x402/error']", () => {
    const { pr, result: r } = tool402(tool("unlock_backtest"), "http://x", false);
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
    const { result: r } = tool402(
      tool("unlocks_upcoming"),
      base,
      true,
      "payment_already_used: another request",
    );
    const got = r.structuredContent as unknown as PaymentRequired;
    expect(got.resource.url).toBe("https://api.example.com/p402/mcp");
    expect(got.error).toBe("payment_already_used: another request");
  });

  it("a malformed proof's 400 names _meta['x402/payment'], not a header", () => {
    const decoded = decodeProof("payment-signature", "not base64!", '_meta["x402/payment"]');
    expect(decoded).toEqual({ ok: false, detail: '_meta["x402/payment"] is not standard base64' });
  });

  it("other outcomes: the problem, with retryAfter when the outcome gives one, and the issued retry key", () => {
    const r = toolResult(
      { kind: "taken_over", retryAfterSeconds: 1, retryKey: "k-issued" },
      tool("unlock_risk"),
      noChallenge,
    );
    expect(r).toMatchObject({
      isError: true,
      structuredContent: {
        type: "/problems/payment-in-progress",
        title: "Conflict",
        status: 409,
        instance: "/v1/unlock-risk",
        retryAfter: 1,
      },
      _meta: { "pressure402/idempotency-key": "k-issued" },
    });
    expect(JSON.parse(r.content[0]!.text)).toEqual(r.structuredContent);
  });

  it("an answer that is not what the route promises becomes a generic problem, never its text", () => {
    const odd = toolResult({ kind: "unpaid" }, tool("unlock_risk"), noChallenge, {
      statusCode: 500,
      contentType: "text/plain",
      body: "Error: /srv/app/x.ts:12 boom",
    });
    expect(odd.structuredContent).toMatchObject({ status: 500, instance: "/v1/unlock-risk" });
    expect(JSON.stringify(odd)).not.toContain("boom");
    expect(delivered(tool("unlock_risk"), "[1]").isError).toBe(true);
  });
});

describe("each tool's Bazaar extension (x402 bazaar spec, MCP tools)", () => {
  for (const t of PAID_TOOLS) {
    it(`${t.name}: input.type "mcp" with toolName and the tool's own input schema, valid and catalogued`, () => {
      const origin = "https://api.example.com";
      const pr = tool402(t, origin, false).result.structuredContent as unknown as PaymentRequired;
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
    const r = delivered(tool("unlocks_upcoming"), json);
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
    expect(delivered(tool("token_risk_summary"), summary).content[0]!.text).toMatch(
      /^ARB, 2026-11-22\.\.2027-02-20: \d+ unlock events/,
    );
    const risk = JSON.stringify(
      await handlers.unlockRisk.answer(
        { token: "ARB", unlock_event_id: event.unlock_event_id, includeEvidence: true },
        request,
      ),
    );
    const riskText = delivered(tool("unlock_risk"), risk).content[0]!.text;
    expect(riskText).toContain(event.unlock_event_id);
    expect(riskText).toMatch(/Score contributions: unlock_size /);
    const bt = JSON.stringify(
      await handlers.backtest.answer(
        { token: "ARB", unlock_event_id: event.unlock_event_id, windowDays: 14 },
        request,
      ),
    );
    expect(delivered(tool("unlock_backtest"), bt).content[0]!.text).toMatch(/Median abnormal return/);
    const bench = JSON.stringify({ endpoint_url: "https://a.example/x", price_usd: "0.01" });
    expect(delivered(tool("benchmark_endpoint"), bench).content[0]!.text).toBe(bench);
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
