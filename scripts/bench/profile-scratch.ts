import { readFileSync } from "node:fs";
import { runLoad } from "./load.js";
const cpuMs = (pid: number) => { const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" "); return (Number(f[11]) + Number(f[12])) * 10; };
import { startBenchProcess } from "./processes.js";
import { paymentHeaders, requirementsOf, signAuthorizations } from "./proofs.js";
import { BENCH_PAY_TO } from "./serve.js";
const kind = process.argv[2] ?? "pressure402";
const mode = process.argv[3] ?? "paid";
const N = Number(process.argv[4] ?? 2000);
const fac = await startBenchProcess("scripts/bench/instant-facilitator.ts", []);
const prof = process.env.PROF ? [`--cpu-prof`, `--cpu-prof-dir=${process.env.PROF}`] : [];
const srv = await startBenchProcess("scripts/bench/serve.ts", [kind, fac.url, process.argv[5] ?? "/tmp/paid-body.json"], 60000, {}, prof);
const url = `${srv.url}/v1/unlocks/upcoming?days=30`;
try {
  if (mode === "paid") {
    const pool = await signAuthorizations(N * 2 + 100, BENCH_PAY_TO, "20000");
    const hs = paymentHeaders(pool, await requirementsOf(url));
    let i = 0;
    for (const amount of [N, N]) {
      const c0 = cpuMs(srv.child.pid!);
      const r = await runLoad({ url, connections: 32, amount, maxSeconds: 30, expectStatus: 200, perRequest: { name: "payment-signature", next: () => hs[i++] as string } });
      console.log(kind, mode, JSON.stringify(r), "server CPU µs/req", ((cpuMs(srv.child.pid!) - c0) * 1000 / r.requests).toFixed(0));
    }
  } else {
    for (let k = 0; k < 2; k++) {
      const c0 = cpuMs(srv.child.pid!);
      const r = await runLoad({ url, connections: 32, durationS: 4, expectStatus: kind === "fastify" ? 200 : 402 });
      console.log(kind, mode, JSON.stringify(r), "server CPU µs/req", ((cpuMs(srv.child.pid!) - c0) * 1000 / r.requests).toFixed(0));
    }
  }
} finally {
  await srv.stop();
  await fac.stop();
}
