/**
 * The free-path speed target: a flood on each free path keeps honest paid p50 within 2× its idle value. One
 * pressure402 process (serve.ts "pressure402-limited": the default rate limit, clients told apart by X-Forwarded-For)
 * on the instant facilitator. Each round: paid upcoming requests one at a time while idle, then the same while
 * autocannon floods one free path with 32 connections, in two ways: from one IP (what the rate limit is for: most
 * answers are 429) and from a fresh IP per request (many clients, the worst case the per-IP limit does not stop).
 * The ratio of the paid p50s is taken within the round. Bounded: `paid` requests or `seconds` per case.
 */
import { type LoadResult, runLoad, runSequential, type Spread, spread } from "./load.js";
import type { BenchProcess } from "./processes.js";
import { paymentHeaders, requirementsOf, type SignedAuthorization } from "./proofs.js";
import { BENCH_ROUTE } from "./serve.js";

/** The public port's free paths (on this server /metrics is not served there: its flood meets the 404). */
export const FREE_PATHS = [
  "/",
  "/health",
  "/ready",
  "/metrics",
  "/.well-known/x402",
  "/openapi.json",
] as const;
export const FREE_FLOOD_TARGET = 2;
const PAID_PATH = `${BENCH_ROUTE}?days=30`;

export interface FreeFloodOptions {
  server: BenchProcess;
  rounds: number;
  /** Paid requests per case at most (each spends one proof). */
  paid: number;
  /** Seconds per case at most; the flood lasts this long plus its warm-up. */
  seconds: number;
  connections: number;
  pool: readonly SignedAuthorization[];
  log: (line: string) => void;
}

export interface FreeFloodResult {
  idle: LoadResult[];
  /** Per free path and flood kind ("one IP", "many IPs"): the paid run during it, the flood, the ratio, per round. */
  flooded: Record<string, { paid: LoadResult[]; flood: LoadResult[]; ratio: number[] }>;
}

/** Proofs the section spends: one per paid request of each case (idle + each path) per round. */
export const freeFloodPool = (rounds: number, paid: number) =>
  rounds * (2 * FREE_PATHS.length + 1) * paid + 1;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function benchFreeFlood(o: FreeFloodOptions): Promise<FreeFloodResult> {
  const url = o.server.url;
  const terms = await requirementsOf(`${url}${PAID_PATH}`);
  const headers = paymentHeaders(o.pool, terms);
  let next = 0;
  const proof = {
    name: "payment-signature",
    next: () => {
      const h = headers[next++];
      if (h === undefined) throw new Error("free-flood bench: the proof pool ran dry");
      return h;
    },
  };
  const paidRun = (maxSeconds: number, ip: string) =>
    runSequential({
      url: `${url}${PAID_PATH}`,
      connections: 1,
      amount: o.paid,
      maxSeconds,
      expectStatus: 200,
      headers: { "x-forwarded-for": ip },
      perRequest: proof,
    });
  // Each free path answers what it answers (200, or 404/503): the flood is counted against that status.
  const statusOf: Record<string, number> = {};
  for (const path of FREE_PATHS) {
    const res = await fetch(`${url}${path}`, { headers: { "x-forwarded-for": "192.0.2.1" } });
    await res.arrayBuffer();
    statusOf[path] = res.status;
  }
  const result: FreeFloodResult = { idle: [], flooded: {} };
  // Each paid run comes from an IP of its own (its requests stay far under the per-IP limit).
  let honestIp = 0;
  const nextHonestIp = () => `198.18.${(honestIp >> 8) & 255}.${honestIp++ & 255}`;
  let floodIp = 0;
  const floodKinds = {
    "one IP": { name: "x-forwarded-for", next: () => "203.0.113.66" },
    "many IPs": {
      name: "x-forwarded-for",
      next: () => `10.${(floodIp >> 16) & 255}.${(floodIp >> 8) & 255}.${floodIp++ & 255}`,
    },
  };
  for (let r = 0; r < o.rounds; r++) {
    const idle = await paidRun(o.seconds, nextHonestIp());
    result.idle.push(idle);
    const line: string[] = [];
    for (const path of FREE_PATHS)
      for (const [kind, ip] of Object.entries(floodKinds)) {
        const flood = runLoad({
          url: `${url}${path}`,
          connections: o.connections,
          durationS: o.seconds + 1,
          // Counted against the path's own answer: the one-IP flood's 429s show as "other statuses".
          expectStatus: statusOf[path] as number,
          serverPid: o.server.child.pid,
          perRequest: ip,
        });
        await sleep(300); // the flood's connections open first
        const paid = await paidRun(o.seconds, nextHonestIp());
        const floodResult = await flood;
        const key = `${path} (${kind})`;
        const entry = result.flooded[key] ?? { paid: [], flood: [], ratio: [] };
        entry.paid.push(paid);
        entry.flood.push(floodResult);
        entry.ratio.push(paid.p50Ms / idle.p50Ms);
        result.flooded[key] = entry;
        line.push(`${key} ×${(paid.p50Ms / idle.p50Ms).toFixed(2)}`);
        if (paid.unexpected > 0 || paid.errors > 0)
          throw new Error(
            `paid during a ${key} flood: ${paid.unexpected} unexpected statuses, ${paid.errors} errors`,
          );
      }
    o.log(`free-flood round ${r + 1}: idle paid p50 ${idle.p50Ms.toFixed(2)} ms; ${line.join(", ")}`);
  }
  return result;
}

export function logFreeFlood(
  res: FreeFloodResult,
  log: (line: string) => void,
  fmtSpread: (s: Spread, d?: number) => string,
): void {
  log(
    `Honest paid p50 during a flood of each free path (32 connections, default rate limit; from one IP, and from a fresh IP per request), as a ratio to idle (target ≤ ${FREE_FLOOD_TARGET}×): median (min–max) over rounds`,
  );
  log(
    `  idle paid p50 ${fmtSpread(spread(res.idle.map((x) => x.p50Ms)), 2)} ms over ${res.idle.map((x) => x.requests).join("/")} requests`,
  );
  for (const [path, e] of Object.entries(res.flooded)) {
    const ratio = spread(e.ratio);
    log(
      `  ${path.padEnd(30)} paid p50 ${fmtSpread(spread(e.paid.map((x) => x.p50Ms)), 2)} ms   ratio ${fmtSpread(ratio)} ${ratio.median <= FREE_FLOOD_TARGET ? "within" : "OVER"} ${FREE_FLOOD_TARGET}×   flood ${fmtSpread(spread(e.flood.map((x) => x.reqPerSec)), 0)} req/s (${e.flood.reduce((n, x) => n + x.unexpected + x.errors, 0)} other statuses/errors)`,
    );
  }
}
