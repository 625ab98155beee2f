/**
 * Bazaar discovery ingest: reads a facilitator's `GET /discovery/resources` listing (paginated
 * with limit/offset, `pagination.total`), turns v1 items (`accepts[].maxAmountRequired`, v1
 * network names) and v2 items (`accepts[].amount`, CAIP-2 networks) into catalog entries with
 * their 30-day usage (`quality.l30DaysTotalCalls` / `l30DaysUniquePayers`), and merges them into
 * a snapshot.
 */
import { readFileSync } from "node:fs";
import { writeFileAtomic } from "../store/atomic-write.js";
import { validateSnapshot } from "../store/catalog.js";
import { toIsoUtc } from "./compiled-catalog.js";
import { categoryFromLabels } from "./categories.js";
import { atomicToUsd, BASE_MAINNET, toCaip2, usdcDecimals } from "./money.js";
import type { CatalogEntry, CatalogSnapshot, CatalogSource } from "../store/catalog-schema.js";

export interface BazaarFetchOptions {
  fetchImpl?: typeof fetch;
  /** Items per page (limit); facilitators commonly cap it at 100. */
  pageSize?: number;
  maxPages?: number;
  /** Resource type filter; "http" for HTTP endpoints. */
  type?: string;
  timeoutMs?: number;
  headers?: Record<string, string>;
}

export interface BazaarListing {
  listing_url: string;
  items: unknown[];
  total: number | null;
  pages: number;
  /** True when the listing was read to its end (not cut by maxPages). */
  complete: boolean;
}

export function discoveryUrl(facilitatorUrl: string): string {
  return `${facilitatorUrl.replace(/\/+$/, "")}/discovery/resources`;
}

/** Reads every page of the listing. Throws on HTTP errors or a body without `items`. */
export async function fetchBazaarListing(
  facilitatorUrl: string,
  opts: BazaarFetchOptions = {},
): Promise<BazaarListing> {
  const fetchImpl = opts.fetchImpl ?? fetch;
  const pageSize = opts.pageSize ?? 100;
  const maxPages = opts.maxPages ?? 100;
  const base = discoveryUrl(facilitatorUrl);
  const items: unknown[] = [];
  let total: number | null = null;
  let offset = 0;
  let pages = 0;
  for (;;) {
    if (pages >= maxPages) return { listing_url: base, items, total, pages, complete: false };
    const q = new URLSearchParams({ limit: String(pageSize), offset: String(offset) });
    if (opts.type !== undefined) q.set("type", opts.type);
    const res = await fetchImpl(`${base}?${q}`, {
      headers: { accept: "application/json", ...opts.headers },
      redirect: "error",
      signal: AbortSignal.timeout(opts.timeoutMs ?? 15_000),
    });
    if (!res.ok) throw new Error(`${base}?${q}: HTTP ${res.status}`);
    const body = (await res.json()) as { items?: unknown; pagination?: { total?: unknown; limit?: unknown } };
    if (!Array.isArray(body.items)) throw new Error(`${base}?${q}: response has no items[]`);
    pages++;
    items.push(...body.items);
    if (typeof body.pagination?.total === "number") total = body.pagination.total;
    offset += body.items.length;
    const pageLimit = typeof body.pagination?.limit === "number" ? body.pagination.limit : pageSize;
    const done =
      body.items.length === 0 || (total !== null ? offset >= total : body.items.length < pageLimit);
    if (done) return { listing_url: base, items, total, pages, complete: true };
  }
}

/** One `accepts` entry of an x402 402 answer or Bazaar item, v1 or v2, as untrusted input. */
export interface RawAccept {
  scheme?: unknown;
  network?: unknown;
  amount?: unknown;
  maxAmountRequired?: unknown;
  asset?: unknown;
  payTo?: unknown;
  outputSchema?: { input?: { method?: unknown } };
}

interface RawItem {
  resource?: unknown;
  type?: unknown;
  x402Version?: unknown;
  accepts?: unknown;
  lastUpdated?: unknown;
  metadata?: { category?: unknown; tags?: unknown; provider?: unknown; name?: unknown; method?: unknown };
  quality?: { l30DaysTotalCalls?: unknown; l30DaysUniquePayers?: unknown };
  extensions?: { bazaar?: { info?: { input?: { method?: unknown } } } };
}

export interface IngestContext {
  source_id: string;
  /** YYYY-MM-DD of the ingest. */
  compiled_on: string;
  /** ISO time of the ingest, used when an item has no lastUpdated. */
  ingested_at: string;
  listing_url: string;
}

export type ItemOutcome = { entry: CatalogEntry } | { skipped: string };

function count(v: unknown): number | null {
  return typeof v === "number" && Number.isInteger(v) && v >= 0 ? v : null;
}

const METHODS = new Set(["GET", "POST", "PUT", "PATCH", "DELETE"]);

/** One listing item → one catalog entry (the Base USDC requirement when offered), or why not. */
export function bazaarItemToEntry(raw: unknown, ctx: IngestContext): ItemOutcome {
  const item = raw as RawItem;
  const resource =
    typeof item?.resource === "string"
      ? item.resource
      : typeof (item?.resource as { url?: unknown })?.url === "string"
        ? (item.resource as { url: string }).url
        : null;
  if (resource === null || !/^https?:\/\//i.test(resource)) return { skipped: "no http(s) resource URL" };
  if (item.type !== undefined && item.type !== "http")
    return { skipped: `resource type ${String(item.type)}` };
  const version = item.x402Version === 1 ? 1 : item.x402Version === 2 ? 2 : null;
  const accepts = Array.isArray(item.accepts) ? (item.accepts as RawAccept[]) : [];
  const priced = accepts
    .map((a) => {
      // v1 advertises maxAmountRequired, v2 amount; read the field of the item's version first.
      const amount = version === 1 ? (a.maxAmountRequired ?? a.amount) : (a.amount ?? a.maxAmountRequired);
      return typeof amount === "string" && /^\d+$/.test(amount)
        ? { a, amount, network: toCaip2(a.network) }
        : null;
    })
    .filter((x): x is { a: RawAccept; amount: string; network: string | null } => x !== null);
  if (priced.length === 0) return { skipped: "no accepts[] entry with an atomic amount" };
  const chosen =
    priced.find(
      (p) =>
        p.network === BASE_MAINNET &&
        usdcDecimals(p.network, typeof p.a.asset === "string" ? p.a.asset : null) !== null,
    ) ??
    priced.find((p) => p.network === BASE_MAINNET) ??
    (priced[0] as (typeof priced)[number]);
  const asset = typeof chosen.a.asset === "string" ? chosen.a.asset : null;
  const decimals = usdcDecimals(chosen.network, asset);
  const methodRaw =
    item.extensions?.bazaar?.info?.input?.method ??
    chosen.a.outputSchema?.input?.method ??
    item.metadata?.method;
  const method =
    typeof methodRaw === "string" && METHODS.has(methodRaw.toUpperCase()) ? methodRaw.toUpperCase() : null;
  const metaTags = Array.isArray(item.metadata?.tags)
    ? (item.metadata.tags as unknown[])
        .filter((t): t is string => typeof t === "string" && t.length > 0)
        .map((t) => t.toLowerCase())
    : [];
  const tags = [...new Set([...metaTags, "bazaar", ...(method === null ? ["method-inferred"] : [])])];
  const label = typeof item.metadata?.category === "string" ? item.metadata.category : null;
  const host = new URL(resource).host.toLowerCase();
  const service =
    typeof item.metadata?.provider === "string" && item.metadata.provider.length > 0
      ? item.metadata.provider
      : typeof item.metadata?.name === "string" && item.metadata.name.length > 0
        ? item.metadata.name
        : host;
  const lastUpdated = item.lastUpdated;
  const observed =
    typeof lastUpdated === "string" || typeof lastUpdated === "number" ? toIsoUtc(lastUpdated) : null;
  return {
    entry: {
      url: resource,
      method: (method ?? "GET") as CatalogEntry["method"],
      price_usd: decimals === null ? null : atomicToUsd(chosen.amount, decimals),
      amount_atomic: chosen.amount,
      amount_basis: "observed",
      network: chosen.network,
      asset,
      pay_to: typeof chosen.a.payTo === "string" ? chosen.a.payTo : null,
      x402_version: version,
      service,
      category: categoryFromLabels(label, metaTags),
      tags,
      observed_at: observed ?? ctx.ingested_at,
      calls_30d: count(item.quality?.l30DaysTotalCalls),
      unique_payers_30d: count(item.quality?.l30DaysUniquePayers),
      source_url: ctx.listing_url,
      source_id: ctx.source_id,
      compiled_on: ctx.compiled_on,
    },
  };
}

/** Merge key: method + URL without query, fragment or trailing slash, host lower-cased. */
export function entryKey(method: string, url: string): string {
  const u = new URL(url);
  return `${method.toUpperCase()} ${u.protocol}//${u.host.toLowerCase()}${u.pathname.replace(/\/+$/, "")}`;
}

export interface MergeReport {
  added: number;
  updated: number;
  removed_stale: number;
}

/**
 * Merges ingested entries into a snapshot. A listed endpoint replaces an existing entry with the
 * same method and URL (the listing is a dated machine-readable observation and carries usage);
 * the old entry's category and tags survive where the listing has none. When the listing was read
 * completely, entries from earlier ingests of the same source that are no longer listed go.
 */
export function mergeIngest(
  snapshot: CatalogSnapshot,
  entries: readonly CatalogEntry[],
  source: CatalogSource,
  complete: boolean,
  generatedAt: string,
): { snapshot: CatalogSnapshot; report: MergeReport } {
  const incoming = new Map<string, CatalogEntry>();
  for (const e of entries) incoming.set(entryKey(e.method, e.url), e);
  const report: MergeReport = { added: 0, updated: 0, removed_stale: 0 };
  const used = new Set<string>();
  const merged: CatalogEntry[] = [];
  for (const old of snapshot.endpoints) {
    const key = entryKey(old.method, old.url);
    const fresh = incoming.get(key);
    if (fresh !== undefined && !used.has(key)) {
      used.add(key);
      report.updated++;
      merged.push({
        ...fresh,
        category: fresh.category === "uncategorized" ? old.category : fresh.category,
        tags: [...new Set([...old.tags.filter((t) => t !== "method-inferred"), ...fresh.tags])],
        service: fresh.service === new URL(fresh.url).host.toLowerCase() ? old.service : fresh.service,
      });
      continue;
    }
    if (complete && old.source_id === source.id) {
      report.removed_stale++;
      continue;
    }
    merged.push(old);
  }
  for (const [key, e] of incoming) {
    if (used.has(key)) continue;
    report.added++;
    merged.push(e);
  }
  const sources = [...snapshot.sources.filter((s) => s.id !== source.id), source];
  const counts = new Map<string, number>();
  for (const e of merged) counts.set(e.source_id, (counts.get(e.source_id) ?? 0) + 1);
  const next: CatalogSnapshot = {
    ...snapshot,
    generated_at: generatedAt > snapshot.generated_at ? generatedAt : snapshot.generated_at,
    sources: sources
      .map((s) => ({ ...s, entry_count: counts.get(s.id) ?? 0 }))
      .filter((s) => s.entry_count > 0 || s.id === source.id),
    endpoints: merged,
  };
  return { snapshot: next, report };
}

export interface IngestRunOptions extends BazaarFetchOptions {
  snapshotPath: string;
  facilitatorUrl: string;
  now?: Date;
  dryRun?: boolean;
}

export interface IngestRunReport extends MergeReport {
  listing_url: string;
  items: number;
  converted: number;
  skipped: Record<string, number>;
  pages: number;
  complete: boolean;
  endpoints: number;
}

/** Fetch → convert → merge → validate → atomic write. The snapshot is untouched on any error. */
export async function ingestBazaar(opts: IngestRunOptions): Promise<IngestRunReport> {
  const now = opts.now ?? new Date();
  const listing = await fetchBazaarListing(opts.facilitatorUrl, { ...opts, type: opts.type ?? "http" });
  const host = new URL(opts.facilitatorUrl).host.toLowerCase();
  const ctx: IngestContext = {
    source_id: `bazaar:${host}`,
    compiled_on: now.toISOString().slice(0, 10),
    ingested_at: now.toISOString(),
    listing_url: listing.listing_url,
  };
  const entries: CatalogEntry[] = [];
  const skipped: Record<string, number> = {};
  for (const item of listing.items) {
    const out = bazaarItemToEntry(item, ctx);
    if ("entry" in out) entries.push(out.entry);
    else skipped[out.skipped] = (skipped[out.skipped] ?? 0) + 1;
  }
  const current = validateSnapshot(JSON.parse(readFileSync(opts.snapshotPath, "utf8")), opts.snapshotPath);
  const source: CatalogSource = {
    id: ctx.source_id,
    kind: "bazaar_discovery",
    compiled_on: ctx.compiled_on,
    method: `Bazaar discovery listing GET ${listing.listing_url} (limit/offset pagination, ${listing.pages} page(s)${listing.complete ? "" : ", cut at the page limit"}); v1 maxAmountRequired and v2 amount as atomic amounts, USD only for known USDC assets; 30-day usage from quality.l30DaysTotalCalls / l30DaysUniquePayers.`,
    origin: listing.listing_url,
    entry_count: entries.length,
  };
  const { snapshot, report } = mergeIngest(current, entries, source, listing.complete, now.toISOString());
  const valid = validateSnapshot(snapshot, `${opts.snapshotPath} (after ingest)`);
  if (opts.dryRun !== true) writeFileAtomic(opts.snapshotPath, `${JSON.stringify(valid, null, 1)}\n`);
  return {
    listing_url: listing.listing_url,
    items: listing.items.length,
    converted: entries.length,
    skipped,
    pages: listing.pages,
    complete: listing.complete,
    endpoints: valid.endpoints.length,
    ...report,
  };
}
