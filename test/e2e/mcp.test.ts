import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { x402Client } from "@x402/core/client";
import type { PaymentRequired } from "@x402/core/types";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { appendPaymentIdentifierToExtensions, generatePaymentId } from "@x402/extensions/payment-identifier";
import { withX402Client } from "agents/x402";
import { createPublicClient, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { base } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PRICES } from "../../src/operations/prices.js";
import { openLedger } from "../../src/ledger/embedded.js";
import { useDevnetServer } from "../helpers/devnet-server.js";

/*
 * The real server on the embedded devnet, paid over MCP by two clients, each calling each of the five tools:
 * - the official MCP client SDK, with a real x402 client signing the PaymentPayload from the tool's PaymentRequired
 *   (sent as an object in _meta["x402/payment"]);
 * - Cloudflare's `agents` x402 client (withX402Client), the implementation the x402 MCP transport spec links, which
 *   reads the PaymentRequired from _meta["x402/error"] and sends the payment as a base64 string.
 * The chain must show exactly each price moved from the buyer to payTo, and nothing more when a payment is sent again.
 */
const ROOT = fileURLToPath(new URL("../..", import.meta.url));
let mcp: Client;

// No load shedding: a busy test machine must not turn a paid call into 503 (shedding has its own tests).
const srv = useDevnetServer("p402-mcp-", { MAX_EVENT_LOOP_DELAY_MS: "0" });
const { devnet } = srv;

beforeAll(async () => {
  mcp = new Client({ name: "pressure402-e2e", version: "1.0.0" });
  await mcp.connect(new StreamableHTTPClientTransport(new URL(srv.url("/mcp"))));
}, 120_000);

afterAll(async () => {
  await mcp?.close();
});

type ToolResult = Awaited<ReturnType<Client["callTool"]>>;

// <callPaidTool> (README "How to integrate": MCP; a test checks the README shows this code)
/** Calls a paid tool: unpaid first; on an x402 PaymentRequired, signs a payment and repeats the call with it. */
async function callPaidTool(
  mcp: Client,
  x402: x402Client,
  name: string,
  args: Record<string, unknown>,
  maxAtomic: bigint,
) {
  const first = await mcp.callTool({ name, arguments: args });
  const required = first.structuredContent as PaymentRequired | undefined;
  if (!first.isError || required?.x402Version !== 2) return first; // a result, or a refusal (problem fields)
  if (required.accepts.every((r) => BigInt(r.amount) > maxAtomic)) throw new Error(`${name} costs too much`);
  const payment = await x402.createPaymentPayload(required);
  return mcp.callTool({ name, arguments: args, _meta: { "x402/payment": payment } });
}
// </callPaidTool>

function buyer(index: number) {
  const key = devnet().buyers[index]!;
  const x402 = new x402Client();
  registerExactEvmScheme(x402, { signer: privateKeyToAccount(key.privateKey) });
  return { ...key, x402 };
}

interface Settlement {
  success: boolean;
  transaction: `0x${string}`;
  network: string;
  payer: string;
}

const settlementOf = (r: ToolResult) => r._meta?.["x402/payment-response"] as Settlement | undefined;

async function balances(address: `0x${string}`) {
  const d = devnet();
  const [payTo, buyerBalance] = await Promise.all([d.balanceOf(d.payTo), d.balanceOf(address)]);
  return { payTo, buyer: buyerBalance };
}

type Pay = (name: string, args: Record<string, unknown>) => Promise<ToolResult>;

/**
 * Calls the five tools with `pay`, in the order an agent would (event ids from the first): each result arrives with
 * its settlement, mined on the devnet, and the chain moved exactly that tool's price from `payer` to payTo.
 */
async function paysAllFive(pay: Pay, payer: `0x${string}`) {
  const chain = createPublicClient({ chain: base, transport: http(devnet().rpcUrl) });
  const start = await balances(payer);
  const deltas: Record<string, bigint> = {};

  async function pays(name: string, args: Record<string, unknown>, price: string) {
    const before = await balances(payer);
    const result = await pay(name, args);
    expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
    const settlement = settlementOf(result);
    expect(settlement).toMatchObject({ success: true, network: "eip155:8453" });
    expect(settlement?.payer.toLowerCase()).toBe(payer.toLowerCase());
    const receipt = await chain.getTransactionReceipt({ hash: settlement!.transaction });
    expect(receipt.status).toBe("success");
    const after = await balances(payer);
    expect(after.payTo - before.payTo).toBe(BigInt(price));
    expect(before.buyer - after.buyer).toBe(BigInt(price));
    deltas[name] = before.buyer - after.buyer;
    const text = (result.content as { text: string }[])[0]!.text;
    if (name === "benchmark_endpoint") expect(JSON.parse(text)).toEqual(result.structuredContent);
    else {
      // An unlock tool's text is a short summary an assistant can quote; the whole answer is structuredContent.
      expect(text.length).toBeGreaterThan(0);
      expect(text.length).toBeLessThan(JSON.stringify(result.structuredContent).length);
    }
    return result.structuredContent as Record<string, unknown>;
  }

  const upcoming = await pays("unlocks_upcoming", { days: 120 }, PRICES.upcoming.amount);
  expect(upcoming).toMatchObject({ days: 120 });
  const { token, unlock_event_id } = (upcoming.unlocks as { token: string; unlock_event_id: string }[])[0]!;
  const event = { token, unlock_event_id };

  expect(await pays("unlock_risk", event, PRICES.unlockRisk.amount)).toMatchObject({
    ...event,
    risk_score: expect.any(Number),
  });
  expect(
    await pays("token_risk_summary", { token, lookbackDays: 30 }, PRICES.riskSummary.amount),
  ).toMatchObject({ token });
  expect(await pays("unlock_backtest", event, PRICES.backtest.amount)).toMatchObject({ token });
  const benchmarkArgs = { endpoint_url: "https://2s.io/api/crypto/token-price", pp_ref: "mcp-e2e" };
  expect(await pays("benchmark_endpoint", benchmarkArgs, PRICES.benchmark.amount)).toMatchObject({
    endpoint_url: "https://2s.io/api/crypto/token-price",
  });

  const total = Object.values(PRICES).reduce((sum, p) => sum + BigInt(p.amount), 0n);
  expect(total).toBe(920_000n);
  const end = await balances(payer);
  expect(end.payTo - start.payTo).toBe(total);
  expect(start.buyer - end.buyer).toBe(total);
  // The measured figures, for the record of a run (vitest prints them with --reporter=verbose).
  console.info(`MCP on-chain deltas for ${payer}:`, deltas, "total", start.buyer - end.buyer);
}

describe("the official MCP SDK client pays for each of the five tools on the devnet", () => {
  const MAX = 1_000_000n;
  let lastPaid: { name: string; args: Record<string, unknown>; payment: unknown; result: ToolResult };

  it("each tool's result arrives with its settlement; the chain moved exactly the five prices", async () => {
    const b = buyer(0);
    await paysAllFive((name, args) => callPaidTool(mcp, b.x402, name, args, MAX), b.address);

    // Kept for the replay below: a proof the test signs itself, for the cheapest tool.
    const required = (await mcp.callTool({ name: "unlocks_upcoming", arguments: { days: 7 } }))
      .structuredContent as PaymentRequired;
    const signed = await b.x402.createPaymentPayload(required);
    // What an integrator is told to do: its own payment-identifier id, the secret that alone recovers the result.
    const payment = {
      ...signed,
      extensions: appendPaymentIdentifierToExtensions(
        structuredClone(required.extensions ?? {}),
        generatePaymentId(),
      ),
    };
    const result = await mcp.callTool({
      name: "unlocks_upcoming",
      arguments: { days: 7 },
      _meta: { "x402/payment": payment },
    });
    expect(result.isError).toBeFalsy();
    lastPaid = { name: "unlocks_upcoming", args: { days: 7 }, payment, result };
  });

  it("the same proof again gets the same result and settlement, and charges nothing", async () => {
    const b = buyer(0);
    const before = await balances(b.address);
    const again = await mcp.callTool({
      name: lastPaid.name,
      arguments: lastPaid.args,
      _meta: { "x402/payment": lastPaid.payment },
    });
    expect(again.isError).toBeFalsy();
    expect(again.structuredContent).toEqual(lastPaid.result.structuredContent);
    expect(settlementOf(again)).toEqual(settlementOf(lastPaid.result));
    // Its authorization and signature alone (public on chain) buy nothing, for this request or another.
    const { extensions: _id, ...bare } = lastPaid.payment as Record<string, unknown>;
    for (const days of [7, 8]) {
      const other = await mcp.callTool({
        name: lastPaid.name,
        arguments: { days },
        _meta: { "x402/payment": bare },
      });
      expect(other.isError).toBe(true);
      expect((other.structuredContent as PaymentRequired).error).toMatch(/payment_already_used/);
    }
    expect(await balances(b.address)).toEqual(before);
  });

  it("an unfunded buyer's proof is refused with a PaymentRequired, and nothing moves", async () => {
    const poor = new x402Client();
    registerExactEvmScheme(poor, {
      signer: privateKeyToAccount(`0x${"42".repeat(32)}`),
    });
    const d = devnet();
    const payToBefore = await d.balanceOf(d.payTo);
    const r = await callPaidTool(mcp, poor, "unlocks_upcoming", { days: 30 }, MAX);
    expect(r.isError).toBe(true);
    expect((r.structuredContent as PaymentRequired).error).toMatch(/insufficient|balance|funds/i);
    expect(await d.balanceOf(d.payTo)).toBe(payToBefore);
  });
});

describe("Cloudflare agents' x402 client (withX402Client) pays for each of the five tools on the devnet", () => {
  let cf: Client;
  let paid: ReturnType<typeof withX402Client>;
  /** Every `_meta["x402/payment"]` the client sent, as it went over the wire. */
  const sent: { name: string; args: unknown; payment: unknown; retryKey?: unknown }[] = [];

  beforeAll(async () => {
    const recording: typeof fetch = async (input, init) => {
      const msg = typeof init?.body === "string" ? JSON.parse(init.body) : undefined;
      const payment = msg?.params?._meta?.["x402/payment"];
      const res = await fetch(input, init);
      if (msg?.method === "tools/call" && payment !== undefined) {
        // The retry key the answer issued (this client sends no payment-identifier id): kept for the replay.
        const answer = (await res.clone().json()) as { result?: { _meta?: Record<string, unknown> } };
        const retryKey = answer.result?._meta?.["pressure402/idempotency-key"];
        sent.push({ name: msg.params.name, args: msg.params.arguments, payment, retryKey });
      }
      return res;
    };
    cf = new Client({ name: "pressure402-e2e-agents", version: "1.0.0" });
    await cf.connect(new StreamableHTTPClientTransport(new URL(srv.url("/mcp")), { fetch: recording }));
    paid = withX402Client(cf, {
      account: privateKeyToAccount(devnet().buyers[1]!.privateKey),
      network: "eip155:8453",
      // Its default cap is 0.10 USDC; the dearest tool costs 0.40.
      maxPaymentValue: 1_000_000n,
    });
  });

  afterAll(async () => {
    await cf?.close();
  });

  it("lists each tool with its price, read from the tool's _meta", async () => {
    const { tools } = await paid.listTools();
    const risk = tools.find((t) => t.name === "unlock_risk");
    expect(risk?.description).toContain("(This is a paid tool, you will be charged $0.1 for its execution)");
  });

  it("each tool's result arrives with its settlement; the chain moved exactly the five prices", async () => {
    await paysAllFive(
      (name, args) => paid.callTool(null, { name, arguments: args }) as Promise<ToolResult>,
      devnet().buyers[1]!.address,
    );
    // One payment per tool, each sent as base64 text (PAYMENT-SIGNATURE's encoding), not as an object.
    expect(sent.map((s) => s.name)).toEqual([
      "unlocks_upcoming",
      "unlock_risk",
      "token_risk_summary",
      "unlock_backtest",
      "benchmark_endpoint",
    ]);
    for (const s of sent) expect(s.payment).toMatch(/^[A-Za-z0-9+/]+={0,2}$/);
  });

  it("its payment sent again gets the same result and settlement, and charges nothing", async () => {
    const payer = devnet().buyers[1]!.address;
    const before = await balances(payer);
    const last = sent.at(-1)!;
    // Through the same client: a call that already carries a payment goes out as it is.
    expect(typeof last.retryKey).toBe("string");
    const replay = () =>
      paid.callTool(null, {
        name: last.name,
        arguments: last.args as Record<string, unknown>,
        _meta: { "x402/payment": last.payment, "pressure402/idempotency-key": last.retryKey },
      }) as Promise<ToolResult>;
    // Without the retry key its result carried, the payment (public on chain) gets nothing. Sent with a plain MCP
    // client: the paying one would answer the PaymentRequired with a new payment of its own.
    const plain = new Client({ name: "pressure402-e2e-plain", version: "1.0.0" });
    await plain.connect(new StreamableHTTPClientTransport(new URL(srv.url("/mcp"))));
    const bare = (await plain
      .callTool({
        name: last.name,
        arguments: last.args as Record<string, unknown>,
        _meta: { "x402/payment": last.payment },
      })
      .finally(() => plain.close())) as ToolResult;
    expect(bare.isError).toBe(true);
    expect((bare.structuredContent as PaymentRequired).error).toMatch(/payment_already_used/);
    const first = await replay();
    const again = await replay();
    expect(first.isError).toBeFalsy();
    expect(again.structuredContent).toEqual(first.structuredContent);
    expect(settlementOf(again)).toEqual(settlementOf(first));
    expect(settlementOf(first)?.payer.toLowerCase()).toBe(payer.toLowerCase());
    expect(await balances(payer)).toEqual(before);
  });
});

describe("the ledger after both clients", () => {
  it("holds one settled receipt per payment, each with its own transaction", async () => {
    const ledger = openLedger(srv.ledgerPath);
    const receipts = (await ledger.receipts()).filter((r) => r.status === "settled");
    await ledger.close();
    // Official SDK: five tools and the proof kept for its replay; agents: five tools. Replays add none.
    expect(receipts).toHaveLength(11);
    expect(new Set(receipts.map((r) => r.transaction)).size).toBe(11);
    expect(receipts.filter((r) => r.route === PRICES.benchmark.route).map((r) => r.ppRef)).toEqual([
      "mcp-e2e",
      "mcp-e2e",
    ]);
  });
});

describe("README", () => {
  it("shows the MCP snippet this test runs", () => {
    const source = readFileSync(fileURLToPath(import.meta.url), "utf8");
    const snippet = source.split("// <callPaidTool>")[1]!.split("// </callPaidTool>")[0]!;
    const fn = snippet.slice(snippet.indexOf("async function callPaidTool"));
    const readme = readFileSync(join(ROOT, "README.md"), "utf8");
    expect(readme.includes(fn.trim()), "README.md must show the callPaidTool this test runs").toBe(true);
  });
});
