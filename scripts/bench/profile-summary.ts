/**
 * Where a V8 CPU profile's time went: self time by function and by where its code lives (this service's src/, each
 * package in node_modules, Node's own internals, garbage collection, idle), as a share of the busy (non-idle) time and
 * as µs per request when the request count is given.
 *
 *   npx tsx scripts/bench/profile-summary.ts <file.cpuprofile> [--requests N] [--top 40] [--match TEXT] [--last-ms MS]
 *
 * `--last-ms` counts only the profile's last MS milliseconds (the measured load, not the start-up and warm-up).
 *
 * `--match` lists only functions whose name or file contains TEXT (e.g. `src/`, `fastify`), with their totals.
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Where a frame's code lives: `src/…`, a package name, `node:internal`, or a V8 pseudo-frame such as `(garbage collector)`. */
export function placeOf(url: string, functionName: string): string {
  if (url === "") return functionName.startsWith("(") ? functionName : "(native)";
  const nm = url.lastIndexOf("node_modules/");
  if (nm >= 0) {
    const rest = url.slice(nm + "node_modules/".length).split("/");
    return rest[0]?.startsWith("@") ? `${rest[0]}/${rest[1]}` : (rest[0] ?? url);
  }
  if (url.startsWith("node:")) return url.replace(/^node:(internal\/)?/, "node:");
  const src = url.search(/\/(src|scripts|test)\//);
  if (src >= 0) return url.slice(src + 1).replace(/\/[^/]*$/, "/");
  return url;
}

export interface ProfileShares {
  /** Sampled µs, all of them and those not idle. */
  totalUs: number;
  busyUs: number;
  byFunction: Map<string, number>;
  byPlace: Map<string, number>;
}

/** `lastMs`: only the samples of the profile's last milliseconds (the load, not the start-up before it). */
export function summarize(profile: CpuProfile, lastMs = Number.POSITIVE_INFINITY): ProfileShares {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const byFunction = new Map<string, number>();
  const byPlace = new Map<string, number>();
  let totalUs = 0;
  let idleUs = 0;
  const endUs = profile.timeDeltas.reduce((a, b) => a + b, 0);
  let atUs = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    atUs += profile.timeDeltas[i] ?? 0;
    if (endUs - atUs > lastMs * 1000) continue;
    const node = byId.get(profile.samples[i] as number);
    const dt = profile.timeDeltas[i] ?? 0;
    if (!node || dt <= 0) continue;
    totalUs += dt;
    const { functionName, url, lineNumber } = node.callFrame;
    if (functionName === "(idle)") {
      idleUs += dt;
      continue;
    }
    const place = placeOf(url, functionName);
    const fn = `${functionName || "(anonymous)"} ${place}${url ? `:${url.split("/").pop()}:${lineNumber + 1}` : ""}`;
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + dt);
    byPlace.set(place, (byPlace.get(place) ?? 0) + dt);
  }
  return { totalUs, busyUs: totalUs - idleUs, byFunction, byPlace };
}

function main(): void {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      requests: { type: "string" },
      top: { type: "string", default: "40" },
      match: { type: "string" },
      "last-ms": { type: "string" },
    },
  });
  const file = positionals[0];
  if (!file)
    throw new Error("usage: profile-summary.ts <file.cpuprofile> [--requests N] [--top N] [--match TEXT]");
  const s = summarize(
    JSON.parse(readFileSync(file, "utf8")) as CpuProfile,
    Number(values["last-ms"]) || Number.POSITIVE_INFINITY,
  );
  const requests = Number(values.requests) || 0;
  const top = Number(values.top) || 40;
  const line = (k: string, us: number) =>
    `${((100 * us) / s.busyUs).toFixed(1).padStart(5)} %${requests ? `  ${(us / requests).toFixed(2).padStart(7)} µs/req` : ""}  ${k}`;
  const sorted = (m: Map<string, number>) => [...m.entries()].sort((a, b) => b[1] - a[1]);
  process.stdout.write(
    `busy ${(s.busyUs / 1000).toFixed(0)} ms of ${(s.totalUs / 1000).toFixed(0)} ms sampled${requests ? `, ${(s.busyUs / requests).toFixed(1)} µs per request over ${requests}` : ""}\n\nby place:\n`,
  );
  for (const [k, us] of sorted(s.byPlace).slice(0, 25)) process.stdout.write(`${line(k, us)}\n`);
  const fns = sorted(s.byFunction).filter(([k]) => !values.match || k.includes(values.match));
  process.stdout.write(`\nby function${values.match ? ` (matching ${values.match})` : ""}:\n`);
  for (const [k, us] of fns.slice(0, top)) process.stdout.write(`${line(k, us)}\n`);
  if (values.match)
    process.stdout.write(
      `${line(
        `total matching ${values.match}`,
        fns.reduce((n, [, us]) => n + us, 0),
      )}\n`,
    );
}

if (process.argv[1]?.endsWith("profile-summary.ts")) main();
