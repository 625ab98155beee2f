import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { writeFileAtomic } from "../files/atomic-write.js";
import { emptyStatus, SOURCES, type SourceName, type SourceStatus } from "../sources/status.js";

/** The refreshed unlock snapshot and the per-source state, inside DATA_DIR. */
export const UNLOCKS_FILE = "unlocks.snapshot.json";
export const STATE_FILE = "refresh-state.json";

/**
 * Makes DATA_DIR usable: creates it, and on first start seeds the unlock snapshot from the shipped one (a read-only
 * image keeps its data/ and refreshes into the volume). Returns the snapshot path to load.
 */
export function seedDataDir(dataDir: string, shippedSnapshot: string): string {
  mkdirSync(dataDir, { recursive: true });
  const target = join(dataDir, UNLOCKS_FILE);
  if (!existsSync(target)) {
    // Written beside and renamed: a crash mid-copy never leaves half a snapshot to load.
    writeFileAtomic(target, readFileSync(shippedSnapshot));
  }
  return target;
}

export function readState(dataDir: string): Record<SourceName, SourceStatus> {
  const out = Object.fromEntries(SOURCES.map((s) => [s, emptyStatus(s)])) as Record<SourceName, SourceStatus>;
  try {
    const raw = JSON.parse(readFileSync(join(dataDir, STATE_FILE), "utf8")) as Partial<
      Record<SourceName, SourceStatus>
    >;
    for (const s of SOURCES) if (raw[s]?.source === s) out[s] = { ...emptyStatus(s), ...raw[s] };
  } catch {
    // first start, or an unreadable state file: every source starts unknown
  }
  return out;
}

export function writeState(dataDir: string, state: Record<SourceName, SourceStatus>): void {
  writeFileAtomic(join(dataDir, STATE_FILE), `${JSON.stringify(state, null, 1)}\n`);
}
