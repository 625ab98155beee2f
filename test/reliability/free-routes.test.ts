import { Worker } from "node:worker_threads";
import { describe, expect, it } from "vitest";
import {
  type HttpApp,
  startFaultFacilitator,
  startHttpApp,
  UPCOMING_PATH,
  upcomingProof,
} from "../helpers/fault-facilitator.js";
import { useFaultStack } from "../helpers/fault-stack.js";

/*
 * Free routes must cost nothing an unpaying client can multiply: a flood of each free path (from one client, at the
 * default rate limit) makes no facilitator call beyond the background health refresh, is rate-limited, and never
 * serves /metrics on the public port. Those are exact counts. The honest buyer's paid p50 during each flood against
 * its idle p50 is measured and printed, not asserted: on a shared 2-core machine (load average 8–15 while this was
 * written) the flooding thread's own CPU use moves it by ×1 to ×14 from one run to the next, whatever the server does.
 */
const stack = useFaultStack();

const FREE_PATHS = ["/", "/health", "/ready", "/metrics", "/.well-known/x402"];
const HONEST_IP = "203.0.113.7";
const SAMPLES = 25;
const FLOOD_MAX = 800;
const FLOOD_WIDTH = 4;

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
};

async function paidCall(app: HttpApp): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(`${app.url}${UPCOMING_PATH}`, {
    headers: { "payment-signature": upcomingProof(app.config), "x-forwarded-for": HONEST_IP },
  });
  await res.arrayBuffer();
  expect(res.status).toBe(200);
  return performance.now() - t0;
}

/**
 * The flooder runs in a worker thread, as another client would: its own event loop, so the test's paid calls measure
 * the server, not a client loop shared with 16 flooding ones. It floods until told to stop or FLOOD_MAX requests.
 */
const FLOODER = `
const { parentPort, workerData } = require("node:worker_threads");
const { url, ip, max, width } = workerData;
let done = false;
let sent = 0;
const tally = {};
parentPort.on("message", () => (done = true));
Promise.all(Array.from({ length: width }, async () => {
  while (!done && sent < max) {
    sent += 1;
    const res = await fetch(url, { headers: { "x-forwarded-for": ip } });
    await res.arrayBuffer();
    tally[res.status] = (tally[res.status] ?? 0) + 1;
    if (sent === 50) parentPort.postMessage("flooding");
  }
})).then(() => parentPort.postMessage({ sent, tally }));
`;

/** Starts a flood of `path`; `measure` runs once it is under way, then the flood is stopped. */
async function flood(app: HttpApp, path: string, ip: string, measure: () => Promise<void>) {
  const worker = new Worker(FLOODER, {
    eval: true,
    workerData: { url: `${app.url}${path}`, ip, max: FLOOD_MAX, width: FLOOD_WIDTH },
  });
  let flooding: () => void = () => {};
  const started = new Promise<void>((r) => (flooding = r));
  const result = new Promise<{ sent: number; tally: Record<number, number> }>((resolve, reject) => {
    worker.on("message", (m) => (m === "flooding" ? flooding() : resolve(m)));
    worker.once("error", reject);
  });
  await started;
  await measure();
  worker.postMessage("stop");
  const r = await result;
  await worker.terminate();
  return r;
}

describe("free endpoints cost nothing", () => {
  it("a flood of each free path: 0 facilitator calls beyond the background refresh, paid p50 measured", async () => {
    const fac = await startFaultFacilitator();
    stack.fac = fac;
    stack.http = await startHttpApp(fac.url, {
      TRUST_PROXY: "true",
      RATE_LIMIT_MAX: "300", // the default
      HEALTH_REFRESH_MS: "600000", // one refresh (at start) during the test: every other /supported would be a flood's
    });
    const app = stack.http;
    // The start-up refresh is done (or, without a cache, this probe is the one facilitator call allowed).
    await fetch(`${app.url}/ready`, { headers: { "x-forwarded-for": HONEST_IP } });
    expect(fac.calls.supported).toBe(1);
    for (let i = 0; i < 3; i++) await paidCall(app); // warm-up (connections, JIT)

    const idle: number[] = [];
    for (let i = 0; i < SAMPLES; i++) idle.push(await paidCall(app));
    const idleP50 = median(idle);

    const report: string[] = [];
    const checks: { path: string; sent: number; tally: Record<number, number>; p50: number }[] = [];
    let honest = 3 + SAMPLES;
    for (const [i, path] of FREE_PATHS.entries()) {
      const during: number[] = [];
      const f = await flood(app, path, `198.51.100.${i + 1}`, async () => {
        for (let k = 0; k < SAMPLES; k++) during.push(await paidCall(app));
      });
      honest += SAMPLES;
      const p50 = median(during);
      report.push(
        `${path}: ${f.sent} requests (${JSON.stringify(f.tally)}), paid p50 ${p50.toFixed(1)} ms vs idle ${idleP50.toFixed(1)} ms (×${(p50 / idleP50).toFixed(2)})`,
      );
      checks.push({ path, ...f, p50 });
    }
    console.info(
      `facilitator calls ${JSON.stringify(fac.calls)}; ${honest} honest paid calls\n${report.join("\n")}`,
    );
    for (const c of checks) {
      // The public port never serves /metrics without a token; every free path is rate-limited.
      if (c.path === "/metrics") expect(c.tally[200] ?? 0).toBe(0);
      if (c.sent > 300) expect(c.tally[429] ?? 0, c.path).toBeGreaterThan(0);
    }
    // Exactly: the one background refresh, and one verify + one settle per honest paid call.
    expect(fac.calls).toEqual({ supported: 1, verify: honest, settle: honest });
  }, 240_000);
});
