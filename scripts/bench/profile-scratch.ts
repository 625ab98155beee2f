import { runLoad } from "./load.js";
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
      const r = await runLoad({ url, connections: 32, amount, maxSeconds: 30, expectStatus: 200, perRequest: { name: "payment-signature", next: () => hs[i++] as string } });
      console.log(kind, mode, JSON.stringify(r));
    }
  } else {
    for (let k = 0; k < 2; k++) {
      const r = await runLoad({ url, connections: 32, durationS: 4, expectStatus: kind === "fastify" ? 200 : 402 });
      console.log(kind, mode, JSON.stringify(r));
    }
  }
} finally {
  await srv.stop();
  await fac.stop();
}
