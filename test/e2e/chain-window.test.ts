import type { IncomingMessage, ServerResponse } from "node:http";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import {
  createPublicClient,
  createWalletClient,
  custom,
  type EIP1193Parameters,
  http,
  type PublicClient,
  parseAbi,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buyerClient } from "../../scripts/buyer.js";
import { devnetChain } from "../../src/devnet/deploy.js";
import { type Devnet, startDevnet, USDC_EIP712_NAME, USDC_EIP712_VERSION } from "../../src/devnet/index.js";
import { chainReaderFor, findAuthorizationUse } from "../../src/payments/recovery/chain-reader.js";
import { type HttpApp, startHttpApp, UPCOMING_PATH } from "../helpers/fault-facilitator.js";
import { type LoopbackProxy, startLoopbackProxy } from "../helpers/loopback-proxy.js";
import { b64 } from "../helpers/proofs.js";

/*
 * A buyer cancels its EIP-3009 authorization between our verify and our settle: the chain then says "used" with no
 * AuthorizationUsed log of it (a cancellation logs AuthorizationCanceled). The lookup that follows must read only the
 * authorization's validity window, in pages, never the chain from block 0 — on a chain some 20,000 blocks deep.
 *
 * anvil mines about 50 blocks/s and slower as the chain grows, so 20,000 real blocks take minutes: the chain starts at
 * genesis number GENESIS (its timestamp far enough back), and the last 500 blocks are mined 2 s apart up to now, as on
 * Base. A read below the window shows up as a block number below the head's last 500, whatever exists there.
 */
const GENESIS = 20_000n;
const RECENT_BLOCKS = 500;

interface RpcCall {
  method: string;
  params: unknown;
}

let devnet: Devnet;
let proxy: LoopbackProxy;
let http_: HttpApp | undefined;
let holdSettle: Promise<void> = Promise.resolve();
let settleArrived: () => void = () => {};
const calls: RpcCall[] = [];

/** A viem client over anvil that records every JSON-RPC call it makes. */
function countingClient(rpcUrl: string): PublicClient {
  const base = http(rpcUrl)({ chain: devnetChain(rpcUrl) });
  return createPublicClient({
    cacheTime: 0,
    transport: custom({
      request: (args: EIP1193Parameters) => {
        calls.push({ method: args.method, params: args.params });
        return base.request(args);
      },
    }),
  }) as PublicClient;
}

async function rpc(method: string, params: unknown[]) {
  const res = await fetch(devnet.rpcUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  return ((await res.json()) as { result: unknown }).result;
}

async function forward(req: IncomingMessage, res: ServerResponse) {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  if (req.url === "/settle") {
    settleArrived();
    await holdSettle;
  }
  const upstream = await fetch(`${devnet.facilitatorUrl}${req.url}`, {
    method: req.method,
    headers: { "content-type": "application/json" },
    ...(req.method === "POST" ? { body: Buffer.concat(chunks) } : {}),
  });
  res.writeHead(upstream.status, { "content-type": "application/json" }).end(await upstream.text());
}

beforeAll(async () => {
  const now = Math.floor(Date.now() / 1000);
  devnet = await startDevnet({
    anvilArgs: ["--number", String(GENESIS), "--timestamp", String(now - 40_000)],
  });
  await rpc("evm_setNextBlockTimestamp", [now - 2 * RECENT_BLOCKS]);
  await rpc("anvil_mine", [`0x${RECENT_BLOCKS.toString(16)}`, "0x2"]);
  proxy = await startLoopbackProxy(forward);
}, 300_000);

afterAll(async () => {
  await http_?.close();
  await proxy?.close();
  await devnet?.stop();
});

const CANCEL = parseAbi(["function cancelAuthorization(address authorizer, bytes32 nonce, bytes signature)"]);

describe("a cancel between verify and settle, 20,000 blocks deep", () => {
  it("is looked up within the authorization's window, in a handful of calls, never from block 0", async () => {
    const buyer = devnet.buyers[0]!;
    http_ = await startHttpApp(
      proxy.url,
      { FACILITATOR_TIMEOUT_MS: "30000" },
      { chain: chainReaderFor(countingClient(devnet.rpcUrl)) },
    );
    const app = http_;
    const unpaid = await fetch(`${app.url}${UPCOMING_PATH}`);
    const required = decodePaymentRequiredHeader(unpaid.headers.get("payment-required") as string);
    const payload = await buyerClient(buyer.privateKey, 1_000_000n).createPaymentPayload(required);
    const auth = (payload.payload as { authorization: { from: `0x${string}`; nonce: `0x${string}` } })
      .authorization;

    let release: () => void = () => {};
    holdSettle = new Promise((r) => (release = r));
    const arrived = new Promise<void>((r) => (settleArrived = r));
    const paid = fetch(`${app.url}${UPCOMING_PATH}`, { headers: { "payment-signature": b64(payload) } });
    await arrived; // verified; the settlement waits here

    // The buyer cancels its authorization on chain (gas paid by the buyer).
    const account = privateKeyToAccount(buyer.privateKey);
    const signature = await account.signTypedData({
      domain: {
        name: USDC_EIP712_NAME,
        version: USDC_EIP712_VERSION,
        chainId: 8453,
        verifyingContract: devnet.usdc,
      },
      types: {
        CancelAuthorization: [
          { name: "authorizer", type: "address" },
          { name: "nonce", type: "bytes32" },
        ],
      },
      primaryType: "CancelAuthorization",
      message: { authorizer: auth.from, nonce: auth.nonce },
    });
    const wallet = createWalletClient({
      account,
      chain: devnetChain(devnet.rpcUrl),
      transport: http(devnet.rpcUrl),
    });
    const cancelTx = await wallet.writeContract({
      address: devnet.usdc,
      abi: CANCEL,
      functionName: "cancelAuthorization",
      args: [auth.from, auth.nonce, signature],
    });
    const publicClient = createPublicClient({ transport: http(devnet.rpcUrl) });
    await publicClient.waitForTransactionReceipt({ hash: cancelTx, pollingInterval: 50 });
    const head = await publicClient.getBlockNumber();
    expect(head).toBeGreaterThan(GENESIS + BigInt(RECENT_BLOCKS));

    calls.length = 0;
    release();
    const res = await paid;
    // Nothing was charged (the authorization is cancelled), and the buyer is told so: a fresh 402.
    expect(res.status).toBe(402);
    expect(await devnet.balanceOf(app.config.payTo as `0x${string}`)).toBe(0n);
    const [receipt] = await app.ledger.receipts();
    expect(receipt?.status).toBe("failed");

    const windowStart = head - BigInt(RECENT_BLOCKS);
    const blockOf = (v: unknown) => (typeof v === "string" && v.startsWith("0x") ? BigInt(v) : undefined);
    const logReads = calls.filter((c) => c.method === "eth_getLogs");
    const headerReads = calls.filter((c) => c.method === "eth_getBlockByNumber");
    const lowest = [
      ...logReads.map((c) => blockOf((c.params as [{ fromBlock?: string }])[0].fromBlock)),
      ...headerReads.map((c) => blockOf((c.params as [string])[0])),
    ].filter((b): b is bigint => b !== undefined);
    console.info(
      `chain lookup at height ${head}: ${calls.length} RPC calls (${logReads.length} eth_getLogs, ${headerReads.length} eth_getBlockByNumber), lowest block read ${lowest.length ? lowest.reduce((a, b) => (a < b ? a : b)) : "none"}`,
    );
    expect(logReads.length).toBeGreaterThanOrEqual(1);
    for (const b of lowest) expect(b).toBeGreaterThanOrEqual(windowStart);
    expect(calls.length).toBeLessThanOrEqual(10);
  }, 120_000);

  it("findAuthorizationUse reads only the window, in pages of chunkBlocks, and finds a settlement in it", async () => {
    const buyer = devnet.buyers[1]!;
    const app = http_ as HttpApp;
    const unpaid = await fetch(`${app.url}${UPCOMING_PATH}`);
    const required = decodePaymentRequiredHeader(unpaid.headers.get("payment-required") as string);
    const payload = await buyerClient(buyer.privateKey, 1_000_000n).createPaymentPayload(required);
    const auth = (payload.payload as { authorization: Record<string, string> }).authorization;
    const since = new Date();
    const res = await fetch(`${app.url}${UPCOMING_PATH}`, { headers: { "payment-signature": b64(payload) } });
    expect(res.status).toBe(200);
    calls.length = 0;
    const client = countingClient(devnet.rpcUrl);
    const q = {
      asset: devnet.usdc,
      payer: auth.from as string,
      nonce: auth.nonce as string,
      payTo: app.config.payTo as string,
      amount: "20000",
      since,
      validAfter: auth.validAfter,
      validBefore: auth.validBefore,
    };
    const use = await findAuthorizationUse(client, q, { chunkBlocks: 50n });
    expect(use).toMatchObject({ paysUs: true });
    const pages = calls.filter((c) => c.method === "eth_getLogs");
    // The window is about 300 s of 2 s blocks plus the clock margin: a few pages of 50 blocks, not 400 of them.
    expect(pages.length).toBeGreaterThanOrEqual(1);
    expect(pages.length).toBeLessThanOrEqual(12);
    // Not paid to someone else: the same use is not ours.
    expect(await findAuthorizationUse(client, { ...q, payTo: buyer.address })).toMatchObject({
      paysUs: false,
    });
  }, 120_000);
});
