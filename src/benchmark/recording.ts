/**
 * Recordings of a facilitator's Bazaar discovery listing, as shipped in data/bazaar/: the items
 * exactly as the facilitator returned them, cut down to the fields the parser reads, with where
 * the listing came from. A live ingest writes the same shape, so shipped and live listings go
 * through one parser.
 */
import { type Static, Type } from "typebox";
import { Compile } from "typebox/compile";

/** Longest description kept per accepts[] entry: enough words for categorisation, not the essays. */
export const DESCRIPTION_MAX_CHARS = 240;

export const RecordingSchema = Type.Object(
  {
    name: Type.String({ pattern: "^[A-Za-z0-9._-]+$" }),
    facilitator_discovery_url: Type.String({ pattern: "^https://" }),
    recorded_at: Type.String({ format: "date-time" }),
    recorded_at_basis: Type.String({ minLength: 1 }),
    provenance: Type.Object(
      {
        repository: Type.Union([Type.String(), Type.Null()]),
        path: Type.Union([Type.String(), Type.Null()]),
        commit: Type.Union([Type.String(), Type.Null()]),
        git_blob: Type.Union([Type.String(), Type.Null()]),
        license: Type.Union([Type.String(), Type.Null()]),
        license_file: Type.Union([Type.String(), Type.Null()]),
        envelope: Type.String(),
      },
      { additionalProperties: false },
    ),
    compaction: Type.String({ minLength: 1 }),
    items: Type.Array(Type.Unknown()),
  },
  { additionalProperties: false },
);
export type Recording = Static<typeof RecordingSchema>;

const recordingValidator = Compile(RecordingSchema);

export const COMPACTION_NOTE =
  "items as the facilitator returned them, keeping resource, type, x402Version, lastUpdated, metadata, " +
  "quality, description and per accepts[] entry scheme, network, amount / maxAmountRequired, asset, payTo, " +
  `description (first ${DESCRIPTION_MAX_CHARS} characters) and outputSchema.input.method; nothing else changed`;

function pick(obj: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of keys) if (obj[k] !== undefined) out[k] = obj[k];
  return out;
}

function clip(text: unknown): unknown {
  return typeof text === "string" && text.length > DESCRIPTION_MAX_CHARS
    ? text.slice(0, DESCRIPTION_MAX_CHARS)
    : text;
}

/** One item cut to the fields bazaarItemToEntry reads; values are never rewritten. */
export function compactItem(raw: unknown): unknown {
  if (raw === null || typeof raw !== "object") return raw;
  const item = raw as Record<string, unknown>;
  const out = pick(item, [
    "resource",
    "type",
    "x402Version",
    "lastUpdated",
    "metadata",
    "quality",
    "extensions",
  ]);
  if (item.description !== undefined) out.description = clip(item.description);
  if (out.extensions !== undefined) {
    const method = (out.extensions as { bazaar?: { info?: { input?: { method?: unknown } } } })?.bazaar?.info
      ?.input?.method;
    out.extensions = method === undefined ? undefined : { bazaar: { info: { input: { method } } } };
    if (out.extensions === undefined) delete out.extensions;
  }
  if (Array.isArray(item.accepts)) {
    out.accepts = item.accepts.map((a: unknown) => {
      if (a === null || typeof a !== "object") return a;
      const acc = a as Record<string, unknown>;
      const kept = pick(acc, ["scheme", "network", "amount", "maxAmountRequired", "asset", "payTo"]);
      if (acc.description !== undefined) kept.description = clip(acc.description);
      const method = (acc.outputSchema as { input?: { method?: unknown } } | undefined)?.input?.method;
      if (method !== undefined) kept.outputSchema = { input: { method } };
      return kept;
    });
  } else if (item.accepts !== undefined) out.accepts = item.accepts;
  return out;
}

/** The items of a listing whatever its envelope: the API's `{items}` or a crawler's `{resources}`. */
export function listingItems(raw: unknown): unknown[] {
  const r = raw as { items?: unknown; resources?: unknown };
  if (Array.isArray(r?.items)) return r.items;
  if (Array.isArray(r?.resources)) return r.resources;
  throw new Error("listing has neither items[] nor resources[]");
}

export function compactRecording(
  items: readonly unknown[],
  meta: Omit<Recording, "items" | "compaction">,
): Recording {
  return { ...meta, compaction: COMPACTION_NOTE, items: items.map(compactItem) };
}

/** Validates a recording read from disk; errors name the origin and the field. */
export function parseRecording(value: unknown, origin: string): Recording {
  if (!recordingValidator.Check(value)) {
    const first = [...recordingValidator.Errors(value)]
      .slice(0, 5)
      .map((e) => `${e.instancePath || "(root)"}: ${e.message}`);
    throw new Error(`invalid Bazaar recording ${origin}: ${first.join("; ")}`);
  }
  return value as Recording;
}

/** A recording as one item per line: small diffs when a listing is re-recorded. */
export function serializeRecording(rec: Recording): string {
  const { items, ...head } = rec;
  const headJson = JSON.stringify(head, null, 1).replace(/\n}$/, "");
  return `${headJson},\n "items": [\n${items.map((i) => `  ${JSON.stringify(i)}`).join(",\n")}\n ]\n}\n`;
}

/** A live listing as a recording (what `npm run ingest:bazaar -- --facilitator` stores). */
export function recordingFromListing(
  listing: { listing_url: string; items: readonly unknown[]; pages: number; complete: boolean },
  name: string,
  now: Date,
): Recording {
  return compactRecording(listing.items, {
    name,
    facilitator_discovery_url: listing.listing_url,
    recorded_at: now.toISOString(),
    recorded_at_basis: `time of the live fetch (${listing.pages} page(s)${listing.complete ? "" : ", cut at the page limit"})`,
    provenance: {
      repository: null,
      path: null,
      commit: null,
      git_blob: null,
      license: null,
      license_file: null,
      envelope: "the facilitator's own pages, concatenated",
    },
  });
}
