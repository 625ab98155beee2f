import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { wrap as wrapFaremeter } from "@faremeter/fetch";
import { exact as faremeterExact } from "@faremeter/payment-evm";
import { createLocalWallet } from "@faremeter/wallet-evm";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { wrapAxiosWithPaymentFromConfig } from "@x402/axios";
import { x402Client } from "@x402/core/client";
import type { PaymentRequired } from "@x402/core/types";
import { ExactEvmScheme, registerExactEvmScheme } from "@x402/evm/exact/client";
import { appendPaymentIdentifierToExtensions, generatePaymentId } from "@x402/extensions/payment-identifier";
import { wrapFetchWithPayment } from "@x402/fetch";
import { withX402Client } from "agents/x402";
import axios from "axios";
import { createWalletClient, http, publicActions } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { base } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withPaymentInterceptor } from "x402-axios";
import { wrapFetchWithPayment as wrapFetchV1 } from "x402-fetch";
import { PRICES } from "../../src/operations/prices.js";
import { runAgentcash, startAgentcashBalanceStandIn } from "../helpers/agentcash-cli.js";
import { useDevnetServer } from "../helpers/devnet-server.js";
import { type LossMode, type LossyProxy, startLossyProxy } from "../helpers/lossy-proxy.js";

/*
 * Bought once, read again free, tried as buyers try it: each x402 client family pays the real server on the devnet
 * through a loopback proxy that loses the paid answer (the answer dropped after the server settled it, or the buyer
 * hanging up as soon as its request is out), then retries as that client naturally does — the caller simply calls
 * again, and the client signs a new payment on the new 402. Every buyer must be charged exactly the price once (read
 * on chain) and get the answer. Over HTTP (v2 and v1 clients, and the agentcash CLI run as a command) and MCP.
 */
const srv = useDevnetServer("p402-lost-", { MAX_EVENT_LOOP_DELAY_MS: "0" });
let proxy: LossyProxy;
const PRICE = BigInt(PRICES.upcoming.amount);

/** Resolves once the server has no purchase in flight and holds at least `n` receipts (read from its ledger). */
async function serverIdle(n: () => number) {
  const ledger = srv.server.app.payments.core.ledger;
  for (let i = 0; i < 1500; i++) {
    const receipts = await ledger.receipts();
    const busy = receipts.some((r) => r.status === "claimed" || r.status === "settling");
    if (!busy && receipts.length >= n()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error("the server never finished the abandoned request");
}

let receiptsBefore = 0;
beforeAll(async () => {
  proxy = await startLossyProxy(srv.url(""), () => serverIdle(() => receiptsBefore + 1));
}, 60_000);
afterAll(async () => {
  await proxy?.close();
});

/** The caller's natural retry: the call failed (the answer never came), so it makes the same call again. */
async function callTwice<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch {
    return await call();
  }
}

interface Row {
  client: string;
  mode: LossMode;
  charged: bigint;
  answered: boolean;
}
const table: Row[] = [];

/** Loses the next paid answer in `mode`, runs the client with its retry, and records what the buyer paid and got. */
async function run(
  client: string,
  mode: LossMode,
  buyer: `0x${string}`,
  call: () => Promise<boolean>,
): Promise<Row> {
  const d = srv.devnet();
  receiptsBefore = (await srv.server.app.payments.core.ledger.receipts()).length;
  const [b0, p0] = await Promise.all([d.balanceOf(buyer), d.balanceOf(d.payTo)]);
  const lostBefore = proxy.lost;
  proxy.loseNext(mode);
  let answered = false;
  try {
    answered = await callTwice(call);
  } catch {
    answered = false;
  }
  const [b1, p1] = await Promise.all([d.balanceOf(buyer), d.balanceOf(d.payTo)]);
  const row = { client, mode, charged: (b0 - b1) / PRICE, answered };
  table.push(row);
  console.log(`${client} | ${mode} | charged ${row.charged}× | answer ${answered ? "yes" : "no"}`);
  expect(proxy.lost - lostBefore, `${client} ${mode}: an answer was lost`).toBe(1);
  expect(p1 - p0, `${client} ${mode}: payTo received`).toBe(b0 - b1);
  return row;
}

const MODES: LossMode[] = ["drop", "hangup"];
/** A distinct request per mode: each run is its own purchase. */
const daysOf = (mode: LossMode) => (mode === "drop" ? 30 : 45);
const isAnswer = (body: unknown) => Array.isArray((body as { unlocks?: unknown }).unlocks);

function v2Client(key: `0x${string}`) {
  const client = new x402Client();
  registerExactEvmScheme(client, { signer: privateKeyToAccount(key) });
  return client;
}

/** A v1 SDK's wallet: a viem wallet client on Base (the devnet's anvil), as their README builds it. */
const v1Wallet = (key: `0x${string}`) =>
  createWalletClient({
    account: privateKeyToAccount(key),
    chain: base,
    transport: http(srv.devnet().rpcUrl),
  }).extend(publicActions);

const buyer = (i: number) => srv.devnet().buyers[i] as { address: `0x${string}`; privateKey: `0x${string}` };

describe.each(MODES)("an answer lost (%s), then the client's own retry: charged once, answered", (mode) => {
  it("@x402/fetch", { timeout: 120_000 }, async () => {
    const b = buyer(0);
    const pay = wrapFetchWithPayment(fetch, v2Client(b.privateKey));
    const row = await run("@x402/fetch", mode, b.address, async () => {
      const res = await pay(`${proxy.url}/v1/unlocks/upcoming?days=${daysOf(mode)}`);
      return res.status === 200 && isAnswer(await res.json());
    });
    expect(row).toMatchObject({ charged: 1n, answered: true });
  });

  it("@x402/axios", { timeout: 120_000 }, async () => {
    const b = buyer(1);
    const api = wrapAxiosWithPaymentFromConfig(axios.create({ baseURL: proxy.url }), {
      schemes: [{ network: "eip155:8453", client: new ExactEvmScheme(privateKeyToAccount(b.privateKey)) }],
    });
    const row = await run("@x402/axios", mode, b.address, async () => {
      const res = await api.get("/v1/unlocks/upcoming", { params: { days: daysOf(mode) } });
      return res.status === 200 && isAnswer(res.data);
    });
    expect(row).toMatchObject({ charged: 1n, answered: true });
  });

  it("x402-fetch (v1, X-PAYMENT)", { timeout: 120_000 }, async () => {
    const b = buyer(2);
    const pay = wrapFetchV1(fetch, v1Wallet(b.privateKey) as never);
    const row = await run("x402-fetch (v1)", mode, b.address, async () => {
      const res = await pay(`${proxy.url}/v1/unlocks/upcoming?days=${daysOf(mode)}`);
      return res.status === 200 && isAnswer(await res.json());
    });
    expect(row).toMatchObject({ charged: 1n, answered: true });
  });

  it("x402-axios (v1, X-PAYMENT)", { timeout: 120_000 }, async () => {
    const b = buyer(3);
    const api = withPaymentInterceptor(axios.create({ baseURL: proxy.url }), v1Wallet(b.privateKey) as never);
    const row = await run("x402-axios (v1)", mode, b.address, async () => {
      const res = await api.get("/v1/unlocks/upcoming", { params: { days: daysOf(mode) } });
      return res.status === 200 && isAnswer(res.data);
    });
    expect(row).toMatchObject({ charged: 1n, answered: true });
  });

  it("@faremeter/fetch (EVM exact, EIP-3009)", { timeout: 120_000 }, async () => {
    const b = buyer(7);
    // As its README builds it: a local wallet on Base, the EVM exact handler, and fetch wrapped with it. Its own retry
    // covers only a 402 after paying; a lost answer is an error, so the caller calls again.
    const wallet = await createLocalWallet(base, b.privateKey);
    const pay = wrapFaremeter(fetch, { handlers: [faremeterExact.createPaymentHandler(wallet)] });
    const row = await run("@faremeter/fetch", mode, b.address, async () => {
      const res = await pay(`${proxy.url}/v1/unlocks/upcoming?days=${daysOf(mode)}`);
      return res.status === 200 && isAnswer(await res.json());
    });
    expect(row).toMatchObject({ charged: 1n, answered: true });
  });

  it("agentcash CLI (`agentcash fetch`, run again after the loss)", { timeout: 180_000 }, async () => {
    const b = buyer(8);
    const d = srv.devnet();
    // Before it pays, the CLI asks its hosted service for the wallet's balance; its own --dev flag sends that to
    // localhost:3000, moved to a loopback stand-in that answers with the wallet's balance on the devnet.
    const balances = await startAgentcashBalanceStandIn((address) => d.balanceOf(address));
    const home = mkdtempSync(join(tmpdir(), "p402-agentcash-"));
    const runs: string[] = [];
    try {
      const row = await run("agentcash CLI", mode, b.address, async () => {
        // A user's command: it pays on the 402 by itself; when it fails (the answer never came), the user runs it again.
        const r = await runAgentcash(
          ["fetch", `${proxy.url}/v1/unlocks/upcoming?days=${daysOf(mode)}`, "--dev", "--format", "json"],
          { HOME: home, X402_PRIVATE_KEY: b.privateKey, balanceOrigin: balances.origin },
        );
        runs.push(`exit ${r.code}: ${r.stdout.slice(0, 400)} ${r.stderr.slice(0, 400)}`);
        if (r.code !== 0) throw new Error(`agentcash exited ${r.code}`);
        const out = JSON.parse(r.stdout) as { success?: boolean; data?: unknown };
        return out.success === true && isAnswer(out.data);
      });
      expect(row, runs.join("\n")).toMatchObject({ charged: 1n, answered: true });
      expect(runs, "the first run lost its answer, the second got it").toHaveLength(2);
      // The CLI checked the balance before paying, and asked its hosted service nothing else.
      expect(balances.requests.length).toBeGreaterThan(0);
      for (const r of balances.requests) {
        const body = r.body as { address?: string; network?: string };
        expect({ path: r.path, address: body.address?.toLowerCase(), network: body.network }).toEqual({
          path: "/api/balance",
          address: b.address.toLowerCase(),
          network: "base",
        });
      }
    } finally {
      await balances.close();
      rmSync(home, { recursive: true, force: true });
    }
  });

  it("@x402/fetch with the official payment-identifier hook (one id, a new payment per retry)", {
    timeout: 120_000,
  }, async () => {
    const b = buyer(4);
    const client = v2Client(b.privateKey);
    const paymentId = generatePaymentId();
    client.onBeforePaymentCreation(async ({ paymentRequired }) => {
      if (paymentRequired.extensions)
        appendPaymentIdentifierToExtensions(paymentRequired.extensions, paymentId);
    });
    const pay = wrapFetchWithPayment(fetch, client);
    const row = await run("@x402/fetch + payment-identifier", mode, b.address, async () => {
      const res = await pay(`${proxy.url}/v1/unlocks/upcoming?days=${daysOf(mode)}`);
      return res.status === 200 && isAnswer(await res.json());
    });
    expect(row).toMatchObject({ charged: 1n, answered: true });
  });

  it("MCP: the official SDK with the README's paid-tool helper", { timeout: 120_000 }, async () => {
    const b = buyer(5);
    const x402 = v2Client(b.privateKey);
    const mcp = new Client({ name: "pressure402-lost-answers", version: "1.0.0" });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${proxy.url}/mcp`)));
    try {
      const row = await run("MCP SDK + callPaidTool", mode, b.address, async () => {
        const args = { days: daysOf(mode) };
        const first = await mcp.callTool({ name: "unlocks_upcoming", arguments: args });
        const required = first.structuredContent as PaymentRequired | undefined;
        if (!first.isError || required?.x402Version !== 2) return false;
        const payment = await x402.createPaymentPayload(required);
        const paid = await mcp.callTool({
          name: "unlocks_upcoming",
          arguments: args,
          _meta: { "x402/payment": payment },
        });
        return !paid.isError && isAnswer(paid.structuredContent);
      });
      expect(row).toMatchObject({ charged: 1n, answered: true });
    } finally {
      await mcp.close();
    }
  });

  it("MCP: Cloudflare agents' withX402Client", { timeout: 120_000 }, async () => {
    const b = buyer(6);
    const cf = new Client({ name: "pressure402-lost-answers-agents", version: "1.0.0" });
    await cf.connect(new StreamableHTTPClientTransport(new URL(`${proxy.url}/mcp`)));
    const paid = withX402Client(cf, {
      account: privateKeyToAccount(b.privateKey),
      network: "eip155:8453",
      maxPaymentValue: 1_000_000n,
    });
    try {
      const row = await run("agents withX402Client", mode, b.address, async () => {
        const r = await paid.callTool(null, { name: "unlocks_upcoming", arguments: { days: daysOf(mode) } });
        return !r.isError && isAnswer(r.structuredContent);
      });
      expect(row).toMatchObject({ charged: 1n, answered: true });
    } finally {
      await cf.close();
    }
  });
});

describe("the table", () => {
  it("every client, both losses: charged once, answered", () => {
    console.log(
      [
        "client | loss | charged | answer",
        ...table.map((r) => `${r.client} | ${r.mode} | ${r.charged}× | ${r.answered ? "yes" : "no"}`),
      ].join("\n"),
    );
    expect(table).toHaveLength(18);
  });
});
