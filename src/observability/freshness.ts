import client from "prom-client";
import type { FreshnessSource } from "../refresh/freshness.js";
import { PERIOD_MULTIPLE, type SourceName } from "../sources/status.js";

/**
 * Data freshness per source, read at scrape time: seconds since the last success (absent until one), the time of the
 * last attempt and success, whether the last attempt failed, and the items it could not update. The README's alert
 * fires when a source's age passes two of its periods.
 */
export function registerFreshnessMetrics(
  registry: client.Registry,
  freshness: FreshnessSource | undefined,
  clock: () => Date,
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
    help: "Seconds since the source's last successful refresh (absent: never succeeded)",
    labelNames: ["source"] as const,
    registers,
    collect: each(setter, (s) => {
      const at = seconds(s.last_success);
      return at === null ? null : Math.max(0, clock().getTime() / 1000 - at);
    }),
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
    help: "Unix time of the source's last successful refresh",
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
