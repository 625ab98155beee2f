import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { formatUnits } from "viem";

/*
 * The agentcash CLI as its users run it. It lives in its own npm project (test/clients/agentcash, installed by
 * scripts/test-prerequisites.sh) because its mppx 0.5 cannot be installed beside this project's viem.
 */
const PACKAGE_DIR = join(
  dirname(fileURLToPath(import.meta.url)),
  "..",
  "clients",
  "agentcash",
  "node_modules",
  "agentcash",
);

/** Moves the CLI's `--dev` balance requests (fixed to localhost:3000 in its getBaseUrl) to the stand-in's own port. */
const BALANCE_REDIRECT = join(dirname(fileURLToPath(import.meta.url)), "agentcash-balance-redirect.mjs");

/** The CLI's entry point; throws, saying how to install it, when the pretest step has not run. */
export function agentcashBin(): string {
  const manifest = join(PACKAGE_DIR, "package.json");
  if (!existsSync(manifest))
    throw new Error(
      "the agentcash CLI is not installed in test/clients/agentcash: run `bash scripts/test-prerequisites.sh` (npm test's pretest)",
    );
  const { bin } = JSON.parse(readFileSync(manifest, "utf8")) as { bin: { agentcash: string } };
  return join(PACKAGE_DIR, bin.agentcash);
}

export interface BalanceRequest {
  path: string;
  body: unknown;
}

export interface AgentcashBalanceStandIn {
  /** Every request agentcash made to its hosted service, in order. */
  readonly requests: BalanceRequest[];
  /** The stand-in's origin (an ephemeral loopback port), where the CLI's `--dev` balance requests are moved. */
  readonly origin: string;
  close(): Promise<void>;
}

/**
 * A loopback stand-in for agentcash's balance API (POST /api/balance {address, network}), which the CLI asks before
 * it pays. It answers in the shape the CLI parses (getBalanceOutputSchema in its balance module: the balance in USDC
 * as a number, the network's CAIP-2 id, the payment network's name, the chain id) with the wallet's real balance,
 * read from the devnet. Other paths and networks get 404: the test then sees that the CLI asked something else.
 */
export async function startAgentcashBalanceStandIn(
  balanceOf: (address: `0x${string}`) => Promise<bigint>,
): Promise<AgentcashBalanceStandIn> {
  const requests: BalanceRequest[] = [];
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    let body: unknown;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    } catch {
      body = undefined;
    }
    const path = req.url ?? "";
    requests.push({ path, body });
    const input = body as { address?: unknown; network?: unknown } | undefined;
    if (
      req.method !== "POST" ||
      path !== "/api/balance" ||
      input?.network !== "base" ||
      typeof input.address !== "string" ||
      !/^0x[0-9a-fA-F]{40}$/.test(input.address)
    ) {
      res.writeHead(404, { "content-type": "application/json" }).end('{"error":"not found"}');
      return;
    }
    let atomic: bigint;
    try {
      atomic = await balanceOf(input.address as `0x${string}`);
    } catch {
      res.writeHead(500, { "content-type": "application/json" }).end('{"error":"balance unavailable"}');
      return;
    }
    res.writeHead(200, { "content-type": "application/json" }).end(
      JSON.stringify({
        balance: Number(formatUnits(atomic, 6)),
        network: "eip155:8453",
        paymentNetwork: "base",
        chainId: 8453,
      }),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    requests,
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface AgentcashRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `agentcash <args>` as a child process with its own HOME (its wallet files go there), the buyer's key in the
 * variable its README documents (X402_PRIVATE_KEY), and nothing else of this process's environment but the preload
 * that moves its `--dev` balance requests to `balanceOrigin`. `timeoutMs` only bounds a hung child; the runs end on
 * their own.
 */
export function runAgentcash(
  args: string[],
  env: { HOME: string; X402_PRIVATE_KEY: string; balanceOrigin: string },
  timeoutMs = 90_000,
): Promise<AgentcashRun> {
  const bin = agentcashBin();
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [bin, ...args],
      {
        env: {
          PATH: process.env.PATH ?? "",
          HOME: env.HOME,
          X402_PRIVATE_KEY: env.X402_PRIVATE_KEY,
          AGENTCASH_BALANCE_ORIGIN: env.balanceOrigin,
          NODE_OPTIONS: `--import=${pathToFileURL(BALANCE_REDIRECT).href}`,
        },
        timeout: timeoutMs,
        killSignal: "SIGKILL",
      },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === "number" ? err.code : null) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}
