import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { freePort } from "../src/devnet/ports.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
// The devnet banner, or (with FACILITATOR_URL set, LOG_LEVEL info or lower) Fastify's own listening log line.
const READY = /(?:pressure402 is listening on|Server listening at) (http:\/\/[^\s"]+)/;

export interface ServerProcess {
  /** Base URL the server printed when it was ready. */
  url: string;
  child: ChildProcess;
  /** Everything the process wrote so far (stdout and stderr, interleaved). */
  output(): string;
  /** Resolves with the exit code or signal once the process is gone. */
  exited: Promise<number | NodeJS.Signals | null>;
  /** Sends `signal` and waits for the process to exit (SIGKILL after `graceMs`). */
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<number | NodeJS.Signals | null>;
}

/** How the process runs the server: its TypeScript sources through tsx, or `npm start`'s bundle (scripts/start.mjs). */
export type ServerEntry = "sources" | "npm-start";

const ENTRY_ARGS: Record<ServerEntry, string[]> = {
  sources: ["--import", "tsx", "src/server.ts"],
  "npm-start": ["scripts/start.mjs"],
};

/**
 * Used by the soak and by the process-level tests. Starts the server as a separate Node process (by default its
 * sources through tsx, so tests see the code as it is) and waits until it prints that it is listening. Without
 * FACILITATOR_URL in `env`, the server starts its embedded devnet.
 */
export async function startServerProcess(
  env: Record<string, string>,
  timeoutMs = 60_000,
  entry: ServerEntry = "sources",
): Promise<ServerProcess> {
  const port = env.PORT ?? String(await freePort());
  const child = spawn(process.execPath, ENTRY_ARGS[entry], {
    cwd: ROOT,
    env: {
      ...process.env,
      NODE_ENV: "development",
      HOST: "127.0.0.1",
      LOG_LEVEL: "warn",
      ...env,
      PORT: port,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout?.on("data", (c: Buffer) => {
    out += c.toString("utf8");
  });
  child.stderr?.on("data", (c: Buffer) => {
    out += c.toString("utf8");
  });
  const exited = new Promise<number | NodeJS.Signals | null>((resolve) => {
    child.once("exit", (code, signal) => resolve(signal ?? code));
  });

  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`server did not start within ${timeoutMs} ms:\n${out.slice(-2000)}`));
    }, timeoutMs);
    const check = () => {
      const m = READY.exec(out);
      if (!m?.[1]) return;
      clearTimeout(timer);
      child.stdout?.off("data", check);
      resolve(m[1]);
    };
    child.stdout?.on("data", check);
    exited.then((how) => {
      clearTimeout(timer);
      reject(new Error(`server exited (${String(how)}) before listening:\n${out.slice(-2000)}`));
    });
  });

  return {
    url,
    child,
    output: () => out,
    exited,
    stop: async (signal = "SIGTERM", graceMs = 15_000) => {
      if (child.exitCode !== null || child.signalCode !== null) return exited;
      child.kill(signal);
      const force = setTimeout(() => child.kill("SIGKILL"), graceMs);
      const how = await exited;
      clearTimeout(force);
      return how;
    },
  };
}
