import type { RecipientCategory, SchedulePiece, TokenRecord } from "../unlocks/data/types.js";

/** One token of data/unlock-schedules/schedules.json. */
export interface CompiledScheduleToken {
  symbol: string;
  name: string;
  coingecko_id: string | null;
  chain: string | null;
  max_supply: number | null;
  schedules: {
    recipient: string;
    category: RecipientCategory;
    kind: "cliff" | "linear" | "step";
    start: string;
    end: string | null;
    amount_tokens: number;
    steps: number | null;
    step_days: number | "monthly" | null;
    confirmed: boolean;
  }[];
  sources: string[];
  notes: string;
}

export interface CompiledSchedules {
  compiled_on: string;
  method: string;
  tokens: CompiledScheduleToken[];
}

/** The DefiLlama adapter slug, read from a source URL such as …/emissions-adapters/blob/<sha>/protocols/arbitrum.ts. */
export function defillamaSlugFrom(sources: readonly string[]): string | null {
  for (const s of sources) {
    const m = /emissions-adapters\/blob\/[^/]+\/protocols\/([^/]+)\.ts/.exec(s);
    if (m) return m[1] as string;
  }
  return null;
}

/**
 * Maps a compiled schedule piece into the store: `confirmed` pieces follow an official document;
 * unconfirmed ones are estimates (chart reads, assumptions), i.e. inferred. Dates are good to ±1 day.
 */
export function toSchedulePiece(
  p: CompiledScheduleToken["schedules"][number],
  sourceUrl: string | null,
): SchedulePiece {
  return {
    recipient: p.recipient,
    category: p.category,
    kind: p.kind,
    start: p.start,
    end: p.end,
    amount_tokens: p.amount_tokens,
    steps: p.steps,
    step_days: p.step_days,
    source_type: p.confirmed ? "official_docs" : "inferred",
    timing_precision: "day",
    source_url: sourceUrl,
  };
}

/**
 * Curated sections that are emissions, not vesting: reward or incentive pools paid out to users, validators,
 * publishers or creators over time. Unlocking such a pool makes tokens available to a programme, not to a holder
 * who can sell them that day, so they are never scored as unlock events; they still count toward circulating supply
 * through the complete schedule. Decided per section from the schedule's own source and notes (the reason is shown
 * in the token's notes). Airdrops and stakedrops (one-off distributions to named recipients on a date), sales to
 * validators (JUP's Mercurial Stakeholders, 2Z's Validators Sale) are releases to holders and stay scored.
 */
export const EMISSION_SECTIONS: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  USUAL: {
    "Community Incentives":
      "emitted to protocol users over four years (the curve is the adapter's reading of a chart)",
  },
  INIT: {
    "VIP Rewards": "a reward pool paid to users at ~17.5M a year (the adapter models the rate linearly)",
    "Enshrined Liquidity & Staking Rewards": "staking and liquidity rewards paid at ~12.5M a year",
  },
  PYTH: {
    "Publisher Rewards":
      "the pool that pays data publishers for their price feeds; its annual unlock funds the programme, it is not released to a holder",
  },
  PLUME: { Validators: "validator rewards (staking issuance) over seven years, the adapter's curve" },
  GRASS: {
    "Future Incentives":
      "an incentive pool with no set schedule (four-year linear is the adapter's assumption)",
    "Router Rewards": "rewards paid to routers of the network, no set schedule",
  },
  DYM: { "Incentives Manager": "an incentive pool available at genesis and spent down as rewards" },
  KAITO: {
    "Long Term Creator Incentives": "incentives paid to creators in six-monthly tranches of a programme",
    "Liquidity Incentives":
      "a liquidity-incentive pool funded at the TGE and paid out to liquidity providers",
  },
  BABY: { "Community Incentives": "an incentive pool (its release at the TGE is the adapter's assumption)" },
  ZORA: { "Community Incentives": "an incentive pool funded at the TGE and paid out to users over time" },
  IP: { "Initial Incentives": "an incentive pool funded at the TGE and paid out to users over time" },
  EIGEN: {
    "Programmatic Incentives v1": "staking rewards (programmatic inflation) paid to restakers and operators",
    "Programmatic Incentives v2": "staking rewards (programmatic inflation) paid to restakers and operators",
  },
  LAYER: { "Community Incentives": "incentives emitted to users over time" },
  WAL: { Subsidies: "storage subsidies paid to storage nodes over time" },
  ATH: { "Checkers & Compute Providers": "rewards paid to the network's checker and compute nodes" },
  STRK: { "Community Rebates": "fee rebates paid back to users of the network" },
  PUMP: { Livestreaming: "the pool that pays livestreaming creators' incentives, funded at the ICO" },
};

/** The token's schedule facts; market, supply and prices are filled in by the caller. */
export function scheduleFacts(
  t: CompiledScheduleToken,
): Pick<
  TokenRecord,
  | "symbol"
  | "name"
  | "coingecko_id"
  | "defillama_slug"
  | "chain"
  | "max_supply"
  | "schedules"
  | "sources"
  | "notes"
> {
  const url = t.sources[0] ?? null;
  const emission = EMISSION_SECTIONS[t.symbol] ?? {};
  const isEmission = (p: { recipient: string }) => Object.hasOwn(emission, p.recipient);
  const left = Object.entries(emission).filter(([name]) => t.schedules.some((p) => p.recipient === name));
  const note =
    left.length === 0
      ? ""
      : ` Not scored as vesting unlocks (emissions; they count toward circulating supply through the complete schedule): ${left.map(([n, why]) => `${n}: ${why}`).join("; ")}.`;
  return {
    symbol: t.symbol,
    name: t.name,
    coingecko_id: t.coingecko_id,
    defillama_slug: defillamaSlugFrom(t.sources),
    chain: t.chain,
    max_supply: t.max_supply,
    schedules: t.schedules.filter((p) => !isEmission(p)).map((p) => toSchedulePiece(p, url)),
    sources: t.sources,
    notes: `${t.notes}${note}`,
  };
}
