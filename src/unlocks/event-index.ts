import { formatDay } from "../store/unlocks-dates.js";
import type { UnlockStore } from "../store/unlocks-snapshot.js";
import type { RecipientCategory } from "../store/unlocks-types.js";
import type { ReactionSubject } from "./backtest.js";
import { expandTokenEvents, type UnlockEvent } from "./events.js";
import { MODEL_VERSION, SCORE_KIND } from "./risk-model.js";
import { type ScoredEvent, scoreEvent } from "./scoring.js";
import { type RiskItem, UnlockLookupError } from "./service-types.js";

/** A scored event with its response item prebuilt (everything but what depends on "today"). */
export interface Prepared {
  readonly scored: ScoredEvent;
  readonly base: Omit<RiskItem, "days_until" | "evidence" | "market"> & {
    market: Omit<RiskItem["market"], "stale_days">;
  };
  readonly priceDay: number;
  readonly subject: ReactionSubject;
}

/** Every event of the store, expanded and scored once at start-up, with the lookups requests need. */
export interface EventIndex {
  readonly all: readonly Prepared[];
  readonly byToken: ReadonlyMap<string, readonly Prepared[]>;
  readonly byId: ReadonlyMap<string, Prepared>;
  readonly discreteByCategory: ReadonlyMap<RecipientCategory, readonly Prepared[]>;
}

export const round = (x: number, d: number): number => Math.round(x * 10 ** d) / 10 ** d;
export const isDiscrete = (e: UnlockEvent): boolean => e.unlockType !== "linear";

function prepare(store: UnlockStore, s: ScoredEvent): Prepared {
  const e = s.event;
  const c = s.context;
  const base: Prepared["base"] = {
    token: s.token.symbol,
    unlock_event_id: e.id,
    risk_score: s.risk.score,
    risk_level: s.risk.level,
    score_kind: SCORE_KIND,
    token_name: s.token.name,
    unlock_date: e.date,
    amount_tokens: round(e.amount, 4),
    amount_usd: round(s.amountUsd, 2),
    pct_circulating: s.pctCirculating === null ? null : round(s.pctCirculating, 4),
    pct_max_supply: s.pctMaxSupply === null ? null : round(s.pctMaxSupply, 4),
    absorption_ratio: s.absorptionRatio === null ? null : round(s.absorptionRatio, 4),
    recipient_category: e.recipientCategory,
    unlock_type: e.unlockType,
    confidence: round(s.confidence, 4),
    recipients: e.components.map((x) => ({
      recipient: x.recipient,
      category: x.category,
      kind: x.kind,
      amount_tokens: round(x.amount, 4),
      source_type: x.sourceType,
      timing_precision: x.timingPrecision,
    })),
    market: {
      price_usd: c.priceUsd,
      price_as_of: c.priceObservedAt,
      adv_30d_usd: c.advUsd === null ? null : round(c.advUsd, 2),
      adv_as_of: c.advObservedAt,
      depth_2pct_usd: c.depthUsd,
      venue: c.venue,
      instrument: c.instrument,
      source_url: c.priceSourceUrl,
      circulating_supply_estimate: c.circulatingBefore === null ? null : round(c.circulatingBefore, 2),
      circulating_method: c.circulatingMethod,
    },
    model_version: MODEL_VERSION,
    as_of: store.snapshot.as_of,
    synthetic: c.synthetic,
  };
  if (e.unlockType === "linear")
    base.stream = {
      stream_start: e.date,
      stream_end: formatDay(e.endDay),
      month_amount_tokens: round(e.amount, 4),
    };
  const subject: ReactionSubject = {
    id: e.id,
    symbol: e.symbol,
    day: e.day,
    recipientCategory: e.recipientCategory,
    unlockType: e.unlockType,
    riskScore: s.risk.score,
    pctCirculating: s.pctCirculating,
  };
  const [y, m, d] = c.priceObservedAt.split("-").map(Number);
  return { scored: s, base, subject, priceDay: Date.UTC(y as number, (m as number) - 1, d) / 86_400_000 };
}

export function buildEventIndex(store: UnlockStore): EventIndex {
  const all: Prepared[] = [];
  const byToken = new Map<string, Prepared[]>();
  const byId = new Map<string, Prepared>();
  for (const token of store.tokens) {
    const list = expandTokenEvents(token).map((e) => prepare(store, scoreEvent(store, token, e)));
    byToken.set(token.symbol.toLowerCase(), list);
    for (const p of list) {
      all.push(p);
      byId.set(p.base.unlock_event_id, p);
    }
  }
  all.sort((a, b) => a.scored.event.day - b.scored.event.day || b.base.risk_score - a.base.risk_score);
  const discreteByCategory = new Map<RecipientCategory, Prepared[]>();
  for (const p of all) {
    if (!isDiscrete(p.scored.event)) continue;
    const cat = p.scored.event.recipientCategory;
    const list = discreteByCategory.get(cat) ?? [];
    list.push(p);
    discreteByCategory.set(cat, list);
  }
  return { all, byToken, byId, discreteByCategory };
}

export function findEvent(index: EventIndex, token: string, id: string): Prepared {
  if (!index.byToken.has(token.toLowerCase())) throw new UnlockLookupError("unknown_token");
  const p = index.byId.get(id);
  if (!p || p.scored.token.symbol.toLowerCase() !== token.toLowerCase())
    throw new UnlockLookupError("unknown_event");
  return p;
}

/** First index whose event day is ≥ day. */
export function lowerBound(events: readonly Prepared[], day: number): number {
  let lo = 0;
  let hi = events.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((events[mid] as Prepared).scored.event.day < day) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The response item for "today" = t. */
export function itemFor(p: Prepared, t: number): RiskItem {
  return {
    ...p.base,
    days_until: p.scored.event.day - t,
    market: { ...p.base.market, stale_days: t - p.priceDay },
  };
}
