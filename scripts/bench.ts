/**
 * `npm run bench`: pressure402 beside bare Fastify and the @x402/express and @x402/hono reference sellers, each in its
 * own process, all paying through one shared instant facilitator (its own process), driven by autocannon from this
 * process over 127.0.0.1. Rounds are interleaved (every server once per round, the order rotating) so a noisy
 * neighbour slows every server alike, and each ratio is taken within a round; the report gives min/median/max over
 * rounds. Then the same for a 100k-event store (synthetic bench data in a temp file), its start-up time and memory,
 * and `npm start` to the first 402. See docs/performance.md for how to read it.
 *
 *   npm run bench -- [--rounds 3] [--seconds 3] [--paid 1500] [--store-requests 150] [--events 100000] [--skip-startup]
 *                    [--free-paid 60] [--json out.json] [--only store|http|free|refresh|mcp|answers] [--cpu-prof DIR]
 *
 * `--only store` runs just the 100k-event store section (its own proofs, no reference sellers, no npm start);
 * `--only http` just the unpaid and paid rounds beside the reference sellers (no 100k store, no npm start);
 * `--only free` just honest paid p50 during a flood of each free path vs idle (scripts/bench/free-flood.ts), which
 * the full run also does after the paid rounds.
 * `--only refresh` just the data refresh (scripts/bench/refresh.ts, its own process): time from a new candle at a
 * Binance stand-in to the answer, one refresh's duration, and RSS over 100 swaps of the unlock data; the full run
 * does it last.
 * `--only mcp` just the server's CPU per paid call of one operation over HTTP and as its MCP tool
 * (scripts/bench/mcp.ts).
 * `--compare <commit|saved.json>` runs the working tree against an earlier commit (its own worktree), interleaved on
 * the same machine, beside bare Fastify replying the same bytes and @x402/hono, and prints each ratio with its spread
 * over rounds (scripts/bench/compare.ts); with `--json out.json` the result can be compared against later.
 * `--only answers` just the bytes and estimated tokens of each unlock route's typical answer, compact, full and as
 * MCP text (scripts/bench/answer-size.ts); the full run reports them too.
 * `--cpu-prof DIR` leaves a V8 CPU profile of pressure402's seller process (unpaid and paid rounds) in DIR.
 * Besides req/s, each case reports the server's own CPU time per request (from /proc), which a busy machine moves
 * much less than throughput.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { get } from "node:http";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { answerSizes, logAnswerSizes } from "./bench/answer-size.js";
import { benchCompare, compareReport, compareTarget } from "./bench/compare.js";
import { benchFreeFlood, type FreeFloodResult, freeFloodPool, logFreeFlood } from "./bench/free-flood.js";
import { type LoadResult, runLoad, runSequential, type Spread, spread } from "./bench/load.js";
import { benchMcp, logMcp } from "./bench/mcp.js";
import { type BenchProcess, memoryOf, startBenchProcess } from "./bench/processes.js";
import { paymentHeaders, requirementsOf, signAuthorizations } from "./bench/proofs.js";
import { BENCH_PAY_TO, BENCH_ROUTE } from "./bench/serve.js";
import { npmStartToFirst402, primeNpmStart, startService } from "./bench/startup.js";
import { writeSyntheticStore } from "./bench/synthetic-store.js";

const { values: args } = parseArgs({
  options: {
    rounds: { type: "string", default: "3" },
    seconds: { type: "string", default: "3" },
    paid: { type: "string", default: "1500" },
    "store-requests": { type: "string", default: "150" },
    "free-paid": { type: "string", default: "60" },
    events: { type: "string", default: "100000" },
    "skip-startup": { type: "boolean", default: false },
    /** A directory: pressure402's seller process writes a V8 CPU profile of its run there (for `--cpu-prof`). */
    "cpu-prof": { type: "string" },
    json: { type: "string" },
    only: { type: "string" },
    compare: { type: "string" },
  },
});
const clamp = (v: string | undefined, lo: number, hi: number, dflt: number) =>
  Math.min(Math.max(Number(v) || dflt, lo), hi);
const ROUNDS = clamp(args.rounds, 1, 7, 3);
const SECONDS = clamp(args.seconds, 1, 15, 3);
/** Caps on the fixed-amount cases, so a slow server (or a busy machine) cannot stretch the bench past ~5 minutes. */
const PAID_MAX_SECONDS = 8;
const STORE_MAX_SECONDS = 6;
const PAID = clamp(args.paid, 100, 5000, 1500);
const STORE_REQUESTS = clamp(args["store-requests"], 50, 1000, 150);
const EVENTS = clamp(args.events, 1000, 200_000, 100_000);
const CONNECTIONS = 32;
const PRICE_ATOMIC = "20000";
const UNPAID_PATH = `${BENCH_ROUTE}?days=30`;
/** Every paid call a purchase of its own (one payer's repeats would be re-reads of its first: proofs.ts). */
const DISTINCT = { distinctPayers: true };
const FREE_PAID = clamp(args["free-paid"], 20, 500, 60);
if (
  args.only !== undefined &&
  args.only !== "store" &&
  args.only !== "http" &&
  args.only !== "free" &&
  args.only !== "refresh" &&
  args.only !== "mcp" &&
  args.only !== "answers"
)
  throw new Error(`--only: unknown section ${args.only}`);
const ONLY_STORE = args.only === "store";
const ONLY_HTTP = args.only === "http";
const ONLY_FREE = args.only === "free";
const ONLY_REFRESH = args.only === "refresh";
const ONLY_MCP = args.only === "mcp";

const log = (line: string) => process.stdout.write(`${line}\n`);
const fmt = (n: number, d = 0) => (Number.isFinite(n) ? n.toFixed(d) : "unknown");
const fmtSpread = (s: Spread, d = 2) => `${fmt(s.median, d)} (${fmt(s.min, d)}–${fmt(s.max, d)})`;

/** The refresh section in a process of its own (its RSS is the refresh's alone); its lines are passed through. */
function benchRefresh(): unknown {
  const res = spawnSync(process.execPath, ["--expose-gc", "--import", "tsx", "scripts/bench/refresh.ts"], {
    encoding: "utf8",
    timeout: 15 * 60_000,
  });
  const lines = (res.stdout ?? "").trim().split("\n");
  for (const l of lines) if (!l.startsWith("REFRESH_BENCH ")) log(l);
  if (res.status !== 0) throw new Error(`refresh bench: ${res.stderr.trim().split("\n")[0] ?? res.status}`);
  const json = lines.find((l) => l.startsWith("REFRESH_BENCH "));
  return json ? JSON.parse(json.slice("REFRESH_BENCH ".length)) : null;
}

type Seller = "pressure402" | "fastify" | "express" | "hono";
const rotate = <T>(xs: readonly T[], by: number): T[] => xs.map((_, i) => xs[(i + by) % xs.length] as T);

/** The bytes on the wire (fetch would decode them) and the encoding the server chose. */
function rawBytes(
  url: string,
  headers: Record<string, string>,
): Promise<{ bytes: number; encoding: string }> {
  return new Promise((resolve, reject) => {
    get(url, { headers }, (res) => {
      let bytes = 0;
      res.on("data", (c: Buffer) => {
        bytes += c.length;
      });
      res.on("end", () => {
        if (res.statusCode !== 200) reject(new Error(`${url}: ${res.statusCode}`));
        else resolve({ bytes, encoding: String(res.headers["content-encoding"] ?? "identity") });
      });
    }).on("error", reject);
  });
}

function push(into: Record<string, LoadResult[]>, key: string, r: LoadResult): void {
  const list = into[key] ?? [];
  list.push(r);
  into[key] = list;
}

/** Fails the whole bench on a wrong status: a fast wrong answer must never read as a fast server. */
function checked(name: string, r: LoadResult): LoadResult {
  if (r.unexpected > 0 || r.errors > 0)
    throw new Error(
      `${name}: ${r.unexpected} unexpected statuses and ${r.errors} errors in ${r.requests} requests${r.statuses ? ` (by status: ${JSON.stringify(r.statuses)})` : ""}`,
    );
  return r;
}

interface StoreContext {
  tmp: string;
  fac: string;
  childEnv: Record<string, string>;
  pool: Awaited<ReturnType<typeof signAuthorizations>>;
  procs: BenchProcess[];
  sampleLoad: () => void;
}

type StoreCase = { name: string; connections: number; headers: Record<string, string> };

interface StoreResult {
  store: ReturnType<typeof writeSyntheticStore>;
  bigStart: { readyMs: number; rssMiB: number; peakMiB: number };
  bigEnd: { rssMiB: number; peakMiB: number };
  bigCases: StoreCase[];
  bigResults: Record<string, LoadResult[]>;
  bodySize: { bytes: number; encoding: string };
  bodySizeBr: { bytes: number; encoding: string };
}

/** Proofs the store section spends: 3 cases × rounds of requests, plus what autocannon prepares, plus 2 probes. */
const STORE_POOL = 3 * ROUNDS * (STORE_REQUESTS + CONNECTIONS) + 2;

/** pressure402 over the synthetic 100k-event store: start-up, memory, body size, paid upcoming latency. */
async function benchStore({
  tmp,
  fac,
  childEnv,
  pool,
  procs,
  sampleLoad,
}: StoreContext): Promise<StoreResult> {
  const store = writeSyntheticStore(join(tmp, "synthetic-bench-unlocks.json"), EVENTS);
  log(
    `synthetic bench store: ${store.events} events, ${store.tokens} tokens, ${fmt(store.bytes / 1e6, 1)} MB (temp file, deleted at the end)`,
  );
  // The product as operators run it (npm start's bundle), on the embedded SQLite ledger, paying through the instant
  // facilitator instead of the devnet; logs at warn, as the other sellers log nothing per request.
  await primeNpmStart();
  const big = await startService({
    ...childEnv,
    NODE_ENV: "development",
    LOG_LEVEL: "warn",
    FACILITATOR_URL: fac,
    PAY_TO: BENCH_PAY_TO,
    UNLOCKS_SNAPSHOT: store.path,
    LEDGER_PATH: join(tmp, "store-ledger", "ledger.sqlite"),
    RATE_LIMIT_MAX: "1000000000",
    MAX_EVENT_LOOP_DELAY_MS: "0",
  });
  procs.push(big);
  const bigStart = { readyMs: big.readyMs, ...memoryOf(big.child.pid as number) };
  log(
    `100k store: node scripts/start.mjs → first 402 in ${fmt(big.readyMs)} ms, RSS ${fmt(bigStart.rssMiB)} MiB after start`,
  );
  const bigTerms = await requirementsOf(`${big.url}${UNPAID_PATH}`);
  const bigHeaders = paymentHeaders(pool, bigTerms);
  let next = 0;
  const bigProof = {
    name: "payment-signature",
    next: () => bigHeaders[next++ % bigHeaders.length] as string,
  };
  // Every request needs an unspent proof; autocannon may prepare up to one extra request per connection per case.
  const BIG_N = Math.min(STORE_REQUESTS, Math.floor((bigHeaders.length - 2) / (3 * ROUNDS)) - CONNECTIONS);
  const bigCases: { name: string; connections: number; headers: Record<string, string> }[] = [
    { name: "upcoming?days=30 paid, identity, 1 at a time", connections: 1, headers: {} },
    {
      name: "upcoming?days=30 paid, br, 1 at a time",
      connections: 1,
      headers: { "accept-encoding": "br, gzip" },
    },
    { name: "upcoming?days=30 paid, identity, 32 connections", connections: CONNECTIONS, headers: {} },
  ];
  const bigResults: Record<string, LoadResult[]> = {};
  const bodySize = await rawBytes(`${big.url}${UNPAID_PATH}`, { "payment-signature": bigProof.next() });
  const bodySizeBr = await rawBytes(`${big.url}${UNPAID_PATH}`, {
    "payment-signature": bigProof.next(),
    "accept-encoding": "br",
  });
  log(
    `100k store: upcoming?days=30 body ${fmt(bodySize.bytes / 1e6, 2)} MB identity, ${fmt(bodySizeBr.bytes / 1e3, 0)} kB ${bodySizeBr.encoding}`,
  );
  for (let r = 0; r < ROUNDS; r++) {
    for (const c of rotate(bigCases, r)) {
      const run = c.connections === 1 ? runSequential : runLoad;
      const res = checked(
        c.name,
        await run({
          url: `${big.url}${UNPAID_PATH}`,
          connections: c.connections,
          amount: BIG_N,
          maxSeconds: STORE_MAX_SECONDS,
          headers: c.headers,
          expectStatus: 200,
          serverPid: big.child.pid,
          perRequest: bigProof,
        }),
      );
      push(bigResults, c.name, res);
    }
    sampleLoad();
  }
  const bigEnd = memoryOf(big.child.pid as number);
  await big.stop();
  await big.stop();
  procs.splice(procs.indexOf(big), 1);
  return { store, bigStart, bigEnd, bigCases, bigResults, bodySize, bodySizeBr };
}

function logStore({ store, bigStart, bigEnd, bigCases, bigResults }: StoreResult): void {
  log(
    `100k-event store (${store.events} events, synthetic bench data): pressure402 with the embedded SQLite ledger`,
  );
  log(
    `  start-up (node scripts/start.mjs → first 402): ${fmt(bigStart.readyMs)} ms (target < 2000)   RSS after start ${fmt(bigStart.rssMiB)} MiB, after the rounds ${fmt(bigEnd.rssMiB)} MiB, peak ${fmt(bigEnd.peakMiB)} MiB (target < 300)`,
  );
  for (const c of bigCases) {
    const rs = bigResults[c.name]!;
    log(
      `  ${c.name.padEnd(50)} ${fmtSpread(spread(rs.map((x) => x.reqPerSec)), 0)} req/s   p50 ${fmtSpread(spread(rs.map((x) => x.p50Ms)), 1)} ms   p99 ${fmtSpread(spread(rs.map((x) => x.p99Ms)), 1)} ms   server CPU ${fmtSpread(spread(rs.map((x) => x.cpuUsPerRequest)), 0)} µs/req`,
    );
  }
}

const storeReport = (r: StoreResult) => ({
  events: r.store.events,
  tokens: r.store.tokens,
  snapshotBytes: r.store.bytes,
  bodyBytes: r.bodySize,
  bodyBytesBr: r.bodySizeBr,
  start: r.bigStart,
  end: r.bigEnd,
  cases: r.bigResults,
});

async function main(): Promise<void> {
  const started = performance.now();
  const tmp = mkdtempSync(join(tmpdir(), "p402-bench-"));
  const procs: BenchProcess[] = [];
  const report: Record<string, unknown> = {
    node: process.version,
    cpus: cpus().length,
    loadavg: [] as number[][],
    config: {
      rounds: ROUNDS,
      seconds: SECONDS,
      paidPerRound: PAID,
      connections: CONNECTIONS,
      events: EVENTS,
    },
  };
  const sampleLoad = () => (report.loadavg as number[][]).push(loadavg());
  try {
    log(
      `bench: ${ROUNDS} interleaved rounds, ${CONNECTIONS} connections, Node ${process.version}, ${cpus().length} CPUs`,
    );
    sampleLoad();
    if (args.compare !== undefined) {
      const compare = await benchCompare({
        target: compareTarget(args.compare),
        rounds: ROUNDS,
        seconds: SECONDS,
        paid: PAID,
        procs,
        tmp,
        log,
      });
      sampleLoad();
      log("");
      for (const line of compareReport(compare)) log(line);
      log(
        `\nload average (1 min) during the run: ${(report.loadavg as number[][]).map((l) => fmt(l[0] ?? Number.NaN, 1)).join(", ")} on ${cpus().length} CPUs`,
      );
      log(`bench took ${fmt((performance.now() - started) / 1000, 0)} s`);
      Object.assign(report, { compare });
      if (args.json) writeFileSync(args.json, `${JSON.stringify(report, null, 2)}\n`);
      return;
    }
    // Sizes are computed in process and do not depend on load: measured first, reported with the rest.
    const at = new Date();
    const answers = await answerSizes(at);
    logAnswerSizes(answers, log, at);
    report.answers = answers;
    if (args.only === "answers") {
      if (args.json) writeFileSync(args.json, `${JSON.stringify(report, null, 2)}\n`);
      return;
    }
    if (ONLY_REFRESH) {
      Object.assign(report, { refresh: benchRefresh() });
      if (args.json) writeFileSync(args.json, `${JSON.stringify(report, null, 2)}\n`);
      return;
    }
    if (ONLY_MCP) {
      const mcp = await benchMcp({ calls: 200, rounds: ROUNDS, procs });
      logMcp(mcp, log);
      Object.assign(report, { mcp });
      if (args.json) writeFileSync(args.json, `${JSON.stringify(report, null, 2)}\n`);
      return;
    }
    const facilitator = await startBenchProcess("scripts/bench/instant-facilitator.ts", []);
    procs.push(facilitator);
    const fac = facilitator.url;
    if (ONLY_STORE) {
      const pool = await signAuthorizations(STORE_POOL + 1, BENCH_PAY_TO, PRICE_ATOMIC, DISTINCT);
      const big = await benchStore({ tmp, fac, childEnv: { TMPDIR: tmp }, pool, procs, sampleLoad });
      log("");
      logStore(big);
      log(
        `\nload average (1 min) during the run: ${(report.loadavg as number[][]).map((l) => fmt(l[0] ?? Number.NaN, 1)).join(", ")} on ${cpus().length} CPUs`,
      );
      log(`bench took ${fmt((performance.now() - started) / 1000, 0)} s`);
      Object.assign(report, { store100k: storeReport(big) });
      if (args.json) writeFileSync(args.json, `${JSON.stringify(report, null, 2)}\n`);
      return;
    }

    // The sellers' temp files (pressure402's ledger) go under this run's temp dir, removed at the end.
    const childEnv = { TMPDIR: tmp };
    /** Honest paid p50 during a flood of each free path, on a pressure402 process of its own. */
    const freeFlood = async (): Promise<FreeFloodResult> => {
      const server = await startBenchProcess(
        "scripts/bench/serve.ts",
        ["pressure402-limited", fac, ""],
        60_000,
        childEnv,
      );
      procs.push(server);
      try {
        const freePool = await signAuthorizations(
          freeFloodPool(ROUNDS, FREE_PAID),
          BENCH_PAY_TO,
          PRICE_ATOMIC,
          DISTINCT,
        );
        return await benchFreeFlood({
          server,
          rounds: ROUNDS,
          paid: FREE_PAID,
          seconds: SECONDS,
          connections: CONNECTIONS,
          pool: freePool,
          log,
        });
      } finally {
        await server.stop();
        procs.splice(procs.indexOf(server), 1);
      }
    };
    if (ONLY_FREE) {
      const free = await freeFlood();
      sampleLoad();
      log("");
      logFreeFlood(free, log, fmtSpread);
      log(
        `\nload average (1 min) during the run: ${(report.loadavg as number[][]).map((l) => fmt(l[0] ?? Number.NaN, 1)).join(", ")} on ${cpus().length} CPUs`,
      );
      log(`bench took ${fmt((performance.now() - started) / 1000, 0)} s`);
      Object.assign(report, { freeFlood: free });
      if (args.json) writeFileSync(args.json, `${JSON.stringify(report, null, 2)}\n`);
      return;
    }
    const p402 = await startBenchProcess(
      "scripts/bench/serve.ts",
      ["pressure402", fac, ""],
      60_000,
      childEnv,
      args["cpu-prof"] ? ["--cpu-prof", `--cpu-prof-dir=${args["cpu-prof"]}`] : [],
    );
    procs.push(p402);
    // The references serve pressure402's own bodies: the same route, price and body size everywhere.
    const challenge = await fetch(`${p402.url}${UNPAID_PATH}`);
    const challengeBody = await challenge.text();
    const unpaidBodyFile = join(tmp, "402-body.json");
    writeFileSync(unpaidBodyFile, challengeBody);

    const t0 = performance.now();
    // One pool serves every seller (each has its own ledger, or none); the 100k server needs 3 cases × rounds of them.
    const poolSize = Math.max(ROUNDS * PAID, STORE_POOL) + 1;
    const pool = await signAuthorizations(poolSize, BENCH_PAY_TO, PRICE_ATOMIC, DISTINCT);
    log(
      `signed ${pool.length} EIP-3009 authorizations in ${fmt((performance.now() - t0) / 1000, 1)} s (before any round)`,
    );
    const p402Terms = await requirementsOf(`${p402.url}${UNPAID_PATH}`);
    const [firstProof] = paymentHeaders(pool.slice(-1), p402Terms);
    const paidRes = await fetch(`${p402.url}${UNPAID_PATH}`, {
      headers: { "payment-signature": firstProof as string },
    });
    const paidBody = await paidRes.text();
    if (paidRes.status !== 200)
      throw new Error(`pressure402 paid probe: ${paidRes.status} ${paidBody.slice(0, 300)}`);
    const paidBodyFile = join(tmp, "paid-body.json");
    writeFileSync(paidBodyFile, paidBody);
    log(
      `bodies: 402 ${challengeBody.length} B (PAYMENT-REQUIRED ${challenge.headers.get("payment-required")?.length} B), paid 200 ${paidBody.length} B`,
    );

    const urls: Record<Seller, string> = {
      pressure402: p402.url,
      fastify: "",
      express: "",
      hono: "",
    };
    const pids: Partial<Record<Seller, number>> = { pressure402: p402.child.pid };
    for (const [kind, file] of [
      ["fastify", unpaidBodyFile],
      ["express", paidBodyFile],
      ["hono", paidBodyFile],
    ] as const) {
      const p = await startBenchProcess("scripts/bench/serve.ts", [kind, fac, file], 60_000, childEnv);
      procs.push(p);
      urls[kind] = p.url;
      pids[kind] = p.child.pid;
    }

    // Warm-up: JIT and connection pools, not measured.
    for (const s of ["pressure402", "fastify", "express", "hono"] as const)
      await runLoad({
        url: `${urls[s]}${UNPAID_PATH}`,
        connections: CONNECTIONS,
        durationS: 2,
        expectStatus: s === "fastify" ? 200 : 402,
      });

    // ── unpaid 402 ──
    const unpaidSellers: Seller[] = ["pressure402", "fastify", "express", "hono"];
    const unpaid: Record<string, LoadResult[]> = {};
    for (let r = 0; r < ROUNDS; r++) {
      for (const s of rotate(unpaidSellers, r)) {
        const res = checked(
          `unpaid ${s}`,
          await runLoad({
            url: `${urls[s]}${UNPAID_PATH}`,
            connections: CONNECTIONS,
            durationS: SECONDS,
            expectStatus: s === "fastify" ? 200 : 402,
            serverPid: pids[s],
          }),
        );
        push(unpaid, s, res);
      }
      sampleLoad();
      log(
        `unpaid round ${r + 1}: ${unpaidSellers.map((s) => `${s} ${fmt(unpaid[s]?.[r]?.reqPerSec ?? Number.NaN)}/s`).join(", ")}`,
      );
    }

    // ── paid ──
    const paidSellers: Seller[] = ["pressure402", "express", "hono"];
    const headersFor: Record<string, string[]> = {};
    for (const s of paidSellers)
      headersFor[s] = paymentHeaders(
        pool.slice(0, ROUNDS * PAID),
        await requirementsOf(`${urls[s]}${UNPAID_PATH}`),
      );
    const paid: Record<string, LoadResult[]> = {};
    for (let r = 0; r < ROUNDS; r++) {
      for (const s of rotate(paidSellers, r)) {
        const list = headersFor[s] as string[];
        let i = r * PAID;
        const end = (r + 1) * PAID;
        const res = checked(
          `paid ${s}`,
          await runLoad({
            url: `${urls[s]}${UNPAID_PATH}`,
            connections: CONNECTIONS,
            amount: PAID,
            maxSeconds: PAID_MAX_SECONDS,
            expectStatus: 200,
            serverPid: pids[s],
            perRequest: {
              name: "payment-signature",
              next: () => {
                // autocannon may build a request or two past `amount`; those are never sent, so reuse is harmless.
                const v = list[Math.min(i++, end - 1)];
                return v as string;
              },
            },
          }),
        );
        push(paid, s, res);
      }
      sampleLoad();
      log(
        `paid round ${r + 1}: ${paidSellers.map((s) => `${s} ${fmt(paid[s]?.[r]?.reqPerSec ?? Number.NaN)}/s`).join(", ")}`,
      );
    }
    for (const p of procs.splice(1)) await p.stop(); // keep only the facilitator

    // ── free paths under a flood ──
    const free = ONLY_HTTP ? undefined : await freeFlood();

    // ── 100k-event store ──
    const big = ONLY_HTTP ? undefined : await benchStore({ tmp, fac, childEnv, pool, procs, sampleLoad });

    // ── npm start ──
    const npmStart: number[] = [];
    if (!args["skip-startup"] && !ONLY_HTTP) {
      await primeNpmStart(); // the figures are repeated (warm) starts; `scripts/bench/startup.ts --first|--cold` for others
      for (let i = 0; i < 3; i++) npmStart.push(await npmStartToFirst402());
    }

    // ── report ──
    log("");
    log("Throughput (req/s) per server: median (min–max) over rounds");
    const cpuOf = (rs: LoadResult[]) => fmtSpread(spread(rs.map((x) => x.cpuUsPerRequest)), 0);
    for (const s of unpaidSellers)
      log(
        `  unpaid  ${s.padEnd(12)} ${fmtSpread(spread(unpaid[s]!.map((x) => x.reqPerSec)), 0)}   p99 ${fmtSpread(spread(unpaid[s]!.map((x) => x.p99Ms)), 1)} ms   server CPU ${cpuOf(unpaid[s]!)} µs/req`,
      );
    for (const s of paidSellers)
      log(
        `  paid    ${s.padEnd(12)} ${fmtSpread(spread(paid[s]!.map((x) => x.reqPerSec)), 0)}   p99 ${fmtSpread(spread(paid[s]!.map((x) => x.p99Ms)), 1)} ms   server CPU ${cpuOf(paid[s]!)} µs/req`,
      );
    const ratio = (m: Record<string, LoadResult[]>, a: string, b: string) =>
      spread(m[a]!.map((x, i) => x.reqPerSec / m[b]![i]!.reqPerSec));
    const ratios = {
      "unpaid: pressure402 / bare Fastify (target ≥ 0.6)": ratio(unpaid, "pressure402", "fastify"),
      "unpaid: pressure402 / @x402/express": ratio(unpaid, "pressure402", "express"),
      "unpaid: pressure402 / @x402/hono": ratio(unpaid, "pressure402", "hono"),
      "paid:   pressure402 / @x402/express": ratio(paid, "pressure402", "express"),
      "paid:   pressure402 / @x402/hono": ratio(paid, "pressure402", "hono"),
    };
    const fastestUnpaid = spread(
      unpaid.pressure402!.map(
        (x, i) => x.reqPerSec / Math.max(unpaid.express![i]!.reqPerSec, unpaid.hono![i]!.reqPerSec),
      ),
    );
    const fastestPaid = spread(
      paid.pressure402!.map(
        (x, i) => x.reqPerSec / Math.max(paid.express![i]!.reqPerSec, paid.hono![i]!.reqPerSec),
      ),
    );
    log("");
    log("Ratios, each taken within one round: median (min–max)");
    for (const [k, v] of Object.entries(ratios)) log(`  ${k.padEnd(52)} ${fmtSpread(v)}`);
    log(
      `  ${"unpaid: pressure402 / fastest reference (target ≥ 1.5)".padEnd(52)} ${fmtSpread(fastestUnpaid)}`,
    );
    log(`  ${"paid:   pressure402 / fastest reference (target ≥ 1.2)".padEnd(52)} ${fmtSpread(fastestPaid)}`);
    // On a busy machine throughput follows the neighbours more than the server; CPU per request much less so.
    const cpuRatio = (m: Record<string, LoadResult[]>, other: string) =>
      spread(m.pressure402!.map((x, i) => m[other]![i]!.cpuUsPerRequest / x.cpuUsPerRequest));
    const cpuRatios = {
      "unpaid: bare Fastify CPU / pressure402 CPU (as 0.6)": cpuRatio(unpaid, "fastify"),
      "unpaid: @x402/hono CPU / pressure402 CPU (as 1.5)": cpuRatio(unpaid, "hono"),
      "unpaid: @x402/express CPU / pressure402 CPU": cpuRatio(unpaid, "express"),
      "paid:   @x402/hono CPU / pressure402 CPU (as 1.2)": cpuRatio(paid, "hono"),
      "paid:   @x402/express CPU / pressure402 CPU": cpuRatio(paid, "express"),
    };
    log("");
    log("Server CPU per request, as ratios (each within one round; higher is better for pressure402)");
    for (const [k, v] of Object.entries(cpuRatios)) log(`  ${k.padEnd(52)} ${fmtSpread(v)}`);
    if (big) {
      log("");
      logStore(big);
    }
    if (free) {
      log("");
      logFreeFlood(free, log, fmtSpread);
    }
    if (npmStart.length)
      log(
        `\nnpm start → first 402 (embedded devnet): ${fmtSpread(spread(npmStart), 0)} ms over ${npmStart.length} runs (target < 2000)`,
      );
    log(
      `\nload average (1 min) during the run: ${(report.loadavg as number[][]).map((l) => fmt(l[0] ?? Number.NaN, 1)).join(", ")} on ${cpus().length} CPUs`,
    );
    log("");
    const refresh = benchRefresh();
    log(`bench took ${fmt((performance.now() - started) / 1000, 0)} s`);

    Object.assign(report, {
      refresh,
      unpaid,
      paid,
      ratios,
      fastestUnpaid,
      fastestPaid,
      cpuRatios,
      ...(big ? { store100k: storeReport(big) } : {}),
      ...(free ? { freeFlood: free } : {}),
      npmStartMs: npmStart,
    });
    if (args.json) writeFileSync(args.json, `${JSON.stringify(report, null, 2)}\n`);
  } finally {
    for (const p of procs.reverse()) await p.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
