/**
 * `npm run bench -- --compare <commit> [--rounds 3]`: the working tree against an earlier commit on the same machine,
 * in the same run. The commit is checked out in its own git worktree (var/bench-trees/<sha>, reused by later runs,
 * sharing this checkout's node_modules) and its own `scripts/bench/serve.ts pressure402` runs it, so each tree
 * serves with its own code through the same loader (tsx). Beside them: bare Fastify replying the very bytes of the
 * working tree's 402 (`fastify-same`) and `@x402/hono` 2.27, all paying through one instant facilitator.
 *
 * Rounds alternate: every server once per round, the order rotating; each ratio is taken within a round and printed
 * as median (min–max) over rounds. Servers are pinned to one core and the load generator and facilitator to the other
 * (taskset, when the machine has it and two cores), so a server never shares its core with the load it answers.
 *
 * `--compare <file.json>` reads the earlier side from a result a previous `--compare … --json <file>` saved (its
 * "today" figures become the earlier side): no worktree, but the two sides were then not measured in one run, so
 * only figures from the same quiet machine compare.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import { type LoadResult, runLoad, type Spread, spread } from "./load.js";
import { type BenchProcess, canPin, pinProcess, ROOT, startBenchProcess } from "./processes.js";
import { paymentHeaders, requirementsOf, signAuthorizations } from "./proofs.js";
import { BENCH_PAY_TO, BENCH_ROUTE, captureReply } from "./serve.js";

export type CompareTarget = { kind: "commit"; ref: string } | { kind: "saved"; file: string };

/** `--compare` names a saved result (an existing .json file) or anything git resolves to a commit. */
export function compareTarget(
  arg: string,
  fileExists: (path: string) => boolean = existsSync,
): CompareTarget {
  if (arg.trim() === "")
    throw new Error("--compare: give a commit (hash, tag, branch) or a saved result .json");
  if (arg.endsWith(".json")) {
    if (!fileExists(arg)) throw new Error(`--compare: no saved result at ${arg}`);
    return { kind: "saved", file: arg };
  }
  return { kind: "commit", ref: arg };
}

/** Per-round ratios a[i] / b[i] (rounds where either side is missing or not a positive number are skipped). */
export function roundRatios(a: readonly number[], b: readonly number[]): number[] {
  const out: number[] = [];
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const x = a[i] as number;
    const y = b[i] as number;
    if (Number.isFinite(x) && Number.isFinite(y) && x > 0 && y > 0) out.push(x / y);
  }
  return out;
}

/** The spread of the per-round ratios a/b: each round's two figures come from the same minutes of the machine. */
export const ratioSpread = (a: readonly number[], b: readonly number[]): Spread => spread(roundRatios(a, b));

export const formatSpread = (s: Spread, digits = 2): string =>
  Number.isFinite(s.median)
    ? `${s.median.toFixed(digits)} (${s.min.toFixed(digits)}–${s.max.toFixed(digits)})`
    : "unknown";

/** Where a ratio's range lies against its goal: met in every round, in none, or a range across it (no result). */
export function verdict(s: Spread, op: "≥" | "≤", goal: number): "met" | "not met" | "straddles" {
  if (!Number.isFinite(s.median)) return "not met";
  const every = op === "≥" ? s.min >= goal : s.max <= goal;
  const none = op === "≥" ? s.max < goal : s.min > goal;
  return every ? "met" : none ? "not met" : "straddles";
}

type Side = "previous" | "today" | "fastify" | "hono";

/** What one compare run measured, per side, one entry per round. */
export interface CompareResult {
  previous: string;
  today: string;
  rounds: number;
  pinned: boolean;
  /** The earlier side was read from a saved run, not measured in this one. */
  saved?: boolean;
  unpaid: Partial<Record<Side, LoadResult[]>>;
  paid: Partial<Record<Side, LoadResult[]>>;
  /** Bytes on the wire per answer (headers and body), per side. */
  bytes: Partial<Record<Side, { unpaid402?: number; paid200?: number }>>;
}

const git = (args: string[], cwd = ROOT): string => {
  const r = spawnSync("git", args, { cwd, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr.trim()}`);
  return r.stdout.trim();
};

/** Dependencies and devDependencies that differ between two package.json files (name: before → after). */
export function dependencyDrift(before: string, after: string): string[] {
  const deps = (text: string): Record<string, string> => {
    const p = JSON.parse(text) as {
      dependencies?: Record<string, string>;
      devDependencies?: Record<string, string>;
    };
    return { ...p.dependencies, ...p.devDependencies };
  };
  const a = deps(before);
  const b = deps(after);
  return [...new Set([...Object.keys(a), ...Object.keys(b)])]
    .filter((k) => a[k] !== b[k])
    .sort()
    .map((k) => `${k}: ${a[k] ?? "absent"} → ${b[k] ?? "absent"}`);
}

/** The commit's worktree (created once, then reused), with this checkout's node_modules linked in. */
function treeOf(ref: string, log: (line: string) => void): { dir: string; sha: string } {
  const sha = git(["rev-parse", "--verify", `${ref}^{commit}`]);
  const dir = join(ROOT, "var", "bench-trees", sha.slice(0, 12));
  if (!existsSync(join(dir, "package.json"))) git(["worktree", "add", "--detach", "--force", dir, sha]);
  if (!existsSync(join(dir, "node_modules")))
    symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"));
  if (!existsSync(join(dir, "scripts", "bench", "serve.ts")))
    throw new Error(`${ref} has no scripts/bench/serve.ts: too old for --compare`);
  const drift = dependencyDrift(
    readFileSync(join(dir, "package.json"), "utf8"),
    readFileSync(join(ROOT, "package.json"), "utf8"),
  );
  if (drift.length)
    log(
      `note: ${ref} declares other dependencies than the working tree; it runs on today's: ${drift.join(", ")}`,
    );
  return { dir, sha };
}

const rotate = <T>(xs: readonly T[], by: number): T[] => xs.map((_, i) => xs[(i + by) % xs.length] as T);

function checked(name: string, r: LoadResult): LoadResult {
  if (r.unexpected > 0 || r.errors > 0)
    throw new Error(
      `${name}: ${r.unexpected} unexpected statuses and ${r.errors} errors in ${r.requests} requests (${JSON.stringify(r.statuses ?? {})})`,
    );
  return r;
}

/** Status line, headers and body of one answer, as sent (fetch hides the status line and decodes). */
async function wireBytes(url: string, headers: Record<string, string> = {}): Promise<number> {
  const res = await fetch(url, { headers });
  const body = Buffer.from(await res.arrayBuffer());
  let n = `HTTP/1.1 ${res.status} ${res.statusText}\r\n`.length + 2 + body.length;
  res.headers.forEach((v, k) => {
    n += k.length + 2 + v.length + 2;
  });
  return n;
}

export interface CompareOptions {
  target: CompareTarget;
  rounds: number;
  seconds: number;
  paid: number;
  procs: BenchProcess[];
  tmp: string;
  log: (line: string) => void;
}

export async function benchCompare(o: CompareOptions): Promise<CompareResult> {
  const { rounds, seconds, paid: PAID, procs, tmp, log } = o;
  const saved =
    o.target.kind === "saved"
      ? (JSON.parse(readFileSync(o.target.file, "utf8")) as { compare?: CompareResult })
      : undefined;
  if (saved && !saved.compare)
    throw new Error(`${(o.target as { file: string }).file}: no "compare" result in it`);
  const tree = o.target.kind === "commit" ? treeOf(o.target.ref, log) : undefined;
  const dirty = git(["status", "--porcelain", "--untracked-files=no"]) !== "";
  const today = `${git(["rev-parse", "--short=12", "HEAD"])}${dirty ? " + uncommitted changes" : ""}`;
  const previous = tree
    ? tree.sha.slice(0, 12)
    : `${saved?.compare?.today} (saved in ${(o.target as { file: string }).file})`;
  // The load generator (this process) and the facilitator on core 0, every server on core 1.
  const pinned = canPin && cpus().length >= 2 && pinProcess(process.pid, "0");
  const serverCpu = pinned ? { cpus: "1" } : {};
  log(
    `compare: working tree ${today} against ${previous}, ${rounds} rounds, ${pinned ? "servers pinned to CPU 1, load and facilitator to CPU 0" : "not pinned (no taskset or one CPU)"}`,
  );

  const facilitator = await startBenchProcess("scripts/bench/instant-facilitator.ts", []);
  procs.push(facilitator);
  const fac = facilitator.url;
  const env = { TMPDIR: tmp };
  const start = async (side: Side, kind: string, file = "", cwd?: string) => {
    const p = await startBenchProcess("scripts/bench/serve.ts", [kind, fac, file], 90_000, env, [], {
      ...serverCpu,
      ...(cwd ? { cwd } : {}),
    });
    procs.push(p);
    return [side, p] as const;
  };
  const servers = new Map<Side, BenchProcess>();
  const [, todayServer] = await start("today", "pressure402");
  servers.set("today", todayServer);
  if (tree) {
    const [, prev] = await start("previous", "pressure402", "", tree.dir);
    servers.set("previous", prev);
  }
  const unpaidUrl = (s: Side) => `${(servers.get(s) as BenchProcess).url}${BENCH_ROUTE}?days=30`;

  // The references answer with today's bytes: the same 402 for bare Fastify, the same paid body for hono.
  const sameFile = join(tmp, "same-402.json");
  writeFileSync(sameFile, JSON.stringify(await captureReply(unpaidUrl("today"))));
  const pool = await signAuthorizations(rounds * PAID + 4, BENCH_PAY_TO, "20000", {
    distinctPayers: true,
  });
  const probeProof = async (s: Side, i: number) =>
    paymentHeaders(
      pool.slice(rounds * PAID + i, rounds * PAID + i + 1),
      await requirementsOf(unpaidUrl(s)),
    )[0] as string;
  const paidBody = await (
    await fetch(unpaidUrl("today"), { headers: { "payment-signature": await probeProof("today", 0) } })
  ).text();
  const paidFile = join(tmp, "paid-body.json");
  writeFileSync(paidFile, paidBody);
  servers.set("fastify", (await start("fastify", "fastify-same", sameFile))[1]);
  servers.set("hono", (await start("hono", "hono", paidFile))[1]);

  const bytes: CompareResult["bytes"] = {};
  for (const s of servers.keys()) {
    bytes[s] = { unpaid402: await wireBytes(unpaidUrl(s)) };
  }
  let probe = 1;
  for (const s of ["today", "previous"] as const)
    if (servers.has(s))
      (bytes[s] as { paid200?: number }).paid200 = await wireBytes(unpaidUrl(s), {
        "payment-signature": await probeProof(s, probe++),
      });
  const pids = (s: Side) => (servers.get(s) as BenchProcess).child.pid;
  const unpaidSides = [...servers.keys()];
  const paidSides = unpaidSides.filter((s) => s !== "fastify");
  const expected = (s: Side) =>
    s === "fastify" ? (JSON.parse(readFileSync(sameFile, "utf8")) as { status: number }).status : 402;

  for (const s of unpaidSides)
    await runLoad({ url: unpaidUrl(s), connections: 32, durationS: 2, expectStatus: expected(s) });

  const headersFor = new Map<Side, string[]>();
  for (const s of paidSides)
    headersFor.set(s, paymentHeaders(pool.slice(0, rounds * PAID), await requirementsOf(unpaidUrl(s))));
  const result: CompareResult = { previous, today, rounds, pinned, unpaid: {}, paid: {}, bytes };
  const push = (m: Partial<Record<Side, LoadResult[]>>, s: Side, r: LoadResult) => {
    m[s] = [...(m[s] ?? []), r];
  };
  for (let r = 0; r < rounds; r++) {
    for (const s of rotate(unpaidSides, r))
      push(
        result.unpaid,
        s,
        checked(
          `unpaid ${s}`,
          await runLoad({
            url: unpaidUrl(s),
            connections: 32,
            durationS: seconds,
            expectStatus: expected(s),
            serverPid: pids(s),
          }),
        ),
      );
    for (const s of rotate(paidSides, r)) {
      const list = headersFor.get(s) as string[];
      let i = r * PAID;
      const end = (r + 1) * PAID;
      push(
        result.paid,
        s,
        checked(
          `paid ${s}`,
          await runLoad({
            url: unpaidUrl(s),
            connections: 32,
            amount: PAID,
            maxSeconds: 8,
            expectStatus: 200,
            serverPid: pids(s),
            perRequest: { name: "payment-signature", next: () => list[Math.min(i++, end - 1)] as string },
          }),
        ),
      );
    }
    log(
      `round ${r + 1}: unpaid ${unpaidSides.map((s) => `${s} ${Math.round(result.unpaid[s]?.[r]?.reqPerSec ?? 0)}/s`).join(", ")}; paid ${paidSides.map((s) => `${s} ${Math.round(result.paid[s]?.[r]?.reqPerSec ?? 0)}/s`).join(", ")}`,
    );
  }
  if (saved?.compare) {
    // The saved run's working tree is this run's earlier side.
    result.unpaid.previous = saved.compare.unpaid.today;
    result.paid.previous = saved.compare.paid.today;
    result.bytes.previous = saved.compare.bytes.today;
    result.saved = true;
  }
  return result;
}

const rates = (rs: LoadResult[] | undefined) => (rs ?? []).map((r) => r.reqPerSec);
const cpuOf = (rs: LoadResult[] | undefined) => (rs ?? []).map((r) => r.cpuUsPerRequest);

/** The report: per-side figures, then every ratio with its spread over rounds and the issue's goal beside it. */
export function compareReport(c: CompareResult): string[] {
  const lines: string[] = [];
  const pad = (s: string, n: number) => s.padEnd(n);
  lines.push(
    `previous = ${c.previous}; today = ${c.today}; ${c.rounds} rounds${c.pinned ? ", servers pinned" : ""}`,
  );
  if (c.saved)
    lines.push(
      "previous is a saved run: its ratios to today are across runs, valid only on the same quiet machine",
    );
  lines.push("");
  lines.push(
    `${pad("per side: median (min–max) over rounds", 44)} ${pad("req/s", 24)} ${pad("server CPU µs/req", 24)} bytes/answer`,
  );
  for (const [phase, m] of [
    ["unpaid", c.unpaid],
    ["paid", c.paid],
  ] as const)
    for (const s of ["previous", "today", "fastify", "hono"] as const) {
      const rs = m[s];
      if (!rs?.length) continue;
      const b = c.bytes[s]?.[phase === "unpaid" ? "unpaid402" : "paid200"];
      lines.push(
        `  ${pad(`${phase} ${s === "fastify" ? "bare Fastify, same bytes" : s === "hono" ? "@x402/hono" : s}`, 42)} ${pad(formatSpread(spread(rates(rs)), 0), 24)} ${pad(formatSpread(spread(cpuOf(rs)), 0), 24)} ${b ?? ""}`,
      );
    }
  lines.push("");
  lines.push(`${pad("ratio, each within one round", 60)} ${pad("median (min–max)", 20)} goal`);
  const row = (name: string, s: Spread, goal?: { op: "≥" | "≤"; v: number }) => {
    const mark = goal ? `${goal.op} ${goal.v}  ${verdict(s, goal.op, goal.v)}` : "";
    lines.push(`  ${pad(name, 58)} ${pad(formatSpread(s), 20)} ${mark}`);
  };
  if (c.unpaid.previous?.length) {
    row("unpaid req/s: today / previous", ratioSpread(rates(c.unpaid.today), rates(c.unpaid.previous)), {
      op: "≥",
      v: 1,
    });
    row("unpaid CPU/req: today / previous", ratioSpread(cpuOf(c.unpaid.today), cpuOf(c.unpaid.previous)), {
      op: "≤",
      v: 1,
    });
    row("paid req/s: today / previous", ratioSpread(rates(c.paid.today), rates(c.paid.previous)), {
      op: "≥",
      v: 1,
    });
    row("paid CPU/req: today / previous", ratioSpread(cpuOf(c.paid.today), cpuOf(c.paid.previous)), {
      op: "≤",
      v: 1,
    });
  }
  // A saved earlier side has its own references in its own file: here only today's are compared with this run's.
  for (const s of c.saved ? (["today"] as const) : (["previous", "today"] as const)) {
    if (!c.unpaid[s]?.length) continue;
    row(
      `402 req/s: ${s} / bare Fastify (same bytes)`,
      ratioSpread(rates(c.unpaid[s]), rates(c.unpaid.fastify)),
      s === "today" ? { op: "≥", v: 0.8 } : undefined,
    );
    row(
      `402 req/s: ${s} / @x402/hono`,
      ratioSpread(rates(c.unpaid[s]), rates(c.unpaid.hono)),
      s === "today" ? { op: "≥", v: 2 } : undefined,
    );
    row(
      `402 CPU/req: ${s} / bare Fastify (same bytes)`,
      ratioSpread(cpuOf(c.unpaid[s]), cpuOf(c.unpaid.fastify)),
    );
    row(
      `paid req/s: ${s} / @x402/hono`,
      ratioSpread(rates(c.paid[s]), rates(c.paid.hono)),
      s === "today" ? { op: "≥", v: 2.5 } : undefined,
    );
    row(
      `paid CPU/req: ${s} / @x402/hono`,
      ratioSpread(cpuOf(c.paid[s]), cpuOf(c.paid.hono)),
      s === "today" ? { op: "≤", v: 0.25 } : undefined,
    );
  }
  return lines;
}
