/** Child processes of the bench: started by path, stopped by their own pid, measured through /proc. */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

export const ROOT = fileURLToPath(new URL("../..", import.meta.url));

export interface BenchProcess {
  url: string;
  child: ChildProcess;
  /** Milliseconds from spawn to its READY line. */
  readyMs: number;
  stop(): Promise<void>;
}

/** Whether `taskset` can pin a process to a core here (Linux with util-linux, more than one CPU). */
export const canPin = (() => {
  try {
    return spawnSync("taskset", ["-p", String(process.pid)], { encoding: "utf8" }).status === 0;
  } catch {
    return false;
  }
})();

/** Pins a running process (and its threads) to the given CPU list; false when taskset is unavailable. */
export function pinProcess(pid: number, cpus: string): boolean {
  if (!canPin) return false;
  return spawnSync("taskset", ["-a", "-p", "-c", cpus, String(pid)], { stdio: "ignore" }).status === 0;
}

/** Runs `node --import tsx <script> ...args` and waits for `READY <url>` on its stdout. */
export async function startBenchProcess(
  script: string,
  args: string[],
  timeoutMs = 60_000,
  env: Record<string, string> = {},
  /** Extra node flags, e.g. `--cpu-prof` (not allowed in NODE_OPTIONS). */
  nodeArgs: readonly string[] = [],
  /** Another checkout to run the script in (an earlier commit's tree), and CPUs to pin the process to (taskset -c). */
  where: { cwd?: string; cpus?: string } = {},
): Promise<BenchProcess> {
  const t0 = performance.now();
  const command = [process.execPath, ...nodeArgs, "--import", "tsx", script, ...args];
  // taskset execs node in place, so the child's pid is the server's own (its /proc CPU time).
  const pinned = where.cpus !== undefined && canPin ? ["taskset", "-c", where.cpus, ...command] : command;
  const child = spawn(pinned[0] as string, pinned.slice(1), {
    cwd: where.cwd ?? ROOT,
    env: { ...process.env, NODE_ENV: "test", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stderr?.on("data", (c: Buffer) => {
    out += c.toString("utf8");
  });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${script} ${args[0] ?? ""} not ready within ${timeoutMs} ms:\n${out.slice(-2000)}`));
    }, timeoutMs);
    child.stdout?.on("data", (c: Buffer) => {
      out += c.toString("utf8");
      const m = /READY (\S+)/.exec(out);
      if (m?.[1]) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${script} ${args[0] ?? ""} exited (${signal ?? code}):\n${out.slice(-2000)}`));
    });
  });
  const readyMs = performance.now() - t0;
  return { url, child, readyMs, stop: () => stopChild(child) };
}

export function stopChild(child: ChildProcess, graceMs = 5_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const force = setTimeout(() => child.kill("SIGKILL"), graceMs);
    child.once("exit", () => {
      clearTimeout(force);
      resolve();
    });
    child.kill("SIGTERM");
  });
}

/** Resident set size now and at its peak (VmHWM), in MiB, of one process. */
/**
 * CPU time (user + system) a process has used so far, in ms, from /proc (Linux; undefined elsewhere). The difference
 * over a case divided by its requests is the server's CPU per request: unlike req/s it does not move with how much
 * CPU the neighbours (autocannon, the facilitator, other work on the machine) leave to the server.
 */
export function cpuMsOf(pid: number): number | undefined {
  try {
    // Fields after the command name: utime and stime are the 12th and 13th, in clock ticks (100 per second).
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return undefined;
  }
}

export function memoryOf(pid: number): { rssMiB: number; peakMiB: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = (field: string) =>
    Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? Number.NaN);
  return { rssMiB: kib("VmRSS") / 1024, peakMiB: kib("VmHWM") / 1024 };
}

/** Polls `url` until it answers `status`; resolves with the milliseconds since `t0`. */
export async function waitForStatus(
  url: string,
  status: number,
  t0: number,
  timeoutMs: number,
): Promise<number> {
  for (;;) {
    try {
      const res = await fetch(url);
      await res.arrayBuffer();
      if (res.status === status) return performance.now() - t0;
    } catch {
      // not listening yet
    }
    if (performance.now() - t0 > timeoutMs)
      throw new Error(`${url} did not answer ${status} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
