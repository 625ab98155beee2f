import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { PaymentRequired, PaymentRequirements } from "@x402/core/types";
import { appendPaymentIdentifierToExtensions } from "@x402/extensions/payment-identifier";
import { afterEach, describe, expect, it, vi } from "vitest";
import { type TestApp, testApp } from "../helpers/app.js";
import { v2Proof } from "../helpers/proofs.js";

/*
 * A plain single tools/call is answered by src/mcp/plugin.ts without the SDK's transport and server; everything else
 * goes through the SDK. Both must answer the same bytes: here each request is sent once as a plain call and once with
 * `Content-Type: application/json; charset=utf-8` (which the direct path leaves to the SDK), and the SDK transport's
 * handleRequest is counted to know which path answered.
 */
const apps: TestApp[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  await Promise.all(apps.splice(0).map((a) => a.close()));
});

// Both apps name the same resource URL, so a PaymentRequired and a proof are the same bytes on either.
const ENV = { PUBLIC_BASE_URL: "https://mcp.example" };
async function listen(): Promise<string> {
  const t = await testApp(ENV);
  apps.push(t);
  return t.app.listen({ host: "127.0.0.1", port: 0 });
}

const DIRECT = { accept: "application/json, text/event-stream", "content-type": "application/json" };
const VIA_SDK = { ...DIRECT, "content-type": "application/json; charset=utf-8" };
/** Headers that differ from one answer to the next whatever answered it. */
const VARYING = new Set(["date", "x-request-id", "request-id", "ratelimit-reset", "ratelimit-remaining"]);

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
  sdk: boolean;
}

async function post(address: string, body: unknown, headers: Record<string, string>): Promise<Answer> {
  const handled = vi.spyOn(WebStandardStreamableHTTPServerTransport.prototype, "handleRequest");
  const res = await fetch(`${address}/mcp`, {
    method: "POST",
    headers,
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const kept: Record<string, string> = {};
  res.headers.forEach((value, name) => {
    if (!VARYING.has(name)) kept[name] = value;
  });
  const answer = {
    status: res.status,
    headers: kept,
    body: await res.text(),
    sdk: handled.mock.calls.length > 0,
  };
  handled.mockRestore();
  return answer;
}

const toolCall = (id: string | number, name: string, args: unknown, meta?: unknown) => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: { name, arguments: args, ...(meta === undefined ? {} : { _meta: meta }) },
});

const RISK = { token: "ARB", unlock_event_id: "unlock_arb_2026_12_16" };

/** The same request both ways on one app: answered directly the first time, by the SDK the second, same bytes. */
async function sameBothWays(address: string, body: unknown, direct = true) {
  const a = await post(address, body, DIRECT);
  const b = await post(address, body, VIA_SDK);
  expect(a.sdk).toBe(!direct);
  expect(b.sdk).toBe(true);
  expect(a).toEqual({ ...b, sdk: a.sdk });
  return a;
}

describe("a plain tools/call answered without the SDK", () => {
  it("an unpaid call, invalid arguments, string and number ids: the SDK's bytes", async () => {
    const address = await listen();
    const unpaid = await sameBothWays(address, toolCall(1, "unlock_risk", RISK));
    expect(unpaid.status).toBe(200);
    expect(unpaid.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(JSON.parse(unpaid.body).result.isError).toBe(true);
    await sameBothWays(address, toolCall("a-string-id", "unlocks_upcoming", { days: 30 }));
    await sameBothWays(address, toolCall(2, "unlock_risk", { token: "ARB" }));
    await sameBothWays(address, toolCall(3, "unlock_risk", { ...RISK, unlock_event_id: "nope" }));
    await sameBothWays(address, toolCall(4, "unlock_risk", {}, { "x402/payment": "not base64 {" }));
  });

  it("a paid call: the same proof on two fresh apps gives the same bytes, settled once on each", async () => {
    const [one, two] = [await listen(), await listen()];
    const unpaid = await post(one, toolCall(1, "unlock_risk", RISK), DIRECT);
    const pr = JSON.parse(unpaid.body).result.structuredContent as PaymentRequired;
    // A payment-identifier of the buyer's: no retry key is issued (a random one would differ between the apps).
    const proof = {
      ...v2Proof(pr.accepts[0] as PaymentRequirements),
      extensions: appendPaymentIdentifierToExtensions(
        structuredClone(pr.extensions ?? {}),
        "pay_direct_call_0001",
      ),
    };
    const a = await post(one, toolCall(7, "unlock_risk", RISK, { "x402/payment": proof }), DIRECT);
    const b = await post(two, toolCall(7, "unlock_risk", RISK, { "x402/payment": proof }), VIA_SDK);
    expect([a.sdk, b.sdk]).toEqual([false, true]);
    expect(JSON.parse(a.body).result.isError).toBeFalsy();
    expect(a).toEqual({ ...b, sdk: false });
    for (const t of apps) expect(t.gateway.calls.settle).toBe(1);
  });

  it("anything else goes to the SDK: unknown tool, wrong Accept, bad protocol version, notification, extra members, progress token", async () => {
    const address = await listen();
    const viaSdk = async (body: unknown, headers: Record<string, string> = DIRECT) => {
      const a = await post(address, body, headers);
      expect(a.sdk).toBe(true);
      return a;
    };
    const unknown = await sameBothWays(address, toolCall(1, "no_such_tool", {}), false);
    expect(JSON.parse(unknown.body).error.code).toBe(-32602);
    expect(
      (await viaSdk(toolCall(1, "unlock_risk", RISK), { ...DIRECT, accept: "application/json" })).status,
    ).toBe(406);
    expect(
      (await viaSdk(toolCall(1, "unlock_risk", RISK), { ...DIRECT, "mcp-protocol-version": "1999-01-01" }))
        .status,
    ).toBe(400);
    const known = await post(address, toolCall(1, "unlock_risk", RISK), {
      ...DIRECT,
      "mcp-protocol-version": "2025-06-18",
    });
    expect(known.sdk).toBe(false);
    expect((await viaSdk({ jsonrpc: "2.0", method: "notifications/initialized" })).status).toBe(202);
    expect((await viaSdk({ ...toolCall(1, "unlock_risk", RISK), extra: true })).status).toBe(400);
    await viaSdk(toolCall(1.5, "unlock_risk", RISK));
    await viaSdk(toolCall(1, "unlock_risk", RISK, { progressToken: 9 }));
    await viaSdk({ ...toolCall(1, "unlock_risk", RISK), jsonrpc: "1.0" });
  });
});
