import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fetchBazaarListing } from "../benchmark/bazaar.js";
import { type Catalog, catalogFromSnapshot, validateSnapshot } from "../benchmark/catalog/snapshot.js";
import { buildMarketSnapshot, COMPILED_NAME } from "../benchmark/market-build.js";
import {
  parseRecording,
  type Recording,
  recordingFromListing,
  serializeRecording,
} from "../benchmark/recording.js";
import {
  type BenchmarkService,
  type BenchmarkServiceOptions,
  createBenchmarkService,
} from "../benchmark/service.js";
import { writeFileAtomic } from "../files/atomic-write.js";
import { dataPath } from "../files/paths.js";
import { describeError } from "./errors.js";
import type { SourceOutcome } from "./status.js";

/** The live listing as recorded in DATA_DIR (the shipped recordings stay in data/bazaar). */
export const LIVE_RECORDING_FILE = "bazaar-live.json";
/** A listing that comes back with fewer than this share of the last good one's items is suspicious: kept out. */
export const MIN_KEPT_SHARE = 2 / 3;

/** The shipped market inputs: the compiled catalog and the Bazaar recordings `npm run build:catalog` reads. */
export function readShippedMarketInputs(): { compiled: unknown; recordings: Recording[] } {
  const dir = dataPath("bazaar");
  return {
    compiled: JSON.parse(readFileSync(dataPath(join("x402-catalog", "catalog.json")), "utf8")),
    recordings: readdirSync(dir)
      .filter((f) => f.endsWith(".json"))
      .sort()
      .map((f) => parseRecording(JSON.parse(readFileSync(join(dir, f), "utf8")), f)),
  };
}

export function readLiveRecording(dataDir: string): Recording | null {
  try {
    return parseRecording(
      JSON.parse(readFileSync(join(dataDir, LIVE_RECORDING_FILE), "utf8")),
      LIVE_RECORDING_FILE,
    );
  } catch {
    return null;
  }
}

/** The catalog of the shipped inputs plus a live recording (same build, same dedup rule: the newest listing wins). */
export function catalogWith(live: Recording): Catalog {
  const { compiled, recordings } = readShippedMarketInputs();
  const snapshot = buildMarketSnapshot(compiled, COMPILED_NAME, [...recordings, live]);
  return catalogFromSnapshot(validateSnapshot(snapshot, "(refreshed market)"), "(refreshed market)");
}

/** `https://…/discovery/resources` → the facilitator base fetchBazaarListing takes. */
export const facilitatorOf = (discoveryUrl: string): string =>
  discoveryUrl.replace(/\/discovery\/resources\/?$/, "");

/**
 * Reads every page of the Bazaar listing (CDP's `discovery/resources`, limit/offset) through the catalog's own parser
 * and rebuilds the market with it. Refused, keeping the previous market: an HTTP error, a page without items[], an
 * empty or incomplete listing, or one with fewer than two thirds of the last good listing's items.
 */
export async function refreshBazaar(
  discoveryUrl: string,
  dataDir: string,
  now: Date,
  fetchImpl: typeof fetch,
): Promise<{ outcome: SourceOutcome; catalog: Catalog | null }> {
  const fail = (error: string) => ({
    outcome: {
      source: "bazaar" as const,
      updated: [],
      failed: [{ item: "listing", error }],
      dataAsOf: null,
      retryAfterSeconds: null,
    },
    catalog: null,
  });
  let recording: Recording;
  try {
    const listing = await fetchBazaarListing(facilitatorOf(discoveryUrl), {
      fetchImpl,
      type: "http",
      pageSize: 100,
      maxPages: 500,
    });
    if (!listing.complete) return fail(`listing cut at ${listing.pages} pages`);
    if (listing.items.length === 0) return fail("empty listing");
    const previous = readLiveRecording(dataDir);
    if (previous && listing.items.length < previous.items.length * MIN_KEPT_SHARE)
      return fail(
        `${listing.items.length} items, down from ${previous.items.length}: kept the previous listing`,
      );
    recording = recordingFromListing(listing, `live_${now.toISOString().slice(0, 10)}`, now);
  } catch (err) {
    return fail(describeError(err));
  }
  let catalog: Catalog;
  try {
    catalog = catalogWith(recording);
  } catch (err) {
    return fail(`listing refused by the market build: ${describeError(err)}`);
  }
  writeFileAtomic(join(dataDir, LIVE_RECORDING_FILE), serializeRecording(recording));
  return {
    outcome: {
      source: "bazaar",
      updated: [`${recording.items.length} listings`],
      failed: [],
      dataAsOf: recording.recorded_at,
      retryAfterSeconds: null,
    },
    catalog,
  };
}

/** The benchmark service being served, rebuilt whole over each refreshed catalog. */
export interface LiveBenchmark {
  readonly service: BenchmarkService;
  catalog(): Catalog;
  swap(catalog: Catalog): void;
}

export function createLiveBenchmark(initial: Catalog, opts: BenchmarkServiceOptions = {}): LiveBenchmark {
  let catalog = initial;
  let current = createBenchmarkService(initial, opts);
  return {
    // Each call reads the current catalog; a benchmark answer is one call, so it never mixes two.
    service: {
      precheck: (input) => current.precheck(input),
      benchmark: (input, ctx) => current.benchmark(input, ctx),
    },
    catalog: () => catalog,
    swap(next) {
      current = createBenchmarkService(next, opts);
      catalog = next;
    },
  };
}
