import { encodePaymentRequiredHeader, encodePaymentResponseHeader } from "@x402/core/http";
import { describe, expect, it } from "vitest";
import { toolResult } from "../../src/mcp/results.js";
import { httpCall, PAID_TOOLS, toolNamed } from "../../src/mcp/tools.js";
import { paymentRequiredV2 } from "../../src/payments/requirements.js";
import { PRICES } from "../../src/routes/prices.js";

const tool = (name: string) => {
  const t = toolNamed(name);
  if (!t) throw new Error(name);
  return t;
};

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
  const terms = { payTo: "0x00000000000000000000000000000000000000aa" as const, maxTimeoutSeconds: 300 };

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
      "/v1/unlock-risk",
    );
    expect(r).toEqual({
      content: [{ type: "text", text: body }],
      structuredContent: { token: "ARB", risk_score: 61 },
      _meta: { "x402/payment-response": settlement, "pressure402/replayed": true },
    });
  });

  it("402: the PAYMENT-REQUIRED header's PaymentRequired, in structuredContent and as content[0].text", () => {
    const pr = paymentRequiredV2(PRICES.backtest, terms, "http://x/v1/unlock/backtest", "payment required");
    const r = toolResult(
      {
        statusCode: 402,
        headers: { "payment-required": encodePaymentRequiredHeader(pr) },
        body: '{"x402Version":1,"accepts":[]}',
      },
      "/v1/unlock/backtest",
    );
    expect(r.isError).toBe(true);
    expect(r.structuredContent).toEqual(pr);
    expect(r.content).toEqual([{ type: "text", text: JSON.stringify(pr) }]);
  });

  it("other statuses: the route's problem, with retryAfter when the route gave one", () => {
    const p = {
      type: "https://pressure402.dev/problems/payment-in-progress",
      title: "Conflict",
      status: 409,
    };
    const r = toolResult(
      { statusCode: 409, headers: { "retry-after": "1" }, body: JSON.stringify(p) },
      "/v1/unlock-risk",
    );
    expect(r).toMatchObject({ isError: true, structuredContent: { ...p, retryAfter: 1 } });
    expect(JSON.parse(r.content[0]!.text)).toEqual(r.structuredContent);
  });

  it("an answer that is not what the route promises becomes a generic problem, never its text", () => {
    const odd = toolResult({ statusCode: 500, headers: {}, body: "Error: /srv/app/x.ts:12 boom" }, "/v1/x");
    expect(odd.structuredContent).toMatchObject({ status: 500, instance: "/v1/x" });
    expect(JSON.stringify(odd)).not.toContain("boom");
    const notObject = toolResult({ statusCode: 200, headers: {}, body: "[1]" }, "/v1/x");
    expect(notObject.isError).toBe(true);
  });
});
