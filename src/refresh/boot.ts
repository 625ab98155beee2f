import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Catalog } from "../benchmark/catalog/snapshot.js";
import type { Config } from "../config.js";
import { writeFileAtomic } from "../files/atomic-write.js";
import { catalogWith, type LiveBenchmark, readLiveRecording } from "../sources/bazaar/bazaar.js";
import { readCoinIds, readLiveCirculatingRecords } from "../sources/coingecko/circulating.js";
import { loadReportedCirculating, type ReportIndex } from "../unlocks/circulating-reported.js";
import type { UnlockStore } from "../unlocks/data/snapshot.js";
import { defaultSnapshotPath, readUnlockSnapshot } from "../unlocks/data/snapshot.js";
import type { UnlockSnapshot } from "../unlocks/data/types.js";
import { createUnlockService, type UnlockService } from "../unlocks/service.js";
import { UNLOCKS_FILE } from "./data-dir.js";
import type { FreshnessSource } from "./freshness.js";
import { createLiveUnlocks, type LiveUnlocks } from "./live-unlocks.js";
import { createRefresher, type Refresher } from "./refresher.js";

const SEED_FILE = "seed.json";

const digest = (path: string): string => createHash("sha256").update(readFileSync(path)).digest("hex");

/**
 * The unlock snapshot to serve, from DATA_DIR. On first start (or when the shipped snapshot changed since DATA_DIR was
 * seeded: a new image's rebuilt schedules win over refreshed copies of old ones) DATA_DIR is seeded from the shipped
 * file; the refresh then extends its prices within one period. With refreshing off and nothing seeded, the shipped
 * file is served as it is and nothing is written.
 */
export function loadServedSnapshot(config: Config): {
  snapshot: UnlockSnapshot;
  path: string;
  seeded: boolean;
} {
  const shipped = config.unlocksSnapshot ?? defaultSnapshotPath();
  const dir = resolve(config.data.dir);
  const served = join(dir, UNLOCKS_FILE);
  const seedOf = (): string | null => {
    try {
      return (JSON.parse(readFileSync(join(dir, SEED_FILE), "utf8")) as { sha256?: string }).sha256 ?? null;
    } catch {
      return null;
    }
  };
  const shippedHash = digest(shipped);
  const current = existsSync(served) && seedOf() === shippedHash;
  if (current) return { snapshot: readUnlockSnapshot(served), path: served, seeded: false };
  const snapshot = readUnlockSnapshot(shipped); // validated before anything is written
  if (config.data.refreshIntervalSeconds === 0) return { snapshot, path: shipped, seeded: false };
  writeFileAtomic(served, readFileSync(shipped));
  writeFileAtomic(join(dir, SEED_FILE), `${JSON.stringify({ shipped, sha256: shippedHash })}\n`);
  return { snapshot, path: served, seeded: true };
}

/** The shipped token → coin id map; empty when unreadable (each token's own coingecko_id is used then). */
function coinIdsOrEmpty(): ReadonlyMap<string, string> {
  try {
    return readCoinIds();
  } catch {
    return new Map();
  }
}

/** The refresh loop over the served snapshot, configured from the environment. */
export function configuredRefresher(
  config: Config,
  initial: UnlockSnapshot,
  extra: Pick<Parameters<typeof createRefresher>[0], "onSnapshot" | "log" | "clock" | "fetchImpl" | "limits">,
  benchmark?: LiveBenchmark,
): { refresher: Refresher; freshness: FreshnessSource } {
  const refresher = createRefresher({
    dataDir: resolve(config.data.dir),
    initial,
    bases: {
      binance: config.data.binanceBaseUrl,
      bybit: config.data.bybitBaseUrl,
      coingecko: config.data.coingeckoBaseUrl,
      coingeckoApiKey: config.data.coingeckoApiKey,
      defillama: config.data.defillamaBaseUrl,
    },
    coinIds: coinIdsOrEmpty(),
    ...(benchmark
      ? {
          bazaar: {
            discoveryUrl: config.data.bazaarDiscoveryUrl,
            onCatalog: (c: Catalog) => benchmark.swap(c),
          },
        }
      : {}),
    ...extra,
  });
  return {
    refresher,
    freshness: {
      intervalSeconds: config.data.refreshIntervalSeconds,
      sources: () => refresher.status(),
      circulating: () => refresher.circulating(),
      derivatives: () => refresher.derivatives(),
    },
  };
}

/**
 * The reported circulating supply the unlock store anchors on: the shipped reports plus the live CoinGecko records the
 * refresh wrote to DATA_DIR. A live file that fails the loader's checks is left out (the shipped reports stay), said
 * in the log.
 */
export function servedReports(config: Config, log?: { warn(obj: object, msg: string): void }): ReportIndex {
  const live = readLiveCirculatingRecords(resolve(config.data.dir));
  try {
    return loadReportedCirculating(live);
  } catch (err) {
    if (live.length === 0) throw err;
    log?.warn(
      { err: (err as Error).message.split("\n")[0] },
      "live circulating-supply records refused; shipped reports only",
    );
    return loadReportedCirculating();
  }
}

export interface LiveUnlockData {
  /** The service over the data loaded at start (AppDeps.unlocks). */
  readonly service: UnlockService;
  /** The generation being served, swapped by each refresh (AppDeps.liveUnlocks). */
  readonly live: LiveUnlocks;
  /** Absent when REFRESH_INTERVAL_SECONDS=0. */
  readonly refresh?: { readonly refresher: Refresher; readonly freshness: FreshnessSource };
}

/**
 * The unlock data a server answers from and the loop that refreshes it, as the server wires them (tests build the
 * same with their own clock and stand-in sources). Nothing runs until `refresh.refresher.start()`.
 */
export function liveUnlockData(
  config: Config,
  store: UnlockStore,
  opts: Pick<Parameters<typeof createRefresher>[0], "log" | "clock" | "fetchImpl" | "limits"> = {},
  benchmark?: LiveBenchmark,
): LiveUnlockData {
  const clock = opts.clock ?? (() => new Date());
  const service = createUnlockService(store, clock);
  const live = createLiveUnlocks(service, clock, () => servedReports(config, opts.log));
  if (config.data.refreshIntervalSeconds === 0) return { service, live };
  if (benchmark) {
    // The market last refreshed (its live listing is in DATA_DIR) is served from the start, not the shipped one.
    const recorded = readLiveRecording(resolve(config.data.dir));
    if (recorded) {
      try {
        benchmark.swap(catalogWith(recorded));
      } catch (err) {
        opts.log?.warn(
          { err: (err as Error).message },
          "recorded Bazaar listing not usable; shipped market served",
        );
      }
    }
  }
  const refresh = configuredRefresher(
    config,
    store.snapshot,
    {
      ...opts,
      onSnapshot: async (s) => {
        await live.swap(s);
      },
    },
    benchmark,
  );
  return { service, live, refresh };
}
