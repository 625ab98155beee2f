import {
  computeReaction,
  type Reaction,
  type ReactionSubject,
  selectNonOverlapping,
  summarizeReactions,
} from "./backtest.js";
import { formatDay } from "./data/dates.js";
import type { UnlockStore } from "./data/snapshot.js";
import {
  categoryOf,
  type EventIndex,
  eventIdAt,
  isDiscreteRow,
  subjectAt,
  tokenOf,
  UNLOCK_TYPES,
} from "./event-index.js";
import { seriesEndDay } from "./market-context.js";
import { MODEL_VERSION } from "./risk-model.js";
import type { BacktestBasis, BacktestResult } from "./service-types.js";

/** Most reactions one backtest returns; the most significant are kept. */
export const MAX_REACTIONS = 60;

interface Measured {
  candidates: number;
  dropped: number;
  truncated: number;
  reactions: Reaction[];
}

function measure(store: UnlockStore, index: EventIndex, candidates: readonly number[], w: number): Measured {
  const computable: { subject: ReactionSubject; r: Reaction }[] = [];
  for (const row of candidates) {
    const series = store.pricesBySymbol.get(tokenOf(store, index, row).symbol.toLowerCase());
    if (!series) continue;
    const subject = subjectAt(store, index, row);
    const r = computeReaction(subject, series, store.benchmark, w);
    if (r) computable.push({ subject, r });
  }
  const byId = new Map(computable.map((x) => [x.subject.id, x.r]));
  const { kept, dropped } = selectNonOverlapping(
    computable.map((x) => x.subject),
    w,
  );
  const ranked = [...kept].sort((a, b) => b.riskScore - a.riskScore || a.day - b.day);
  const chosen = new Set(ranked.slice(0, MAX_REACTIONS).map((s) => s.id));
  const reactions = kept.filter((s) => chosen.has(s.id)).map((s) => byId.get(s.id) as Reaction);
  return { candidates: computable.length, dropped, truncated: kept.length - reactions.length, reactions };
}

interface Basis {
  basis: BacktestBasis;
  description: string;
  pooled: boolean;
  measured: Measured;
}

/**
 * The first basis with at least one measurable reaction: the event itself (inside the price
 * history), else the token's own earlier discrete unlocks, else earlier discrete unlocks of the same
 * recipient category across tokens (pooled, and said so). Null when none has any.
 */
export function chooseBasis(store: UnlockStore, index: EventIndex, target: number, w: number): Basis | null {
  const sym = tokenOf(store, index, target).symbol;
  const day = index.day[target] as number;
  const discrete = isDiscreteRow(index, target);
  const category = categoryOf(index, target);
  const tokenK = index.token[target] as number;
  const attempts: {
    basis: BacktestBasis;
    description: string;
    pooled: boolean;
    candidates: () => number[];
  }[] = [
    {
      basis: "event",
      description: `the event itself: ${sym}'s real prices cover day −${w} to day +${w} around it`,
      pooled: false,
      candidates: () => (discrete ? [target] : []),
    },
    {
      basis: "token_history",
      description: `not the event itself (its window is outside ${sym}'s price history${discrete ? "" : ", or it is a linear stream"}): ${sym}'s own earlier discrete unlocks`,
      pooled: false,
      candidates: () => {
        const out: number[] = [];
        for (
          let row = index.tokenStart[tokenK] as number;
          row < (index.tokenStart[tokenK + 1] as number);
          row++
        )
          if (isDiscreteRow(index, row) && (index.day[row] as number) < day) out.push(row);
        return out;
      },
    },
    {
      basis: "category_history",
      description: `not the event itself nor ${sym}'s own history (none measurable): earlier discrete '${category}' unlocks of OTHER tokens, pooled across tokens`,
      pooled: true,
      candidates: () => {
        const out: number[] = [];
        for (const row of index.discreteByCategory.get(category) ?? [])
          if ((index.day[row] as number) < day && index.token[row] !== tokenK) out.push(row);
        return out;
      },
    },
  ];
  for (const a of attempts) {
    const measured = measure(store, index, a.candidates(), w);
    if (measured.reactions.length > 0)
      return { basis: a.basis, description: a.description, pooled: a.pooled, measured };
  }
  return null;
}

export function refusalReason(store: UnlockStore, index: EventIndex, target: number, w: number): string {
  const sym = tokenOf(store, index, target).symbol;
  return `No measurable reaction for ${eventIdAt(store, index, target)} at windowDays=${w}: ${sym}'s real price history does not cover day −${w}..+${w} around this event, around any earlier discrete unlock of ${sym}, or around any earlier '${categoryOf(index, target)}' unlock of another token. Try a shorter window or another event.`;
}

export function backtestResult(
  store: UnlockStore,
  index: EventIndex,
  target: number,
  w: number,
  b: Basis,
): BacktestResult {
  const symbol = tokenOf(store, index, target).symbol;
  const day = index.day[target] as number;
  const series = store.pricesBySymbol.get(symbol.toLowerCase());
  const through = Math.min(
    series ? seriesEndDay(series) : Number.POSITIVE_INFINITY,
    seriesEndDay(store.benchmark.series),
  );
  const reactions = b.measured.reactions;
  return {
    token: symbol,
    unlock_event_id: eventIdAt(store, index, target),
    windowDays: w,
    basis: b.basis,
    basis_description: b.description,
    pooled_across_tokens: b.pooled,
    benchmark: store.benchmark.symbol,
    event: {
      unlock_date: formatDay(day),
      recipient_category: categoryOf(index, target),
      unlock_type: UNLOCK_TYPES[index.type[target] as number] as string,
      is_past: Number.isFinite(through) && day <= through,
    },
    candidates: b.measured.candidates,
    excluded_overlapping: b.measured.dropped,
    excluded_truncated: b.measured.truncated,
    reactions,
    summary: summarizeReactions(reactions),
    method:
      "prices at 00:00 UTC (the close of the previous UTC day's candle), so day 0 is the last close before the unlock; pre = day −w → day 0, post = day 0 → day +w; abnormal = token log return − β × ETH log return over the same days, in %, with β fitted on the token's daily log returns over days −120..−31 and no intercept (the event study's definition, docs/risk-model.md); unlocks whose estimation window is not covered are not measurable; unlocks of one token closer than w days are counted once (the higher-risk one is kept)",
    data_through: Number.isFinite(through) ? formatDay(through) : "unknown",
    price_sources: [...new Set([...reactions.map((r) => r.token), store.benchmark.symbol])].map((symbol) => {
      const s =
        symbol === store.benchmark.symbol
          ? store.benchmark.series
          : store.pricesBySymbol.get(symbol.toLowerCase());
      return {
        symbol,
        segments: (s?.segments ?? []).map((g) => ({
          from: g.from,
          to: g.to,
          venue: g.venue,
          instrument: g.instrument,
        })),
      };
    }),
    model_version: MODEL_VERSION,
    synthetic: reactions.some((r) => r.synthetic),
  };
}
