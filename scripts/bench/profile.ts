/**
 * One path of pressure402 under load, in its own server process, with its CPU per request and (optionally) a V8 CPU
 * profile of the measured part only: the tool for finding where a path's microseconds go, on a machine too busy for
 * req/s to mean anything (the CPU a request costs moves much less with the neighbours than the rate does).
 *
 *   npx tsx scripts/bench/profile.ts <case> [--requests N] [--prof DIR] [--rounds R]
 *
 * `--accept-encoding gzip,br` sends that header with the unpaid cases (autocannon sends none; agents do).
 * Cases: `get402` (unpaid GET /v1/unlocks/upcoming?days=30, 32 connections), `post402` (unpaid POST
 * /v1/unlock-risk), `paid` (paid GET upcoming?days=30, 32 connections, one fresh proof each), `http-paid` and
 * `mcp-paid` (paid POST /v1/unlock-risk and its MCP tool `unlock_risk`, one call at a time, as `--only mcp`).
 * With `--prof DIR` the server runs under `--cpu-prof` and the profile's measured window is summarised with
 * profile-summary.ts (`npx tsx scripts/bench/profile-summary.ts DIR/<file> --requests N --last-ms MS` for more).
 * A warm-up of the same size runs first, and each round prints the server's CPU µs per request from /proc.
 */
import { readdirSync, readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import type { PaymentRequirements } from "@x402/core/types";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import autocannon from "autocannon";
import { runLoad } from "./load.js";
import { cpuMsOf, startBenchProcess } from "./processes.js";
import { paymentHeaders, requirementsOf, type SignedAuthorization, signAuthorizations } from "./proofs.js";
import { BENCH_PAY_TO, BENCH_ROUTE } from "./serve.js";

const { values: args, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    requests: { type: "string" },
    prof: { type: "string" },
    rounds: { type: "string", default: "3" },
    /** Accept-Encoding of the unpaid cases (the load generator sends none by default; agents' HTTP clients do). */
    "accept-encoding": { type: "string" },
  },
});
const kind = positionals[0] ?? "get402";
const CASES = ["get402", "post402", "paid", "http-paid", "mcp-paid"];
if (!CASES.includes(kind)) throw new Error(`case: one of ${CASES.join(", ")}`);
const ROUNDS = Math.max(1, Number(args.rounds) || 3);
const REQUESTS = Number(args.requests) || (kind.endsWith("402") ? 20_000 : 500);
const RISK_ARGS = JSON.stringify({ token: "ARB", unlock_event_id: "unlock_arb_2026_12_16" });
const log = (line: string) => process.stdout.write(`${line}\n`);
const ENCODING: Record<string, string> = args["accept-encoding"]
  ? { "accept-encoding": args["accept-encoding"] }
  : {};

const facilitator = await startBenchProcess("scripts/bench/instant-facilitator.ts", []);
const nodeArgs = args.prof ? ["--cpu-prof", `--cpu-prof-dir=${args.prof}`] : [];
const server = await startBenchProcess(
  "scripts/bench/serve.ts",
  ["pressure402", facilitator.url, ""],
  60_000,
  {},
  nodeArgs,
);
const pid = server.child.pid as number;
const upcoming = `${server.url}${BENCH_ROUTE}?days=30`;

async function post402(amount: number): Promise<number> {
  const r = await autocannon({
    url: `${server.url}/v1/unlock-risk`,
    connections: 32,
    amount,
    method: "POST",
    headers: { "content-type": "application/json", ...ENCODING },
    body: RISK_ARGS,
  });
  const bad = r.requests.total - (r.statusCodeStats["402"]?.count ?? 0);
  if (bad > 0) throw new Error(`post402: ${bad} answers were not 402`);
  return amount;
}

const pool = kind.endsWith("402")
  ? []
  : await signAuthorizations(REQUESTS * (ROUNDS + 1), BENCH_PAY_TO, kind === "paid" ? "20000" : "100000", {
      distinctPayers: true,
    });
let next = 0;
const take = () => {
  const s = pool[next++];
  if (!s) throw new Error("out of signed proofs");
  return s;
};
const proof = (s: SignedAuthorization, required: { accepted: PaymentRequirements; resource: unknown }) => ({
  x402Version: 2,
  resource: required.resource,
  accepted: required.accepted,
  payload: { signature: s.signature, authorization: s.authorization },
});

async function riskRequired() {
  const res = await fetch(`${server.url}/v1/unlock-risk`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: RISK_ARGS,
  });
  await res.arrayBuffer();
  const pr = decodePaymentRequiredHeader(res.headers.get("payment-required") ?? "");
  return { accepted: pr.accepts[0] as PaymentRequirements, resource: pr.resource };
}

let rpc = 0;
async function oneMcp(required: Awaited<ReturnType<typeof riskRequired>>) {
  const res = await fetch(`${server.url}/mcp`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: ++rpc,
      method: "tools/call",
      params: {
        name: "unlock_risk",
        arguments: JSON.parse(RISK_ARGS),
        _meta: { "x402/payment": proof(take(), required) },
      },
    }),
  });
  const body = (await res.json()) as { result?: { isError?: boolean } };
  if (!body.result || body.result.isError) throw new Error(`paid MCP call failed: ${JSON.stringify(body)}`);
}

async function oneHttp(required: Awaited<ReturnType<typeof riskRequired>>) {
  const res = await fetch(`${server.url}/v1/unlock-risk`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "payment-signature": Buffer.from(JSON.stringify(proof(take(), required))).toString("base64"),
    },
    body: RISK_ARGS,
  });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`paid HTTP call answered ${res.status}`);
}

/** CPU ms so far of each thread of the process, by thread name ("main" for the event loop's). */
function threadCpu(p: number): Map<string, number> {
  const byName = new Map<string, number>();
  for (const task of readdirSync(`/proc/${p}/task`)) {
    try {
      const stat = readFileSync(`/proc/${p}/task/${task}/stat`, "utf8");
      const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      const key = task === String(p) ? "main" : name;
      byName.set(key, (byName.get(key) ?? 0) + (Number(fields[11]) + Number(fields[12])) * 10);
    } catch {
      // the thread ended meanwhile
    }
  }
  return byName;
}

/** Runs one batch; returns the requests answered. */
async function batch(amount: number): Promise<number> {
  if (kind === "get402") {
    const r = await runLoad({ url: upcoming, connections: 32, expectStatus: 402, amount, headers: ENCODING });
    if (r.unexpected) throw new Error(`get402: ${JSON.stringify(r.statuses)}`);
    return r.requests;
  }
  if (kind === "post402") return post402(amount);
  if (kind === "paid") {
    const seller = await requirementsOf(upcoming);
    const headers = paymentHeaders(
      Array.from({ length: amount }, () => take()),
      seller,
    );
    let i = 0;
    const r = await runLoad({
      url: upcoming,
      connections: 32,
      expectStatus: 200,
      amount,
      perRequest: { name: "payment-signature", next: () => headers[i++] as string },
    });
    if (r.unexpected) throw new Error(`paid: ${JSON.stringify(r.statuses)}`);
    return r.requests;
  }
  const required = await riskRequired();
  for (let i = 0; i < amount; i++) await (kind === "mcp-paid" ? oneMcp(required) : oneHttp(required));
  return amount;
}

await batch(REQUESTS); // warm-up
const measured = Date.now();
const threads0 = threadCpu(pid);
let total = 0;
for (let r = 0; r < ROUNDS; r++) {
  const before = cpuMsOf(pid) as number;
  const n = await batch(REQUESTS);
  total += n;
  log(
    `${kind} round ${r + 1}: ${(((cpuMsOf(pid) as number) - before) * 1000) / n} µs CPU per request (${n})`,
  );
}
const windowMs = Date.now() - measured;
// Where the process's CPU went by thread (the main thread's is what a V8 profile shows; SQLite's syncs run on libuv's
// pool, checkpoints in their worker, V8's GC on its helpers), in µs per measured request.
const threads = [...threadCpu(pid)].map(([k, ms]) => [k, ms - (threads0.get(k) ?? 0)] as const);
log(
  `by thread, µs per request: ${threads
    .filter(([, ms]) => ms > 0)
    .sort((x, y) => y[1] - x[1])
    .map(([k, ms]) => `${k} ${((ms * 1000) / total).toFixed(0)}`)
    .join(", ")}`,
);
await server.stop();
await facilitator.stop();
if (args.prof) {
  const file = readdirSync(args.prof)
    .filter((f) => f.endsWith(".cpuprofile") && f.includes(`.${pid}.0.`))
    .at(-1); // the main thread's (worker threads, such as the WAL checkpointer's, write their own)
  log(`profile: ${args.prof}/${file} — measured window: last ${windowMs} ms, ${total} requests`);
  log(
    `npx tsx scripts/bench/profile-summary.ts ${args.prof}/${file} --requests ${total} --last-ms ${windowMs}`,
  );
}
