import type { ReportedCirculating } from "../sources/coingecko/circulating.js";
import type { Derivatives } from "../sources/derivatives/derivatives.js";
import { ageSeconds, PERIOD_MULTIPLE, type SourceStatus } from "../sources/status.js";

/** What the free routes and /metrics read about data freshness. */
export interface FreshnessSource {
  /** The market period in seconds (0: refresh off). */
  readonly intervalSeconds: number;
  sources(): readonly SourceStatus[];
  circulating(): ReadonlyMap<string, ReportedCirculating>;
  /** Funding rate, open interest and listing time per token (evidence; absent when not fetched). */
  derivatives?(): ReadonlyMap<string, Derivatives>;
}

export interface SourceFreshnessView {
  source: string;
  period_seconds: number;
  last_attempt: string | null;
  last_success: string | null;
  age_seconds: number | null;
  data_as_of: string | null;
  last_error: string | null;
  updated: number;
  failed: number;
  failure_kinds: string[];
  quarantined: number;
}

/** The public view of every source's state at `now`. */
export function freshnessView(f: FreshnessSource | undefined, now: Date): SourceFreshnessView[] {
  if (!f) return [];
  return f.sources().map((s) => ({
    source: s.source,
    period_seconds: f.intervalSeconds * PERIOD_MULTIPLE[s.source],
    last_attempt: s.last_attempt,
    last_success: s.last_success,
    age_seconds: ageSeconds(s, now),
    data_as_of: s.data_as_of,
    last_error: s.last_error,
    updated: s.updated,
    failed: s.failed,
    failure_kinds: [...(s.failure_kinds ?? [])],
    quarantined: s.quarantined ?? 0,
  }));
}
