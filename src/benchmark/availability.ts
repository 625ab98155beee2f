/** The benchmark route's availability label for the route descriptor. */

export type BenchmarkPhase = "provisional" | "full";

export const PROVISIONAL_AVAILABLE = "available through capped provisional x402 metadata";
export const PROVISIONAL_CAP_REACHED =
  "provisional daily cap reached: capped provisional x402 metadata is unavailable until 00:00 UTC";
export const FULL_AVAILABLE = "available through full x402 market metadata";

export function availabilityLabel(phase: BenchmarkPhase, capReached: boolean): string {
  if (phase === "full") return FULL_AVAILABLE;
  return capReached ? PROVISIONAL_CAP_REACHED : PROVISIONAL_AVAILABLE;
}
