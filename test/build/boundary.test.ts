import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

/**
 * src/build/ holds what only the build and calibration scripts run; everything the server imports lives elsewhere
 * under src/. The server's import graph (static and dynamic relative imports, followed from src/server.ts) never enters
 * src/build/, and every module in src/build/ is one the server does not need.
 */
const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const SPECIFIER = /(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g;

function imports(file: string): string[] {
  const text = readFileSync(join(ROOT, file), "utf8");
  return [...text.matchAll(SPECIFIER)].map((m) =>
    relative(ROOT, resolve(dirname(join(ROOT, file)), m[1]!)).replace(/\.js$/, ".ts"),
  );
}

function reachable(from: string): Set<string> {
  const seen = new Set<string>();
  const stack = [from];
  while (stack.length > 0) {
    const file = stack.pop()!;
    if (seen.has(file) || !file.endsWith(".ts")) continue;
    seen.add(file);
    stack.push(...imports(file));
  }
  return seen;
}

describe("build-only code", () => {
  it("is never imported by the server, directly or through another module", () => {
    const served = [...reachable("src/server.ts")];
    expect(served.length).toBeGreaterThan(50);
    expect(served.filter((f) => f.startsWith("src/build/"))).toEqual([]);
  });

  it("holds modules some script uses", () => {
    const build = readdirSync(join(ROOT, "src/build")).filter((f) => f.endsWith(".ts"));
    expect(build.length).toBeGreaterThan(0);
    const scripts = readdirSync(join(ROOT, "scripts")).filter((f) => f.endsWith(".ts"));
    const usedByScripts = new Set(scripts.flatMap((s) => [...reachable(`scripts/${s}`)]));
    expect(build.filter((f) => !usedByScripts.has(`src/build/${f}`))).toEqual([]);
  });
});
