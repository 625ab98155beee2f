import { CATEGORIES, type CatalogEntry, type Category } from "./catalog/schema.js";
import { submarketOf } from "./categories.js";
import { usdcDecimals, usdToAtomic } from "./money.js";

export const COMPILED_CATALOG_SOURCE_ID = "x402-catalog";

/** One row of data/x402-catalog/catalog.json (the compiled catalog as published; facts only). */
interface CompiledRow {
  url: string;
  method: string;
  price_usd: number | null;
  amount_atomic: string | null;
  network: string | null;
  asset: string | null;
  pay_to: string | null;
  x402_version: number | null;
  service: string;
  category: string;
  tags: string[];
  source_url: string;
  observed_at: string | null;
  calls_30d: number | null;
  unique_payers_30d: number | null;
}

interface CompiledCatalog {
  compiled_on: string;
  method: string;
  endpoints: CompiledRow[];
}

/**
 * ISO 8601 UTC for the timestamp spellings found in public listings: date only
 * (midnight UTC), naive date-time (read as UTC), or with an offset.
 */
export function toIsoUtc(value: string | number | null | undefined): string | null {
  if (value === null || value === undefined || value === "") return null;
  if (typeof value === "number") {
    // Unix seconds (Bazaar lastUpdated) vs milliseconds.
    const ms = value < 1e12 ? value * 1000 : value;
    const d = new Date(ms);
    return Number.isNaN(d.getTime()) ? null : d.toISOString();
  }
  const text = value.trim();
  let candidate = text;
  if (/^\d{4}-\d{2}-\d{2}$/.test(text)) candidate = `${text}T00:00:00Z`;
  else if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(text)) candidate = `${text}Z`;
  const d = new Date(candidate);
  return Number.isNaN(d.getTime()) ? null : d.toISOString();
}

function asCategory(value: string): Category {
  return (CATEGORIES as readonly string[]).includes(value) ? (value as Category) : "uncategorized";
}

function asMethod(value: string): CatalogEntry["method"] {
  const m = value.toUpperCase();
  if (m === "GET" || m === "POST" || m === "PUT" || m === "PATCH" || m === "DELETE") return m;
  throw new Error(`unsupported HTTP method ${value}`);
}

/**
 * The observed atomic amount when the listing gave one; otherwise the exact USDC amount of the
 * USD price when the asset is a known USDC contract (an exact conversion, never rounded).
 */
function atomicFor(row: CompiledRow): Pick<CatalogEntry, "amount_atomic" | "amount_basis"> {
  if (row.amount_atomic !== null) return { amount_atomic: row.amount_atomic, amount_basis: "observed" };
  const decimals = usdcDecimals(row.network, row.asset);
  if (row.price_usd === null || decimals === null) return { amount_atomic: null, amount_basis: null };
  const atomic = usdToAtomic(row.price_usd, decimals);
  return atomic === null
    ? { amount_atomic: null, amount_basis: null }
    : { amount_atomic: atomic, amount_basis: "derived_from_usd" };
}

export interface CompiledCatalogEntries {
  compiled_on: string;
  method: string;
  entries: CatalogEntry[];
}

/**
 * Entries of the hand-compiled public catalog: same facts, timestamps in UTC, provenance (source
 * id, compile date, the page each fact was read from) on every entry, the submarket from the
 * path words and tags.
 */
export function compiledCatalogEntries(raw: unknown): CompiledCatalogEntries {
  const catalog = raw as CompiledCatalog;
  if (typeof catalog?.compiled_on !== "string" || !Array.isArray(catalog.endpoints)) {
    throw new Error("compiled catalog: expected {compiled_on, method, endpoints[]}");
  }
  const compiledOn = catalog.compiled_on;
  const entries: CatalogEntry[] = catalog.endpoints.map((row, i) => {
    try {
      const category = asCategory(row.category);
      return {
        url: row.url,
        method: asMethod(row.method),
        price_usd: row.price_usd,
        ...atomicFor(row),
        network: row.network,
        asset: row.asset,
        pay_to: row.pay_to,
        x402_version: row.x402_version === 1 || row.x402_version === 2 ? row.x402_version : null,
        service: row.service,
        category,
        submarket: submarketOf(category, { strong: [pathOf(row.url), ...row.tags], weak: [] }),
        tags: [...row.tags],
        observed_at: toIsoUtc(row.observed_at),
        calls_30d: row.calls_30d,
        unique_payers_30d: row.unique_payers_30d,
        source_url: row.source_url,
        source_id: COMPILED_CATALOG_SOURCE_ID,
        compiled_on: compiledOn,
      };
    } catch (err) {
      throw new Error(`compiled catalog endpoints[${i}] (${row?.url}): ${(err as Error).message}`);
    }
  });
  return { compiled_on: compiledOn, method: catalog.method, entries };
}

function pathOf(url: string): string {
  try {
    return new URL(url).pathname;
  } catch {
    return "";
  }
}
