import type { RecipientCategory, SchedulePiece, TokenRecord } from "../store/unlocks-types.js";

/** One token of ../shared/data/unlock-schedules/schedules.json. */
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
  return {
    symbol: t.symbol,
    name: t.name,
    coingecko_id: t.coingecko_id,
    defillama_slug: defillamaSlugFrom(t.sources),
    chain: t.chain,
    max_supply: t.max_supply,
    schedules: t.schedules.map((p) => toSchedulePiece(p, url)),
    sources: t.sources,
    notes: t.notes,
  };
}
