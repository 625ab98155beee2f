/**
 * Builds data/catalog.snapshot.json from what the repository ships: the hand-compiled catalog
 * (data/x402-catalog/catalog.json) and every Bazaar recording in data/bazaar/. Deterministic.
 *
 *   tsx scripts/build-catalog.ts [--out <snapshot.json>]
 */
import { parseArgs } from "node:util";
import { readShippedMarket, writeSnapshot } from "./market-files.js";

function main(): void {
  const { values } = parseArgs({ options: { out: { type: "string" } } });
  const snapshot = readShippedMarket();
  const out = writeSnapshot(snapshot, values.out);
  const b = snapshot.build;
  console.log(
    `wrote ${out}: ${b.endpoints} endpoints; read ${b.read}, kept ${b.kept}, dropped ${JSON.stringify(b.dropped)}, ` +
      `${b.duplicates_merged} duplicates merged`,
  );
  for (const s of snapshot.sources)
    console.log(`  ${s.id}: read ${s.read}, kept ${s.kept}, in snapshot ${s.entry_count}`);
}

main();
