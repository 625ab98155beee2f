/**
 * Adds a Bazaar discovery listing to the market: reads it (live from a facilitator, or a raw
 * recording file), stores it compacted in data/bazaar/<name>.json, then rebuilds
 * data/catalog.snapshot.json from everything shipped (the same build as `npm run build:catalog`).
 *
 *   tsx scripts/ingest-bazaar.ts --facilitator <url> [--name <name>] [--page-size 100] [--max-pages 100] [--dry-run]
 *   tsx scripts/ingest-bazaar.ts --from-file <raw.json> --name <name> --discovery-url <https://…/discovery/resources>
 *                                --recorded-at <ISO> --recorded-at-basis <text> [--repository r --path p --commit c
 *                                --git-blob b --license l --license-file f --envelope <text>]
 *
 * The facilitator may also come from BAZAAR_FACILITATOR_URL. Nothing is written unless the new
 * snapshot validates; files are replaced atomically.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { fetchBazaarListing } from "../src/benchmark/bazaar.js";
import {
  compactRecording,
  listingItems,
  type Recording,
  recordingFromListing,
  serializeRecording,
} from "../src/benchmark/recording.js";
import { writeFileAtomic } from "../src/files/atomic-write.js";
import { boundedFetch, type FetchLike } from "../src/sources/http.js";
import { bazaarDir, readShippedMarket, writeSnapshot } from "./market-files.js";

const options = {
  facilitator: { type: "string" },
  "from-file": { type: "string" },
  name: { type: "string" },
  "discovery-url": { type: "string" },
  "recorded-at": { type: "string" },
  "recorded-at-basis": { type: "string" },
  repository: { type: "string" },
  path: { type: "string" },
  commit: { type: "string" },
  "git-blob": { type: "string" },
  license: { type: "string" },
  "license-file": { type: "string" },
  envelope: { type: "string" },
  "page-size": { type: "string" },
  "max-pages": { type: "string" },
  "dry-run": { type: "boolean", default: false },
} as const;

async function main(): Promise<void> {
  const { values: v } = parseArgs({ options });
  let recording: Recording;
  if (v["from-file"] !== undefined) {
    if (!v.name || !v["discovery-url"] || !v["recorded-at"] || !v["recorded-at-basis"]) {
      throw new Error("--from-file needs --name, --discovery-url, --recorded-at and --recorded-at-basis");
    }
    recording = compactRecording(listingItems(JSON.parse(readFileSync(v["from-file"], "utf8"))), {
      name: v.name,
      facilitator_discovery_url: v["discovery-url"],
      recorded_at: new Date(v["recorded-at"]).toISOString(),
      recorded_at_basis: v["recorded-at-basis"],
      provenance: {
        repository: v.repository ?? null,
        path: v.path ?? null,
        commit: v.commit ?? null,
        git_blob: v["git-blob"] ?? null,
        license: v.license ?? null,
        license_file: v["license-file"] ?? null,
        envelope: v.envelope ?? "as in the source file",
      },
    });
  } else {
    const facilitatorUrl = v.facilitator ?? process.env.BAZAAR_FACILITATOR_URL;
    if (facilitatorUrl === undefined || facilitatorUrl === "") {
      console.error("usage: tsx scripts/ingest-bazaar.ts --facilitator <url> | --from-file <raw.json> …");
      process.exitCode = 2;
      return;
    }
    const now = new Date();
    const listing = await fetchBazaarListing(facilitatorUrl, {
      // The same caps as the refresh loop: each page within 16 MiB and 30 s, HTTPS only, no redirect off the host.
      fetchImpl: boundedFetch(globalThis.fetch as unknown as FetchLike),
      type: "http",
      pageSize: v["page-size"] === undefined ? 100 : Number(v["page-size"]),
      maxPages: v["max-pages"] === undefined ? 100 : Number(v["max-pages"]),
    });
    const host = new URL(facilitatorUrl).host.toLowerCase().replace(/[^a-z0-9.-]/g, "-");
    recording = recordingFromListing(listing, v.name ?? `${host}_${now.toISOString().slice(0, 10)}`, now);
  }
  const file = join(bazaarDir(), `${recording.name}.json`);
  if (v["dry-run"]) {
    console.log(`dry run: would write ${file} (${recording.items.length} items) and rebuild the snapshot`);
    return;
  }
  writeFileAtomic(file, serializeRecording(recording));
  try {
    const snapshot = readShippedMarket();
    const out = writeSnapshot(snapshot);
    console.log(`wrote ${file} (${recording.items.length} items) and ${out}`);
    console.log(JSON.stringify(snapshot.build, null, 2));
  } catch (err) {
    throw new Error(`the recording was written but the snapshot was not rebuilt: ${(err as Error).message}`);
  }
}

main().catch((err: unknown) => {
  console.error(`ingest failed: ${(err as Error).message}`);
  process.exitCode = 1;
});
