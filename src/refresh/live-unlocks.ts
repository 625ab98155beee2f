import { EMPTY_REPORTS, type ReportIndex } from "../unlocks/circulating-reported.js";
import { buildUnlockStore } from "../unlocks/data/snapshot.js";
import type { UnlockSnapshot } from "../unlocks/data/types.js";
import { createUnlockServiceSliced, type UnlockService } from "../unlocks/service.js";

/** One generation of unlock data: the service over it and a label that changes with every swap. */
export interface UnlockGeneration {
  readonly service: UnlockService;
  readonly version: string;
}

/**
 * The unlock service being served, swapped whole when a refresh brings new data. A request takes the generation current
 * when it arrives and keeps it to the end (the app pins it per request), so its pre-payment checks and its answer
 * come from the same data; the old generation is collected once the last such request is done.
 */
export interface LiveUnlocks {
  current(): UnlockGeneration;
  /**
   * Builds the service over `snapshot` (validated already) and makes it current. The build gives the event loop back
   * every few milliseconds, so requests served meanwhile (on the generation current until then) are not held up by
   * it; of overlapping swaps, the last one asked for wins.
   */
  swap(snapshot: UnlockSnapshot): Promise<UnlockGeneration>;
  /** Swaps so far. */
  swaps(): number;
}

export function createLiveUnlocks(
  initial: UnlockService,
  clock: () => Date = () => new Date(),
  /** The reported circulating figures to anchor on, read again at each swap (the live file may have changed). */
  reports: () => ReportIndex = () => EMPTY_REPORTS,
): LiveUnlocks {
  let n = 0;
  let asked = 0;
  let current: UnlockGeneration = { service: initial, version: "0" };
  return {
    current: () => current,
    async swap(snapshot) {
      const mine = ++asked;
      const service = await createUnlockServiceSliced(buildUnlockStore(snapshot, reports()), clock);
      if (mine !== asked) return current; // a later swap was asked for meanwhile: it decides
      n += 1;
      current = { service, version: `${n}:${snapshot.generated_at}` };
      return current;
    },
    swaps: () => n,
  };
}
