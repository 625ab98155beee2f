import { spawn } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { startServerProcess } from "../../scripts/server-process.js";
import { rpcChainId } from "../../src/devnet/anvil.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** Runs `src/server.ts` (through tsx, as npm start does) until it exits; resolves with its exit code and stderr. */
async function runToExit(env: Record<string, string | undefined>, cwd = ROOT) {
  const tsx = new URL("../../node_modules/tsx/dist/loader.mjs", import.meta.url).href;
  const childEnv: Record<string, string | undefined> = { ...process.env, NODE_ENV: "development", ...env };
  for (const [k, v] of Object.entries(childEnv)) if (v === undefined) delete childEnv[k];
  const child = spawn(process.execPath, ["--import", tsx, join(ROOT, "src/server.ts")], {
    cwd,
    env: childEnv,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (c: Buffer) => {
    stdout += c.toString();
  });
  child.stderr.on("data", (c: Buffer) => {
    stderr += c.toString();
  });
  // A start that spins (the bug a test is there to catch) must end the test, not hang it.
  const spin = setTimeout(() => child.kill("SIGKILL"), 45_000);
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  clearTimeout(spin);
  return { code, stdout, stderr, lines: stderr.split("\n").filter(Boolean) };
}

const scratch = mkdtempSync(join(tmpdir(), "p402-start-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/**
 * A stand-in for anvil that leaves a mark and fails: if the devnet ever starts, the mark exists. Pre-flight problems
 * must be reported before that.
 */
function anvilTripwire(name: string): { bin: string; mark: string } {
  const bin = join(scratch, `${name}-anvil.sh`);
  const mark = join(scratch, `${name}-anvil-ran`);
  writeFileSync(bin, `#!/bin/sh\ntouch '${mark}'\nexit 1\n`);
  chmodSync(bin, 0o755);
  return { bin, mark };
}

const rpcAnswers = async (url: string) => (await rpcChainId(url)) === "0x2105";

describe("the server process (what `npm start` runs)", () => {
  it("starts the devnet, prints how to pay, answers 402, and stops the chain on SIGTERM", async () => {
    // No load shedding: on a loaded machine it would turn the 402 into 503 overloaded (tested on its own).
    const server = await startServerProcess({
      LOG_LEVEL: "warn",
      LEDGER_PATH: ":memory:",
      MAX_EVENT_LOOP_DELAY_MS: "0",
    });
    try {
      const out = server.output();
      expect(out).toContain("npm run pay -- GET '/v1/unlocks/upcoming?days=30'");
      const rpc = /anvil chain 8453 at (http:\/\/\S+)\)/.exec(out)?.[1];
      expect(rpc).toBeDefined();
      expect(await rpcAnswers(rpc as string)).toBe(true);
      const res = await fetch(`${server.url}/v1/unlocks/upcoming`);
      expect(res.status).toBe(402);
      expect(await server.stop("SIGTERM")).toBe(0);
      expect(await rpcAnswers(rpc as string)).toBe(false);
    } finally {
      await server.stop("SIGKILL");
    }
  });

  it("as `npm start` runs it (scripts/start.mjs, one bundle built when missing or stale): answers 402, stops on SIGTERM", async () => {
    const server = await startServerProcess(
      { LOG_LEVEL: "warn", LEDGER_PATH: ":memory:", MAX_EVENT_LOOP_DELAY_MS: "0" },
      120_000,
      "npm-start",
    );
    try {
      expect(server.output()).toContain("npm run pay -- GET '/v1/unlocks/upcoming?days=30'");
      expect((await fetch(`${server.url}/v1/unlocks/upcoming`)).status).toBe(402);
      expect((await fetch(`${server.url}/ready`)).status).toBe(200); // the banner comes once the devnet is ready
      expect(await server.stop("SIGTERM")).toBe(0);
    } finally {
      await server.stop("SIGKILL");
    }
  });

  it("refuses to start in production without a facilitator, payTo and public origin, naming each", async () => {
    const child = spawn(process.execPath, ["--import", "tsx", "src/server.ts"], {
      cwd: ROOT,
      env: {
        ...process.env,
        NODE_ENV: "production",
        FACILITATOR_URL: "",
        PAY_TO: "",
        CDP_API_KEY_ID: "",
        CDP_API_KEY_SECRET: "",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let err = "";
    child.stderr.on("data", (c: Buffer) => {
      err += c.toString();
    });
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    expect(code).toBe(1);
    expect(err).toMatch(/FACILITATOR_URL/);
    expect(err).toMatch(/PAY_TO/);
    expect(err).toMatch(/^pressure402: PUBLIC_BASE_URL: required when NODE_ENV=production/m);
  });

  it("reports a missing UNLOCKS_SNAPSHOT in one line naming it, before the devnet starts", async () => {
    const anvil = anvilTripwire("snapshot");
    const missing = join(scratch, "no-such-snapshot.json");
    const run = await runToExit({
      UNLOCKS_SNAPSHOT: missing,
      ANVIL_BIN: anvil.bin,
      PORT: "0",
      LEDGER_PATH: ":memory:",
    });
    expect(run.code).toBe(1);
    expect(run.lines).toEqual([
      `pressure402: UNLOCKS_SNAPSHOT=${missing}: ${missing} does not exist; set UNLOCKS_SNAPSHOT to the snapshot file (\`npm run snapshot\` builds one)`,
    ]);
    expect(existsSync(anvil.mark)).toBe(false);
  });

  it.skipIf(process.platform !== "linux")(
    "reports a LEDGER_PATH under /proc in one line naming it, before the devnet starts (it used to spin)",
    async () => {
      const anvil = anvilTripwire("proc");
      const run = await runToExit({
        PORT: "0",
        ANVIL_BIN: anvil.bin,
        LEDGER_PATH: "/proc/p402/ledger.sqlite",
      });
      expect(run.code).toBe(1);
      expect(run.lines).toEqual([
        "pressure402: LEDGER_PATH=/proc/p402/ledger.sqlite: /proc is on the kernel's proc filesystem, which cannot hold a database; set LEDGER_PATH to a file in a writable directory",
      ]);
      expect(existsSync(anvil.mark)).toBe(false);
    },
  );

  it("reports a port in use in one line naming PORT, before the devnet starts", async () => {
    const anvil = anvilTripwire("port");
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, "127.0.0.1", r));
    const port = (taken.address() as { port: number }).port;
    try {
      const run = await runToExit({ PORT: String(port), ANVIL_BIN: anvil.bin, LEDGER_PATH: ":memory:" });
      expect(run.code).toBe(1);
      expect(run.lines).toEqual([
        `pressure402: PORT=${port}: already in use on 127.0.0.1; stop the other process or set PORT to a free port (0 picks one)`,
      ]);
      expect(existsSync(anvil.mark)).toBe(false);
    } finally {
      await new Promise((r) => taken.close(r));
    }
  });

  it("reads .env from the working directory, the environment winning over it", async () => {
    const dir = mkdtempSync(join(scratch, "dotenv-"));
    // PORT in the file is wrong but the environment sets it; LOG_LEVEL comes only from the file.
    writeFileSync(join(dir, ".env"), "PORT=not-a-port\nLOG_LEVEL=loud\n");
    const run = await runToExit({ PORT: "0", LOG_LEVEL: undefined }, dir);
    expect(run.code).toBe(1);
    expect(run.lines).toEqual([
      'pressure402: LOG_LEVEL: invalid value (got "loud"); set one of: fatal, error, warn, info, debug, trace, silent',
    ]);
  });
});
