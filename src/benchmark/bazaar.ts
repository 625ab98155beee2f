/**
 * Bazaar discovery listings: reads a facilitator's `GET /discovery/resources` listing (paginated
 * with limit/offset, `pagination.total`) and turns its items — v1 (`accepts[].maxAmountRequired`,
 * v1 network names) and v2 (`accepts[].amount`, CAIP-2 networks) — into catalog entries, or a
 * named reason to drop them. The shipped recordings and a live ingest go through the same
 * `bazaarItemToEntry`.
 */

import { BASE_MAINNET } from "../chain/networks.js";
import { atomicToUsd } from "../chain/usdc.js";
import type { CatalogEntry } from "./catalog/schema.js";
import { categorize, DESCRIPTION_STOPWORDS, submarketOf, words } from "./categories.js";
import { toIsoUtc } from "./compiled-catalog.js";
import { isTestnet, toCaip2, usdcDecimals } from "./money.js";

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
  description?: unknown;
  outputSchema?: { input?: { method?: unknown } };
}

interface RawItem {
  resource?: unknown;
  type?: unknown;
  x402Version?: unknown;
  accepts?: unknown;
  lastUpdated?: unknown;
  description?: unknown;
  metadata?: { category?: unknown; tags?: unknown; provider?: unknown; name?: unknown; method?: unknown };
  quality?: { l30DaysTotalCalls?: unknown; l30DaysUniquePayers?: unknown };
  extensions?: { bazaar?: { info?: { input?: { method?: unknown } } } };
}

export interface IngestContext {
  /** Source id of the recording or live listing the item came from. */
  source_id: string;
  /** YYYY-MM-DD the listing was recorded. */
  compiled_on: string;
  /** The facilitator's public discovery URL (provenance of every entry). */
  listing_url: string;
}

/** Why a listing item is not in the market; stable keys, counted in the snapshot's build report. */
export const DROP_REASONS = {
  not_http_resource: "resource type is not http",
  invalid_resource_url: "resource is not an absolute http(s) URL",
  no_atomic_amount: "no accepts[] entry with an atomic amount",
  testnet_only: "offered on testnets only",
  unknown_network: "no accepts[] entry on a known mainnet",
  zero_price: "price is zero",
  asset_not_usdc: "priced in an asset that is not a known USDC contract (no USD value)",
} as const;
export type DropReason = keyof typeof DROP_REASONS;

export type ItemOutcome = { entry: CatalogEntry } | { dropped: DropReason };

function count(v: unknown): number | null {
  return typeof v === "number" && Number.isInteger(v) && v >= 0 ? v : null;
}

const METHODS = new Set(["GET", "POST", "PUT", "PATCH", "DELETE"]);

function resourceUrl(item: RawItem): URL | null {
  const raw =
    typeof item?.resource === "string"
      ? item.resource
      : typeof (item?.resource as { url?: unknown })?.url === "string"
        ? (item.resource as { url: string }).url
        : null;
  if (raw === null || !/^https?:\/\//i.test(raw.trim())) return null;
  try {
    const u = new URL(raw.trim());
    return u.hostname === "" ? null : u;
  } catch {
    return null;
  }
}

interface Priced {
  a: RawAccept;
  amount: string;
  network: string | null;
  decimals: number | null;
}

/** The requirement the market uses: Base USDC first, then USDC on another mainnet; or why none. */
function chooseAccept(accepts: readonly RawAccept[], version: 1 | 2 | null): Priced | DropReason {
  const priced: Priced[] = [];
  for (const a of accepts) {
    // v1 advertises maxAmountRequired, v2 amount; read the field of the item's version first.
    const amount = version === 1 ? (a.maxAmountRequired ?? a.amount) : (a.amount ?? a.maxAmountRequired);
    if (typeof amount !== "string" || !/^\d+$/.test(amount)) continue;
    const network = toCaip2(a.network);
    priced.push({
      a,
      amount,
      network,
      decimals: usdcDecimals(network, typeof a.asset === "string" ? a.asset : null),
    });
  }
  if (priced.length === 0) return "no_atomic_amount";
  const mainnet = priced.filter((p) => p.network !== null && !isTestnet(p.network));
  if (mainnet.length === 0)
    return priced.some((p) => isTestnet(p.network)) ? "testnet_only" : "unknown_network";
  const positive = mainnet.filter((p) => BigInt(p.amount) > 0n);
  if (positive.length === 0) return "zero_price";
  const usdc = positive.filter((p) => p.decimals !== null);
  return usdc.find((p) => p.network === BASE_MAINNET.caip2) ?? usdc[0] ?? "asset_not_usdc";
}

/** One listing item → one catalog entry (its Base USDC requirement when offered), or why not. */
export function bazaarItemToEntry(raw: unknown, ctx: IngestContext): ItemOutcome {
  const item = raw as RawItem;
  if (item?.type !== undefined && item.type !== "http") return { dropped: "not_http_resource" };
  const url = resourceUrl(item);
  if (url === null) return { dropped: "invalid_resource_url" };
  const version = item.x402Version === 1 ? 1 : item.x402Version === 2 ? 2 : null;
  const chosen = chooseAccept(Array.isArray(item.accepts) ? (item.accepts as RawAccept[]) : [], version);
  if (typeof chosen === "string") return { dropped: chosen };
  const asset = typeof chosen.a.asset === "string" ? chosen.a.asset : null;
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
  const description =
    typeof item.description === "string"
      ? item.description
      : typeof chosen.a.description === "string"
        ? chosen.a.description
        : null;
  const pathWords = url.pathname.split("/").flatMap(words);
  const category = categorize({ label, tags: metaTags, pathWords, description });
  const host = url.host.toLowerCase();
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
      url: url.toString(),
      method: (method ?? "GET") as CatalogEntry["method"],
      price_usd: atomicToUsd(chosen.amount, chosen.decimals as number),
      amount_atomic: chosen.amount,
      amount_basis: "observed",
      network: chosen.network,
      asset,
      pay_to: typeof chosen.a.payTo === "string" && chosen.a.payTo.length > 0 ? chosen.a.payTo : null,
      x402_version: version,
      service,
      category,
      submarket: submarketOf(category, {
        strong: [...pathWords, ...metaTags],
        weak: description === null ? [] : words(description).filter((w) => !DESCRIPTION_STOPWORDS.has(w)),
      }),
      tags,
      observed_at: observed,
      calls_30d: count(item.quality?.l30DaysTotalCalls),
      unique_payers_30d: count(item.quality?.l30DaysUniquePayers),
      source_url: ctx.listing_url,
      source_id: ctx.source_id,
      compiled_on: ctx.compiled_on,
    },
  };
}

/**
 * De-duplication key of a resource: host (lower-case) and path without query, fragment or
 * trailing slash. Scheme-insensitive, so an `http://` listing of an `https://` resource is the same.
 */
export function resourceKey(url: string): string {
  const u = new URL(url);
  return `${u.host.toLowerCase()}${u.pathname.replace(/\/+$/, "")}`;
}
