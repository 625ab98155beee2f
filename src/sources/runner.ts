import type { Catalog } from "../benchmark/catalog/snapshot.js";
import { loadReportedCirculating } from "../unlocks/circulating-reported.js";
import { parseDay } from "../unlocks/data/dates.js";
import { validateUnlockSnapshot } from "../unlocks/data/snapshot.js";
import type { UnlockSnapshot } from "../unlocks/data/types.js";
import { refreshBazaar } from "./bazaar/bazaar.js";
import { refreshDepth, refreshMarkets } from "./candles/refresh.js";
import {
  type ReportedCirculating,
  readLiveCirculating,
  refreshCirculating,
  type SupplyBounds,
  shippedPriorReports,
} from "./coingecko/circulating.js";
import { refreshSchedules } from "./defillama/schedules.js";
import { type Derivatives, refreshDerivatives } from "./derivatives/derivatives.js";
import { boundedFetch, boundedGet, DEFAULT_READ_LIMITS, type FetchLike, type ReadLimits } from "./http.js";
import { quarantine } from "./quarantine.js";
import type { SourceName, SourceOutcome } from "./status.js";

export interface SourceBases {
  readonly binance: string;
  readonly bybit: string;
  readonly coingecko: string;
  readonly coingeckoApiKey?: string | undefined;
  /** DefiLlama emissions datasets host; without it vesting schedules are not refreshed. */
  readonly defillama?: string | undefined;
  /** CDP Bazaar `discovery/resources`; without it the x402 market is not refreshed. */
  readonly bazaar?: string | undefined;
}

export interface SourcesDeps {
  readonly bases: SourceBases;
  readonly fetchImpl: FetchLike;
  /** Token symbol → CoinGecko coin id. */
  readonly coinIds: ReadonlyMap<string, string>;
  /** Where reported circulating supply is written (`circulating-reported/live.json`). */
  readonly dataDir: string;
  /** Size and time caps per answer (default DEFAULT_READ_LIMITS). */
  readonly limits?: ReadLimits;
  /** Also read each refreshed Binance token's ±2 % order-book depth (the one-shot's `--depth`; the loop never does). */
  readonly depth?: boolean;
}

export interface SourcesRun {
  /** The validated new snapshot; null when no source brought anything new (nothing to write, no new generated_at). */
  readonly snapshot: UnlockSnapshot | null;
  readonly outcomes: readonly SourceOutcome[];
  /** Reported circulating figures after the run (null when CoinGecko was not asked). */
  readonly circulating: ReadonlyMap<string, ReportedCirculating> | null;
  /** Derivatives evidence after the run (null when not asked). */
  readonly derivatives: ReadonlyMap<string, Derivatives> | null;
  /** The x402 market rebuilt over a new Bazaar listing (null when not asked or refused). */
  readonly catalog: Catalog | null;
}

/**
 * One refresh of the given sources over `current`: what the loop runs each tick and `npm run ingest` runs once (the
 * one runner: every source is fetched, validated and parsed here, in its own folder under src/sources). Market
 * candles extend the snapshot and DefiLlama vesting schedules replace the aggregator's own older ones (each validated
 * before it is returned); reported circulating supply is written to its own
 * file. A source that fails leaves its data as it was and says so in its outcome.
 */
export async function refreshSources(
  current: UnlockSnapshot,
  which: readonly SourceName[],
  deps: SourcesDeps,
  now: Date,
): Promise<SourcesRun> {
  const run = await runSources(
    current,
    which,
    { ...deps, fetchImpl: withLimits(deps.fetchImpl, deps.limits) },
    now,
  );
  // Implausible data is kept aside with its reason; the outcomes keep only that it was.
  return { ...run, outcomes: quarantine(deps.dataDir, run.outcomes, now) };
}

/** Every answer of a run read within the limits (the caps apply whatever fetch the caller gave). */
function withLimits(fetchImpl: FetchLike, limits: ReadLimits = DEFAULT_READ_LIMITS): FetchLike {
  return (url, init) => boundedGet(fetchImpl, url, init, limits);
}

async function runSources(
  current: UnlockSnapshot,
  which: readonly SourceName[],
  deps: SourcesDeps,
  now: Date,
): Promise<SourcesRun> {
  const outcomes: SourceOutcome[] = [];
  let snapshot: UnlockSnapshot | null = null;
  const venues = which.filter((s): s is "binance" | "bybit" => s === "binance" || s === "bybit");
  if (venues.length > 0) {
    // CoinGecko's last price per token: the second source each refreshed close is checked against.
    const reference = new Map(
      [...readLiveCirculating(deps.dataDir).values()]
        .filter((r) => typeof r.price_usd === "number")
        .map((r) => [r.token, { price: r.price_usd as number, day: parseDay(r.date) }]),
    );
    const r = await refreshMarkets(
      current,
      {
        fetchImpl: deps.fetchImpl,
        binanceBase: deps.bases.binance,
        bybitBase: deps.bases.bybit,
        reference,
      },
      now,
      venues,
    );
    if (r.changed) {
      try {
        snapshot = validateUnlockSnapshot(r.snapshot, "(refreshed)");
        outcomes.push(...r.outcomes);
      } catch {
        // Refused as a whole: nothing of it is kept, and every source that contributed says so.
        for (const o of r.outcomes)
          outcomes.push({
            ...o,
            updated: [],
            failed: [...o.failed, { item: "snapshot", error: "refreshed snapshot failed validation" }],
          });
      }
    } else outcomes.push(...r.outcomes);
  }
  if (deps.depth && venues.includes("binance")) {
    const r = await refreshDepth(snapshot ?? current, deps.fetchImpl, deps.bases.binance, now);
    if (r.snapshot) snapshot = validateUnlockSnapshot(r.snapshot, "(refreshed)");
    outcomes.push(...r.outcomes);
  }
  if (which.includes("defillama") && deps.bases.defillama) {
    // On top of this run's candles, so neither source's news undoes the other's.
    const r = await refreshSchedules(
      snapshot ?? current,
      { fetchImpl: deps.fetchImpl, base: deps.bases.defillama },
      now,
    );
    let outcome = r.outcome;
    if (r.snapshot) {
      try {
        snapshot = validateUnlockSnapshot(r.snapshot, "(refreshed)");
      } catch {
        outcome = {
          ...outcome,
          updated: [],
          failed: [...outcome.failed, { item: "snapshot", error: "refreshed snapshot failed validation" }],
        };
      }
    }
    outcomes.push(outcome);
  }
  let circulating: ReadonlyMap<string, ReportedCirculating> | null = null;
  if (which.includes("coingecko")) {
    // The tokens served, each by the coin id the map gives it (the snapshot's own id when the map has none).
    const ids = new Map<string, string>();
    for (const t of current.tokens) {
      const id = deps.coinIds.get(t.symbol) ?? t.coingecko_id;
      if (id) ids.set(t.symbol, id);
    }
    const r = await refreshCirculating(
      { base: deps.bases.coingecko, fetchImpl: deps.fetchImpl, apiKey: deps.bases.coingeckoApiKey },
      ids,
      deps.dataDir,
      now,
      supplyBounds(current),
      new Map(
        (snapshot ?? current).tokens.map((t) => [
          t.symbol,
          { price: t.market.price_usd, day: parseDay(t.market.as_of) },
        ]),
      ),
    );
    circulating = r.figures;
    outcomes.push(r.outcome);
  }
  let derivatives: ReadonlyMap<string, Derivatives> | null = null;
  if (which.includes("derivatives")) {
    const d = await refreshDerivatives(snapshot ?? current, deps.fetchImpl, deps.bases.binance, deps.dataDir);
    derivatives = d.figures;
    outcomes.push(d.outcome);
  }
  let catalog: Catalog | null = null;
  if (which.includes("bazaar") && deps.bases.bazaar) {
    const b = await refreshBazaar(
      deps.bases.bazaar,
      deps.dataDir,
      now,
      boundedFetch(deps.fetchImpl, deps.limits),
    );
    catalog = b.catalog;
    outcomes.push(b.outcome);
  }
  return { snapshot, outcomes, circulating, derivatives, catalog };
}

/**
 * What each token's reported supply is judged by: its max supply; its complete supply schedule where it has one (it
 * counts the emissions and genesis sections the vesting pieces leave out: over every pair of shipped monthly reports
 * 1–21 months apart, a true later report falls outside the drift bound for at most 0.7 % of pairs at any gap, none
 * past 13 months, against up to 2.3 % with the vesting pieces alone); and the latest shipped report, the previous
 * report until a live one exists.
 */
function supplyBounds(current: UnlockSnapshot): ReadonlyMap<string, SupplyBounds> {
  const shipped = shippedPriorReports(
    loadReportedCirculating(),
    current.tokens.map((t) => t.symbol),
  );
  return new Map(
    current.tokens.map((t) => [
      t.symbol,
      {
        maxSupply: t.max_supply ?? t.supply.total,
        schedule: t.supply_schedule?.pieces ?? t.schedules,
        shipped: shipped.get(t.symbol),
      },
    ]),
  );
}

/** One line per failing source, naming it: what the one-shot prints before it exits non-zero. */
export function failureLines(outcomes: readonly SourceOutcome[]): string[] {
  return outcomes
    .filter((o) => o.failed.length > 0)
    .map(
      (o) =>
        `${o.source}: ${o.failed.length} of ${o.failed.length + o.updated.length} not refreshed (kept as they were): ${o.failed
          .slice(0, 5)
          .map((f) => `${f.item} (${f.error})`)
          .join("; ")}${o.failed.length > 5 ? "; …" : ""}`,
    );
}
