import { benchMcp, logMcp } from "./mcp.js";
import type { BenchProcess } from "./processes.js";
const procs: BenchProcess[] = [];
try {
  logMcp(await benchMcp({ calls: 200, rounds: 2, procs }), (l) => console.log(l));
} finally {
  for (const p of procs) await p.stop();
}
