import { parseDay } from "./data/dates.js";
import type { UnlockStore } from "./data/snapshot.js";
import type { RecipientCategory, TokenRecord } from "./data/types.js";
import type { UnlockEvent, UnlockType } from "./events.js";
import { type MarketContext, marketContextFor } from "./market-context.js";
import {
  CATEGORY_PRIOR,
  type FactorName,
  type RiskInputs,
  type RiskResult,
  type Share,
  SOURCE_CONFIDENCE,
  scoreRisk,
  TIMING_CONFIDENCE,
  TYPE_FACTOR,
} from "./risk-model.js";
import {
  type CirculatingFigure,
  CURATED_DATE_TOLERANCE_DAYS,
  circulatingAt,
  liquidityConfidence,
  marketAgeDays,
} from "./supply.js";

export interface EvidenceRecord {
  factor: FactorName;
  value: number | null;
  unit: string;
  weight: number;
  contribution: number;
  source_url: string | null;
  observed_at: string;
  confidence: number;
  assumptions: string[];
}

/** An event's score and the figures behind it; evidence is built separately, only where a response shows it. */
export interface ScoredCore {
  readonly event: UnlockEvent;
  readonly token: TokenRecord;
  readonly context: MarketContext;
  /** Circulating supply before the event, the rule that gave it and the rebuilt figure beside it. */
  readonly circulating: CirculatingFigure;
  readonly amountUsd: number;
  readonly pctCirculating: number | null;
  readonly pctMaxSupply: number | null;
  readonly absorptionRatio: number | null;
  readonly depthRatio: number | null;
  readonly confidence: number;
  readonly risk: RiskResult;
  /** The model inputs, kept so calibration can rescore with other parameters. */
  readonly inputs: RiskInputs;
}

export interface ScoredEvent extends ScoredCore {
  readonly evidence: readonly EvidenceRecord[];
}

const r4 = (x: number): number => Math.round(x * 1e4) / 1e4;
const pctText = (x: number): string => `${Math.round(x * 1000) / 10}%`;

/** Amount-weighted schedule confidence: source type × timing precision. */
export function eventConfidence(event: UnlockEvent): number {
  let sum = 0;
  for (const c of event.components)
    sum += c.amount * SOURCE_CONFIDENCE[c.sourceType] * TIMING_CONFIDENCE[c.timingPrecision];
  return event.amount > 0 ? sum / event.amount : 0;
}

function shares<K extends string>(
  event: UnlockEvent,
  key: (c: UnlockEvent["components"][number]) => K,
): Share<K>[] {
  const m = new Map<K, number>();
  for (const c of event.components) m.set(key(c), (m.get(key(c)) ?? 0) + c.amount);
  return [...m.entries()].map(([k, a]) => ({ key: k, share: event.amount > 0 ? a / event.amount : 0 }));
}

/**
 * Market data confidence reported on evidence: generated figures are weak; real ones decay with the age of the figures
 * at the event (0 when the event is valued with its own day's market; the gap to the last candle when it is ahead).
 */
function marketConfidence(ctx: MarketContext, eventDay: number): number {
  if (ctx.synthetic) return 0.2;
  return r4(liquidityConfidence(marketAgeDays(parseDay(ctx.priceObservedAt), eventDay, eventDay)));
}

/**
 * Circulating supply before an event on `day`: anchored on the latest report (supply.ts). Curated events and the
 * adapter's pieces date one release up to ±2 days apart (TIA's 2024-10-31 cliff is 2024-10-30 19:48 UTC in the
 * adapter), so for curated tokens the two days before the event are left out and the event is never counted in its
 * own denominator; wide tokens' events are those very pieces: no lag.
 */
export function eventCirculating(store: UnlockStore, token: TokenRecord, day: number): CirculatingFigure {
  const lag = token.schedule_set === "wide" ? 0 : CURATED_DATE_TOLERANCE_DAYS;
  return circulatingAt(token, store.reports.get(token.symbol.toLowerCase()), day, lag);
}

export function scoreCore(store: UnlockStore, token: TokenRecord, event: UnlockEvent): ScoredCore {
  const circulating = eventCirculating(store, token, event.day);
  const ctx = marketContextFor(store, token, event.day, circulating);
  const amountUsd = event.amount * ctx.priceUsd;
  const pctCirculating = ctx.circulatingBefore === null ? null : (event.amount / ctx.circulatingBefore) * 100;
  const pctMaxSupply =
    token.max_supply !== null && token.max_supply > 0 ? (event.amount / token.max_supply) * 100 : null;
  const absorptionRatio = ctx.advUsd !== null && ctx.advUsd > 0 ? amountUsd / ctx.advUsd : null;
  const depthRatio = ctx.depthUsd !== null && ctx.depthUsd > 0 ? amountUsd / ctx.depthUsd : null;
  const confidence = eventConfidence(event);
  const categories = shares<RecipientCategory>(event, (c) => c.category);
  const types = shares<UnlockType>(event, (c) => (event.unlockType === "linear" ? "linear" : c.kind));
  const inputs: RiskInputs = {
    pctCirculating,
    pctMaxSupply,
    absorptionRatio,
    depthRatio,
    categories,
    types,
    confidence,
  };
  return {
    event,
    token,
    context: ctx,
    circulating,
    amountUsd,
    pctCirculating,
    pctMaxSupply,
    absorptionRatio,
    depthRatio,
    confidence,
    risk: scoreRisk(inputs),
    inputs,
  };
}

export function scoreEvent(store: UnlockStore, token: TokenRecord, event: UnlockEvent): ScoredEvent {
  const core = scoreCore(store, token, event);
  return { ...core, evidence: evidenceFor(store, core) };
}

/** One record per model factor: the input, where and when it was observed, and what was assumed. */
export function evidenceFor(store: UnlockStore, s: ScoredCore): EvidenceRecord[] {
  const {
    event,
    token,
    context: ctx,
    pctCirculating,
    pctMaxSupply,
    absorptionRatio,
    depthRatio,
    confidence,
    risk,
  } = s;
  const { categories, types } = s.inputs;
  const f = (name: FactorName) => risk.factors.find((x) => x.factor === name)!;
  const scheduleUrl = event.components[0]?.sourceUrl ?? token.sources[0] ?? null;
  const syntheticNote = ctx.synthetic ? ["market figures are SYNTHETIC (generated)"] : [];
  const venue = ctx.venue ? ` on ${ctx.venue} ${ctx.instrument ?? ""}`.trimEnd() : "";
  const mkt = marketConfidence(ctx, event.day);

  const evidence: EvidenceRecord[] = [
    {
      factor: "unlock_size",
      value: pctCirculating === null ? (pctMaxSupply === null ? null : r4(pctMaxSupply)) : r4(pctCirculating),
      unit: pctCirculating === null ? "% of max supply" : "% of estimated circulating supply",
      weight: f("unlock_size").weight,
      contribution: f("unlock_size").contribution,
      source_url: scheduleUrl,
      observed_at: ctx.circulatingObservedAt,
      confidence: r4(Math.min(confidence, pctCirculating === null ? 0.9 : 0.6)),
      assumptions: [
        `${r4(event.amount)} tokens unlock (${event.components.length} schedule piece${event.components.length === 1 ? "" : "s"})`,
        ...(pctMaxSupply === null ? [] : [`${r4(pctMaxSupply)}% of max supply ${token.max_supply}`]),
        `circulating: ${ctx.circulatingMethod}`,
        ...ctx.assumptions.filter((a) => a.startsWith("nothing")),
      ],
    },
    {
      factor: "absorption_ratio",
      value: absorptionRatio === null ? null : r4(absorptionRatio),
      unit: "days of 30-day average daily volume (unlock USD value ÷ ADV)",
      weight: f("absorption_ratio").weight,
      contribution: f("absorption_ratio").contribution,
      source_url: ctx.priceSourceUrl,
      observed_at: ctx.advObservedAt,
      confidence: mkt,
      assumptions: [
        `unlock valued at ${ctx.priceUsd} USD per token (close of ${ctx.priceObservedAt}${venue})`,
        ...(absorptionRatio === null
          ? ["30-day volume unknown: this weight was redistributed to the other size inputs"]
          : [`30-day ADV ${Math.round(ctx.advUsd as number)} USD (${ctx.advSource})`]),
        ...ctx.assumptions.filter((a) => !a.startsWith("nothing")),
        ...syntheticNote,
      ],
    },
    {
      factor: "order_book_depth",
      value: depthRatio === null ? null : r4(depthRatio),
      unit: "multiples of ±2% order-book depth (unlock USD value ÷ depth)",
      weight: f("order_book_depth").weight,
      contribution: f("order_book_depth").contribution,
      source_url: token.market.source_url,
      observed_at: ctx.depthObservedAt,
      confidence: depthRatio === null ? 0 : mkt,
      assumptions:
        depthRatio === null
          ? ["order-book depth unknown for this event: its weight was redistributed to the other size inputs"]
          : [`±2% depth ${Math.round(ctx.depthUsd as number)} USD`, ...syntheticNote],
    },
    {
      factor: "recipient_category",
      value: f("recipient_category").subscore,
      unit: "sell-propensity multiplier (amount-weighted prior)",
      weight: f("recipient_category").weight,
      contribution: f("recipient_category").contribution,
      source_url: scheduleUrl,
      observed_at: store.snapshot.as_of,
      confidence: r4(confidence),
      assumptions: categories.map((s) => `${s.key} ${pctText(s.share)} (prior ${CATEGORY_PRIOR[s.key]})`),
    },
    {
      factor: "unlock_type",
      value: f("unlock_type").subscore,
      unit: "release-type multiplier (cliff 1, step 0.85, linear 0.5)",
      weight: f("unlock_type").weight,
      contribution: f("unlock_type").contribution,
      source_url: scheduleUrl,
      observed_at: store.snapshot.as_of,
      confidence: r4(confidence),
      assumptions: types.map((s) => `${s.key} ${pctText(s.share)} (factor ${TYPE_FACTOR[s.key]})`),
    },
    {
      factor: "source_confidence",
      value: r4(confidence),
      unit: "schedule confidence 0–1 (source type × timing precision)",
      weight: f("source_confidence").weight,
      contribution: f("source_confidence").contribution,
      source_url: scheduleUrl,
      observed_at: store.snapshot.as_of,
      confidence: r4(confidence),
      assumptions: event.components.map(
        (c) =>
          `${c.recipient}: ${c.sourceType} (${SOURCE_CONFIDENCE[c.sourceType]}), timing ${c.timingPrecision} (${TIMING_CONFIDENCE[c.timingPrecision]})`,
      ),
    },
  ];
  return evidence;
}
