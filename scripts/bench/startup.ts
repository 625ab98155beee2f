/**
 * `npm start` to the first 402: spawns `npm start` (embedded devnet: anvil, test USDC from the precompiled artifacts,
 * local facilitator) on a free port with a temp ledger, polls GET /v1/unlocks/upcoming every 20 ms until it answers
 * 402, then stops the process group it started. Run alone: `npx tsx scripts/bench/startup.ts [runs] [--first|--cold]`
 * (MODES below says what each leaves in dist/start/, npm start's bundle and code cache, before every run).
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../../src/devnet/ports.js";
import { changedInputs } from "../start.mjs";
import { type BenchProcess, ROOT, stopChild, waitForStatus } from "./processes.js";

/** npm start's bundle and code cache (scripts/start.mjs). */
const START_BUNDLE_DIR = join(ROOT, "dist", "start");
const CODE_CACHE = join(START_BUNDLE_DIR, "server.cjs.v8cache");

/**
 * Spawns `npm start`, times its first 402, and stops it. With `keepUntil`, the process is left running after the 402
 * until that holds (polled every 50 ms, at most `timeoutMs` in all): the launcher writes its code cache only once the
 * server is fully up, after the first 402.
 */
export async function npmStartToFirst402(timeoutMs = 60_000, keepUntil?: () => boolean): Promise<number> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "p402-startup-"));
  const t0 = performance.now();
  // Its own process group, so npm, the server and anvil all stop together, by this group's id only.
  const child = spawn("npm", ["start", "--silent"], {
    cwd: ROOT,
    detached: true,
    stdio: "ignore",
    env: {
      ...process.env,
      NODE_ENV: "development",
      HOST: "127.0.0.1",
      PORT: String(port),
      LOG_LEVEL: "warn",
      LEDGER_PATH: join(dir, "ledger.sqlite"),
    },
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  try {
    const ms = await waitForStatus(
      `http://127.0.0.1:${port}/v1/unlocks/upcoming?days=30`,
      402,
      t0,
      timeoutMs,
    );
    while (keepUntil && !keepUntil() && performance.now() - t0 < timeoutMs)
      await new Promise((r) => setTimeout(r, 50));
    return ms;
  } finally {
    if (child.pid !== undefined) {
      try {
        process.kill(-child.pid, "SIGTERM");
      } catch {
        // already gone
      }
      const force = setTimeout(() => child.pid !== undefined && process.kill(-child.pid, "SIGKILL"), 10_000);
      await exited;
      clearTimeout(force);
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Starts the service as `npm start` runs it (`node scripts/start.mjs`: the bundle, with its code cache) but configured
 * by `env` (for the bench: a facilitator URL instead of the devnet, a snapshot, a temp ledger), on a free port; resolves
 * once it answers its first 402, with the milliseconds from spawn. Its own process, so its pid gives its memory and
 * CPU.
 */
export async function startService(
  env: Record<string, string>,
  timeoutMs = 120_000,
): Promise<BenchProcess & { port: number }> {
  const port = await freePort();
  const t0 = performance.now();
  const child = spawn(process.execPath, ["scripts/start.mjs"], {
    cwd: ROOT,
    stdio: "ignore",
    env: { ...process.env, HOST: "127.0.0.1", PORT: String(port), ...env },
  });
  const url = `http://127.0.0.1:${port}`;
  try {
    const readyMs = await waitForStatus(`${url}/v1/unlocks/upcoming?days=30`, 402, t0, timeoutMs);
    return { url, port, child, readyMs, stop: () => stopChild(child) };
  } catch (err) {
    await stopChild(child);
    throw err;
  }
}

/** Builds npm start's bundle and writes its code cache, when missing or stale, with one uncounted start: later starts are warm. */
export async function primeNpmStart(): Promise<void> {
  // A bundle older than the sources is rebuilt (and its code cache dropped) by the next start: that start is this one.
  if (!existsSync(CODE_CACHE) || changedInputs(START_BUNDLE_DIR).length > 0)
    await npmStartToFirst402(60_000, () => existsSync(CODE_CACHE));
}

/** What is left in dist/start/ before each measured run. */
const MODES = {
  warm: "warm: a repeated start (bundle and code cache present)",
  first: "first: the first start after npm ci (its prepare step built the bundle; no code cache yet)",
  cold: "cold: no bundle at all (as after a source change, or an npm ci run with --ignore-scripts)",
} as const;

if (process.argv[1]?.endsWith("startup.ts")) {
  const runs = Math.min(Math.max(Number(process.argv[2]) || 3, 1), 10);
  const mode: keyof typeof MODES = process.argv.includes("--cold")
    ? "cold"
    : process.argv.includes("--first")
      ? "first"
      : "warm";
  await primeNpmStart();
  process.stdout.write(`${MODES[mode]}\n`);
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    if (mode === "cold") rmSync(START_BUNDLE_DIR, { recursive: true, force: true });
    if (mode === "first") rmSync(CODE_CACHE, { force: true });
    times.push(await npmStartToFirst402());
    process.stdout.write(`run ${i + 1}: npm start → first 402 in ${times.at(-1)?.toFixed(0)} ms\n`);
  }
  times.sort((a, b) => a - b);
  process.stdout.write(
    `npm start → first 402: min ${times[0]?.toFixed(0)} / median ${times[Math.floor(times.length / 2)]?.toFixed(0)} / max ${times.at(-1)?.toFixed(0)} ms over ${runs} runs\n`,
  );
}
