import { mkdtempSync, rmSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from "@x402/core/http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buyerClient } from "../../scripts/buyer.js";
import { parseConfig } from "../../src/config.js";
import { type Devnet, startDevnet } from "../../src/devnet/index.js";
import { openLedger } from "../../src/ledger/embedded.js";
import { createChainReader } from "../../src/payments/recovery/chain-reader.js";
import { start } from "../../src/server.js";
import { type LoopbackProxy, startLoopbackProxy } from "../helpers/loopback-proxy.js";
import { b64 } from "../helpers/proofs.js";

/*
 * A settlement whose answer is lost: the facilitator really settles on the devnet, but its reply never reaches the
 * server (a proxy swallows it), so the server times out and withholds the body. The buyer has paid. A retry of the
 * same request with the same proof must deliver the response, recovered from the chain, and bill nothing more.
 */
let devnet: Devnet;
let proxy: LoopbackProxy | undefined;
let proxyUrl: string;
let loseSettleReplies = true;
const settledTx: string[] = [];
let server: Awaited<ReturnType<typeof start>>;
let dir: string;
let ledgerPath: string;

async function forward(req: IncomingMessage, res: ServerResponse) {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const upstream = await fetch(`${devnet.facilitatorUrl}${req.url}`, {
    method: req.method,
    headers: { "content-type": "application/json" },
    ...(req.method === "POST" ? { body: Buffer.concat(chunks) } : {}),
  });
  const text = await upstream.text();
  if (req.url === "/settle") {
    const tx = (JSON.parse(text) as { transaction?: string }).transaction;
    if (tx) settledTx.push(tx);
    if (loseSettleReplies) return; // the settlement happened; its answer is lost
  }
  res.writeHead(upstream.status, { "content-type": "application/json" }).end(text);
}

beforeAll(async () => {
  devnet = await startDevnet();
  proxy = await startLoopbackProxy(forward);
  proxyUrl = proxy.url;
  dir = mkdtempSync(join(tmpdir(), "p402-reconcile-"));
  ledgerPath = join(dir, "ledger.sqlite");
  server = await start(
    parseConfig({
      NODE_ENV: "test",
      PORT: "0",
      LOG_LEVEL: "silent",
      LEDGER_PATH: ledgerPath,
      REFRESH_INTERVAL_SECONDS: "0", // loopback only: the shipped data, never refreshed
      FACILITATOR_URL: proxyUrl,
      FACILITATOR_TIMEOUT_MS: "3000",
      PAY_TO: devnet.payTo,
      CHAIN_RPC_URL: devnet.rpcUrl,
      MAX_EVENT_LOOP_DELAY_MS: "0", // no load shedding: this test is about lost settlements, not overload
    }),
  );
}, 300_000); // the devnet compiles and boots slowly on a loaded machine

afterAll(async () => {
  await server?.stop();
  await proxy?.close();
  await devnet?.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function proofFor(path: string, key: `0x${string}`) {
  const res = await fetch(`${server.address}${path}`);
  expect(res.status).toBe(402);
  const required = decodePaymentRequiredHeader(res.headers.get("payment-required") as string);
  return b64(await buyerClient(key, 1_000_000n).createPaymentPayload(required));
}

describe("recovering a settlement whose outcome was lost", () => {
  it("withholds the body, then delivers it on retry from the chain, billing exactly once", async () => {
    const buyer = devnet.buyers[0]!;
    const path = "/v1/unlocks/upcoming?days=30";
    const proof = await proofFor(path, buyer.privateKey);
    const before = await devnet.balanceOf(devnet.payTo);

    const lost = await fetch(`${server.address}${path}`, { headers: { "PAYMENT-SIGNATURE": proof } });
    expect(lost.status).toBe(409); // unknown outcome: do not pay again
    // The proof alone is public once on chain: only the retry key this answer issued recovers the payment.
    const secret = {
      "PAYMENT-SIGNATURE": proof,
      "Idempotency-Key": lost.headers.get("idempotency-key") as string,
    };
    expect(await lost.text()).not.toContain('"unlocks"');
    expect(settledTx).toHaveLength(1);
    expect((await devnet.balanceOf(devnet.payTo)) - before).toBe(20000n); // the buyer has paid

    // The same proof for another request does not buy that one: the chain shows it paid for the first request.
    const other = await fetch(`${server.address}/v1/unlocks/upcoming?days=7`, {
      headers: { "PAYMENT-SIGNATURE": proof },
    });
    expect(other.status).toBe(402);
    expect(((await other.json()) as { error: string }).error).toMatch(/payment_already_used/);

    loseSettleReplies = false;
    const retry = await fetch(`${server.address}${path}`, { headers: secret });
    expect(retry.status).toBe(200);
    expect(((await retry.json()) as { days: number }).days).toBe(30);
    const settlement = decodePaymentResponseHeader(retry.headers.get("payment-response") as string);
    expect(settlement).toMatchObject({ success: true, transaction: settledTx[0] });
    expect((await devnet.balanceOf(devnet.payTo)) - before).toBe(20000n); // and only once
    expect(settledTx).toHaveLength(1); // no second settlement was attempted

    // One authorization, one response, delivered at least once: a further retry replays it.
    const delivered = await fetch(`${server.address}${path}`, { headers: secret });
    expect(delivered.status).toBe(200);
    expect(delivered.headers.get("idempotent-replayed")).toBe("true");
    expect(delivered.headers.get("payment-response")).toBe(retry.headers.get("payment-response"));
    expect(settledTx).toHaveLength(1);

    const ledger = openLedger(ledgerPath);
    const receipts = await ledger.receipts();
    await ledger.close();
    expect(receipts).toHaveLength(1);
    expect(receipts[0]).toMatchObject({ status: "settled", transaction: settledTx[0], amount: "20000" });
    expect(receipts[0]?.response?.statusCode).toBe(200);
  });

  it("the chain reader only counts a transfer of the full amount to our payTo, found from the receipt's block", async () => {
    loseSettleReplies = false;
    const chain = createChainReader(devnet.rpcUrl, { chunkBlocks: 2n }); // tiny chunks: the walk covers every block
    const buyer = devnet.buyers[1]!;
    const proof = JSON.parse(
      Buffer.from(await proofFor("/v1/unlocks/upcoming?days=3", buyer.privateKey), "base64").toString(),
    );
    const auth = proof.payload.authorization;
    const since = new Date(Date.now() - 3_600_000);
    const q = {
      asset: proof.accepted.asset,
      payer: auth.from,
      nonce: auth.nonce,
      payTo: devnet.payTo,
      amount: "20000",
      since,
      now: new Date(),
    };
    expect(await chain.lookup(q)).toEqual({ kind: "unused", expired: false }); // not used yet
    expect(await chain.lookup({ ...q, validBefore: "1", now: new Date() })).toEqual({
      kind: "unused",
      expired: true,
    });
    const paid = await fetch(`${server.address}/v1/unlocks/upcoming?days=3`, {
      headers: { "PAYMENT-SIGNATURE": b64(proof) },
    });
    expect(paid.status).toBe(200);
    const tx = decodePaymentResponseHeader(paid.headers.get("payment-response") as string).transaction;
    expect(await chain.lookup(q)).toEqual({ kind: "settled", transaction: tx });
    // A receipt time far in the past (no fixed lookback) and the stored transaction hash both find it.
    expect(await chain.lookup({ ...q, since: new Date(0) })).toEqual({ kind: "settled", transaction: tx });
    expect(await chain.lookup({ ...q, transaction: tx })).toEqual({ kind: "settled", transaction: tx });
    expect(await chain.lookup({ ...q, amount: "20001" })).toEqual({ kind: "used_elsewhere" });
    expect(await chain.lookup({ ...q, payTo: buyer.address })).toEqual({ kind: "used_elsewhere" });
  });
});
