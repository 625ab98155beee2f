/**
 * The shipped market snapshot: the hand-compiled catalog merged with every Bazaar recording,
 * each listing parsed by bazaarItemToEntry (the live ingest's parser), de-duplicated by resource,
 * with read / kept / dropped counts per source and for the whole build.
 */

import { bazaarItemToEntry, DROP_REASONS, type DropReason, resourceKey } from "./bazaar.js";
import type { CatalogEntry, CatalogSnapshot, CatalogSource } from "./catalog/schema.js";
import { COMPILED_CATALOG_SOURCE_ID, compiledCatalogEntries } from "./compiled-catalog.js";
import type { Recording } from "./recording.js";

export const DEDUP_RULE =
  "one entry per resource (host and path, scheme-insensitive, without query or trailing slash): among " +
  "Bazaar listings the newest lastUpdated wins (then https over http, then the later recording); a " +
  "hand-compiled entry of the same resource wins over any listing unless it has no exact price and the " +
  "listing has one";

export function recordingSourceId(rec: Pick<Recording, "name">): string {
  return `bazaar:${rec.name}`;
}

function sourceOfRecording(rec: Recording, kept: number, dropped: Record<string, number>): CatalogSource {
  return {
    id: recordingSourceId(rec),
    kind: "bazaar_recording",
    compiled_on: rec.recorded_at.slice(0, 10),
    method:
      `Bazaar discovery listing GET ${rec.facilitator_discovery_url}, recorded ${rec.recorded_at} ` +
      `(${rec.recorded_at_basis}); each item parsed by bazaarItemToEntry: v1 maxAmountRequired / v2 amount ` +
      "as atomic amounts, the Base USDC requirement preferred, observed_at = the item's lastUpdated.",
    origin: `recording:${rec.name}`,
    listing_url: rec.facilitator_discovery_url,
    entry_count: 0,
    read: rec.items.length,
    kept,
    dropped,
  };
}

interface Candidate {
  entry: CatalogEntry;
  order: number;
}

/** True when `a` should replace `b` as the one listing of a resource. */
function newer(a: Candidate, b: Candidate): boolean {
  const ta = a.entry.observed_at ?? "";
  const tb = b.entry.observed_at ?? "";
  if (ta !== tb) return ta > tb;
  const sa = a.entry.url.startsWith("https:");
  const sb = b.entry.url.startsWith("https:");
  if (sa !== sb) return sa;
  return a.order > b.order;
}

function hasExactPrice(e: CatalogEntry): boolean {
  return (
    e.price_usd !== null &&
    e.price_usd > 0 &&
    !e.tags.some((t) =>
      ["estimated", "default-price", "dynamic", "example-challenge-amount", "min-charge"].includes(t),
    )
  );
}

function add(into: Record<string, number>, key: string, n = 1): void {
  into[key] = (into[key] ?? 0) + n;
}

/** Deterministic: the same inputs give the same snapshot, byte for byte. */
export function buildMarketSnapshot(
  compiledRaw: unknown,
  compiledName: string,
  recordings: readonly Recording[],
): CatalogSnapshot {
  const compiled = compiledCatalogEntries(compiledRaw);
  const ordered = [...recordings].sort((a, b) => a.recorded_at.localeCompare(b.recorded_at));
  const dropped: Record<string, number> = {};
  const sources: CatalogSource[] = [];
  const listed = new Map<string, Candidate>();
  let order = 0;
  let read = compiled.entries.length;
  let kept = compiled.entries.length;
  for (const rec of ordered) {
    const ctx = {
      source_id: recordingSourceId(rec),
      compiled_on: rec.recorded_at.slice(0, 10),
      listing_url: rec.facilitator_discovery_url,
    };
    const recDropped: Record<string, number> = {};
    let recKept = 0;
    for (const item of rec.items) {
      const out = bazaarItemToEntry(item, ctx);
      if ("dropped" in out) {
        add(recDropped, out.dropped);
        continue;
      }
      recKept++;
      const cand = { entry: out.entry, order: order++ };
      const key = resourceKey(out.entry.url);
      const prev = listed.get(key);
      if (prev === undefined || newer(cand, prev)) listed.set(key, cand);
    }
    for (const [k, n] of Object.entries(recDropped)) add(dropped, k, n);
    read += rec.items.length;
    kept += recKept;
    sources.push(sourceOfRecording(rec, recKept, recDropped));
  }

  const compiledByKey = new Map<string, CatalogEntry[]>();
  for (const e of compiled.entries) {
    const key = resourceKey(e.url);
    compiledByKey.set(key, [...(compiledByKey.get(key) ?? []), e]);
  }
  const replaced = new Set<CatalogEntry>();
  const fromListings: CatalogEntry[] = [];
  for (const [key, cand] of listed) {
    const same = compiledByKey.get(key);
    if (same === undefined) {
      fromListings.push(cand.entry);
      continue;
    }
    if (!same.some(hasExactPrice) && hasExactPrice(cand.entry)) {
      for (const e of same) replaced.add(e);
      // The curated category, submarket, service name and tags survive the price update.
      const curated = same[0] as CatalogEntry;
      fromListings.push({
        ...cand.entry,
        category: curated.category,
        submarket: curated.submarket,
        service: curated.service,
        tags: [...new Set([...curated.tags, ...cand.entry.tags])],
      });
    }
  }
  const endpoints = [...compiled.entries.filter((e) => !replaced.has(e)), ...fromListings];
  const counts = new Map<string, number>();
  for (const e of endpoints) counts.set(e.source_id, (counts.get(e.source_id) ?? 0) + 1);
  const compiledSource: CatalogSource = {
    id: COMPILED_CATALOG_SOURCE_ID,
    kind: "compiled_catalog",
    compiled_on: compiled.compiled_on,
    method: compiled.method,
    origin: `compilation:${compiledName}`,
    listing_url: null,
    entry_count: 0,
    read: compiled.entries.length,
    kept: compiled.entries.length,
    dropped: {},
  };
  const allSources = [compiledSource, ...sources].map((s) => ({ ...s, entry_count: counts.get(s.id) ?? 0 }));
  const newest = allSources
    .map((s) => s.compiled_on)
    .sort()
    .at(-1) as string;
  return {
    schema_version: 1,
    generated_at: `${newest}T00:00:00.000Z`,
    synthetic: false,
    sources: allSources,
    build: {
      read,
      kept,
      dropped: Object.fromEntries(Object.keys(DROP_REASONS).map((k) => [k, dropped[k as DropReason] ?? 0])),
      duplicates_merged: kept - endpoints.length,
      endpoints: endpoints.length,
      rule: DEDUP_RULE,
    },
    endpoints,
  };
}

/** The name of the compiled catalog's source in every market build (`npm run build:catalog` and the live refresh). */
export const COMPILED_NAME = "x402-catalog 2026-11-22";
