import { createHash, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import type { PaymentRequirements } from "@x402/core/types";
import { type Abi, createWalletClient, erc20Abi, type Hex, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { waitForTransactionReceipt } from "viem/actions";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devnetKey } from "../../src/devnet/constants.js";
import { devnetChain, devnetPublicClient } from "../../src/devnet/deploy.js";
import { type Devnet, startDevnet } from "../../src/devnet/index.js";
import {
  authorizationDigest,
  createSmartWalletCheck,
  DEFAULT_SMART_WALLET_CHECK,
} from "../../src/payments/facilitator/smart-wallet.js";
import type { ExactPayload } from "../../src/payments/terms/proof.js";
import { authorizationDomainOf } from "../../src/payments/terms/signature.js";
import {
  type FaultFacilitator,
  type HttpApp,
  signedUpcomingProof,
  startFaultFacilitator,
  startHttpApp,
  UPCOMING_PATH,
} from "../helpers/fault-facilitator.js";
import { b64 } from "../helpers/proofs.js";

/*
 * The two smart-wallet attacks on a real chain, at the default settings (rate limit, circuit, facilitator timeout,
 * smart-wallet check): junk naming an honest wallet that reverts on it, and a gas-aware wallet that is valid under the
 * pre-check's gas cap but would burn the facilitator's. Time is a clock the test moves, not the wall clock: "4 junk a
 * second" is 4 junk proofs before each honest call, each moving the gateway's clock 250 ms.
 */
const DEFAULTS = {
  TRUST_PROXY: "true", // clients told apart by X-Forwarded-For
  RATE_LIMIT_MAX: "300",
  RATE_LIMIT_WINDOW_MS: "60000",
  CIRCUIT_FAILURE_THRESHOLD: "5",
  CIRCUIT_COOLDOWN_MS: "10000",
  FACILITATOR_TIMEOUT_MS: "10000",
};
const ATTACKER_IP = "198.51.100.66";

let devnet: Devnet;
const closers: (() => Promise<void>)[] = [];

function artifact(name: string): { abi: Abi; bytecode: Hex } {
  const json = JSON.parse(
    readFileSync(new URL(`../fixtures/chain/${name}.json`, import.meta.url), "utf8"),
  ) as {
    sourceSha256: string;
    abi: Abi;
    bytecode: Hex;
  };
  const source = readFileSync(new URL(`../fixtures/chain/${name}.sol`, import.meta.url));
  // The committed artifact must be the committed source's (recompile: node test/fixtures/chain/compile.mjs).
  expect(json.sourceSha256).toBe(createHash("sha256").update(source).digest("hex"));
  return json;
}

/** Deploys a fixture contract, gas paid by anvil account 9 (a buyer that only signs, so its nonces are free). */
async function deploy(name: string, args: readonly unknown[]): Promise<Hex> {
  const { abi, bytecode } = artifact(name);
  const wallet = createWalletClient({
    account: privateKeyToAccount(devnetKey(9).privateKey),
    chain: devnetChain(devnet.rpcUrl),
    transport: http(devnet.rpcUrl),
  });
  const hash = await wallet.deployContract({ abi, bytecode, args });
  const receipt = await waitForTransactionReceipt(devnetPublicClient(devnet.rpcUrl), {
    hash,
    pollingInterval: 50,
  });
  if (!receipt.contractAddress) throw new Error(`${name} was not deployed`);
  return receipt.contractAddress;
}

/** A clock the test moves: the gateway's back-off and circuit read it. */
function movableClock() {
  let offset = 0;
  const start = Date.now();
  return {
    now: () => new Date(start + offset),
    advance: (ms: number) => {
      offset += ms;
    },
  };
}

/** A v2 proof from `from`; signed over the authorization's EIP-712 digest by `owner`, or junk (65 random bytes). */
async function walletProof(accepted: PaymentRequirements, from: Hex, owner?: Hex): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const exact: ExactPayload = {
    authorization: {
      from,
      to: accepted.payTo as Hex,
      value: accepted.amount,
      validAfter: String(now - 600),
      validBefore: String(now + 600),
      nonce: `0x${randomBytes(32).toString("hex")}`,
    },
    signature: `0x${randomBytes(65).toString("hex")}`,
  };
  if (owner) {
    const domain = authorizationDomainOf(accepted);
    if (!domain) throw new Error("no EIP-712 domain in the requirements");
    exact.signature = await privateKeyToAccount(owner).sign({ hash: authorizationDigest(exact, domain) });
  }
  return b64({
    x402Version: 2,
    resource: { url: `http://127.0.0.1${UPCOMING_PATH}`, description: "", mimeType: "application/json" },
    accepted,
    payload: exact,
  });
}

async function requirementsOf(app: HttpApp): Promise<PaymentRequirements> {
  const unpaid = await fetch(`${app.url}${UPCOMING_PATH}`, { headers: { "x-forwarded-for": "192.0.2.1" } });
  await unpaid.arrayBuffer();
  return decodePaymentRequiredHeader(unpaid.headers.get("payment-required") as string)
    .accepts[0] as PaymentRequirements;
}

async function send(app: HttpApp, proof: string, ip: string): Promise<number> {
  const res = await fetch(`${app.url}${UPCOMING_PATH}`, {
    headers: { "payment-signature": proof, "x-forwarded-for": ip },
  });
  await res.arrayBuffer();
  return res.status;
}

const tally = (statuses: number[]) =>
  statuses.reduce<Record<number, number>>((t, s) => {
    t[s] = (t[s] ?? 0) + 1;
    return t;
  }, {});

beforeAll(async () => {
  devnet = await startDevnet();
}, 300_000);

afterAll(async () => {
  for (const close of closers.reverse()) await close();
  await devnet?.stop();
});

describe("an honest smart wallet that reverts on junk, on the devnet", () => {
  it("pays 15 of 15 under 4 junk proofs a second naming it, and its 4 parallel calls queue instead of 429", async () => {
    const owner = generatePrivateKey();
    const wallet = await deploy("OwnerWallet", [privateKeyToAccount(owner).address]);
    // Fund the wallet from buyer 9 (1 USDC: 50 calls at 0.02).
    const funder = createWalletClient({
      account: privateKeyToAccount(devnetKey(9).privateKey),
      chain: devnetChain(devnet.rpcUrl),
      transport: http(devnet.rpcUrl),
    });
    const funded = await funder.writeContract({
      address: devnet.usdc,
      abi: erc20Abi,
      functionName: "transfer",
      args: [wallet, 1_000_000n],
    });
    await waitForTransactionReceipt(devnetPublicClient(devnet.rpcUrl), { hash: funded, pollingInterval: 50 });

    const clock = movableClock();
    const app = await startHttpApp(devnet.facilitatorUrl, DEFAULTS, {
      smartWallet: createSmartWalletCheck(devnet.rpcUrl, DEFAULT_SMART_WALLET_CHECK),
      paymentsClock: clock.now,
    });
    closers.push(() => app.close());
    const accepted = await requirementsOf(app);

    const junk: number[] = [];
    const honest: number[] = [];
    for (let call = 0; call < 15; call++) {
      // One second of the junk stream, the honest call landing inside it (not on a back-off's boundary).
      for (let j = 0; j < 4; j++) {
        junk.push(await send(app, await walletProof(accepted, wallet), ATTACKER_IP));
        clock.advance(j < 3 ? 250 : 125);
      }
      honest.push(await send(app, await walletProof(accepted, wallet, owner), "203.0.113.7"));
      clock.advance(125);
    }
    const parallel = await Promise.all(
      Array.from({ length: 4 }, async () =>
        send(app, await walletProof(accepted, wallet, owner), "203.0.113.7"),
      ),
    );
    console.info(
      `honest wallet: ${honest.filter((s) => s === 200).length}/15 served under ${junk.length} junk ${JSON.stringify(tally(junk))}; honest ${JSON.stringify(tally(honest))}; 4 parallel ${JSON.stringify(tally(parallel))}`,
    );
    expect(junk.every((s) => s === 402)).toBe(true);
    expect(honest.filter((s) => s === 200).length).toBeGreaterThanOrEqual(14);
    expect(parallel).toEqual([200, 200, 200, 200]);
    // The chain is the record: every served call was one transfer from the wallet.
    const served = [...honest, ...parallel].filter((s) => s === 200).length;
    expect(await devnet.balanceOf(wallet)).toBe(1_000_000n - BigInt(served) * BigInt(accepted.amount));
  }, 180_000);
});

describe("a gas-aware smart wallet against a facilitator it makes time out", () => {
  it("121 attacker requests a minute from one address: honest EOA buyers ≥ 95 % served, the circuit stays closed", async () => {
    // Six attacker contracts (more than the circuit's 5 witnesses), each valid under the pre-check's 1 M gas cap.
    const contracts: Hex[] = [];
    for (let i = 0; i < 6; i++) contracts.push(await deploy("GasAwareWallet", [2_000_000n]));
    const check = createSmartWalletCheck(devnet.rpcUrl, DEFAULT_SMART_WALLET_CHECK);
    const facilitator: FaultFacilitator = await startFaultFacilitator();
    closers.push(() => facilitator.close());
    // With the facilitator's gas the wallets burn it: their verifies never answer (the client's timeout ends them).
    for (const c of contracts) facilitator.verifyGateFor.set(c.toLowerCase(), new Promise<void>(() => {}));

    const clock = movableClock();
    const app = await startHttpApp(facilitator.url, DEFAULTS, {
      smartWallet: check,
      paymentsClock: clock.now,
    });
    closers.push(() => app.close());
    const accepted = await requirementsOf(app);
    const domain = authorizationDomainOf(accepted);
    if (!domain) throw new Error("no EIP-712 domain");
    // The pre-check is fooled: under its gas cap the wallet answers valid.
    const probe = JSON.parse(
      Buffer.from(await walletProof(accepted, contracts[0] as Hex), "base64").toString(),
    ) as {
      payload: ExactPayload;
    };
    expect(await check(probe.payload, domain)).toEqual({ kind: "valid" });

    const ATTACK = 121; // one minute of it: each request moves the clock 60 s / 121
    const HONEST = 20;
    const attacker: number[] = [];
    let sent = 0;
    const sentWaiters: { n: number; go: () => void }[] = [];
    const untilSent = (n: number) =>
      sent >= n ? Promise.resolve() : new Promise<void>((go) => sentWaiters.push({ n, go }));
    const attack = Promise.all(
      Array.from({ length: 8 }, async () => {
        while (sent < ATTACK) {
          const from = contracts[sent % contracts.length] as Hex;
          sent += 1;
          clock.advance(60_000 / ATTACK);
          for (const w of sentWaiters.filter((x) => sent >= x.n)) {
            sentWaiters.splice(sentWaiters.indexOf(w), 1);
            w.go();
          }
          attacker.push(await send(app, await walletProof(accepted, from), ATTACKER_IP));
        }
      }),
    );
    const honest: number[] = [];
    let notClosed = 0; // honest calls after which the circuit was not closed
    for (let i = 0; i < HONEST; i++) {
      await untilSent(Math.floor((i * ATTACK) / HONEST));
      honest.push(await send(app, await signedUpcomingProof(app.config), `203.0.113.${i + 1}`));
      if (app.gateway.position() !== "closed") notClosed += 1;
    }
    await attack;
    const served = honest.filter((s) => s === 200).length;
    const attackerVerifies = contracts.reduce(
      (n, c) => n + (facilitator.verifiesBy.get(c.toLowerCase()) ?? 0),
      0,
    );
    console.info(
      `gas-aware attack: honest ${served}/${HONEST} served ${JSON.stringify(tally(honest))}; circuit ${app.gateway.position()} (not closed after ${notClosed} honest calls; opened at ${app.gateway.circuit.openedAt}); attacker ${attacker.length} requests ${JSON.stringify(tally(attacker))}, ${attackerVerifies} facilitator verifies`,
    );
    expect(served / HONEST).toBeGreaterThanOrEqual(0.95);
    expect(notClosed).toBe(0);
    expect(app.gateway.position()).toBe("closed");
    expect(app.gateway.circuit.openedAt).toBeNull();
    // Never served, never charged: refused as timed out (503) or held off by the payer back-off (429).
    expect(attacker.filter((s) => s === 200)).toEqual([]);
    expect(facilitator.transfers.size).toBe(served);
  }, 300_000);
});
