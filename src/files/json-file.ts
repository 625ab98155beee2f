/**
 * Parses a large UTF-8 JSON file with half the transient memory of `JSON.parse(readFileSync(path, "utf8"))`.
 *
 * A UTF-8 file with any non-ASCII character (the unlock snapshot has a few "—" and "…" in its notes) decodes to a
 * two-byte string: 2 bytes per character, 57 MB for the 28.7 MB synthetic 100k-event store, on top of the file's
 * buffer, all of it garbage the moment the parse returns. Decoded as latin1 instead, every byte is one character of a
 * one-byte string (the file's size). JSON's syntax is all ASCII and UTF-8 never uses bytes below 0x80 inside a
 * multi-byte character, so the parse sees the same structure, and each string keeps its own UTF-8 bytes as latin1
 * characters: the few strings with a character of 0x80 or above are decoded from those bytes afterwards, giving what
 * the UTF-8 parse gives (invalid sequences included: each becomes U+FFFD either way).
 *
 * A `\u` escape would parse to a real character in either decoding and must not be decoded again, so a file with any
 * `\u` (JSON.stringify writes none but for control characters and lone surrogates) takes the plain UTF-8 path.
 */
import { readFileSync } from "node:fs";

const HIGH = /[\u0080-\u00ff]/;

const fromLatin1 = (s: string): string => (HIGH.test(s) ? Buffer.from(s, "latin1").toString("utf8") : s);

/** Decodes, in place, the strings of a value parsed from latin1-decoded UTF-8; returns the value (or its new string). */
function decodeStrings(value: unknown): unknown {
  if (typeof value === "string") return fromLatin1(value);
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) {
    // for…of, not value[i]: an indexed load site that has seen arrays of objects turns an array of doubles it meets
    // into an array of objects (V8 generalises the elements kind), boxing every price of the series into a HeapNumber.
    let i = 0;
    for (const v of value as unknown[]) {
      if (typeof v === "string") {
        if (HIGH.test(v)) value[i] = fromLatin1(v);
      } else if (v !== null && typeof v === "object") {
        const d = decodeStrings(v);
        if (d !== v) value[i] = d;
      }
      i++;
    }
    return value;
  }
  const obj = value as Record<string, unknown>;
  let renamed = false;
  for (const key of Object.keys(obj)) {
    if (HIGH.test(key)) renamed = true;
    const v = obj[key];
    if (typeof v === "string") {
      if (HIGH.test(v)) obj[key] = fromLatin1(v);
    } else if (v !== null && typeof v === "object") {
      const d = decodeStrings(v);
      if (d !== v) obj[key] = d;
    }
  }
  if (!renamed) return obj;
  // Rare (no schema key is non-ASCII): rebuilt so the keys keep their order.
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(obj)) out[fromLatin1(key)] = obj[key];
  return out;
}

/** JSON text held as UTF-8 bytes decoded as latin1 (one character per byte), parsed to what its UTF-8 decoding parses to. */
export function parseLatin1Json(text: string): unknown {
  const utf8 = (): string => Buffer.from(text, "latin1").toString("utf8");
  if (text.includes("\\u")) return JSON.parse(utf8());
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    // Bad JSON: parsed again as UTF-8 so the error names the same position and characters as the plain path.
    return JSON.parse(utf8());
  }
  return decodeStrings(raw);
}

/** Parses JSON text held in a buffer of UTF-8 bytes; the same value as `JSON.parse(bytes.toString("utf8"))`. */
export function parseJsonBytes(bytes: Buffer): unknown {
  return parseLatin1Json(bytes.toString("latin1"));
}

/**
 * Reads and parses a UTF-8 JSON file (see parseLatin1Json); throws JSON.parse's SyntaxError on bad JSON. The file's
 * buffer is unreachable before the parse starts, so it can be freed while the parse runs.
 */
export function readJsonFile(path: string): unknown {
  return parseLatin1Json(readFileSync(path, "latin1"));
}
