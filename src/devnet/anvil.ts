import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

export interface AnvilOptions {
  host?: string;
  /** 0 or undefined: anvil picks a free port and we read it from its banner. */
  port?: number;
  chainId?: number;
  log?: (msg: string) => void;
  startupTimeoutMs?: number;
  /** More anvil flags (tests: `--number`/`--timestamp` for a deep chain whose head is now). */
  extraArgs?: string[];
}

export interface AnvilInstance {
  rpcUrl: string;
  host: string;
  port: number;
  chainId: number;
  /** Kills anvil (via its watchdog) and waits for it to exit. Idempotent. */
  stop(): Promise<void>;
}

const PLATFORM_NAMES: Partial<Record<NodeJS.Platform, string>> = {
  linux: "linux",
  darwin: "darwin",
  win32: "win32",
};
const ARCH_NAMES: Partial<Record<string, string>> = { x64: "amd64", arm64: "arm64" };

/**
 * Path of the anvil binary shipped by the npm package @foundry-rs/anvil (in the platform-specific
 * optional dependency, e.g. @foundry-rs/anvil-linux-amd64/bin/anvil). ANVIL_BIN overrides it.
 */
export function resolveAnvilBinary(): string {
  const override = process.env.ANVIL_BIN;
  if (override) return override;
  const platform = PLATFORM_NAMES[process.platform];
  const arch = ARCH_NAMES[process.arch];
  if (!platform || !arch) {
    throw new Error(`devnet: no anvil binary for ${process.platform}/${process.arch}; set ANVIL_BIN`);
  }
  const pkg = `@foundry-rs/anvil-${platform}-${arch}`;
  const binaryName = process.platform === "win32" ? "anvil.exe" : "anvil";
  const require = createRequire(import.meta.url);
  // The platform package may be hoisted or nested under @foundry-rs/anvil; try both.
  const lookups: (() => string)[] = [
    () => require.resolve(`${pkg}/package.json`),
    () => createRequire(require.resolve("@foundry-rs/anvil/package.json")).resolve(`${pkg}/package.json`),
  ];
  for (const lookup of lookups) {
    try {
      const candidate = join(dirname(lookup()), "bin", binaryName);
      if (existsSync(candidate)) return candidate;
    } catch {
      // not installed at this location
    }
  }
  throw new Error(
    `devnet: cannot find the anvil binary (npm package ${pkg}); run npm install or set ANVIL_BIN`,
  );
}

/*
 * Anvil runs under a tiny Node watchdog whose stdin is a pipe from this process. If this process
 * dies in any way (even SIGKILL, when no 'exit' handler runs), the pipe closes and the watchdog
 * kills anvil. Anvil gets its own process group so a terminal Ctrl-C reaches only the server, which
 * can then finish in-flight settlements before it stops the devnet.
 */
const WATCHDOG = `
const { spawn } = require("node:child_process");
const [bin, ...args] = process.argv.slice(1);
const child = spawn(bin, args, { stdio: ["ignore", "inherit", "inherit"], detached: process.platform !== "win32" });
let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  child.kill("SIGTERM");
  setTimeout(() => child.kill("SIGKILL"), 3000).unref();
};
process.stdin.on("end", stop);
process.stdin.on("close", stop);
process.stdin.on("error", stop);
process.stdin.resume();
process.on("SIGTERM", stop);
process.on("SIGHUP", stop);
process.on("SIGINT", () => {});
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
child.on("error", (err) => { console.error("anvil: " + err.message); process.exit(127); });
`;

const LISTENING = /Listening on ([^\s:]+|\[[^\]]+\]):(\d+)/;

/** The chain id a JSON-RPC endpoint reports (hex), or undefined when nothing answers there. */
export async function rpcChainId(rpcUrl: string): Promise<string | undefined> {
  try {
    const res = await fetch(rpcUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
      signal: AbortSignal.timeout(1000),
    });
    if (!res.ok) return undefined;
    const body = (await res.json()) as { result?: unknown };
    return typeof body.result === "string" ? body.result : undefined;
  } catch {
    return undefined;
  }
}

function waitForExit(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once("exit", () => resolve()));
}

/** Starts anvil and resolves once its JSON-RPC endpoint answers. */
export async function startAnvil(opts: AnvilOptions = {}): Promise<AnvilInstance> {
  const host = opts.host ?? "127.0.0.1";
  const chainId = opts.chainId ?? 8453;
  const log = opts.log ?? (() => {});
  const timeoutMs = opts.startupTimeoutMs ?? 30_000;
  const binary = resolveAnvilBinary();
  // Default mnemonic on purpose: the well-known test accounts 0..9 are part of the devnet contract.
  const args = [
    "--chain-id",
    String(chainId),
    "--host",
    host,
    "--port",
    String(opts.port ?? 0),
    ...(opts.extraArgs ?? []),
  ];

  const child = spawn(process.execPath, ["-e", WATCHDOG, "--", binary, ...args], {
    stdio: ["pipe", "pipe", "pipe"],
  });
  let output = "";
  let announcedPort: number | undefined;
  const onOutput = (chunk: Buffer): void => {
    // Keep reading for the whole lifetime: a full pipe would block anvil.
    if (announcedPort !== undefined) return;
    output += chunk.toString("utf8");
    const match = LISTENING.exec(output);
    if (match?.[2]) announcedPort = Number(match[2]);
    if (output.length > 64_000) output = output.slice(-8_000);
  };
  child.stdout?.on("data", onOutput);
  child.stderr?.on("data", onOutput);
  // A broken pipe to the watchdog only means it is already gone.
  child.stdin?.on("error", () => {});

  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    if (!stopped) {
      process.off("exit", killOnExit);
      const exited = waitForExit(child);
      child.stdin?.end();
      child.kill("SIGTERM");
      const force = setTimeout(() => child.kill("SIGKILL"), 5_000);
      stopped = exited.finally(() => clearTimeout(force));
    }
    return stopped;
  };
  // Belt and braces next to the watchdog pipe: a normal exit also closes anvil promptly.
  const killOnExit = (): void => {
    child.kill("SIGTERM");
  };
  process.on("exit", killOnExit);

  const deadline = Date.now() + timeoutMs;
  let exitedEarly = false;
  child.once("exit", () => {
    exitedEarly = true;
  });
  while (Date.now() < deadline) {
    if (exitedEarly) break;
    if (announcedPort !== undefined) {
      const rpcUrl = `http://${host.includes(":") ? `[${host}]` : host}:${announcedPort}`;
      if ((await rpcChainId(rpcUrl)) !== undefined) {
        log(`anvil listening on ${rpcUrl} (chain id ${chainId}, pid ${child.pid})`);
        return { rpcUrl, host, port: announcedPort, chainId, stop };
      }
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  await stop();
  const reason = exitedEarly ? "anvil exited during start-up" : `anvil did not answer within ${timeoutMs} ms`;
  throw new Error(`devnet: ${reason}:\n${output.slice(-2_000)}`);
}
