import { join } from "node:path";
import { writeFileAtomic } from "../files/atomic-write.js";
import type { SourceOutcome } from "./status.js";

/** Where refused data is kept aside, per source and item: DATA_DIR/quarantine/<source>/<item>.json. */
export const QUARANTINE_DIR = "quarantine";

const safe = (item: string): string => item.replace(/[^A-Za-z0-9_.-]/g, "_").slice(0, 80) || "_";

/**
 * Writes each implausible item's refused data aside with its reason (one file per source and item, the newest
 * replacing the one before, so the folder stays bounded), and returns the outcomes without the refused data (it is
 * never served, nor kept in the status). A quarantine that cannot be written changes nothing else.
 */
export function quarantine(
  dataDir: string,
  outcomes: readonly SourceOutcome[],
  now: Date,
  log?: { warn(obj: object, msg: string): void },
): SourceOutcome[] {
  return outcomes.map((o) => {
    if (!o.failed.some((f) => f.refused !== undefined)) return o;
    return {
      ...o,
      failed: o.failed.map((f) => {
        if (f.refused === undefined) return f;
        const { refused, ...kept } = f;
        try {
          writeFileAtomic(
            join(dataDir, QUARANTINE_DIR, o.source, `${safe(f.item)}.json`),
            `${JSON.stringify({ source: o.source, item: f.item, reason: f.error, at: now.toISOString(), refused }, null, 1)}\n`,
          );
        } catch (err) {
          log?.warn(
            { err: (err as Error).message, source: o.source, item: f.item },
            "quarantine not written",
          );
        }
        return { ...kept, refused: true };
      }),
    };
  });
}
