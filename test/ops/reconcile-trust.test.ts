import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import Database from "better-sqlite3";
import { encodeAbiParameters, encodeEventTopics, type Hex, pad } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EIP3009_ABI } from "../../src/chain/eip3009.js";
import { BASE_MAINNET, BASE_SEPOLIA } from "../../src/chain/networks.js";
import { openSqliteLedger } from "../../src/ledger/sqlite.js";
import { PRICES } from "../../src/operations/prices.js";

/*
 * `npm run ledger -- reconcile|verify` against an RPC that lies, a loopback stand-in this test controls: it claims
 * that the ledger's two failed receipts were paid (once by another token contract, once in a transaction whose receipt
 * does not exist), invents 50 payments of 1,000,000,000 USD each to PAY_TO, one at a route's price but too recent,
 * and one to another payee. Nothing of it is written: the billed total stays 0.66 USD. The same stand-in serving
 * another chain id is refused outright. A payment the chain does prove (receipt, price, confirmations) is restored,
 * so the checks refuse lies, not everything.
 */
const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const USDC = BASE_MAINNET.usdc.address.toLowerCase() as Hex;
const OTHER_TOKEN = `0x${"ee".repeat(20)}` as Hex;
const PAY_TO = `0x${"aa".repeat(20)}` as Hex;
const ELSEWHERE = `0x${"ab".repeat(20)}` as Hex;
const PAYER = `0x${"b0".repeat(20)}` as Hex;
const HEAD = 1000n;
const T0 = new Date("2026-11-20T12:00:00.000Z");
const UPCOMING = PRICES.upcoming.amount; // 20000: 0.02 USD
const hexOf = (n: bigint | number) => `0x${n.toString(16)}`;
const nonceOf = (i: number) => `0x${i.toString(16).padStart(64, "0")}` as Hex;
const txOf = (i: number) => `0x${"7".repeat(8)}${i.toString(16).padStart(56, "0")}` as Hex;

interface Payment {
  tx: Hex;
  block: bigint;
  token: Hex;
  to: Hex;
  nonce: Hex;
  amount: bigint;
  /** What eth_getTransactionReceipt answers: the same logs (consistent liar) or nothing. */
  receipt: boolean;
}

/** The logs of one authorized transfer: AuthorizationUsed then Transfer, as USDC emits them. */
function logsOf(p: Payment) {
  const base = {
    address: p.token,
    blockNumber: hexOf(p.block),
    blockHash: pad(hexOf(p.block) as Hex, { size: 32 }),
    transactionHash: p.tx,
    transactionIndex: "0x0",
    removed: false,
  };
  return [
    {
      ...base,
      logIndex: "0x0",
      topics: encodeEventTopics({
        abi: EIP3009_ABI,
        eventName: "AuthorizationUsed",
        args: { authorizer: PAYER, nonce: p.nonce },
      }),
      data: "0x",
    },
    {
      ...base,
      logIndex: "0x1",
      topics: encodeEventTopics({ abi: EIP3009_ABI, eventName: "Transfer", args: { from: PAYER, to: p.to } }),
      data: encodeAbiParameters([{ type: "uint256" }], [p.amount]),
    },
  ];
}

const rpc = { chainId: BASE_MAINNET.chainId as number, payments: [] as Payment[] };
let server: Server;
let rpcUrl: string;
const dir = mkdtempSync(join(tmpdir(), "p402-lying-rpc-"));
const ledgerPath = join(dir, "ledger.sqlite");

function answer(method: string, params: unknown[]): unknown {
  switch (method) {
    case "eth_chainId":
      return hexOf(rpc.chainId);
    case "eth_blockNumber":
      return hexOf(HEAD);
    case "eth_getBlockByNumber": {
      const n = BigInt(params[0] as string);
      const z32 = pad("0x0", { size: 32 });
      return {
        number: hexOf(n),
        hash: pad(hexOf(n) as Hex, { size: 32 }),
        parentHash: z32,
        timestamp: hexOf(BigInt(T0.getTime() / 1000) + (n - 900n) * 2n),
        nonce: "0x0000000000000000",
        difficulty: "0x0",
        gasLimit: "0x1c9c380",
        gasUsed: "0x0",
        miner: `0x${"00".repeat(20)}`,
        extraData: "0x",
        logsBloom: `0x${"00".repeat(256)}`,
        transactionsRoot: z32,
        stateRoot: z32,
        receiptsRoot: z32,
        sha3Uncles: z32,
        size: "0x0",
        baseFeePerGas: "0x1",
        transactions: [],
        uncles: [],
      };
    }
    case "eth_getLogs": {
      // A liar answers whatever it likes: every log of the event asked for, whatever the contract or payee.
      const topic0 = ((params[0] as { topics?: (string | null)[] }).topics ?? [])[0];
      return rpc.payments.flatMap(logsOf).filter((l) => l.topics[0] === topic0);
    }
    case "eth_getTransactionReceipt": {
      const p = rpc.payments.find((x) => x.tx === params[0]);
      if (!p?.receipt) return null;
      return {
        transactionHash: p.tx,
        transactionIndex: "0x0",
        blockHash: pad(hexOf(p.block) as Hex, { size: 32 }),
        blockNumber: hexOf(p.block),
        from: PAYER,
        to: p.token,
        cumulativeGasUsed: "0x1",
        gasUsed: "0x1",
        effectiveGasPrice: "0x1",
        contractAddress: null,
        logs: logsOf(p),
        logsBloom: `0x${"00".repeat(256)}`,
        status: "0x1",
        type: "0x2",
      };
    }
    default:
      throw new Error(`unexpected ${method}`);
  }
}

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString()) as
        | { id: number; method: string; params: unknown[] }
        | { id: number; method: string; params: unknown[] }[];
      const one = (r: { id: number; method: string; params: unknown[] }) => ({
        jsonrpc: "2.0",
        id: r.id,
        result: answer(r.method, r.params),
      });
      res
        .writeHead(200, { "content-type": "application/json" })
        .end(JSON.stringify(Array.isArray(body) ? body.map(one) : one(body)));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  rpcUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((r) => server.close(r));
  rmSync(dir, { recursive: true, force: true });
});

async function ledgerCli(args: string[]) {
  const env: Record<string, string | undefined> = { ...process.env, LEDGER_PATH: ledgerPath };
  delete env.LEDGER_URL;
  delete env.NETWORK;
  try {
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      [
        "--import",
        "tsx",
        "scripts/ledger.ts",
        ...args,
        "--rpc",
        rpcUrl,
        "--pay-to",
        PAY_TO,
        "--from-block",
        "900",
      ],
      { cwd: ROOT, env },
    );
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? -1, stdout: e.stdout ?? "", stderr: e.stderr ?? "" };
  }
}

/** Every receipt row as stored, and the billed total. */
function ledgerState() {
  const db = new Database(ledgerPath, { readonly: true });
  try {
    const rows = db.prepare("SELECT * FROM receipts ORDER BY id").all() as {
      status: string;
      amount: string;
    }[];
    const billed = rows
      .filter((r) => r.status === "settled" || r.status === "pending")
      .reduce((s, r) => s + BigInt(r.amount), 0n);
    return { rows: JSON.stringify(rows), billed };
  } finally {
    db.close();
  }
}

describe("reconcile against a lying RPC", () => {
  it("writes nothing it cannot prove on chain, refuses another chain, and restores what the chain proves", async () => {
    // The ledger: six paid calls billing 0.66 USD, and two refused settlements (failed, nothing moved).
    const ledger = openSqliteLedger(ledgerPath, { log: () => {} });
    const claim = async (i: number, route: string, amount: string) => {
      const c = await ledger.claimAuthorization({
        identity: { network: BASE_MAINNET.caip2, asset: USDC, payer: PAYER, nonce: nonceOf(i) },
        route,
        requestFingerprint: `rf-${i}`,
        x402Version: 2,
        amount,
        payTo: PAY_TO,
        incarnation: "server",
        lockTtlMs: 60_000,
        now: T0,
      });
      if (c.kind !== "claimed") throw new Error(c.kind);
      await ledger.beginSettlement(c.receipt.id, "server", T0);
      return c.receipt.id;
    };
    const paid: [string, string][] = [
      [PRICES.riskSummary.route, PRICES.riskSummary.amount],
      [PRICES.riskSummary.route, PRICES.riskSummary.amount],
      [PRICES.unlockRisk.route, PRICES.unlockRisk.amount],
      [PRICES.upcoming.route, UPCOMING],
      [PRICES.upcoming.route, UPCOMING],
      [PRICES.upcoming.route, UPCOMING],
    ];
    for (const [i, [route, amount]] of paid.entries()) {
      const id = await claim(i + 1, route, amount);
      await ledger.recordSettlement(id, { status: "settled", transaction: txOf(i + 1), now: T0 });
    }
    for (const i of [7, 8]) {
      const id = await claim(i, PRICES.upcoming.route, UPCOMING);
      await ledger.recordFailure(id, { status: "failed", error: "invalid_exact_evm_signature", now: T0 });
    }
    await ledger.close();
    const before = ledgerState();
    expect(before.billed).toBe(660_000n); // 0.66 USD

    const lie = (p: Partial<Payment> & Pick<Payment, "tx" | "nonce">): Payment => ({
      block: 950n,
      token: USDC,
      to: PAY_TO,
      amount: BigInt(UPCOMING),
      receipt: true,
      ...p,
    });
    rpc.payments = [
      // The two failed receipts "paid": by another token contract, and in a transaction the chain has no receipt of.
      lie({ tx: txOf(107), nonce: nonceOf(7), token: OTHER_TOKEN }),
      lie({ tx: txOf(108), nonce: nonceOf(8), receipt: false }),
      // 50 invented payments of 1,000,000,000 USD each (10^15 atomic), consistent down to their receipts.
      ...Array.from({ length: 50 }, (_, i) =>
        lie({ tx: txOf(200 + i), nonce: `0x${randomBytes(32).toString("hex")}` as Hex, amount: 10n ** 15n }),
      ),
      // At a route's price, but in the head block: one confirmation of the 10 needed.
      lie({ tx: txOf(300), nonce: nonceOf(300), block: HEAD }),
      // To another payee (the RPC was asked for transfers to PAY_TO only).
      lie({ tx: txOf(301), nonce: nonceOf(301), to: ELSEWHERE }),
    ];

    const dry = await ledgerCli(["reconcile", "--dry-run"]);
    expect(dry.code, dry.stderr).toBe(0);
    const dr = JSON.parse(dry.stdout) as {
      restored: unknown[];
      settled: unknown[];
      rejected: { reason: string }[];
      billedBeforeAtomic: string;
      billedAfterAtomic: string;
    };
    expect(dr).toMatchObject({
      restored: [],
      settled: [],
      billedBeforeAtomic: "660000",
      billedAfterAtomic: "660000",
    });
    expect(dry.stderr).toContain("billed 0.660000 USD → would bill 0.660000 USD");

    const run = await ledgerCli(["reconcile"]);
    expect(run.code, run.stderr).toBe(0);
    const r = JSON.parse(run.stdout) as typeof dr;
    expect(r).toMatchObject({ restored: [], settled: [], billedAfterAtomic: "660000" });
    const reasons = r.rejected.map((x) => x.reason);
    // The transfer to another payee never counts: the log client drops a log its filter did not ask for.
    expect(reasons).toHaveLength(53);
    expect(reasons.filter((x) => x.includes(`not ${BASE_MAINNET.label} USDC`))).toHaveLength(1);
    expect(reasons.filter((x) => x.includes("receipt does not show"))).toHaveLength(1);
    expect(reasons.filter((x) => x.includes("which is no route's price"))).toHaveLength(50);
    expect(reasons.filter((x) => x.includes("1 confirmations of 10 needed"))).toHaveLength(1);
    expect(ledgerState()).toEqual(before); // not one byte of a receipt changed

    const verify = await ledgerCli(["verify"]);
    expect(verify.code).toBe(1); // what the RPC claims is reported, and the check fails
    expect(ledgerState()).toEqual(before);

    // The same stand-in serving Base Sepolia's chain id, while the network is Base: refused before any read.
    rpc.chainId = BASE_SEPOLIA.chainId;
    for (const command of ["verify", "reconcile"]) {
      const refused = await ledgerCli([command]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain(
        `${command} refused: the RPC serves chain id ${BASE_SEPOLIA.chainId}, not 8453`,
      );
      expect(refused.stdout).toBe("");
    }
    expect(ledgerState()).toEqual(before);
    const afterLies = ledgerState().billed;
    rpc.chainId = BASE_MAINNET.chainId;

    // A payment the chain proves (its receipt, a route's price, 51 confirmations) is restored: the checks are not a
    // blanket refusal.
    rpc.payments.push(lie({ tx: txOf(400), nonce: nonceOf(400) }));
    const proven = await ledgerCli(["reconcile"]);
    expect(proven.code, proven.stderr).toBe(0);
    const p = JSON.parse(proven.stdout) as typeof dr & { restored: { route: string; amount: string }[] };
    expect(p.restored).toEqual([expect.objectContaining({ route: PRICES.upcoming.route, amount: UPCOMING })]);
    expect(p.billedAfterAtomic).toBe("680000");
    expect(ledgerState().billed).toBe(680_000n);
    process.stdout.write(
      `lying RPC: ${r.rejected.length} rejected, 0 written; billed ${before.billed} → ${afterLies} atomic USDC; a proven payment restored → ${ledgerState().billed}\n`,
    );
  }, 120_000);
});
