/**
 * Usage from a facilitator's Bazaar listing, with the wash adjustment: when the last 30 days of
 * calls come from WASH_MAX_PAYERS payers or fewer, the calls may be the seller or one client
 * testing, so each payer counts as at most one call.
 */

export const WASH_MAX_PAYERS = 2;

export type WashCheck = "passed" | "discounted" | "payers_unknown" | "no_usage_data";

export interface UsageFigure {
  calls_30d: number | null;
  unique_payers_30d: number | null;
  adjusted_calls_30d: number | null;
  wash_adjusted: boolean;
  wash_check: WashCheck;
  note: string;
}

export function washAdjust(calls: number | null, payers: number | null): UsageFigure {
  if (calls === null) {
    return {
      calls_30d: null,
      unique_payers_30d: payers,
      adjusted_calls_30d: null,
      wash_adjusted: false,
      wash_check: "no_usage_data",
      note: "no usage was observed for this endpoint: its listing carries no call or payer counts, so the wash check did not run",
    };
  }
  if (payers === null) {
    return {
      calls_30d: calls,
      unique_payers_30d: null,
      adjusted_calls_30d: calls,
      wash_adjusted: false,
      wash_check: "payers_unknown",
      note: "payer count unknown, so the calls could not be checked for wash usage",
    };
  }
  if (payers <= WASH_MAX_PAYERS) {
    const adjusted = Math.min(calls, payers);
    return {
      calls_30d: calls,
      unique_payers_30d: payers,
      adjusted_calls_30d: adjusted,
      wash_adjusted: adjusted !== calls,
      wash_check: "discounted",
      note: `usage comes from ${payers} payer${payers === 1 ? "" : "s"} (≤ ${WASH_MAX_PAYERS}); counted as at most one call per payer because self-testing or wash calls cannot be ruled out`,
    };
  }
  return {
    calls_30d: calls,
    unique_payers_30d: payers,
    adjusted_calls_30d: calls,
    wash_adjusted: false,
    wash_check: "passed",
    note: `usage spread over ${payers} payers; counted in full`,
  };
}
