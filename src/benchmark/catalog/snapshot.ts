import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { Compile } from "typebox/compile";
import { dataPath } from "../../files/paths.js";
import {
  type CatalogEntry,
  type CatalogSnapshot,
  CatalogSnapshotSchema,
  type CatalogSource,
  type Category,
} from "./schema.js";

export type { CatalogEntry, CatalogSnapshot, CatalogSource, Category } from "./schema.js";

/** The validated, indexed market data the benchmark reads. Immutable after load. */
export interface Catalog {
  readonly schema_version: 1;
  /** When the market data was generated (the newest source), ISO 8601 UTC. */
  readonly generated_at: string;
  readonly sources: readonly CatalogSource[];
  readonly entries: readonly CatalogEntry[];
  readonly sourceById: ReadonlyMap<string, CatalogSource>;
  readonly byCategory: ReadonlyMap<Category, readonly CatalogEntry[]>;
  readonly byHost: ReadonlyMap<string, readonly CatalogEntry[]>;
  /** Where it was loaded from (a path, or a label for in-memory snapshots). */
  readonly origin: string;
}

export class CatalogValidationError extends Error {
  override readonly name = "CatalogValidationError";
  constructor(
    readonly origin: string,
    readonly problems: readonly string[],
  ) {
    super(
      `invalid catalog snapshot ${origin}: ${problems.slice(0, 10).join("; ")}${problems.length > 10 ? ` (+${problems.length - 10} more)` : ""}`,
    );
  }
}

const snapshotValidator = Compile(CatalogSnapshotSchema);

export function defaultSnapshotPath(): string {
  return dataPath("catalog.snapshot.json");
}

/** "/endpoints/12/price_usd" → "endpoints[12].price_usd (record 12, <url>)". */
function describePointer(pointer: string, value: unknown): string {
  const parts = pointer.split("/").slice(1);
  let text = "";
  for (const p of parts) text += /^\d+$/.test(p) ? `[${p}]` : text === "" ? p : `.${p}`;
  const m = /^\/endpoints\/(\d+)/.exec(pointer);
  if (m !== null) {
    const idx = Number(m[1]);
    const url = (value as { endpoints?: { url?: unknown }[] })?.endpoints?.[idx]?.url;
    return `${text || "(root)"} (record ${idx}${typeof url === "string" ? `, ${url}` : ""})`;
  }
  return text || "(root)";
}

/** Validates a parsed snapshot against the TypeBox schema plus cross-record rules. */
export function validateSnapshot(value: unknown, origin = "(in memory)"): CatalogSnapshot {
  if (!snapshotValidator.Check(value)) {
    const problems = [...snapshotValidator.Errors(value)].map(
      (e) => `${describePointer(e.instancePath, value)}: ${e.message}`,
    );
    throw new CatalogValidationError(origin, problems);
  }
  const snap = value as CatalogSnapshot;
  const problems: string[] = [];
  const ids = new Set(snap.sources.map((s) => s.id));
  snap.endpoints.forEach((e, i) => {
    if (!ids.has(e.source_id))
      problems.push(`endpoints[${i}].source_id (record ${i}, ${e.url}): unknown source "${e.source_id}"`);
    try {
      new URL(e.url);
    } catch {
      problems.push(`endpoints[${i}].url (record ${i}): not an absolute URL`);
    }
  });
  if (problems.length > 0) throw new CatalogValidationError(origin, problems);
  return snap;
}

function hostOf(url: string): string {
  return new URL(url).host.toLowerCase();
}

function groupBy<K>(entries: readonly CatalogEntry[], key: (e: CatalogEntry) => K): Map<K, CatalogEntry[]> {
  const map = new Map<K, CatalogEntry[]>();
  for (const e of entries) {
    const k = key(e);
    const list = map.get(k);
    if (list === undefined) map.set(k, [e]);
    else list.push(e);
  }
  return map;
}

/** Builds the in-memory catalog (indexes included) from a validated snapshot. */
export function catalogFromSnapshot(value: unknown, origin = "(in memory)"): Catalog {
  const snap = validateSnapshot(value, origin);
  const entries = Object.freeze(
    snap.endpoints.map((e) => Object.freeze({ ...e, tags: Object.freeze([...e.tags]) as string[] })),
  );
  return Object.freeze({
    schema_version: 1 as const,
    generated_at: snap.generated_at,
    sources: Object.freeze([...snap.sources]),
    entries,
    sourceById: new Map(snap.sources.map((s) => [s.id, s])),
    byCategory: groupBy(entries, (e) => e.category),
    byHost: groupBy(entries, (e) => hostOf(e.url)),
    origin,
  });
}

/** Reads, validates and indexes the snapshot (default: data/catalog.snapshot.json in the repository). */
export function loadCatalog(path?: string): Catalog {
  const file = resolve(path ?? defaultSnapshotPath());
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, "utf8"));
  } catch (err) {
    throw new CatalogValidationError(file, [`cannot read JSON: ${(err as Error).message}`]);
  }
  return catalogFromSnapshot(parsed, file);
}

export { repoRoot } from "../../files/paths.js";
