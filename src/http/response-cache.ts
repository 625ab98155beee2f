/**
 * A small, bounded cache of serialized response bodies. Entries belong to a generation (for example data version +
 * UTC day): when the generation changes every entry is dropped at once, so a body can never outlive the data or the
 * day it was computed for. Within a generation, least recently used entries go first once either bound is reached.
 */
export interface ResponseCache {
  /** The body for `key` in `generation`, computed (and kept, if it fits) on a miss. */
  get(generation: string, key: string, compute: () => string): string;
  /** Entries currently held (for tests and metrics). */
  readonly size: number;
  /** Characters currently held (bodies are mostly ASCII JSON, so about their bytes). */
  readonly chars: number;
}

export interface ResponseCacheOptions {
  /** Most entries held at once. */
  maxEntries: number;
  /** Most characters held at once; a body larger than this is computed but not kept. */
  maxChars: number;
}

export function createResponseCache({ maxEntries, maxChars }: ResponseCacheOptions): ResponseCache {
  // A Map iterates in insertion order: re-inserting on a hit makes its first key the least recently used.
  const entries = new Map<string, string>();
  let current: string | undefined;
  let chars = 0;

  const evictOldest = (): void => {
    const oldest = entries.keys().next();
    if (oldest.done) return;
    chars -= (entries.get(oldest.value) as string).length;
    entries.delete(oldest.value);
  };

  return {
    get(generation, key, compute) {
      if (generation !== current) {
        entries.clear();
        chars = 0;
        current = generation;
      }
      const hit = entries.get(key);
      if (hit !== undefined) {
        entries.delete(key);
        entries.set(key, hit);
        return hit;
      }
      const body = compute();
      if (body.length > maxChars || maxEntries < 1) return body;
      while (entries.size >= maxEntries || (entries.size > 0 && chars + body.length > maxChars)) evictOldest();
      entries.set(key, body);
      chars += body.length;
      return body;
    },
    get size() {
      return entries.size;
    },
    get chars() {
      return chars;
    },
  };
}
