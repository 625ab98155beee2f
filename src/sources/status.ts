import { FAILURE_KINDS, type FailureKind, type ItemFailure } from "./errors.js";

/** The sources the refresh reads, each with its own period (a multiple of REFRESH_INTERVAL_SECONDS). */
export const SOURCES = ["binance", "bybit", "derivatives", "coingecko", "defillama", "bazaar"] as const;
export type SourceName = (typeof SOURCES)[number];

/**
 * Periods, in multiples of the market interval: daily candles change once a day but are cheap and are what prices
 * every answer, so they run every period; reported circulating supply (a keyless CoinGecko quota of a few calls a
 * minute) every 6; vesting schedules and the Bazaar catalog (hundreds of pages) change slowly and run every 24.
 */
export const PERIOD_MULTIPLE: Record<SourceName, number> = {
  binance: 1,
  bybit: 1,
  derivatives: 1,
  coingecko: 6,
  defillama: 24,
  bazaar: 24,
};

/** What one source's last refresh did, as served on GET /, /ready and /metrics. */
export interface SourceStatus {
  readonly source: SourceName;
  /** ISO time of the last attempt, null before the first. */
  readonly last_attempt: string | null;
  /** ISO time of the last attempt that failed for no item; null when none has since this data directory was seeded. */
  readonly last_success: string | null;
  /** The newest data the source has given (a candle's UTC day, a listing's time); null when unknown. */
  readonly data_as_of: string | null;
  /** Why the last attempt failed for some or all items (null when it did not); the previous data was kept. */
  readonly last_error: string | null;
  /** Items (tokens, pages) the last attempt updated and could not update. */
  readonly updated: number;
  readonly failed: number;
  /** Not before this ISO time: the source asked to be left alone (429 with Retry-After). */
  readonly retry_not_before: string | null;
  /** Why the last attempt failed, by kind (too large, timed out, implausible…); [] when it did not. */
  readonly failure_kinds?: readonly FailureKind[];
  /** Items of the last attempt refused as implausible and kept aside in DATA_DIR/quarantine/<source>/. */
  readonly quarantined?: number;
}

export const emptyStatus = (source: SourceName): SourceStatus => ({
  source,
  last_attempt: null,
  last_success: null,
  data_as_of: null,
  last_error: null,
  updated: 0,
  failed: 0,
  retry_not_before: null,
  failure_kinds: [],
  quarantined: 0,
});

/** One source's part of one refresh. */
export interface SourceOutcome {
  readonly source: SourceName;
  readonly updated: readonly string[];
  readonly failed: readonly ItemFailure[];
  readonly dataAsOf: string | null;
  readonly retryAfterSeconds: number | null;
}

/** Folds one outcome into the source's status: a failure keeps the last success and its data as-of. */
export function applyOutcome(prev: SourceStatus, o: SourceOutcome, at: Date): SourceStatus {
  const failedText =
    o.failed.length === 0
      ? null
      : `${o.failed.length} of ${o.failed.length + o.updated.length} failed, previous data kept: ${o.failed
          .slice(0, 5)
          .map((f) => `${f.item} (${f.error})`)
          .join("; ")}${o.failed.length > 5 ? "; …" : ""}`;
  return {
    source: o.source,
    last_attempt: at.toISOString(),
    last_success: o.failed.length === 0 ? at.toISOString() : prev.last_success,
    data_as_of:
      o.dataAsOf !== null && (prev.data_as_of === null || o.dataAsOf > prev.data_as_of)
        ? o.dataAsOf
        : prev.data_as_of,
    last_error: failedText,
    updated: o.updated.length,
    failed: o.failed.length,
    retry_not_before:
      o.retryAfterSeconds !== null ? new Date(at.getTime() + o.retryAfterSeconds * 1000).toISOString() : null,
    failure_kinds: FAILURE_KINDS.filter((k) => o.failed.some((f) => (f.kind ?? "invalid") === k)),
    quarantined: o.failed.filter((f) => f.refused !== undefined).length,
  };
}

/** Seconds since the last success (null: never), for /ready and the alert rule. */
export const ageSeconds = (s: SourceStatus, now: Date): number | null =>
  s.last_success === null
    ? null
    : Math.max(0, Math.round((now.getTime() - Date.parse(s.last_success)) / 1000));
