/**
 * A small, bounded cache of serialized response bodies (strings, or compressed Buffers). Entries belong to a
 * generation (for example data version + UTC day): when the generation changes every entry is dropped at once, so a
 * body can never outlive the data or the day it was computed for. Within a generation, least recently used entries go
 * first once either bound is reached.
 */
export type CachedBody = string | Buffer;

export interface ResponseCache {
  /** The body for `key` in `generation`, computed (and kept, if it fits) on a miss. */
  get<T extends CachedBody>(generation: string, key: string, compute: () => T): T;
  /** Entries currently held (for tests and metrics). */
  readonly size: number;
  /** Size currently held: string length or Buffer bytes (bodies are mostly ASCII JSON, so about their bytes). */
  readonly units: number;
}

export interface ResponseCacheOptions {
  /** Most entries held at once. */
  maxEntries: number;
  /** Most size units held at once; a body larger than this is computed but not kept. */
  maxUnits: number;
}

export function createResponseCache({ maxEntries, maxUnits }: ResponseCacheOptions): ResponseCache {
  // A Map iterates in insertion order: re-inserting on a hit makes its first key the least recently used.
  const entries = new Map<string, CachedBody>();
  let current: string | undefined;
  let units = 0;

  const evictOldest = (): void => {
    const oldest = entries.keys().next();
    if (oldest.done) return;
    units -= (entries.get(oldest.value) as CachedBody).length;
    entries.delete(oldest.value);
  };

  return {
    get<T extends CachedBody>(generation: string, key: string, compute: () => T): T {
      if (generation !== current) {
        entries.clear();
        units = 0;
        current = generation;
      }
      const hit = entries.get(key);
      if (hit !== undefined) {
        entries.delete(key);
        entries.set(key, hit);
        return hit as T;
      }
      const body = compute();
      if (body.length > maxUnits || maxEntries < 1) return body;
      while (entries.size >= maxEntries || (entries.size > 0 && units + body.length > maxUnits))
        evictOldest();
      entries.set(key, body);
      units += body.length;
      return body;
    },
    get size() {
      return entries.size;
    },
    get units() {
      return units;
    },
  };
}
