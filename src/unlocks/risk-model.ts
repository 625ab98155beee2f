import type { RecipientCategory, SourceType, TimingPrecision } from "./data/types.js";
import type { UnlockType } from "./events.js";

/** Bumped whenever a weight, curve or threshold below changes; echoed on every risk item. */
export const MODEL_VERSION = "unlock-risk-2.0.0";

/** Magnitude weights (sum to 1). Unknown liquidity inputs hand their weight to the known ones pro rata. */
export const MAGNITUDE_WEIGHTS = {
  unlock_size: 0.45,
  absorption_ratio: 0.4,
  order_book_depth: 0.15,
} as const;

/** Saturation points: the input at which a magnitude sub-score reaches 1. */
export const SATURATION = { pctCirculating: 10, absorptionRatio: 5, depthRatio: 50 } as const;
/** Curvature scales: small unlocks rise fastest (log curves), so ranks among small events stay informative. */
const SCALE = { pctCirculating: 0.25, absorptionRatio: 0.1, depthRatio: 1 } as const;

/** Prior sell propensity by recipient (1 = most likely to sell soon after unlock). */
/**
 * Team unlocks hit hardest, investor unlocks less, ecosystem-development unlocks least (Keyrock,
 * "Token Unlocks: ..." 2024, 16,000+ unlock events; see docs/risk-model.md).
 */
export const CATEGORY_PRIOR: Readonly<Record<RecipientCategory, number>> = {
  team: 1,
  investors: 0.9,
  airdrop: 0.85,
  other: 0.75,
  community: 0.7,
  foundation: 0.65,
  treasury: 0.6,
  ecosystem: 0.55,
};

/** Discrete releases land at once; linear streams are absorbed over the month. */
export const TYPE_FACTOR: Readonly<Record<UnlockType, number>> = { cliff: 1, step: 0.85, linear: 0.5 };

export const SOURCE_CONFIDENCE: Readonly<Record<SourceType, number>> = {
  onchain_contract: 1,
  official_docs: 0.9,
  aggregator: 0.7,
  inferred: 0.5,
};
export const TIMING_CONFIDENCE: Readonly<Record<TimingPrecision, number>> = {
  exact: 1,
  day: 0.95,
  week: 0.85,
  month: 0.7,
};
/** Confidence multiplier q = FLOOR + (1 - FLOOR) * confidence: an unverified schedule is discounted by at most 30%. */
export const CONFIDENCE_FLOOR = 0.7;

export const LEVEL_THRESHOLDS = { medium: 25, high: 50, critical: 75 } as const;
export type RiskLevel = "low" | "medium" | "high" | "critical";

export interface Share<K extends string> {
  readonly key: K;
  readonly share: number;
}

export interface RiskInputs {
  /** Unlock as % of (estimated) circulating supply just before it; null when unknown. */
  readonly pctCirculating: number | null;
  /** Unlock as % of max supply; the size input when circulating supply is unknown; null when no max supply. */
  readonly pctMaxSupply: number | null;
  /** Unlock value ÷ 30-day average daily volume (days of volume); null when volume is unknown. */
  readonly absorptionRatio: number | null;
  /** Unlock value ÷ ±2% order-book depth; null when depth is unknown. */
  readonly depthRatio: number | null;
  /** Amount shares by recipient category (sum to 1). */
  readonly categories: readonly Share<RecipientCategory>[];
  /** Amount shares by release type (sum to 1). */
  readonly types: readonly Share<UnlockType>[];
  /** Schedule confidence in [0, 1] (source type × timing precision, amount-weighted). */
  readonly confidence: number;
}

export type FactorName =
  | "unlock_size"
  | "absorption_ratio"
  | "order_book_depth"
  | "recipient_category"
  | "unlock_type"
  | "source_confidence";

export interface FactorScore {
  readonly factor: FactorName;
  /** Sub-score in [0,1] for magnitude factors, the multiplier for the others. */
  readonly subscore: number;
  /** Effective weight for magnitude factors (after redistribution); the multiplier for the others. */
  readonly weight: number;
  /** Points this factor adds to (or, for multipliers, removes from) the score. Contributions sum to the score. */
  readonly contribution: number;
  readonly known: boolean;
}

export interface RiskResult {
  readonly score: number;
  readonly level: RiskLevel;
  readonly magnitude: number;
  readonly factors: readonly FactorScore[];
}

function logCurve(x: number, scale: number, saturation: number): number {
  if (!(x > 0)) return 0;
  return Math.min(1, Math.log1p(x / scale) / Math.log1p(saturation / scale));
}

/** Unknown size scores 0 and is marked unknown (its weight moves to the known inputs): never saturated. */
export function sizeSubscore(pct: number | null): number {
  return pct === null ? 0 : logCurve(pct, SCALE.pctCirculating, SATURATION.pctCirculating);
}
export function absorptionSubscore(ratio: number): number {
  return logCurve(ratio, SCALE.absorptionRatio, SATURATION.absorptionRatio);
}
export function depthSubscore(ratio: number): number {
  return logCurve(ratio, SCALE.depthRatio, SATURATION.depthRatio);
}

export function riskLevel(score: number): RiskLevel {
  if (score >= LEVEL_THRESHOLDS.critical) return "critical";
  if (score >= LEVEL_THRESHOLDS.high) return "high";
  if (score >= LEVEL_THRESHOLDS.medium) return "medium";
  return "low";
}

// Module-level helpers rather than per-call closures: every event of the store is scored at start-up.
function weighted<K extends string>(shares: readonly Share<K>[], table: Readonly<Record<K, number>>): number {
  let total = 0;
  for (const x of shares) total += x.share;
  if (!(total > 0)) return 1;
  let sum = 0;
  for (const x of shares) sum += x.share * table[x.key];
  return sum / total;
}

const weightShare = (w: number, known: boolean, knownWeight: number): number =>
  known && knownWeight > 0 ? w / knownWeight : 0;

const roundFactor = (f: FactorScore): FactorScore => ({
  ...f,
  subscore: round(f.subscore, 4),
  weight: round(f.weight, 4),
  contribution: round(f.contribution, 2),
});

const round = (x: number, digits: number): number => {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
};

/**
 * score = 100 × M × c × t × q, where M is the weighted magnitude (size, absorption, depth),
 * c the recipient prior, t the release-type factor and q the confidence multiplier.
 * Reported contributions form a waterfall that sums to the score: the magnitude factors add
 * 100·wᵢ·sᵢ, then each multiplier subtracts what it removes from the running total.
 */
/** The tunable part of the model; calibration compares alternatives on the fit sample. */
export interface ModelParams {
  readonly weights: {
    readonly unlock_size: number;
    readonly absorption_ratio: number;
    readonly order_book_depth: number;
  };
  readonly categoryPrior: Readonly<Record<RecipientCategory, number>>;
}
export const SHIPPED_PARAMS: ModelParams = { weights: MAGNITUDE_WEIGHTS, categoryPrior: CATEGORY_PRIOR };

export function scoreRisk(inputs: RiskInputs, params: ModelParams = SHIPPED_PARAMS): RiskResult {
  const MAGNITUDE_WEIGHTS = params.weights;
  const sizeInput = inputs.pctCirculating ?? inputs.pctMaxSupply;
  const sizeKnown = sizeInput !== null && Number.isFinite(sizeInput);
  const sSize = sizeKnown ? sizeSubscore(sizeInput) : 0;
  const absKnown = inputs.absorptionRatio !== null && Number.isFinite(inputs.absorptionRatio);
  const depthKnown = inputs.depthRatio !== null && Number.isFinite(inputs.depthRatio);
  const sAbs = absKnown ? absorptionSubscore(inputs.absorptionRatio as number) : 0;
  const sDepth = depthKnown ? depthSubscore(inputs.depthRatio as number) : 0;
  const knownWeight =
    (sizeKnown ? MAGNITUDE_WEIGHTS.unlock_size : 0) +
    (absKnown ? MAGNITUDE_WEIGHTS.absorption_ratio : 0) +
    (depthKnown ? MAGNITUDE_WEIGHTS.order_book_depth : 0);
  // Nothing known about the size of the release: magnitude 0, every factor marked unknown.
  const wSize = weightShare(MAGNITUDE_WEIGHTS.unlock_size, sizeKnown, knownWeight);
  const wAbs = weightShare(MAGNITUDE_WEIGHTS.absorption_ratio, absKnown, knownWeight);
  const wDepth = weightShare(MAGNITUDE_WEIGHTS.order_book_depth, depthKnown, knownWeight);
  const magnitude = wSize * sSize + wAbs * sAbs + wDepth * sDepth;

  const c = weighted(inputs.categories, params.categoryPrior);
  const t = weighted(inputs.types, TYPE_FACTOR);
  const conf = Math.min(1, Math.max(0, inputs.confidence));
  const q = CONFIDENCE_FLOOR + (1 - CONFIDENCE_FLOOR) * conf;

  const raw = 100 * magnitude * c * t * q;
  const score = round(raw, 1);
  const unrounded: FactorScore[] = [
    {
      factor: "unlock_size",
      subscore: sSize,
      weight: wSize,
      contribution: 100 * wSize * sSize,
      known: sizeKnown,
    },
    {
      factor: "absorption_ratio",
      subscore: sAbs,
      weight: wAbs,
      contribution: 100 * wAbs * sAbs,
      known: absKnown,
    },
    {
      factor: "order_book_depth",
      subscore: sDepth,
      weight: wDepth,
      contribution: 100 * wDepth * sDepth,
      known: depthKnown,
    },
    {
      factor: "recipient_category",
      subscore: c,
      weight: c,
      contribution: 100 * magnitude * (c - 1),
      known: true,
    },
    {
      factor: "unlock_type",
      subscore: t,
      weight: t,
      contribution: 100 * magnitude * c * (t - 1),
      known: true,
    },
    {
      factor: "source_confidence",
      subscore: conf,
      weight: q,
      contribution: 100 * magnitude * c * t * (q - 1),
      known: true,
    },
  ];
  const factors = unrounded.map(roundFactor);
  return { score, level: riskLevel(score), magnitude, factors };
}

/**
 * What the score is. Calibration (docs/risk-model.md) found no out-of-sample skill at predicting
 * abnormal returns, so it is sold as a ranking of scheduled supply pressure, not a forecast.
 */
export const SCORE_KIND =
  "supply-pressure ranking: orders unlocks by size, liquidity and recipient; not a forecast of price moves (no out-of-sample skill, see docs/risk-model.md)";
