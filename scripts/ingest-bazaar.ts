/**
 * Refreshes data/catalog.snapshot.json from a facilitator's Bazaar discovery listing.
 *
 *   tsx scripts/ingest-bazaar.ts --facilitator <url> [--snapshot <path>] [--page-size 100]
 *                                [--max-pages 100] [--dry-run]
 *
 * The facilitator may also come from BAZAAR_FACILITATOR_URL. The snapshot is rewritten atomically
 * and only after the merged result validates.
 */
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { defaultSnapshotPath } from "../src/store/catalog.js";
import { ingestBazaar } from "../src/benchmark/bazaar.js";

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      facilitator: { type: "string" },
      snapshot: { type: "string" },
      "page-size": { type: "string" },
      "max-pages": { type: "string" },
      "dry-run": { type: "boolean", default: false },
    },
  });
  const facilitatorUrl = values.facilitator ?? process.env.BAZAAR_FACILITATOR_URL;
  if (facilitatorUrl === undefined || facilitatorUrl === "") {
    console.error("usage: tsx scripts/ingest-bazaar.ts --facilitator <url> (or BAZAAR_FACILITATOR_URL)");
    process.exitCode = 2;
    return;
  }
  const report = await ingestBazaar({
    facilitatorUrl,
    snapshotPath: resolve(values.snapshot ?? defaultSnapshotPath()),
    pageSize: values["page-size"] === undefined ? 100 : Number(values["page-size"]),
    maxPages: values["max-pages"] === undefined ? 100 : Number(values["max-pages"]),
    dryRun: values["dry-run"],
  });
  console.log(JSON.stringify(report, null, 2));
}

main().catch((err: unknown) => {
  console.error(`ingest failed: ${(err as Error).message}`);
  process.exitCode = 1;
});
