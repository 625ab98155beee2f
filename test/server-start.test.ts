import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { ConfigError, parseConfig } from "../src/config.js";
import { resolveAnvilBinary } from "../src/devnet/anvil.js";
import { freePort } from "../src/devnet/ports.js";
import { start } from "../src/server.js";

// start() launches the embedded devnet while it loads the stores and builds the app: whichever part fails, nothing it
// opened may be left listening or running.

const scratch = mkdtempSync(join(tmpdir(), "p402-server-start-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const savedAnvilBin = process.env.ANVIL_BIN;
afterEach(() => {
  if (savedAnvilBin === undefined) delete process.env.ANVIL_BIN;
  else process.env.ANVIL_BIN = savedAnvilBin;
});

function script(name: string, body: string): string {
  const path = join(scratch, name);
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, 0o755);
  return path;
}

/** Listening servers and child processes of this process (the app's, the facilitator's, anvil's watchdog). */
const openResources = () =>
  process.getActiveResourcesInfo().filter((r) => r === "TCPServerWrap" || r === "ProcessWrap").length;

/**
 * Handles closed by then may still be in libuv's close queue when start() rejects; they leave within a few loop turns.
 * The deadline only bounds a failing run.
 */
async function settledResources(expected: number): Promise<number> {
  const deadline = Date.now() + 10_000;
  while (openResources() !== expected && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  return openResources();
}

const refuses = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(false);
    });
    socket.once("error", () => resolve(true));
  });

const isRunning = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function configWith(anvilBin: string, env: Record<string, string> = {}) {
  process.env.ANVIL_BIN = anvilBin; // what the devnet runs; the config's copy is what the pre-flight checks
  const port = await freePort();
  const config = parseConfig({
    NODE_ENV: "development",
    HOST: "127.0.0.1",
    PORT: String(port),
    LOG_LEVEL: "silent",
    LEDGER_PATH: join(mkdtempSync(join(scratch, "ledger-")), "ledger.sqlite"),
    ANVIL_BIN: anvilBin,
    REFRESH_INTERVAL_SECONDS: "0", // loopback only: the shipped data, never refreshed
    ...env,
  });
  return { config, port };
}

describe("start() with the embedded devnet", () => {
  it("reports a devnet that fails to start and leaves nothing listening or running", async () => {
    const before = openResources();
    const { config, port } = await configWith(
      script("failing-anvil.sh", "echo 'no chain today' >&2\nexit 1"),
    );
    await expect(start(config)).rejects.toThrow(/devnet: anvil exited during start-up/);
    expect(await settledResources(before)).toBe(before);
    expect(await refuses(port)).toBe(true);
  });

  it("stops the devnet it launched when a snapshot fails to load", async () => {
    const before = openResources();
    const pidFile = join(scratch, "anvil.pid");
    const anvil = script("recording-anvil.sh", `echo $$ > '${pidFile}'\nexec '${resolveAnvilBinary()}' "$@"`);
    const snapshot = join(scratch, "broken-snapshot.json");
    writeFileSync(snapshot, "{ not json");
    const { config, port } = await configWith(anvil, { UNLOCKS_SNAPSHOT: snapshot });
    const failure = await start(config).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(ConfigError);
    expect((failure as ConfigError).problems.join("\n")).toMatch(/^UNLOCKS_SNAPSHOT: /);
    expect(await settledResources(before)).toBe(before);
    expect(await refuses(port)).toBe(true);
    // anvil was launched before the snapshot was read, and is gone now.
    expect(existsSync(pidFile)).toBe(true);
    expect(isRunning(Number(readFileSync(pidFile, "utf8")))).toBe(false);
  });
});
