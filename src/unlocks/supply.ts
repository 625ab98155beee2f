import type { SupplyPiece, SupplySchedule, TokenRecord } from "../store/unlocks-types.js";
import { releasedBefore } from "./events.js";

/** Tokens the pieces have released on days strictly before `day` (the circulating supply at 00:00 UTC of `day`). */
export function unlockedBefore(pieces: readonly SupplyPiece[], day: number): number {
  let sum = 0;
  for (const p of pieces) sum += releasedBefore(p, day);
  return sum;
}

/** What has unlocked before `day`: the total, and the part outside reserve sections (`reserve` pieces). */
export interface UnlockedSplit {
  readonly unlocked: number;
  readonly excludingReserves: number;
}

/**
 * The alternative the model card measures beside the product's figure: unlocked minus what the sections the adapter
 * categorises `noncirculating` (foundation, ecosystem, treasury, community reserves) have unlocked.
 */
export function splitBefore(pieces: readonly SupplyPiece[], day: number): UnlockedSplit {
  let unlocked = 0;
  let reserve = 0;
  for (const p of pieces) {
    const r = releasedBefore(p, day);
    unlocked += r;
    if (p.reserve) reserve += r;
  }
  return { unlocked, excludingReserves: unlocked - reserve };
}

/** The product's rule, as the card and every response state it. */
export const CIRCULATING_RULE =
  "tokens the complete schedule (every allocation the adapter models: genesis, sales, airdrops, community, " +
  "emissions and the vesting ones) has unlocked before the day; burns and unscheduled transfers are not counted";

/** The rule measured beside it and not adopted (docs/risk-model.md says why). */
export const RESERVE_RULE =
  "unlocked minus what the sections the adapter categorises `noncirculating` (foundation, ecosystem, treasury and " +
  "community reserves) have unlocked";

/** How far apart the adapter and the curated set may date one release (data/unlocks-wide/README.md, trap 3). */
export const CURATED_DATE_TOLERANCE_DAYS = 2;

export const CIRCULATING_UNKNOWN_NO_SCHEDULE =
  "unknown: no complete schedule for this token (its curated schedule lists only the locked allocations, so what it " +
  "has released is not the circulating supply); size is scored on % of max supply";

/** How a point-in-time figure from the complete schedule was obtained, and whether it is a lower bound. */
export function circulatingMethodOf(s: SupplySchedule): string {
  const base = CIRCULATING_RULE;
  if (s.complete) return base;
  const missing = s.unevaluated_sections.map((u) => u.name).join(", ");
  return (
    `${base}. LOWER BOUND: the adapter's sections ${missing} could not be evaluated and are left out, ` +
    "so the true circulating supply may be higher and % of circulating lower"
  );
}

/** What a response says about how completely a token's supply is known. */
export interface Coverage {
  supply_model: "vesting" | "emission";
  schedule_set: "curated" | "wide";
  /** false: some allocations could not be evaluated (circulating is a lower bound); null: no complete schedule. */
  schedule_complete: boolean | null;
  unevaluated_sections: string[];
  /** true when the circulating figure used is a lower bound (unevaluated sections); null when it is unknown. */
  circulating_is_lower_bound: boolean | null;
}

export function coverageOf(t: TokenRecord, circulatingLowerBound: boolean | null): Coverage {
  return {
    circulating_is_lower_bound: circulatingLowerBound,
    supply_model: t.supply_model ?? "vesting",
    schedule_set: t.schedule_set ?? "curated",
    schedule_complete: t.supply_schedule ? t.supply_schedule.complete : null,
    unevaluated_sections: t.supply_schedule?.unevaluated_sections.map((u) => `${u.name}: ${u.reason}`) ?? [],
  };
}

/** Confidence of fresh liquidity evidence (one venue's perp volume, not an all-exchange aggregate). */
export const FRESH_LIQUIDITY_CONFIDENCE = 0.8;
/** Days after which liquidity evidence counts half: 30 days, one ADV window. */
export const LIQUIDITY_HALF_LIFE_DAYS = 30;
/** Market inputs older than this (a week) are called stale in score_kind. */
export const STALE_AFTER_DAYS = 7;

/**
 * Age of the market figures an event is valued with, in days, at request day `t`: from the day after the candle
 * whose close is the price to the event's day, or to today when the event is still ahead (its market is unknown).
 * A past event valued with its own day's market has age 0, however long ago it was.
 */
export function marketAgeDays(priceCandleDay: number, eventDay: number, t: number): number {
  return Math.max(0, Math.min(t, eventDay) - (priceCandleDay + 1));
}

/** Liquidity confidence as its evidence ages: 0.8 · 0.5^(age / 30). Documented in docs/risk-model.md. */
export function liquidityConfidence(ageDays: number): number {
  return FRESH_LIQUIDITY_CONFIDENCE * 0.5 ** (Math.max(0, ageDays) / LIQUIDITY_HALF_LIFE_DAYS);
}
