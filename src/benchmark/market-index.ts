/**
 * Everything the benchmark needs from the catalog, computed once when the service is created:
 * each entry's URL template, price quality, usage figure and effective category; templates by
 * exact key and by host; comparable pools per category sorted by price.
 */

import type { CatalogEntry, Category } from "./catalog/schema.js";
import type { Catalog } from "./catalog/snapshot.js";
import { bestCategory, scoreKeywords, submarketOf, words } from "./categories.js";
import { isComparable, type PriceQuality, priceQuality } from "./price-quality.js";
import { serviceHost, serviceIds } from "./sellers.js";
import { type NormalizedUrl, normalizeUrl, templateFit } from "./url.js";
import { type UsageFigure, washAdjust } from "./usage.js";

export interface IndexedEntry {
  readonly index: number;
  readonly entry: CatalogEntry;
  readonly norm: NormalizedUrl;
  readonly quality: PriceQuality;
  readonly usage: UsageFigure;
  readonly category: Category;
  /** Finer market inside the category, null when none was decided. */
  readonly submarket: string | null;
  /** The seller (see sellers.ts): the unit of one vote. */
  readonly service: string;
  readonly comparable: boolean;
}

export interface ExclusionCounts {
  other_network: number;
  testnet: number;
  not_per_call: number;
  approximate_price: number;
  no_price: number;
}

export interface Pool {
  /** Comparable entries, ascending by price. */
  readonly entries: readonly IndexedEntry[];
  readonly excluded: ExclusionCounts;
}

export interface MarketIndex {
  readonly entries: readonly IndexedEntry[];
  readonly byKey: ReadonlyMap<string, readonly IndexedEntry[]>;
  readonly byHost: ReadonlyMap<string, readonly IndexedEntry[]>;
  /** Per category ("uncategorized" holds the whole market) and per "category/submarket". */
  readonly pools: ReadonlyMap<string, Pool>;
  /** Service of every listed host, for URLs that are not listed themselves. */
  readonly serviceByHost: ReadonlyMap<string, string>;
}

export function poolKey(category: Category, submarket: string | null): string {
  return submarket === null ? category : `${category}/${submarket}`;
}

/** Category of a catalog entry listed as uncategorized (e.g. from a Bazaar ingest): keyword vote. */
function entryCategory(entry: CatalogEntry, norm: NormalizedUrl): Category {
  if (entry.category !== "uncategorized") return entry.category;
  const score = scoreKeywords(norm.segments, 2);
  scoreKeywords(entry.tags, 1, score);
  return bestCategory(score) ?? "uncategorized";
}

function exclusionReason(q: PriceQuality): keyof ExclusionCounts {
  if (!q.priced) return "no_price";
  if (q.testnet) return "testnet";
  if (!q.base_mainnet) return "other_network";
  if (!q.per_call) return "not_per_call";
  return "approximate_price";
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [value]);
  else list.push(value);
}

function makePool(members: readonly IndexedEntry[]): Pool {
  const excluded: ExclusionCounts = {
    other_network: 0,
    testnet: 0,
    not_per_call: 0,
    approximate_price: 0,
    no_price: 0,
  };
  const comparables: IndexedEntry[] = [];
  for (const m of members) {
    if (m.comparable) comparables.push(m);
    else excluded[exclusionReason(m.quality)]++;
  }
  comparables.sort(
    (a, b) => (a.entry.price_usd as number) - (b.entry.price_usd as number) || a.index - b.index,
  );
  return { entries: comparables, excluded };
}

export function buildMarketIndex(catalog: Catalog): MarketIndex {
  const services = serviceIds(catalog.entries);
  const serviceByHost = new Map<string, string>();
  const entries: IndexedEntry[] = catalog.entries.map((entry, index) => {
    const norm = normalizeUrl(entry.url);
    const quality = priceQuality(entry);
    const category = entryCategory(entry, norm);
    const service = services[index] as string;
    serviceByHost.set(serviceHost(entry.url), service);
    return {
      index,
      entry,
      norm,
      quality,
      usage: washAdjust(entry.calls_30d, entry.unique_payers_30d),
      category,
      submarket:
        category === entry.category
          ? entry.submarket
          : submarketOf(category, { strong: [...norm.segments, ...entry.tags], weak: [] }),
      service,
      comparable: isComparable(quality),
    };
  });
  const byKey = new Map<string, IndexedEntry[]>();
  const byHost = new Map<string, IndexedEntry[]>();
  const byPool = new Map<string, IndexedEntry[]>();
  for (const e of entries) {
    push(byKey, e.norm.match_key, e);
    push(byHost, e.norm.host, e);
    if (e.category === "uncategorized") continue;
    push(byPool, e.category, e);
    if (e.submarket !== null) push(byPool, poolKey(e.category, e.submarket), e);
  }
  const pools = new Map<string, Pool>();
  for (const [key, members] of byPool) pools.set(key, makePool(members));
  pools.set("uncategorized", makePool(entries));
  return { entries, byKey, byHost, pools, serviceByHost };
}

export interface MatchResult {
  type: "exact" | "template" | "none";
  /** Best match first. */
  matches: readonly IndexedEntry[];
}

/** Rank of a match among equals: exact URL, exact comparable price, priced, catalog order. */
function matchRank(input: NormalizedUrl, e: IndexedEntry): number[] {
  const exact = e.norm.host === input.host && e.norm.segments.join("/") === input.segments.join("/");
  return [exact ? 0 : 1, e.comparable ? 0 : 1, e.quality.priced ? 0 : 1, e.index];
}

function compareRanks(a: number[], b: number[]): number {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return (a[i] as number) - (b[i] as number);
  return 0;
}

/**
 * Catalog entries for an input URL: same template key first; otherwise the most specific catalog
 * template on the same host whose placeholders absorb the input's segments.
 */
export function matchEntries(index: MarketIndex, input: NormalizedUrl): MatchResult {
  let found: readonly IndexedEntry[] = index.byKey.get(input.match_key) ?? [];
  if (found.length === 0) {
    let best = -1;
    const fits: IndexedEntry[] = [];
    for (const e of index.byHost.get(input.host) ?? []) {
      const fit = templateFit(e.norm.template, input.template);
      if (fit === null || fit < best) continue;
      if (fit > best) {
        best = fit;
        fits.length = 0;
      }
      fits.push(e);
    }
    found = fits;
  }
  if (found.length === 0) return { type: "none", matches: [] };
  const sorted = [...found].sort((a, b) => compareRanks(matchRank(input, a), matchRank(input, b)));
  const top = sorted[0] as IndexedEntry;
  const exact = top.norm.host === input.host && top.norm.segments.join("/") === input.segments.join("/");
  return { type: exact ? "exact" : "template", matches: sorted };
}

export type CategorySource = "hint" | "catalog" | "inferred" | "default";

/**
 * Category: the hint when given; else the matched entry's; else a keyword vote over the URL's
 * path (weight 2) and host (weight 1) words plus the categories of the host's other catalog
 * entries (their share × 3); else "uncategorized".
 */
export function resolveCategory(
  index: MarketIndex,
  input: NormalizedUrl,
  hint: Category | undefined,
  matched: IndexedEntry | undefined,
): { category: Category; source: CategorySource; evidence: string[] } {
  if (hint !== undefined) return { category: hint, source: "hint", evidence: ["category_hint"] };
  if (matched !== undefined && matched.category !== "uncategorized") {
    return {
      category: matched.category,
      source: "catalog",
      evidence: [`catalog entry ${matched.entry.url}`],
    };
  }
  const score = scoreKeywords(
    input.segments.filter((_, i) => input.kinds[i] === "literal"),
    2,
  );
  const hostWords = words(input.host.replace(/:\d+$/, "")).filter(
    (w) => !["www", "api", "com", "io", "xyz", "dev", "ai", "app"].includes(w),
  );
  scoreKeywords(hostWords, 1, score);
  const evidence = score.hits.map((w) => `word "${w}"`);
  const sameHost = index.byHost.get(input.host) ?? [];
  if (sameHost.length > 0) {
    const counts = new Map<Category, number>();
    for (const e of sameHost) counts.set(e.category, (counts.get(e.category) ?? 0) + 1);
    for (const [cat, n] of counts) {
      if (cat === "uncategorized") continue;
      score.scores[cat] += (n / sameHost.length) * 3;
      evidence.push(`${n} of ${sameHost.length} catalog entries on ${input.host} are ${cat}`);
    }
  }
  const best = bestCategory(score);
  return best === null
    ? {
        category: "uncategorized",
        source: "default",
        evidence: ["no category evidence in the URL or catalog"],
      }
    : { category: best, source: "inferred", evidence };
}
