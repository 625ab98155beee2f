import { createHash, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import type { PaymentRequirements } from "@x402/core/types";
import {
  type Abi,
  createClient,
  createWalletClient,
  custom,
  type EIP1193Parameters,
  type Hex,
  http,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { waitForTransactionReceipt } from "viem/actions";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { payingFetch } from "../../scripts/buyer.js";
import { devnetKey } from "../../src/devnet/constants.js";
import { devnetChain, devnetPublicClient } from "../../src/devnet/deploy.js";
import { type Devnet, startDevnet, USDC_EIP712_NAME, USDC_EIP712_VERSION } from "../../src/devnet/index.js";
import { smartWalletCheckOver } from "../../src/payments/facilitator/smart-wallet.js";
import { type HttpApp, startHttpApp, UPCOMING_PATH } from "../helpers/fault-facilitator.js";
import { type LoopbackProxy, startLoopbackProxy } from "../helpers/loopback-proxy.js";
import { b64 } from "../helpers/proofs.js";

/*
 * The slow-isValidSignature attack on a real chain: an attacker deploys a contract whose isValidSignature approves
 * anything after ~15 M gas of hashing, then sends proofs whose `from` is that contract (the signature is junk; only
 * the contract can "say" it is valid) from one IP at the default rate limit, while the devnet's buyers pay with
 * @x402/fetch. The real @x402/evm facilitator sits behind a counting proxy: every /verify it gets is counted by payer.
 * The smart-wallet check runs the contract with a gas cap before any facilitator call, refuses it, and backs the
 * contract off — so the attacker causes no facilitator verify at all.
 */
const ARTIFACT = new URL("../fixtures/chain/SlowWallet.json", import.meta.url);
const SOURCE = new URL("../fixtures/chain/SlowWallet.sol", import.meta.url);
const SLOW_ROUNDS = 100_000n; // ~15 M gas per isValidSignature: far over the 1 M cap, under anvil's 30 M call gas
const ATTACK_REQUESTS = 288; // the default rate limit (300/min) less a margin, from one IP
const ATTACK_WIDTH = 8;
const HONEST_ROUNDS = 2; // each of the 9 devnet buyers pays twice
const MAX = 1_000_000n;

let devnet: Devnet;
let proxy: LoopbackProxy;
let app: HttpApp | undefined;
const verifiesBy = new Map<string, number>();
const rpcCalls: { method: string }[] = [];

async function forward(req: IncomingMessage, res: ServerResponse) {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const body = Buffer.concat(chunks);
  if (req.url === "/verify") {
    const from = (
      JSON.parse(body.toString()) as { paymentPayload?: { payload?: { authorization?: { from?: string } } } }
    ).paymentPayload?.payload?.authorization?.from?.toLowerCase();
    verifiesBy.set(from ?? "?", (verifiesBy.get(from ?? "?") ?? 0) + 1);
  }
  const upstream = await fetch(`${devnet.facilitatorUrl}${req.url}`, {
    method: req.method,
    headers: { "content-type": "application/json" },
    ...(req.method === "POST" ? { body } : {}),
  });
  res.writeHead(upstream.status, { "content-type": "application/json" }).end(await upstream.text());
}

async function deploySlowWallet(rounds: bigint): Promise<Hex> {
  const artifact = JSON.parse(readFileSync(ARTIFACT, "utf8")) as {
    sourceSha256: string;
    abi: Abi;
    bytecode: Hex;
  };
  // The committed artifact must be the committed source's (recompile: node test/fixtures/chain/compile.mjs).
  expect(artifact.sourceSha256).toBe(createHash("sha256").update(readFileSync(SOURCE)).digest("hex"));
  // Deployed once, gas paid by anvil account 9 (a buyer: buyers only sign, so its nonces are free; account 0 is the
  // facilitator's, which must not race it).
  const wallet = createWalletClient({
    account: privateKeyToAccount(devnetKey(9).privateKey),
    chain: devnetChain(devnet.rpcUrl),
    transport: http(devnet.rpcUrl),
  });
  const hash = await wallet.deployContract({
    abi: artifact.abi,
    bytecode: artifact.bytecode,
    args: [rounds],
  });
  const receipt = await waitForTransactionReceipt(devnetPublicClient(devnet.rpcUrl), {
    hash,
    pollingInterval: 50,
  });
  if (!receipt.contractAddress) throw new Error("SlowWallet was not deployed");
  return receipt.contractAddress;
}

/** A check over anvil whose JSON-RPC calls are recorded (the attacker's cost to us). */
function countingCheck() {
  const base = http(devnet.rpcUrl, { retryCount: 0 })({ chain: devnetChain(devnet.rpcUrl) });
  const client = createClient({
    transport: custom(
      {
        request: (args: EIP1193Parameters) => {
          rpcCalls.push({ method: args.method });
          return base.request(args);
        },
      },
      { retryCount: 0 },
    ),
  });
  return smartWalletCheckOver(client, { timeoutMs: 750, gasCap: 1_000_000n });
}

/** A shape-valid proof from `from` with a junk 65-byte signature: only the contract at `from` could vouch for it. */
function contractProof(accepted: PaymentRequirements, from: Hex, payTo: string): string {
  const now = Math.floor(Date.now() / 1000);
  return b64({
    x402Version: 2,
    resource: { url: `http://127.0.0.1${UPCOMING_PATH}`, description: "", mimeType: "application/json" },
    accepted,
    payload: {
      authorization: {
        from,
        to: payTo,
        value: accepted.amount,
        validAfter: String(now - 600),
        validBefore: String(now + 300),
        nonce: `0x${randomBytes(32).toString("hex")}`,
      },
      signature: `0x${randomBytes(65).toString("hex")}`,
    },
  });
}

beforeAll(async () => {
  devnet = await startDevnet();
  proxy = await startLoopbackProxy(forward);
}, 300_000);

afterAll(async () => {
  await app?.close();
  await proxy?.close();
  await devnet?.stop();
});

describe("the smart-wallet check on the devnet", () => {
  it("accepts a cheap ERC-1271 wallet and refuses one that needs more than the gas cap", async () => {
    const check = countingCheck();
    const domain = {
      name: USDC_EIP712_NAME,
      version: USDC_EIP712_VERSION,
      chainId: 8453,
      verifyingContract: devnet.usdc,
    };
    const auth = (from: Hex) => ({
      authorization: {
        from,
        to: devnet.payTo,
        value: "20000",
        validAfter: "0",
        validBefore: "9999999999",
        nonce: `0x${"11".repeat(32)}` as Hex,
      },
      signature: `0x${"ab".repeat(65)}` as Hex,
    });
    const cheap = await deploySlowWallet(1n);
    const slow = await deploySlowWallet(SLOW_ROUNDS);
    expect(await check(auth(cheap), domain)).toEqual({ kind: "valid" });
    // Out of gas (a failure, which backs the contract off) or, on a busy machine, out of budget: never a clean "no".
    expect(await check(auth(slow), domain)).toMatchObject({
      kind: "refused",
      why: expect.stringMatching(/^(failed|out_of_budget)$/),
    });
    expect(await check(auth(devnet.buyers[0]!.address), domain)).toEqual({ kind: "not_a_contract" });
  }, 60_000);

  it("the slow-isValidSignature attack at the default rate limit: honest buyers served, circuit closed, 0 attacker verifies", async () => {
    const attacker = await deploySlowWallet(SLOW_ROUNDS);
    rpcCalls.length = 0;
    app = await startHttpApp(
      proxy.url,
      {
        TRUST_PROXY: "true",
        RATE_LIMIT_MAX: "300", // the defaults
        RATE_LIMIT_WINDOW_MS: "60000",
        CIRCUIT_FAILURE_THRESHOLD: "5",
        FACILITATOR_TIMEOUT_MS: "2000",
      },
      { smartWallet: countingCheck() },
    );
    const running = app;
    const unpaid = await fetch(`${running.url}${UPCOMING_PATH}`, {
      headers: { "x-forwarded-for": "198.51.100.1" },
    });
    const required = decodePaymentRequiredHeader(unpaid.headers.get("payment-required") as string);
    const accepted = required.accepts[0] as PaymentRequirements;

    const attackerStatuses: Record<number, number> = {};
    let sent = 0;
    /** `count` attacker requests, ATTACK_WIDTH at a time, from the attacker's one IP. */
    const attack = (count: number) => {
      const until = Math.min(ATTACK_REQUESTS, sent + count);
      return Promise.all(
        Array.from({ length: ATTACK_WIDTH }, async () => {
          while (sent < until) {
            sent += 1;
            const res = await fetch(`${running.url}${UPCOMING_PATH}`, {
              headers: {
                "payment-signature": contractProof(accepted, attacker, accepted.payTo),
                "x-forwarded-for": "198.51.100.66",
              },
            });
            await res.arrayBuffer();
            attackerStatuses[res.status] = (attackerStatuses[res.status] ?? 0) + 1;
          }
        }),
      );
    };
    // Each honest payment runs beside its share of the attack, so the two interleave whatever the machine's speed.
    const payments = HONEST_ROUNDS * devnet.buyers.length;
    const share = Math.ceil(ATTACK_REQUESTS / payments);
    const honest: number[] = [];
    for (let round = 0; round < HONEST_ROUNDS; round++)
      for (const [i, buyer] of devnet.buyers.entries()) {
        const [res] = await Promise.all([
          payingFetch(buyer.privateKey, MAX)(`${running.url}${UPCOMING_PATH}`, {
            headers: { "x-forwarded-for": `203.0.113.${round * 20 + i + 1}` },
          }),
          attack(share),
        ]);
        await res.arrayBuffer();
        honest.push(res.status);
      }
    await attack(ATTACK_REQUESTS);

    const attackerVerifies = verifiesBy.get(attacker.toLowerCase()) ?? 0;
    const honestVerifies = devnet.buyers.reduce(
      (n, b) => n + (verifiesBy.get(b.address.toLowerCase()) ?? 0),
      0,
    );
    const served = honest.filter((s) => s === 200).length;
    const chainCalls = rpcCalls.filter((c) => c.method === "eth_call").length;
    console.info(
      `honest served ${served}/${honest.length} (others ${JSON.stringify(honest.filter((s) => s !== 200))}); circuit ${running.gateway.position()}; attacker ${sent} requests ${JSON.stringify(attackerStatuses)}, ${attackerVerifies} facilitator verifies, ${chainCalls} capped eth_calls (${rpcCalls.length} RPC calls); honest verifies ${honestVerifies}`,
    );
    expect(sent).toBe(ATTACK_REQUESTS);
    expect(served / honest.length).toBeGreaterThanOrEqual(0.95);
    expect(running.gateway.position()).toBe("closed");
    expect(running.gateway.circuit.openedAt).toBeNull();
    expect(attackerVerifies).toBe(0);
    expect(honestVerifies).toBeGreaterThanOrEqual(served);
    // Refused as an invalid proof (402) or held off by its contract's back-off (429): never served, never a 5xx.
    expect(attackerStatuses[402] ?? 0).toBeGreaterThanOrEqual(1);
    expect((attackerStatuses[402] ?? 0) + (attackerStatuses[429] ?? 0)).toBe(ATTACK_REQUESTS);
    // The back-off bounds the chain work too: at most one capped eth_call per back-off period, not one per request.
    expect(chainCalls).toBeLessThan(ATTACK_REQUESTS / 10);
    expect(await devnet.balanceOf(running.config.payTo as Hex)).toBe(
      BigInt(served) * BigInt(accepted.amount),
    );
  }, 180_000);
});
