import { randomBytes } from "node:crypto";
import { Writable } from "node:stream";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { PaymentRequired, PaymentRequirements } from "@x402/core/types";
import { appendPaymentIdentifierToExtensions, generatePaymentId } from "@x402/extensions/payment-identifier";
import { afterEach, describe, expect, it } from "vitest";
import { loggerOptions } from "../../src/app.js";
import { BASE_MAINNET } from "../../src/chain/networks.js";
import { PAID_TOOLS, priceMeta } from "../../src/mcp/tools.js";
import { PRICES } from "../../src/operations/prices.js";
import { OPERATIONS } from "../../src/operations/table.js";
import { FacilitatorFault } from "../../src/payments/facilitator/gateway.js";
import { PpRef } from "../../src/schemas/common.js";
import { UnlockRiskBody, UpcomingQuery } from "../../src/schemas/unlocks.js";
import { RiskItem } from "../../src/schemas/unlocks-responses.js";
import { TEST_PAY_TO, type TestApp, testApp } from "../helpers/app.js";
import { b64, v2Proof } from "../helpers/proofs.js";

/*
 * /mcp over real HTTP with the official MCP client, against the real app (real routes, real payment core and ledger)
 * and a fake facilitator gateway that counts its calls.
 */
let t: TestApp | undefined;
let client: Client | undefined;

afterEach(async () => {
  await client?.close();
  client = undefined;
  await t?.close();
  t = undefined;
});

async function connect(env: Record<string, string> = {}) {
  t = await testApp(env);
  const address = await t.app.listen({ host: "127.0.0.1", port: 0 });
  client = new Client({ name: "mcp-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${address}/mcp`)));
  return { t, client, address };
}

/** The app listening, without an MCP client (raw JSON-RPC over fetch). */
async function listen(env: Record<string, string> = {}) {
  t = await testApp(env);
  return { address: await t.app.listen({ host: "127.0.0.1", port: 0 }) };
}

interface Result {
  isError?: boolean;
  structuredContent?: Record<string, unknown>;
  content: { type: string; text?: string }[];
  _meta?: Record<string, unknown>;
}

const call = async (c: Client, name: string, args: Record<string, unknown>, proof?: unknown) =>
  (await c.callTool({
    name,
    arguments: args,
    ...(proof !== undefined ? { _meta: { "x402/payment": proof } } : {}),
  })) as Result;

/**
 * The x402 MCP transport: PaymentRequired in structuredContent and, identical, as JSON in content[0].text; the same
 * in _meta["x402/error"] (where Cloudflare's agents client reads it); the MCP endpoint as the resource.
 */
function paymentRequired(r: Result): PaymentRequired {
  expect(r.isError).toBe(true);
  const pr = r.structuredContent as unknown as PaymentRequired;
  expect(pr.x402Version).toBe(2);
  expect(r.content[0]?.text).toBe(JSON.stringify(pr));
  expect(r._meta?.["x402/error"]).toEqual(pr);
  expect(pr.resource.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
  return pr;
}

/**
 * A barrier on the gateway's settlement: `entered` resolves when a settlement starts, which then waits for `release`
 * (only the first one with `onlyFirst`; every one otherwise).
 */
function holdSettlement(gateway: TestApp["gateway"], opts: { onlyFirst?: boolean } = {}) {
  let settling!: () => void;
  const entered = new Promise<void>((resolve) => {
    settling = resolve;
  });
  let release!: () => void;
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  const settle = gateway.settleResult;
  let first = true;
  gateway.settleResult = async (p, r) => {
    if (first || !opts.onlyFirst) {
      first = false;
      settling();
      await held;
    }
    return settle(p, r);
  };
  return { entered, release };
}

const RISK_ARGS = { token: "ARB", unlock_event_id: "unlock_arb_2026_12_16" };

describe("tools/list", () => {
  it("lists the five paid routes with the routes' own request and response schemas", async () => {
    const { client } = await connect();
    expect(client.getInstructions()).toMatch(/x402\/payment/);
    const { tools } = await client.listTools();
    expect(tools.map((x) => x.name).sort()).toEqual(PAID_TOOLS.map((x) => x.name).sort());
    const upcoming = tools.find((x) => x.name === "unlocks_upcoming");
    expect(upcoming?.inputSchema).toEqual(JSON.parse(JSON.stringify(UpcomingQuery)));
    const risk = tools.find((x) => x.name === "unlock_risk");
    // A POST route's body schema, plus the pp_ref tag the route takes in its query.
    const body = JSON.parse(JSON.stringify(UnlockRiskBody));
    expect(risk?.inputSchema).toEqual({
      ...body,
      properties: { ...body.properties, pp_ref: JSON.parse(JSON.stringify(PpRef)) },
    });
    expect(risk?.outputSchema?.anyOf).toContainEqual(JSON.parse(JSON.stringify(RiskItem)));
    for (const tool of PAID_TOOLS) {
      const price = Object.values(PRICES).find((p) => p.route === `${tool.method} ${tool.path}`);
      expect(price?.amount, tool.name).toBe(tool.amount);
      // Each tool's price, readable before calling it.
      expect(tools.find((x) => x.name === tool.name)?._meta, tool.name).toEqual(
        priceMeta(tool, BASE_MAINNET),
      );
    }
  });
});

describe("tools/call before payment", () => {
  it("answers the PaymentRequired of the route's price, calling no facilitator", async () => {
    const { client, t } = await connect();
    for (const tool of PAID_TOOLS) {
      const pr = paymentRequired(await call(client, tool.name, OPERATIONS[tool.key].inputExample));
      expect(pr.accepts[0]).toMatchObject({
        scheme: "exact",
        network: "eip155:8453",
        amount: tool.amount,
        payTo: TEST_PAY_TO,
      });
      expect(pr.error).toMatch(/_meta\["x402\/payment"\]/);
      expect(pr.extensions?.bazaar).toMatchObject({ info: { input: { type: "mcp", toolName: tool.name } } });
    }
    expect(t.gateway.calls).toEqual({ verify: 0, settle: 0 });
  });

  it("refuses invalid arguments with the route's 400 problem, never a payment request", async () => {
    const { client, t } = await connect();
    const r = await call(client, "unlocks_upcoming", { days: 9999 });
    expect(r.isError).toBe(true);
    expect(r.structuredContent).toMatchObject({
      status: 400,
      errors: [expect.objectContaining({ in: "query", pointer: "/days" })],
    });
    const body = await call(client, "token_risk_summary", { token: "ARB", extra: 1 });
    expect(body.structuredContent).toMatchObject({
      status: 400,
      errors: [expect.objectContaining({ in: "body", pointer: "/extra" })],
    });
    expect(t.gateway.calls.verify).toBe(0);
  });

  it("answers an unknown token or event with the route's 404, before any payment request", async () => {
    const { client } = await connect();
    const r = await call(client, "unlock_risk", { token: "ARB", unlock_event_id: "nope" });
    expect(r.isError).toBe(true);
    expect(r.structuredContent).toMatchObject({
      status: 404,
      type: expect.stringMatching(/unknown-unlock-event/),
    });
    expect(r.structuredContent).not.toHaveProperty("accepts");
  });

  it("rejects an unknown tool as a protocol error", async () => {
    const { client } = await connect();
    await expect(call(client, "free_lunch", {})).rejects.toThrow(/Unknown tool/);
  });
});

describe("tools/call with a proof in _meta['x402/payment']", () => {
  async function accepted(c: Client, name: string, args: Record<string, unknown>) {
    return paymentRequired(await call(c, name, args)).accepts[0] as PaymentRequirements;
  }

  it("delivers the result with the settlement in _meta and one settled receipt (with pp_ref)", async () => {
    const { client, t } = await connect();
    const args = { ...RISK_ARGS, pp_ref: "mcp.test" };
    const ok = await call(client, "unlock_risk", args, v2Proof(await accepted(client, "unlock_risk", args)));
    expect(ok.isError).toBeFalsy();
    expect(ok.structuredContent).toMatchObject({ token: "ARB", risk_score: expect.any(Number) });
    // The text is a short quotable summary of the structured answer (src/mcp/summary.ts).
    expect(ok.content[0]?.text).toContain(RISK_ARGS.unlock_event_id);
    const settlement = ok._meta?.["x402/payment-response"] as { success: boolean; transaction: string };
    expect(settlement).toMatchObject({ success: true, network: "eip155:8453" });
    expect(settlement.transaction).toMatch(/^0x[0-9a-f]{64}$/);
    expect(t.gateway.calls.settle).toBe(1);
    const receipts = (await t.ledger.receipts()).filter((r) => r.status === "settled");
    expect(receipts.map((r) => [r.route, r.amount, r.ppRef])).toEqual([
      [PRICES.unlockRisk.route, PRICES.unlockRisk.amount, "mcp.test"],
    ]);
  });

  it("the same proof (with its payment-identifier) and arguments again: the same result and settlement, no second settlement", async () => {
    const { client, t } = await connect();
    const pr = paymentRequired(await call(client, "unlocks_upcoming", { days: 30 }));
    // What an @x402/extensions client does with the advertised extension: it adds its own id to the payload.
    const proof = {
      ...v2Proof(pr.accepts[0] as PaymentRequirements),
      extensions: appendPaymentIdentifierToExtensions(
        structuredClone(pr.extensions ?? {}),
        generatePaymentId(),
      ),
    };
    const first = await call(client, "unlocks_upcoming", { days: 30 }, proof);
    expect(first.isError).toBeFalsy();
    const again = await call(client, "unlocks_upcoming", { days: 30 }, proof);
    expect(again.isError).toBeFalsy();
    expect(again.structuredContent).toEqual(first.structuredContent);
    expect(again._meta?.["x402/payment-response"]).toEqual(first._meta?.["x402/payment-response"]);
    expect(t.gateway.calls.settle).toBe(1);
    // ... and for other arguments it is spent: a fresh PaymentRequired that says so, nothing settled.
    // ... and for other arguments the id's holder is told the id stands for another request, nothing settled.
    const other = await call(client, "unlocks_upcoming", { days: 60 }, proof);
    expect(other.isError).toBe(true);
    expect(other.structuredContent).toMatchObject({
      status: 409,
      type: expect.stringMatching(/payment-identifier-reused$/),
    });
    expect(t.gateway.calls.settle).toBe(1);
  });

  it("a chain observer's copied, rebuilt and forged proofs get the same PaymentRequired on any arguments, never the result", async () => {
    const { client, t } = await connect();
    const bought = { days: 30 };
    const paid = v2Proof(await accepted(client, "unlocks_upcoming", bought));
    const first = await call(client, "unlocks_upcoming", bought, paid);
    expect(first.isError).toBeFalsy();
    const retryKey = first._meta?.["pressure402/idempotency-key"];
    expect(typeof retryKey).toBe("string");
    const { authorization, signature } = paid.payload;
    const forged = `0x${randomBytes(65).toString("hex")}`;
    const proofs = {
      copied: { x402Version: 2, accepted: paid.accepted, payload: { authorization, signature } },
      rebuilt: {
        payload: { signature, authorization: { ...authorization } },
        x402Version: 2,
        accepted: paid.accepted,
      },
      forged: { x402Version: 2, accepted: paid.accepted, payload: { authorization, signature: forged } },
    };
    const errors = new Set<string>();
    for (const proof of Object.values(proofs))
      for (const args of [bought, { days: 60 }]) {
        const r = await call(client, "unlocks_upcoming", args, proof);
        expect(r.isError).toBe(true);
        errors.add(String(paymentRequired(r).error));
      }
    expect([...errors]).toEqual([expect.stringMatching(/^payment_already_used/)]);
    expect(t.gateway.calls).toMatchObject({ verify: 1, settle: 1 });
    // The buyer, with the retry key its result carried, gets the same result again.
    const again = (await client.callTool({
      name: "unlocks_upcoming",
      arguments: bought,
      _meta: { "x402/payment": paid, "pressure402/idempotency-key": retryKey },
    })) as Result;
    expect(again.isError).toBeFalsy();
    expect(again.structuredContent).toEqual(first.structuredContent);
  });

  it("a proof as a base64 string (PAYMENT-SIGNATURE's encoding) pays; the object form of it is the same payment", async () => {
    const { client, t } = await connect();
    const proof = v2Proof(await accepted(client, "token_risk_summary", { token: "ARB" }));
    const first = await call(client, "token_risk_summary", { token: "ARB" }, b64(proof));
    expect(first.isError).toBeFalsy();
    expect(first.structuredContent).toMatchObject({ token: "ARB" });
    expect(first._meta?.["x402/payment-response"]).toMatchObject({ success: true });
    const retryKey = first._meta?.["pressure402/idempotency-key"];
    const asObject = (await client.callTool({
      name: "token_risk_summary",
      arguments: { token: "ARB" },
      _meta: { "x402/payment": proof, "pressure402/idempotency-key": retryKey },
    })) as Result;
    expect(asObject.structuredContent).toEqual(first.structuredContent);
    expect(asObject._meta?.["x402/payment-response"]).toEqual(first._meta?.["x402/payment-response"]);
    expect(t.gateway.calls.settle).toBe(1);
  });

  it("the same proof in flight twice: one result, the other a 409 problem, one settlement", async () => {
    const { client, t } = await connect();
    // Barrier: the first call's settlement waits until the test has seen the second call's answer.
    const { entered, release } = holdSettlement(t.gateway);
    const proof = v2Proof(await accepted(client, "unlock_backtest", RISK_ARGS));
    const first = call(client, "unlock_backtest", RISK_ARGS, proof);
    await entered;
    const second = await call(client, "unlock_backtest", RISK_ARGS, proof);
    expect(second.isError).toBe(true);
    expect(second.structuredContent).toMatchObject({
      status: 409,
      type: expect.stringMatching(/payment-in-progress/),
      retryAfter: 1,
    });
    release();
    const done = await first;
    expect(done.isError).toBeFalsy();
    expect(t.gateway.calls.settle).toBe(1);
  });

  it("two paid calls in flight at once each get their own tool's result and settlement", async () => {
    const { client, t } = await connect();
    // Barrier: the first settlement waits until the second call has been answered; no other settlement waits.
    const { entered, release } = holdSettlement(t.gateway, { onlyFirst: true });
    const riskProof = v2Proof(await accepted(client, "unlock_risk", RISK_ARGS));
    const summaryProof = v2Proof(await accepted(client, "token_risk_summary", { token: "ARB" }));
    const risk = call(client, "unlock_risk", RISK_ARGS, riskProof);
    await entered;
    const summary = await call(client, "token_risk_summary", { token: "ARB" }, summaryProof);
    expect(summary.isError).toBeFalsy();
    expect(summary.structuredContent).toMatchObject({ token: "ARB", eventCount: expect.any(Number) });
    expect(summary.structuredContent).not.toHaveProperty("risk_score");
    release();
    const done = await risk;
    expect(done.isError).toBeFalsy();
    expect(done.structuredContent).toMatchObject({ unlock_event_id: RISK_ARGS.unlock_event_id });
    const tx = (r: Result) =>
      (r._meta?.["x402/payment-response"] as { transaction?: string } | undefined)?.transaction;
    expect(tx(done)).toMatch(/^0x/);
    expect(tx(done)).not.toBe(tx(summary));
    expect(t.gateway.calls.settle).toBe(2);
  });

  it("a settlement that fails withholds the result: PaymentRequired with the reason, no tool content", async () => {
    const { client, t } = await connect();
    t.gateway.settleResult = async (_p, r) => ({
      success: false,
      errorReason: "insufficient_funds",
      transaction: "",
      network: r.network,
    });
    const proof = v2Proof(await accepted(client, "unlock_risk", RISK_ARGS));
    const r = await call(client, "unlock_risk", RISK_ARGS, proof);
    expect(paymentRequired(r).error).toMatch(/settlement_failed: insufficient_funds/);
    // No tool content: only the PaymentRequired (whose Bazaar extension carries a documented example, not this result).
    expect(r.structuredContent).not.toHaveProperty("risk_score");
    expect(r.content).toHaveLength(1);
    expect(JSON.parse((r.content as { text: string }[])[0]?.text ?? "")).toEqual(r.structuredContent);
    // The failed settlement itself, as over HTTP's PAYMENT-RESPONSE: `success: false` and the reason.
    expect(r._meta?.["x402/payment-response"]).toMatchObject({
      success: false,
      errorReason: "insufficient_funds",
      transaction: "",
    });
  });

  it("a settlement timeout: unknown, not failed: 409 do-not-pay-again with the retry key, never `success: false`", async () => {
    const { client, t } = await connect();
    t.gateway.settleResult = async () => {
      throw new FacilitatorFault("facilitator_timeout", 3, "settle timed out");
    };
    const proof = v2Proof(await accepted(client, "unlock_risk", RISK_ARGS));
    const r = await call(client, "unlock_risk", RISK_ARGS, proof);
    expect(r.isError).toBe(true);
    expect(r.structuredContent).toMatchObject({ status: 409 });
    expect(JSON.stringify(r.structuredContent)).toMatch(/Do not pay again/);
    expect(r._meta?.["x402/payment-response"]).toBeUndefined();
    expect(typeof r._meta?.["pressure402/idempotency-key"]).toBe("string");
  });

  it("a proof the verifier refuses: PaymentRequired with the reason, nothing settled", async () => {
    const { client, t } = await connect();
    t.gateway.verifyResult = async () => ({
      isValid: false,
      invalidReason: "invalid_exact_evm_payload_value",
    });
    const proof = v2Proof(await accepted(client, "token_risk_summary", { token: "ARB" }));
    const r = await call(client, "token_risk_summary", { token: "ARB" }, proof);
    expect(paymentRequired(r).error).toBe("invalid_exact_evm_payload_value");
    expect(t.gateway.calls.settle).toBe(0);
  });

  it("junk in _meta['x402/payment'] is the caller's 400 and never reaches the facilitator", async () => {
    const { client, t } = await connect();
    let deep: unknown = "x";
    for (let i = 0; i < 500; i++) deep = [deep];
    for (const junk of ["not-a-payload", b64("a string"), "", 42, null, { x402Version: 2 }, deep]) {
      const r = await call(client, "unlocks_upcoming", { days: 30 }, junk);
      expect(r.isError).toBe(true);
      expect(r.structuredContent).toMatchObject({
        status: 400,
        type: expect.stringMatching(/invalid-payment/),
        detail: expect.stringMatching(/^_meta\["x402\/payment"\]/),
      });
    }
    expect(t.gateway.calls).toEqual({ verify: 0, settle: 0 });
  });

  it("a proof for another route's price is refused before the facilitator", async () => {
    const { client, t } = await connect();
    const cheap = v2Proof(await accepted(client, "unlocks_upcoming", { days: 30 }));
    const pr = paymentRequired(await call(client, "unlock_backtest", RISK_ARGS, cheap));
    expect(pr.error).toMatch(/amount/);
    expect(t.gateway.calls.verify).toBe(0);
  });
});

describe("the MCP caller is the client of its tool calls", () => {
  it("each tool call counts once against the caller's own rate limit", async () => {
    // With a limit of 1 per client (203.0.113.7 via the trusted proxy header, not loopback): the first JSON-RPC POST
    // is one request and gets its tool's answer; the second is that caller's 429; another caller is not affected.
    const { address } = await listen({ RATE_LIMIT_MAX: "1", TRUST_PROXY: "true" });
    const post = (from: string) =>
      fetch(`${address}/mcp`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "x-forwarded-for": from,
        },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "tools/call",
          params: { name: "unlocks_upcoming", arguments: { days: 30 } },
        }),
      });
    const first = await post("203.0.113.7");
    expect(first.status).toBe(200);
    const { result } = (await first.json()) as { result: Result };
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({ x402Version: 2 });
    const second = await post("203.0.113.7");
    expect(second.status).toBe(429);
    expect(await second.json()).toMatchObject({ status: 429, type: expect.stringMatching(/rate-limited/) });
    const other = await post("203.0.113.8");
    expect(other.status).toBe(200);
  });

  it("lets a browser MCP client through CORS (the protocol-version header is allowed)", async () => {
    const { address } = await listen();
    const res = await fetch(`${address}/mcp`, {
      method: "OPTIONS",
      headers: {
        origin: "https://agent.example",
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type,mcp-protocol-version",
      },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get("access-control-allow-headers")?.toLowerCase()).toContain("mcp-protocol-version");
  });

  it("a body that is not JSON-RPC is the caller's 4xx, without internals", async () => {
    const { address } = await listen();
    for (const body of ['{"foo":1}', '"x"', '{"jsonrpc":"2.0","id":1,"method":"tools/call"}']) {
      const res = await fetch(`${address}/mcp`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
        body,
      });
      const text = await res.text();
      expect(
        res.status < 500 && (res.status >= 400 || text.includes('"error"')),
        `${body} → ${res.status} ${text}`,
      ).toBe(true);
      expect(text).not.toMatch(/node_modules|at .*\.js|\/src\//);
    }
  });

  it("tools/call with arguments that are not an object: JSON-RPC invalid params (-32602), not zod's text in a -32603", async () => {
    const { address } = await listen();
    for (const args of ["days=30", [1], 5, null, true]) {
      const res = await fetch(`${address}/mcp`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 7,
          method: "tools/call",
          params: { name: "unlocks_upcoming", arguments: args },
        }),
      });
      const reply = (await res.json()) as { id: unknown; error?: { code: number; message: string } };
      expect(reply.id).toBe(7);
      expect(reply.error?.code, JSON.stringify(args)).toBe(-32602);
      expect(reply.error?.message).toMatch(/arguments must be an object/);
      expect(reply.error?.message).not.toMatch(/invalid_type|expected|record/);
    }
    expect(t?.gateway.calls).toEqual({ verify: 0, settle: 0 });
  });

  it("GET and DELETE /mcp are 405 problems (stateless endpoint)", async () => {
    const { address } = await connect();
    for (const method of ["GET", "DELETE"]) {
      const res = await fetch(`${address}/mcp`, { method, headers: { accept: "text/event-stream" } });
      expect(res.status).toBe(405);
      expect(res.headers.get("content-type")).toMatch(/problem\+json/);
      expect(res.headers.get("allow")).toBe("POST");
    }
  });
});

describe("logs", () => {
  it("at level trace, no payment proof sent over MCP reaches a log line", async () => {
    const lines: string[] = [];
    const stream = new Writable({
      write(chunk, _encoding, done) {
        lines.push(chunk.toString("utf8"));
        done();
      },
    });
    t = await testApp({}, undefined, { ...(loggerOptions("trace") as object), stream });
    const { app, gateway } = t;
    const address = await app.listen({ host: "127.0.0.1", port: 0 });
    client = new Client({ name: "mcp-test", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${address}/mcp`)));
    const first = await call(client, "unlocks_upcoming", { days: 30 });
    const proof = v2Proof(paymentRequired(first).accepts[0] as PaymentRequirements);
    proof.payload.signature = `0x${randomBytes(65).toString("hex")}`;
    const paid = await call(client, "unlocks_upcoming", { days: 30 }, proof);
    expect(paid.isError).toBeFalsy();
    const retryKey = String(paid._meta?.["pressure402/idempotency-key"]);
    const replayed = (await client.callTool({
      name: "unlocks_upcoming",
      arguments: { days: 30 },
      _meta: { "x402/payment": proof, "pressure402/idempotency-key": retryKey },
    })) as Result;
    expect(replayed.isError).toBeFalsy();
    gateway.settleResult = async () => {
      throw new Error("boom");
    };
    const other = v2Proof(paymentRequired(first).accepts[0] as PaymentRequirements);
    other.payload.signature = `0x${randomBytes(65).toString("hex")}`;
    // Another request: the same payer's proof for the same one would re-read the answer it bought.
    expect((await call(client, "unlocks_upcoming", { days: 31 }, other)).isError).toBe(true);
    const log = lines.join("");
    expect(log).toContain('"tool":"unlocks_upcoming","result":"answered"'); // each tool call is logged with its outcome
    expect(log).toContain('"tool":"unlocks_upcoming","result":"payment-required"');
    for (const secret of [
      proof.payload.signature.slice(2),
      other.payload.signature.slice(2),
      b64(proof),
      retryKey,
    ])
      expect(log).not.toContain(secret);
  });
});
