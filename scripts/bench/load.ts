/** The load driver: autocannon against one server, and the order statistics the report prints. */
import { Agent, get } from "node:http";
import autocannon, { type Options, type Result } from "autocannon";
import { cpuMsOf } from "./processes.js";

export interface LoadResult {
  reqPerSec: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
  /** Responses with another status than the one the case expects (each is a failed case, not a slow one). */
  unexpected: number;
  /** Answers by status code (autocannon runs), so a failed check says what came back. */
  statuses?: Record<string, number>;
  errors: number;
  /** The server's CPU time per answered request, in µs (NaN when the server's pid is not given or /proc is absent). */
  cpuUsPerRequest: number;
}

export interface LoadCase {
  url: string;
  connections: number;
  expectStatus: number;
  /** Fixed duration in seconds, or a fixed number of requests (the paid path: one pre-signed proof each). */
  durationS?: number;
  amount?: number;
  /** With `amount`: stop after this many seconds even if the amount is not reached (bounds the bench's time). */
  maxSeconds?: number;
  headers?: Record<string, string>;
  /** The server's process, for its CPU time per request. */
  serverPid?: number | undefined;
  /** A fresh header value per request (PAYMENT-SIGNATURE); throws when the pool runs dry. */
  perRequest?: { name: string; next: () => string };
}

export async function runLoad(c: LoadCase): Promise<LoadResult> {
  const per = c.perRequest;
  const opts: Options = {
    url: c.url,
    connections: c.connections,
    pipelining: 1,
    timeout: 30,
    ...(c.amount !== undefined ? { amount: c.amount } : { duration: c.durationS ?? 5 }),
    headers: c.headers ?? {},
    ...(per
      ? {
          requests: [
            {
              method: "GET",
              setupRequest: (req) => ({
                ...req,
                headers: { ...req.headers, ...c.headers, [per.name]: per.next() },
              }),
            },
          ],
        }
      : {}),
  };
  // autocannon's own `duration` ends on its 1 s sampling tick in `amount` mode (500 requests done in 1.1 s read as
  // 2.0 s), so the rate is taken from our own clock: first request sent to last response received.
  const cpu0 = c.serverPid === undefined ? undefined : cpuMsOf(c.serverPid);
  const t0 = performance.now();
  let lastResponse = t0;
  const result = await new Promise<Result>((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    const instance = autocannon(opts, (err, res) => {
      clearTimeout(timer);
      if (err) reject(err);
      else resolve(res);
    });
    instance.on("response", () => {
      lastResponse = performance.now();
    });
    if (c.amount !== undefined && c.maxSeconds !== undefined)
      timer = setTimeout(() => instance.stop(), c.maxSeconds * 1000);
  });
  const expected = result.statusCodeStats[String(c.expectStatus)]?.count ?? 0;
  const answered = Object.values(result.statusCodeStats).reduce((n, s) => n + Number(s.count), 0);
  return {
    reqPerSec: answered / ((lastResponse - t0) / 1000),
    cpuUsPerRequest: cpuPerRequest(c.serverPid, cpu0, answered),
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    requests: answered,
    unexpected: answered - Number(expected),
    statuses: Object.fromEntries(
      Object.entries(result.statusCodeStats).map(([k, v]) => [k, Number(v.count)]),
    ),
    errors: result.errors,
  };
}

export interface Spread {
  min: number;
  median: number;
  max: number;
}

export function spread(values: readonly number[]): Spread {
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  const median = s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
  return { min: s[0] ?? Number.NaN, median, max: s.at(-1) ?? Number.NaN };
}

function cpuPerRequest(pid: number | undefined, before: number | undefined, requests: number): number {
  const after = pid === undefined ? undefined : cpuMsOf(pid);
  if (before === undefined || after === undefined || requests === 0) return Number.NaN;
  return ((after - before) * 1000) / requests;
}

/**
 * One request at a time over one keep-alive connection, each body read to its end with node:http: latency without
 * queueing and without a load generator's own parsing in it (autocannon's parser adds about 20 ms to a 5.7 MB body).
 * Stops after `amount` requests or `maxSeconds`.
 */
export async function runSequential(c: LoadCase & { amount: number }): Promise<LoadResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const cpu0 = c.serverPid === undefined ? undefined : cpuMsOf(c.serverPid);
  const latencies: number[] = [];
  let unexpected = 0;
  let errors = 0;
  const t0 = performance.now();
  const deadline = t0 + (c.maxSeconds ?? 30) * 1000;
  try {
    for (let i = 0; i < c.amount && performance.now() < deadline; i++) {
      const headers = { ...c.headers, ...(c.perRequest ? { [c.perRequest.name]: c.perRequest.next() } : {}) };
      const start = performance.now();
      try {
        const status = await new Promise<number>((resolve, reject) => {
          get(c.url, { agent, headers }, (res) => {
            res.on("data", () => undefined);
            res.on("end", () => resolve(res.statusCode ?? 0));
            res.on("error", reject);
          }).on("error", reject);
        });
        latencies.push(performance.now() - start);
        if (status !== c.expectStatus) unexpected++;
      } catch {
        errors++;
      }
    }
  } finally {
    agent.destroy();
  }
  const elapsed = performance.now() - t0;
  const sorted = latencies.sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
  return {
    reqPerSec: latencies.length / (elapsed / 1000),
    cpuUsPerRequest: cpuPerRequest(c.serverPid, cpu0, latencies.length),
    p50Ms: at(0.5),
    p99Ms: at(0.99),
    requests: latencies.length,
    unexpected,
    errors,
  };
}
