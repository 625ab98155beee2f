/** Where the shipped market inputs live and how the build reads and writes them (scripts only). */
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { CatalogSnapshot } from "../src/benchmark/catalog/schema.js";
import { defaultSnapshotPath, repoRoot, validateSnapshot } from "../src/benchmark/catalog/snapshot.js";
import { buildMarketSnapshot, COMPILED_NAME } from "../src/benchmark/market-build.js";
import { parseRecording, type Recording } from "../src/benchmark/recording.js";
import { writeFileAtomic } from "../src/files/atomic-write.js";

export { COMPILED_NAME };

export function bazaarDir(): string {
  return join(repoRoot(), "data", "bazaar");
}

export function readRecordings(dir = bazaarDir()): Recording[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith(".json"))
    .sort()
    .map((f) => parseRecording(JSON.parse(readFileSync(join(dir, f), "utf8")), f));
}

export function readShippedMarket(): CatalogSnapshot {
  const compiled = JSON.parse(readFileSync(join(repoRoot(), "data", "x402-catalog", "catalog.json"), "utf8"));
  const snapshot = buildMarketSnapshot(compiled, COMPILED_NAME, readRecordings());
  return validateSnapshot(snapshot, "(built market snapshot)");
}

export function writeSnapshot(snapshot: CatalogSnapshot, out?: string): string {
  const path = resolve(out ?? defaultSnapshotPath());
  writeFileAtomic(path, `${JSON.stringify(snapshot, null, 1)}\n`);
  return path;
}
