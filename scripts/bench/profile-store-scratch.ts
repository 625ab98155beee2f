import { readFileSync } from "node:fs";
import { runLoad } from "./load.js";
import { startBenchProcess } from "./processes.js";
import { paymentHeaders, requirementsOf, signAuthorizations } from "./proofs.js";
import { BENCH_PAY_TO } from "./serve.js";
import { writeSyntheticStore } from "./synthetic-store.js";
const cpuMs = (pid: number) => { const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" "); return (Number(f[11]) + Number(f[12])) * 10; };
const store = writeSyntheticStore("/tmp/synth-100k.json", 100000);
const fac = await startBenchProcess("scripts/bench/instant-facilitator.ts", []);
const prof = process.env.PROF ? [`--cpu-prof`, `--cpu-prof-dir=${process.env.PROF}`] : [];
const srv = await startBenchProcess("scripts/bench/serve.ts", ["pressure402", fac.url, "", store.path], 120000, {}, prof);
const url = `${srv.url}/v1/unlocks/upcoming?days=30`;
try {
  const pool = await signAuthorizations(700, BENCH_PAY_TO, "20000");
  const hs = paymentHeaders(pool, await requirementsOf(url));
  let i = 0;
  for (const headers of (process.env.ONLY_BR ? [{ "accept-encoding": "br" }, { "accept-encoding": "br" }, { "accept-encoding": "br" }, { "accept-encoding": "br" }] : [{}, { "accept-encoding": "br" }, {}, { "accept-encoding": "br" }])) {
    const c0 = cpuMs(srv.child.pid!);
    const r = await runLoad({ url, connections: 1, amount: 150, maxSeconds: 30, expectStatus: 200, headers, perRequest: { name: "payment-signature", next: () => hs[i++] as string } });
    console.log(JSON.stringify(headers), JSON.stringify(r), "server CPU µs/req", ((cpuMs(srv.child.pid!) - c0) * 1000 / r.requests).toFixed(0));
  }
} finally {
  await srv.stop();
  await fac.stop();
}
