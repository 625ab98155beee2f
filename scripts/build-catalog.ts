/**
 * Builds data/catalog.snapshot.json from the compiled public catalog
 * (../shared/data/x402-catalog/catalog.json beside the repository, or the path given).
 *
 *   tsx scripts/build-catalog.ts [--source <catalog.json>] [--out <snapshot.json>]
 */
import { readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { parseArgs } from "node:util";
import { writeFileAtomic } from "../src/store/atomic-write.js";
import { defaultSnapshotPath, repoRoot, validateSnapshot } from "../src/store/catalog.js";
import { buildSnapshotFromCompiledCatalog } from "../src/benchmark/compiled-catalog.js";

function main(): void {
  const { values } = parseArgs({
    options: { source: { type: "string" }, out: { type: "string" } },
  });
  const root = repoRoot();
  const source = resolve(values.source ?? join(root, "..", "shared", "data", "x402-catalog", "catalog.json"));
  const out = resolve(values.out ?? defaultSnapshotPath());
  // Provenance names the file relative to the repository so the snapshot does not embed a machine path.
  const origin = relative(root, source).split("\\").join("/");
  const snapshot = validateSnapshot(
    buildSnapshotFromCompiledCatalog(JSON.parse(readFileSync(source, "utf8")), origin),
    source,
  );
  writeFileAtomic(out, `${JSON.stringify(snapshot, null, 1)}\n`);
  const derived = snapshot.endpoints.filter((e) => e.amount_basis === "derived_from_usd").length;
  console.log(
    `wrote ${out}: ${snapshot.endpoints.length} endpoints from ${origin} (compiled ${snapshot.sources[0]?.compiled_on}; ` +
      `${derived} atomic amounts derived exactly from USD prices of known USDC assets)`,
  );
}

main();
