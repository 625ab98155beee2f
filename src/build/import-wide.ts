import { dayOfUnix, formatDay, parseDay } from "../unlocks/data/dates.js";
import type {
  RecipientCategory,
  SchedulePiece,
  SupplyModel,
  SupplyPiece,
  SupplySchedule,
} from "../unlocks/data/types.js";

/**
 * The wide schedule set (data/unlocks-wide/schedules.json): every allocation DefiLlama's emissions adapters model for
 * 154 tokens, as the adapters return them (exact unix times, adapter "months" of 30.437 days). Pure conversions into
 * the store's day-based pieces; the README beside the file lists the traps handled here.
 */
export interface WideCliff {
  kind: "cliff";
  unix: number;
  amount: number;
}
export interface WideLinear {
  kind: "linear";
  start_unix: number;
  end_unix: number;
  amount: number;
}
export interface WideStep {
  kind: "step";
  start_unix: number;
  step_duration_s: number;
  steps: number;
  amount_per_step: number;
  amount: number;
}
export type WidePiece = WideCliff | WideLinear | WideStep;

export interface WideSection {
  name: string;
  category: string | null;
  pieces: WidePiece[];
  total: number;
}

export interface WideToken {
  symbol: string;
  coingecko_id: string | null;
  chain: string | null;
  protocol_file: string;
  adapter_commit: string;
  adapter_total: number | null;
  total_of_pieces: number;
  complete: boolean;
  emission_like_share: number | null;
  flags: string[];
  sources: string[];
  sections: WideSection[];
  unevaluated_sections?: { name: string; reason: string; allocation_in_meta?: number | null }[];
}

export interface WideSchedules {
  compiled_on: string;
  adapter_repo: string;
  adapter_commit: string;
  tokens: WideToken[];
}

const DAY_S = 86_400;
/**
 * The adapters' month (2,629,743 s). Its steps keep the adapter's own clock (`step_clock`): sections released at one
 * timestamp stay one release on one day, where calendar months counted from each section's own first release split
 * them across two days (SUI 2026-12-01/02).
 */
const ADAPTER_MONTH_S = 2_629_743;
/** Steps closer than this are a continuous stream (TIA's 1,095 daily steps), not discrete unlock events. */
const CONTINUOUS_BELOW_S = 7 * DAY_S;
/** Share of modelled supply in emission-like sections from which a token is an emission token (the data's flag). */
export const EMISSION_TOKEN_SHARE = 0.5;

/** The data's own heuristic (data/unlocks-wide/README.md, trap 1), so the label matches its `emission_like_share`. */
const EMISSION_WORDS =
  /reward|emission|inflation|mining|miner|staking|stake|validator|block|halving|incentive|farming|gauge|issuance|rebase|bootstrap/i;

export function isEmissionSection(s: Pick<WideSection, "name" | "category">): boolean {
  return s.category === "farming" || s.category === "staking" || EMISSION_WORDS.test(s.name);
}

/**
 * Emission sections the name heuristic misses, decided from what the section pays: rewards to users or operators
 * over time, not a release to a holder. Left out of the scored vesting pieces only (the token's emission share, the
 * data's own figure, is unchanged).
 */
export const EMISSION_BY_SOURCE: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  GMT: { "Move And Earn": "move-to-earn rewards paid to users of the app" },
  JOE: { "Liquidity providers": "liquidity-mining rewards paid to liquidity providers" },
};

const isScoredSection = (symbol: string, s: Pick<WideSection, "name" | "category">): boolean =>
  !isEmissionSection(s) && !Object.hasOwn(EMISSION_BY_SOURCE[symbol] ?? {}, s.name);

/**
 * A reserve: the adapter's own category says the section does not circulate once unlocked (`noncirculating`: foundation,
 * ecosystem, treasury, community reserves). Decided from the category alone, the same way for every token.
 */
export const isReserveSection = (s: Pick<WideSection, "category">): boolean =>
  s.category === "noncirculating";

/**
 * Adapter categories → the model's recipient categories. `noncirculating` mixes foundation, ecosystem and treasury
 * reserves (README trap 8): it maps to treasury, the reserve bucket. Public sale and liquidity are market-facing.
 */
const CATEGORY: Record<string, RecipientCategory> = {
  insiders: "team",
  privateSale: "investors",
  publicSale: "community",
  airdrop: "airdrop",
  farming: "community",
  staking: "community",
  noncirculating: "treasury",
  liquidity: "other",
  liquity: "other",
};

export const recipientCategory = (c: string | null): RecipientCategory =>
  c ? (CATEGORY[c] ?? "other") : "other";

/**
 * The recipient of a section: who its name says receives it, where the adapter files an ecosystem fund, a foundation
 * or a treasury under `insiders` (W's 3.1B "Ecosystem & Incubation", whose 650M cliffs read as team unlocks). Names
 * that also say team, employees, contributors or consultants stay team.
 */
export function sectionCategory(s: Pick<WideSection, "name" | "category">): RecipientCategory {
  const base = recipientCategory(s.category);
  if (base !== "team" || /team|employee|contributor|consultant|advisor/i.test(s.name)) return base;
  if (/ecosystem|incubat|partners/i.test(s.name)) return "ecosystem";
  if (/foundation/i.test(s.name)) return "foundation";
  if (/treasury|reserve/i.test(s.name)) return "treasury";
  return base;
}

export { dayOfUnix };

/** A step's release days: the i-th (i = 1…steps) at start + i·period; non-integer `steps` → ceil (the runner's way). */
function stepReleaseDays(p: WideStep): number[] {
  const out: number[] = [];
  for (let i = 1; i <= Math.ceil(p.steps); i++) out.push(dayOfUnix(p.start_unix + i * p.step_duration_s));
  return out;
}

/** One adapter piece as day-based pieces with the store's semantics (a step's first release is on `start`). */
export function toSupplyPieces(p: WidePiece): SupplyPiece[] {
  if (!(p.amount > 0)) return [];
  if (p.kind === "cliff")
    return [
      {
        kind: "cliff",
        start: formatDay(dayOfUnix(p.unix)),
        end: null,
        amount_tokens: p.amount,
        steps: null,
        step_days: null,
      },
    ];
  if (p.kind === "linear") {
    const from = dayOfUnix(p.start_unix);
    const to = Math.max(from + 1, dayOfUnix(p.end_unix));
    return [
      {
        kind: "linear",
        start: formatDay(from),
        end: formatDay(to),
        amount_tokens: p.amount,
        steps: null,
        step_days: null,
      },
    ];
  }
  const days = stepReleaseDays(p);
  const first = days[0] as number;
  const last = days[days.length - 1] as number;
  if (p.step_duration_s < CONTINUOUS_BELOW_S)
    return [
      {
        kind: "linear",
        start: formatDay(first - 1),
        end: formatDay(last),
        amount_tokens: p.amount,
        steps: null,
        step_days: null,
      },
    ];
  if (days.length === 1)
    return [
      {
        kind: "cliff",
        start: formatDay(first),
        end: null,
        amount_tokens: p.amount,
        steps: null,
        step_days: null,
      },
    ];
  const monthly = Math.abs(p.step_duration_s - ADAPTER_MONTH_S) < 60;
  // Multi-month periods (quarters, halves, years) are listed release by release: a fixed day count would drift.
  if (!monthly && p.step_duration_s > 40 * DAY_S)
    return days.map((d) => ({
      kind: "cliff" as const,
      start: formatDay(d),
      end: null,
      amount_tokens: p.amount / days.length,
      steps: null,
      step_days: null,
    }));
  return [
    {
      kind: "step",
      start: formatDay(first),
      end: formatDay(last),
      amount_tokens: p.amount,
      steps: days.length,
      step_days: monthly ? "monthly" : Math.round(p.step_duration_s / DAY_S),
      ...(monthly ? { step_clock: { start_unix: p.start_unix, period_s: p.step_duration_s } } : {}),
    },
  ];
}

export const adapterUrl = (t: Pick<WideToken, "adapter_commit" | "protocol_file">): string =>
  `https://github.com/DefiLlama/emissions-adapters/blob/${t.adapter_commit}/${t.protocol_file}`;

/**
 * Adapters whose dates are not the token's: their schedule is left out (circulating comes from reports alone, and no
 * unlock event is dated from it) rather than scored on invented days.
 */
export const UNDATED_ADAPTERS: Readonly<Record<string, string>> = {
  FIL:
    "its adapter starts every section on 2024-10-17 (a fixed start of 1729123200), while Filecoin's vesting ran from " +
    "its 2020 mainnet launch (the 6-month to 6-year SAFT and Protocol Labs schedules had largely or wholly vested by " +
    "2024); the real start is not in the data, so its schedule dates are unknown and no unlock event is scored",
};

/** Sections that describe burns: destroyed, never circulating. */
const isBurn = (s: WideSection): boolean => s.category === "burned";

export function supplyModelOf(t: WideToken): SupplyModel {
  return (t.emission_like_share ?? 0) >= EMISSION_TOKEN_SHARE ? "emission" : "vesting";
}

/** The complete supply schedule: every evaluated, non-burn section, with what could not be evaluated named. */
export function supplyScheduleOf(t: WideToken): SupplySchedule {
  return {
    source: `DefiLlama emissions adapter ${t.protocol_file} at ${t.adapter_commit.slice(0, 12)}, evaluated offline (data/unlocks-wide)`,
    source_url: adapterUrl(t),
    complete: t.complete,
    unevaluated_sections: (t.unevaluated_sections ?? []).map((u) => ({
      name: u.name,
      reason: u.reason,
      allocation_in_meta: u.allocation_in_meta ?? null,
    })),
    emission_like_share: t.emission_like_share ?? 0,
    pieces: t.sections
      .filter((s) => !isBurn(s))
      .flatMap((s) =>
        s.pieces
          .flatMap((p) => toSupplyPieces(p))
          .map((p): SupplyPiece => (isReserveSection(s) ? { ...p, reserve: true } : p)),
      ),
  };
}

/**
 * The scored vesting schedule of a token known only from the wide set: every non-emission, non-burn section's pieces,
 * each with its section as recipient and the adapter file as source. Emission sections count toward circulating supply
 * (supply_schedule) but are not vesting unlocks.
 */
export function vestingPiecesOf(t: WideToken): SchedulePiece[] {
  const url = adapterUrl(t);
  return t.sections
    .filter((s) => !isBurn(s) && isScoredSection(t.symbol, s))
    .flatMap((s) =>
      s.pieces
        .flatMap((p) => toSupplyPieces(p))
        .map(
          (p): SchedulePiece => ({
            recipient: s.name,
            category: sectionCategory(s),
            ...p,
            source_type: "aggregator",
            timing_precision: "day",
            source_url: url,
          }),
        ),
    );
}

/** The first day anything circulates per the complete schedule (the TGE), or null when nothing is dated. */
export function firstReleaseDay(pieces: readonly SupplyPiece[]): number | null {
  let first = Number.POSITIVE_INFINITY;
  for (const p of pieces) {
    const d = parseDay(p.start);
    if (d < first) first = d;
  }
  return Number.isFinite(first) ? first : null;
}
