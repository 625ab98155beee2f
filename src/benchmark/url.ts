/**
 * URL normalisation and templating for matching an endpoint URL to catalog entries.
 *
 * Normal form: lower-case scheme and host, default port dropped, empty path segments (trailing
 * and doubled slashes) dropped, query and fragment dropped. Template: every path segment that
 * names an instance rather than a route — a placeholder (`:id`, `{id}`, `%7Bid%7D`), a 0x
 * address or hash, a number, a UUID, or a long base58/CID identifier — becomes `{}`.
 */

export const WILDCARD = "{}";

export type SegmentKind = "literal" | "placeholder" | "address" | "number" | "uuid" | "opaque_id";

export interface NormalizedUrl {
  /** scheme://host[:port]/path, placeholders written `{name}` or `:name` as given. */
  normalized_url: string;
  /** host[:port] lower-case. */
  host: string;
  /** Decoded path segments of the normal form. */
  segments: readonly string[];
  /** Template segments: literals as decoded, instance segments as `{}`. */
  template: readonly string[];
  kinds: readonly SegmentKind[];
  /** host[:port]/template — the exact-match key (scheme-insensitive). */
  match_key: string;
  /** True when the URL still contains placeholders (it cannot be called as written). */
  has_placeholders: boolean;
}

const PLACEHOLDER_COLON = /^:[A-Za-z_][A-Za-z0-9_-]*$/;
const PLACEHOLDER_BRACES = /^\{[^{}/]+\}$/;
const HEX_ADDRESS_OR_HASH = /^0x(?:[0-9a-fA-F]{40}|[0-9a-fA-F]{64})$/;
const NUMBER = /^\d+$/;
const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
// Solana/base58 keys and IPFS CIDs: long, no separators, letters mixed with digits.
const BASE58_ID = /^[1-9A-HJ-NP-Za-km-z]{32,64}$/;
const CID_V1 = /^b[a-z2-7]{50,}$/;

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

export function classifySegment(decoded: string): SegmentKind {
  if (PLACEHOLDER_COLON.test(decoded) || PLACEHOLDER_BRACES.test(decoded)) return "placeholder";
  if (HEX_ADDRESS_OR_HASH.test(decoded)) return "address";
  if (NUMBER.test(decoded)) return "number";
  if (UUID.test(decoded)) return "uuid";
  if ((BASE58_ID.test(decoded) && /\d/.test(decoded) && /[a-zA-Z]/.test(decoded)) || CID_V1.test(decoded)) {
    return "opaque_id";
  }
  return "literal";
}

/** Normalises an absolute http(s) URL. Throws on anything else. */
export function normalizeUrl(input: string): NormalizedUrl {
  const url = new URL(input.trim());
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new TypeError(`not an http(s) URL: ${url.protocol}`);
  }
  // WHATWG URL already lower-cases scheme and host and drops the scheme's default port.
  const host = url.host.toLowerCase();
  const rawSegments = url.pathname.split("/").filter((s) => s.length > 0);
  const segments = rawSegments.map(safeDecode);
  const kinds = segments.map(classifySegment);
  const template = segments.map((s, i) => (kinds[i] === "literal" ? s : WILDCARD));
  const shown = rawSegments.map((raw, i) => (kinds[i] === "placeholder" ? (segments[i] as string) : raw));
  const path = shown.length > 0 ? `/${shown.join("/")}` : "";
  return {
    normalized_url: `${url.protocol}//${host}${path}`,
    host,
    segments,
    template,
    kinds,
    match_key: `${host}/${template.join("/")}`,
    has_placeholders: kinds.includes("placeholder"),
  };
}

/**
 * How specifically `candidate` (an input URL's template) fits `pattern` (a catalog template):
 * null when it does not fit; otherwise the number of literal segments that matched literally.
 * A `{}` in the pattern stands for any one segment; a `{}` in the candidate fits only a `{}`.
 */
export function templateFit(pattern: readonly string[], candidate: readonly string[]): number | null {
  if (pattern.length !== candidate.length) return null;
  let literal = 0;
  for (let i = 0; i < pattern.length; i++) {
    const p = pattern[i];
    const c = candidate[i];
    if (p === WILDCARD) continue;
    if (p !== c) return null;
    literal++;
  }
  return literal;
}
