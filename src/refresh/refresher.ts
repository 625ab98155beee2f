import { join } from "node:path";
import type { Catalog } from "../benchmark/catalog/snapshot.js";
import { writeFileAtomic } from "../files/atomic-write.js";
import { type ReportedCirculating, readLiveCirculating } from "../sources/coingecko/circulating.js";
import { type Derivatives, readDerivatives } from "../sources/derivatives/derivatives.js";
import type { FetchLike, ReadLimits } from "../sources/http.js";
import { refreshSources, type SourceBases } from "../sources/runner.js";
import {
  applyOutcome,
  PERIOD_MULTIPLE,
  SOURCES,
  type SourceName,
  type SourceOutcome,
  type SourceStatus,
} from "../sources/status.js";
import type { UnlockSnapshot } from "../unlocks/data/types.js";
import { readState, UNLOCKS_FILE, writeState } from "./data-dir.js";

export interface RefresherOptions {
  readonly dataDir: string;
  /** The snapshot being served (loaded from DATA_DIR). */
  readonly initial: UnlockSnapshot;
  readonly bases: SourceBases;
  /** Token symbol → CoinGecko coin id. */
  readonly coinIds: ReadonlyMap<string, string>;
  readonly fetchImpl?: FetchLike;
  /** Size and time caps per source answer (default DEFAULT_READ_LIMITS). */
  readonly limits?: ReadLimits;
  readonly clock?: () => Date;
  /** Sources this refresher runs (default: all it has a fetcher for). */
  readonly sources?: readonly SourceName[];
  /** Called with each new snapshot once it is written: build it and swap it in. A throw keeps the old one served. */
  readonly onSnapshot?: (snapshot: UnlockSnapshot) => void | Promise<void>;
  /** The x402 market: CDP Bazaar `discovery/resources`; each refreshed catalog goes to `onCatalog` (swap it in). */
  readonly bazaar?: { readonly discoveryUrl: string; readonly onCatalog: (catalog: Catalog) => void };
  readonly log?: { warn(obj: object, msg: string): void; info(obj: object, msg: string): void };
}

export interface RefreshRun {
  readonly outcomes: readonly SourceOutcome[];
  /** A new unlock snapshot was written and handed to onSnapshot. */
  readonly swapped: boolean;
}

export interface Refresher {
  /** Runs the given sources (default: those due at this tick) now; runs never overlap (a call during one waits for it). */
  runOnce(sources?: readonly SourceName[]): Promise<RefreshRun>;
  /** Runs every `intervalMs` in the background (first run now); 0 = never. */
  start(intervalMs: number): void;
  stop(): Promise<void>;
  status(): readonly SourceStatus[];
  snapshot(): UnlockSnapshot;
  circulating(): ReadonlyMap<string, ReportedCirculating>;
  derivatives(): ReadonlyMap<string, Derivatives>;
}

/** The fetchers this build has: what the loop refreshes. */
export const REFRESHED_SOURCES: readonly SourceName[] = ["binance", "bybit", "derivatives", "coingecko"];

/**
 * The refresh loop: per tick, each due source is fetched and validated; market candles extend the served snapshot,
 * which is validated, written to DATA_DIR atomically and handed to `onSnapshot` (built and swapped in off the request
 * path). A failing source changes nothing of its own data and nothing of the others'; its status says so.
 */
export function createRefresher(opts: RefresherOptions): Refresher {
  const clock = opts.clock ?? (() => new Date());
  const baseFetch = opts.fetchImpl ?? (globalThis.fetch as unknown as FetchLike);
  // stop() aborts fetches in flight: shutdown never waits out a slow source's timeout.
  const stopping = new AbortController();
  const fetchImpl: FetchLike = (url, init) =>
    baseFetch(url, {
      ...init,
      signal: init?.signal ? AbortSignal.any([init.signal, stopping.signal]) : stopping.signal,
    });
  const enabled = opts.sources ?? [
    ...REFRESHED_SOURCES,
    ...(opts.bases.defillama ? (["defillama"] as const) : []),
    ...(opts.bazaar ? (["bazaar"] as const) : []),
  ];
  let current = opts.initial;
  let state = readState(opts.dataDir);
  let figures = readLiveCirculating(opts.dataDir);
  let derivatives = readDerivatives(opts.dataDir);
  let tick = 0;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<RefreshRun> | undefined;

  const due = (s: SourceName, now: Date): boolean => {
    const wait = state[s].retry_not_before;
    return tick % PERIOD_MULTIPLE[s] === 0 && (wait === null || Date.parse(wait) <= now.getTime());
  };

  async function run(which: readonly SourceName[]): Promise<RefreshRun> {
    const now = clock();
    const r = await refreshSources(
      current,
      which,
      {
        bases: { ...opts.bases, bazaar: opts.bazaar?.discoveryUrl },
        fetchImpl,
        coinIds: opts.coinIds,
        dataDir: opts.dataDir,
        ...(opts.limits ? { limits: opts.limits } : {}),
      },
      now,
    );
    const outcomes = [...r.outcomes];
    if (r.circulating) figures = r.circulating;
    let swapped = false;
    if (r.snapshot) {
      try {
        writeFileAtomic(join(opts.dataDir, UNLOCKS_FILE), `${JSON.stringify(r.snapshot)}\n`);
        await opts.onSnapshot?.(r.snapshot);
        current = r.snapshot;
        swapped = true;
      } catch (err) {
        // Not written or not built: the served data stays, and the market sources say why.
        opts.log?.warn(
          { err: (err as Error).message },
          "refreshed unlock snapshot not swapped in; previous kept",
        );
        for (const [i, o] of outcomes.entries())
          if (o.source === "binance" || o.source === "bybit" || o.source === "defillama")
            outcomes[i] = {
              ...o,
              updated: [],
              failed: [...o.failed, { item: "snapshot", error: "not written or not built" }],
            };
      }
    }
    // New reported circulating figures anchor the unlock numbers: rebuilt now when no new candle did it already.
    const coingecko = outcomes.find((o) => o.source === "coingecko");
    if (!swapped && coingecko && coingecko.updated.length > 0) {
      try {
        await opts.onSnapshot?.(current);
        swapped = true;
      } catch (err) {
        opts.log?.warn(
          { err: (err as Error).message },
          "rebuild with new reported supply failed; previous kept",
        );
      }
    }
    if (r.derivatives) derivatives = r.derivatives;
    if (r.catalog && opts.bazaar) {
      try {
        opts.bazaar.onCatalog(r.catalog);
      } catch (err) {
        opts.log?.warn({ err: (err as Error).message }, "refreshed market not swapped in; previous kept");
      }
    }
    for (const o of outcomes) state = { ...state, [o.source]: applyOutcome(state[o.source], o, now) };
    try {
      writeState(opts.dataDir, state);
    } catch (err) {
      opts.log?.warn({ err: (err as Error).message }, "refresh state not written");
    }
    for (const o of outcomes)
      if (o.failed.length > 0)
        opts.log?.warn(
          { source: o.source, failed: o.failed.length, updated: o.updated.length },
          state[o.source].last_error ?? "",
        );
    return { outcomes, swapped };
  }

  const runOnce = (sources?: readonly SourceName[]): Promise<RefreshRun> => {
    const go = async () => {
      const now = clock();
      const which = (sources ?? enabled.filter((s) => due(s, now))).filter((s) => enabled.includes(s));
      return run(which);
    };
    const next = (running ?? Promise.resolve()).catch(() => {}).then(go);
    const mine = next.finally(() => {
      if (running === mine) running = undefined;
    });
    running = mine;
    return mine;
  };

  const onTick = () => {
    void runOnce()
      .catch((err) => opts.log?.warn({ err: (err as Error).message }, "refresh failed"))
      .finally(() => {
        tick++;
      });
  };

  return {
    runOnce,
    start(intervalMs) {
      if (timer || intervalMs <= 0) return;
      onTick();
      timer = setInterval(onTick, intervalMs);
      timer.unref();
    },
    async stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
      stopping.abort();
      await running?.catch(() => {});
    },
    status: () => SOURCES.filter((s) => enabled.includes(s)).map((s) => state[s]),
    snapshot: () => current,
    circulating: () => figures,
    derivatives: () => derivatives,
  };
}
