import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TEST_PAY_TO } from "../helpers/app.js";
import { type FaultFacilitator, startFaultFacilitator } from "../helpers/fault-facilitator.js";

/*
 * The README's `npm run start:prod`, run as an operator runs it: in a fresh checkout (the tracked files only, no dist/)
 * it builds first and serves; SIGTERM to npm stops node (npm signals its script, which is node itself: `exec`).
 */
const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "p402-start-prod-"));
let fac: FaultFacilitator;
let npm: ChildProcess | undefined;

beforeAll(async () => {
  // A fresh clone: every tracked file as it is in the working tree; node_modules shared (npm ci is not under test).
  const files = execFileSync("git", ["ls-files", "-z"], { cwd: ROOT, encoding: "utf8" })
    .split("\0")
    .filter(Boolean);
  for (const f of files) {
    mkdirSync(dirname(join(dir, f)), { recursive: true });
    try {
      cpSync(join(ROOT, f), join(dir, f));
    } catch {
      // a tracked file deleted in the working tree
    }
  }
  symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"));
  fac = await startFaultFacilitator();
});
afterAll(async () => {
  if (npm?.exitCode === null) npm.kill("SIGKILL");
  await fac?.close();
  rmSync(dir, { recursive: true, force: true });
});

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe("npm run start:prod from a fresh checkout", () => {
  it("builds, serves, and stops node on SIGTERM to npm", async () => {
    npm = spawn("npm", ["run", "start:prod"], {
      cwd: dir,
      env: {
        ...process.env,
        NODE_ENV: "production",
        HOST: "127.0.0.1",
        PORT: "0",
        METRICS_PORT: "0",
        LOG_LEVEL: "info",
        LEDGER_PATH: join(dir, "var", "ledger.sqlite"),
        FACILITATOR_URL: fac.url,
        PAY_TO: TEST_PAY_TO,
        PUBLIC_BASE_URL: "https://api.example.com",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const child = npm;
    let out = "";
    child.stderr?.on("data", (d) => {
      out += d.toString();
    });
    const listening = await new Promise<{ url: string; pid: number }>((resolve, reject) => {
      child.stdout?.on("data", (d) => {
        out += d.toString();
        for (const line of out.split("\n")) {
          if (!line.startsWith("{")) continue;
          const log = JSON.parse(line) as { msg?: string; pid?: number };
          const url = /listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(log.msg ?? "")?.[1];
          if (url && log.pid) resolve({ url, pid: log.pid });
        }
      });
      child.on("exit", (code) => reject(new Error(`npm exited (${code}) before listening:\n${out}`)));
    });
    expect((await fetch(`${listening.url}/health`)).status).toBe(200);
    expect(listening.pid).not.toBe(child.pid);

    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    child.kill("SIGTERM");
    await exited;
    // node itself got the signal: it shut down gracefully and is gone, not left serving.
    for (let i = 0; i < 100 && alive(listening.pid); i++) await new Promise((r) => setTimeout(r, 50));
    expect(alive(listening.pid)).toBe(false);
    expect(out).toContain("shutting down");
    await expect(fetch(`${listening.url}/health`)).rejects.toThrow();
  }, 240_000);
});
