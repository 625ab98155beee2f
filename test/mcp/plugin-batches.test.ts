import { afterEach, describe, expect, it } from "vitest";
import { PAID_TOOLS } from "../../src/mcp/tools.js";
import { unpaidChallenge } from "../../src/mcp/unpaid.js";
import { PRICES } from "../../src/operations/prices.js";
import { type TestApp, testApp } from "../helpers/app.js";

/*
 * JSON-RPC batches on /mcp and the cost of an unpaid tool call, against the real app with a fake facilitator gateway
 * that counts its calls.
 */
let t: TestApp | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

const post = (app: TestApp["app"], body: unknown) =>
  app.inject({
    method: "POST",
    url: "/mcp",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
    payload: JSON.stringify(body),
  });

const call = (id: number, meta?: Record<string, unknown>) => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: { name: "unlocks_upcoming", arguments: { days: 30 }, ...(meta ? { _meta: meta } : {}) },
});

describe("JSON-RPC batches", () => {
  it("are refused whole with -32600, nothing in them run, one request against the rate limit", async () => {
    t = await testApp({ RATE_LIMIT_MAX: "3" });
    const batch = [
      { jsonrpc: "2.0", id: 1, method: "tools/list" },
      call(2),
      call(3, { "x402/payment": { x402Version: 2 } }),
    ];
    const res = await post(t.app, batch);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      jsonrpc: "2.0",
      id: null,
      error: { code: -32600, message: expect.stringMatching(/batches are not supported/) },
    });
    expect(t.gateway.calls.verify).toBe(0);
    // Two more POSTs are the 2nd and 3rd of the limit of 3; the 4th is 429, batch or not.
    expect((await post(t.app, call(4))).statusCode).toBe(200);
    expect((await post(t.app, batch)).statusCode).toBe(400);
    expect((await post(t.app, batch)).statusCode).toBe(429);
  });

  it("an empty array is a batch too", async () => {
    t = await testApp();
    const res = await post(t.app, []);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: { code: -32600 } });
  });
});

describe("an unpaid tools/call", () => {
  it("is answered from a PaymentRequired built once per tool and base URL", async () => {
    t = await testApp();
    const answers = await Promise.all(
      [1, 2].map(async (id) => (await post(t?.app as TestApp["app"], call(id))).json()),
    );
    const [a, b] = answers.map(
      (r) => (r as { result: { structuredContent: unknown } }).result.structuredContent,
    );
    expect(a).toEqual(b);
    expect(a).toMatchObject({ x402Version: 2, error: expect.stringMatching(/payment required/) });

    const tool = PAID_TOOLS.find((x) => x.name === "unlocks_upcoming");
    if (!tool) throw new Error("no unlocks_upcoming tool");
    const terms = t.app.payments.core.terms;
    const once = unpaidChallenge(tool, PRICES.upcoming, terms, "http://a.example")("ignored");
    expect(unpaidChallenge(tool, PRICES.upcoming, terms, "http://a.example")("other")).toBe(once);
    expect(unpaidChallenge(tool, PRICES.upcoming, terms, "http://b.example")("")).not.toBe(once);
    // Another app's terms (another payee) never share it.
    expect(unpaidChallenge(tool, PRICES.upcoming, { ...terms }, "http://a.example")("")).not.toBe(once);
    expect(once.required.resource.url).toBe("http://a.example/mcp");
  });
});
