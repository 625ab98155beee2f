import client from "prom-client";
import type { FreshnessSource } from "../refresh/freshness.js";
import { PERIOD_MULTIPLE, type SourceName } from "../sources/status.js";
import { formatDay, parseDay } from "../unlocks/data/dates.js";
import type { UnlockStore } from "../unlocks/data/snapshot.js";
import type { PriceSeries } from "../unlocks/data/types.js";

const DAY_SECONDS = 86_400;

/**
 * How old a source's newest data is right after a successful refresh: a daily candle (or a day's schedule) covers its
 * day to midnight, so up to one day; funding settles every 8 hours; the others are timestamped when fetched.
 */
export const DATA_GRANULARITY_SECONDS: Record<SourceName, number> = {
  binance: DAY_SECONDS,
  bybit: DAY_SECONDS,
  derivatives: 8 * 3600,
  coingecko: 0,
  defillama: DAY_SECONDS,
  bazaar: 0,
};

/** Unix seconds the data is current to: a UTC day counts to its end, an ISO time is itself; null when unreadable. */
export function dataTimeSeconds(asOf: string | null | undefined): number | null {
  if (!asOf) return null;
  if (/^\d{4}-\d{2}-\d{2}$/.test(asOf)) {
    const day = parseDay(asOf);
    return Number.isNaN(day) ? null : (day + 1) * DAY_SECONDS;
  }
  const ms = Date.parse(asOf);
  return Number.isNaN(ms) ? null : ms / 1000;
}

/** The venue a series is continued from: the one of its last segment (the refresh never splices venues). */
function liveVenueOf(series: PriceSeries | null): "binance" | "bybit" | null {
  const last = series?.segments?.[series.segments.length - 1];
  if (!last || !/perpetual/i.test(last.instrument)) return null;
  return last.venue === "Binance" ? "binance" : last.venue === "Bybit" ? "bybit" : null;
}

const newest = (a: string | null, b: string | null): string | null =>
  a === null ? b : b === null ? a : (dataTimeSeconds(b) ?? 0) > (dataTimeSeconds(a) ?? 0) ? b : a;

/**
 * What the served data says each source last gave, whether or not this process has refreshed it yet: the newest
 * candle day of the series each venue continues, the newest live circulating report, the schedules' date and the
 * newest derivatives figure. The age alert reads this from the start, so an instance that never reaches a source
 * still shows how old the data it serves is.
 */
export function servedDataAsOf(
  store: UnlockStore,
  freshness?: Pick<FreshnessSource, "derivatives">,
): Partial<Record<SourceName, string>> {
  const out: Partial<Record<SourceName, string | null>> = {};
  const series = [store.snapshot.benchmark.prices, ...store.snapshot.tokens.map((t) => t.prices)];
  for (const s of series) {
    const venue = liveVenueOf(s);
    if (!venue || !s) continue;
    // The series' last index is the 00:00 UTC price after its last candle.
    const lastCandle = formatDay(parseDay(s.start) + s.close.length - 2);
    out[venue] = newest(out[venue] ?? null, lastCandle);
  }
  for (const list of store.reports.values())
    for (const r of list)
      if (r.source !== "coinmarketcap") out.coingecko = newest(out.coingecko ?? null, r.date);
  out.defillama = store.snapshot.as_of;
  for (const d of freshness?.derivatives?.().values() ?? [])
    out.derivatives = newest(out.derivatives ?? null, newest(d.funding_as_of, d.open_interest_as_of));
  return Object.fromEntries(Object.entries(out).filter(([, v]) => v !== null)) as Partial<
    Record<SourceName, string>
  >;
}

/**
 * Data freshness per source, read at scrape time: the age of the newest data served (from the data's own as-of, so it
 * exists from the start, before any refresh succeeds), the data's expected granularity, the period, the time of the
 * last attempt and success, and the items the last attempt could not update. deploy/prometheus/alerts.yml alerts when
 * the age passes the granularity plus three periods, and when a source has never succeeded three periods after start.
 */
export function registerFreshnessMetrics(
  registry: client.Registry,
  freshness: FreshnessSource | undefined,
  clock: () => Date,
  /** The served data's as-of per source (servedDataAsOf over the current unlock generation). */
  served: () => Partial<Record<SourceName, string>> = () => ({}),
): void {
  if (!freshness) return;
  const registers = [registry];
  const seconds = (iso: string | null): number | null => (iso === null ? null : Date.parse(iso) / 1000);
  const each = (
    set: (g: client.Gauge<"source">, source: string, value: number) => void,
    pick: (s: ReturnType<FreshnessSource["sources"]>[number]) => number | null,
  ) =>
    function (this: client.Gauge<"source">) {
      this.reset();
      for (const s of freshness.sources()) {
        const v = pick(s);
        if (v !== null) set(this, s.source, v);
      }
    };
  const setter = (g: client.Gauge<"source">, source: string, value: number) => g.set({ source }, value);
  new client.Gauge({
    name: "pressure402_data_source_age_seconds",
    help: "Seconds since the time the source's newest served data is current to (its data as-of, refreshed or as loaded); absent when the source has no data",
    labelNames: ["source"] as const,
    registers,
    collect: function (this: client.Gauge<"source">) {
      this.reset();
      const loaded = served();
      for (const s of freshness.sources()) {
        const a = dataTimeSeconds(s.data_as_of);
        const b = dataTimeSeconds(loaded[s.source]);
        const at = a === null ? b : b === null ? a : Math.max(a, b);
        if (at !== null) this.set({ source: s.source }, Math.max(0, clock().getTime() / 1000 - at));
      }
    },
  });
  new client.Gauge({
    name: "pressure402_data_source_granularity_seconds",
    help: "How old the source's newest data is right after a successful refresh (a daily candle: up to one day)",
    labelNames: ["source"] as const,
    registers,
    collect: each(setter, (s) => DATA_GRANULARITY_SECONDS[s.source]),
  });
  new client.Gauge({
    name: "pressure402_data_source_period_seconds",
    help: "How often the source is refreshed",
    labelNames: ["source"] as const,
    registers,
    collect: each(setter, (s) => {
      const p = freshness.intervalSeconds;
      return p > 0 ? p * periodOf(s.source) : null;
    }),
  });
  new client.Gauge({
    name: "pressure402_data_source_last_success_timestamp_seconds",
    help: "Unix time of the source's last successful refresh (absent: never succeeded)",
    labelNames: ["source"] as const,
    registers,
    collect: each(setter, (s) => seconds(s.last_success)),
  });
  new client.Gauge({
    name: "pressure402_data_source_last_attempt_timestamp_seconds",
    help: "Unix time of the source's last refresh attempt",
    labelNames: ["source"] as const,
    registers,
    collect: each(setter, (s) => seconds(s.last_attempt)),
  });
  new client.Gauge({
    name: "pressure402_data_source_failed_items",
    help: "Items (tokens, pages) the source's last attempt could not update; their previous data is served",
    labelNames: ["source"] as const,
    registers,
    collect: each(setter, (s) => (s.last_attempt === null ? null : s.failed)),
  });
  new client.Gauge({
    name: "pressure402_data_source_quarantined_items",
    help: "Items of the source's last attempt refused as implausible and kept aside in DATA_DIR/quarantine",
    labelNames: ["source"] as const,
    registers,
    collect: each(setter, (s) => (s.last_attempt === null ? null : (s.quarantined ?? 0))),
  });
  new client.Gauge({
    name: "pressure402_data_source_failure",
    help: "1 for each kind of failure of the source's last attempt (too_large, timeout, implausible, …)",
    labelNames: ["source", "kind"] as const,
    registers,
    collect() {
      this.reset();
      for (const s of freshness.sources())
        for (const kind of s.failure_kinds ?? []) this.set({ source: s.source, kind }, 1);
    },
  });
}

const periodOf = (s: SourceName): number => PERIOD_MULTIPLE[s];
