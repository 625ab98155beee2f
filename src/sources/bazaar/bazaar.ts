import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fetchBazaarListing } from "../../benchmark/bazaar.js";
import { type Catalog, catalogFromSnapshot, validateSnapshot } from "../../benchmark/catalog/snapshot.js";
import { buildMarketSnapshot, COMPILED_NAME } from "../../benchmark/market-build.js";
import {
  parseRecording,
  type Recording,
  recordingFromListing,
  serializeRecording,
} from "../../benchmark/recording.js";
import {
  type BenchmarkService,
  type BenchmarkServiceOptions,
  createBenchmarkService,
} from "../../benchmark/service.js";
import { writeFileAtomic } from "../../files/atomic-write.js";
import { dataPath } from "../../files/paths.js";
import { describeError, failure, ImplausibleError, type ItemFailure } from "../errors.js";
import type { SourceOutcome } from "../status.js";

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

/** A listing may grow, but not past this many times the last good one (nor past MAX_ITEMS). */
export const MAX_GROWTH = 5;
export const MAX_ITEMS = 50_000;
/** An x402 price above this many atomic units (1,000,000 USDC at 6 decimals) is not a per-call price. */
export const MAX_ATOMIC_PRICE = 10n ** 12n;
/** Share of items whose price may be unreadable or out of bounds before the listing as a whole is refused. */
export const MAX_BAD_PRICE_SHARE = 0.05;

/** An item's prices (v2 `amount`, v1 `maxAmountRequired`): null when every offer's price is a sane atomic amount. */
function badPrice(item: unknown): string | null {
  const accepts = (item as { accepts?: unknown } | null)?.accepts;
  if (!Array.isArray(accepts)) return null;
  for (const a of accepts) {
    const r = a as { amount?: unknown; maxAmountRequired?: unknown } | null;
    const v = r?.amount ?? r?.maxAmountRequired;
    if (v === undefined) continue;
    if (typeof v !== "string" || !/^\d{1,30}$/.test(v))
      return `price ${String(v).slice(0, 40)} is not an atomic amount`;
    if (BigInt(v) > MAX_ATOMIC_PRICE) return `price ${v} is over ${MAX_ATOMIC_PRICE} atomic units`;
  }
  return null;
}

/**
 * Refuses a listing that cannot be the market: many times more items than the last good one, or more than a few
 * items whose prices are not sane atomic amounts (negative, fractional, absurdly large).
 */
export function checkListing(items: readonly unknown[], previousCount: number | null): void {
  if (items.length > MAX_ITEMS || (previousCount !== null && items.length > previousCount * MAX_GROWTH))
    throw new ImplausibleError(
      `${items.length} items against ${previousCount ?? "no"} in the last good listing (bound ×${MAX_GROWTH}, at most ${MAX_ITEMS})`,
      { items: items.length, previous: previousCount },
    );
  const bad = items.map(badPrice).filter((b): b is string => b !== null);
  if (bad.length > items.length * MAX_BAD_PRICE_SHARE)
    throw new ImplausibleError(`${bad.length} of ${items.length} items have implausible prices (${bad[0]})`, {
      examples: bad.slice(0, 20),
    });
}

/**
 * Reads every page of the Bazaar listing (CDP's `discovery/resources`, limit/offset) through the catalog's own parser
 * and rebuilds the market with it. Refused, keeping the previous market: an HTTP error, a page without items[], an
 * empty or incomplete listing, one with fewer than two thirds of the last good listing's items, or one that fails
 * `checkListing` (too many items, implausible prices).
 */
export async function refreshBazaar(
  discoveryUrl: string,
  dataDir: string,
  now: Date,
  fetchImpl: typeof fetch,
): Promise<{ outcome: SourceOutcome; catalog: Catalog | null }> {
  const fail = (error: string | ItemFailure) => ({
    outcome: {
      source: "bazaar" as const,
      updated: [],
      failed: [typeof error === "string" ? { item: "listing", error, kind: "invalid" as const } : error],
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
    checkListing(listing.items, previous?.items.length ?? null);
    recording = recordingFromListing(listing, `live_${now.toISOString().slice(0, 10)}`, now);
  } catch (err) {
    return fail(failure("listing", err));
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
