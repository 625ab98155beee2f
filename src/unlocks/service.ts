import { dayOf, formatDay } from "../store/unlocks-dates.js";
import type { UnlockStore } from "../store/unlocks-snapshot.js";
import type { RecipientCategory } from "../store/unlocks-types.js";
import {
  computeReaction,
  type Reaction,
  type ReactionSubject,
  type ReactionSummary,
  selectNonOverlapping,
  summarizeReactions,
} from "./backtest.js";
import { expandTokenEvents, type UnlockEvent } from "./events.js";
import { MODEL_VERSION, type RiskLevel, riskLevel } from "./risk-model.js";
import { type EvidenceRecord, type ScoredEvent, scoreEvent } from "./scoring.js";

export type EventLookup = "ok" | "unknown_token" | "unknown_event";

export interface RecipientShare {
  recipient: string;
  category: RecipientCategory;
  kind: string;
  amount_tokens: number;
  source_type: string;
  timing_precision: string;
}

export interface RiskItem {
  token: string;
  unlock_event_id: string;
  risk_score: number;
  risk_level: RiskLevel;
  token_name: string;
  unlock_date: string;
  days_until: number;
  amount_tokens: number;
  amount_usd: number;
  pct_circulating: number | null;
  absorption_ratio: number | null;
  recipient_category: RecipientCategory;
  unlock_type: string;
  confidence: number;
  recipients: RecipientShare[];
  model_version: string;
  as_of: string;
  synthetic: boolean;
  evidence?: EvidenceRecord[];
}

export interface UpcomingResponse {
  days: number;
  minRisk: number;
  window_start: string;
  window_end: string;
  count: number;
  model_version: string;
  as_of: string;
  synthetic: boolean;
  unlocks: RiskItem[];
}

export interface NextUnlock {
  unlock_event_id: string;
  unlock_date: string;
  days_until: number;
  in_window: boolean;
  amount_tokens: number;
  amount_usd: number;
  risk_score: number;
  risk_level: RiskLevel;
}

export interface CategoryTotal {
  category: RecipientCategory;
  event_count: number;
  amount_tokens: number;
  amount_usd: number;
}

export interface RiskSummary {
  token: string;
  token_name: string;
  windowDays: number;
  window_start: string;
  window_end: string;
  window_covers: string;
  eventCount: number;
  maxRiskScore?: number;
  riskLevel?: RiskLevel;
  mean_risk_score: number | null;
  next_unlock: NextUnlock | null;
  tokens_unlocking: number;
  usd_unlocking: number;
  pct_circulating_unlocking: number | null;
  circulating_supply: number;
  by_category: CategoryTotal[];
  top_events: RiskItem[];
  model_version: string;
  as_of: string;
  synthetic: boolean;
}

export type BacktestBasis = "event" | "token_history" | "category_history" | "none";

export interface BacktestResult {
  token: string;
  unlock_event_id: string;
  windowDays: number;
  basis: BacktestBasis;
  basis_description: string;
  benchmark: string;
  event: {
    unlock_date: string;
    recipient_category: RecipientCategory;
    unlock_type: string;
    is_past: boolean;
  };
  candidates: number;
  excluded_overlapping: number;
  excluded_truncated: number;
  reactions: Reaction[];
  summary: ReactionSummary;
  method: string;
  data_through: string;
  model_version: string;
  synthetic: boolean;
}

export interface UnlockService {
  lookupEvent(token: string, unlockEventId: string): EventLookup;
  hasToken(token: string): boolean;
  upcoming(days: number, minRisk: number): UpcomingResponse;
  score(token: string, unlockEventId: string, includeEvidence: boolean): RiskItem;
  summary(token: string, lookbackDays: number): RiskSummary;
  backtest(token: string, unlockEventId: string, windowDays: number): BacktestResult;
  /** All scored events, sorted by day (for calibration and diagnostics). */
  events(): readonly ScoredEvent[];
}

export class UnlockLookupError extends Error {
  constructor(readonly reason: Exclude<EventLookup, "ok">) {
    super(reason === "unknown_token" ? "unknown token" : "unknown unlock event for this token");
    this.name = "UnlockLookupError";
  }
}

/** Most reactions one backtest returns; the most significant are kept. */
export const MAX_REACTIONS = 60;
const TOP_EVENTS = 5;

interface Prepared {
  readonly scored: ScoredEvent;
  /** Risk item without days_until/evidence, built once at start-up. */
  readonly base: Omit<RiskItem, "days_until" | "evidence">;
  readonly subject: ReactionSubject;
}

const round = (x: number, d: number): number => Math.round(x * 10 ** d) / 10 ** d;

function prepare(store: UnlockStore, s: ScoredEvent): Prepared {
  const e = s.event;
  const base: Omit<RiskItem, "days_until" | "evidence"> = {
    token: s.token.symbol,
    unlock_event_id: e.id,
    risk_score: s.risk.score,
    risk_level: s.risk.level,
    token_name: s.token.name,
    unlock_date: e.date,
    amount_tokens: round(e.amount, 4),
    amount_usd: round(s.amountUsd, 2),
    pct_circulating: s.pctCirculating === null ? null : round(s.pctCirculating, 4),
    absorption_ratio: s.absorptionRatio === null ? null : round(s.absorptionRatio, 4),
    recipient_category: e.recipientCategory,
    unlock_type: e.unlockType,
    confidence: round(s.confidence, 4),
    recipients: e.components.map((c) => ({
      recipient: c.recipient,
      category: c.category,
      kind: c.kind,
      amount_tokens: round(c.amount, 4),
      source_type: c.sourceType,
      timing_precision: c.timingPrecision,
    })),
    model_version: MODEL_VERSION,
    as_of: store.snapshot.as_of,
    synthetic: s.context.synthetic,
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
  return { scored: s, base, subject };
}

function lowerBound(events: readonly Prepared[], day: number): number {
  let lo = 0;
  let hi = events.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((events[mid] as Prepared).scored.event.day < day) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

const isDiscrete = (e: UnlockEvent): boolean => e.unlockType !== "linear";

/**
 * Builds the unlock service. Every event is expanded and scored once here, so requests only slice
 * precomputed arrays; `clock` decides "today" (real time unless a test fixes it).
 */
export function createUnlockService(store: UnlockStore, clock: () => Date = () => new Date()): UnlockService {
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
  const benchmarkSynthetic = store.benchmark.series.synthetic;
  const anySyntheticItem = all.some((p) => p.base.synthetic);
  const dataThroughDay = store.asOfDay;

  const today = (): number => dayOf(clock());
  const withDays = (p: Prepared, t: number): RiskItem => ({ ...p.base, days_until: p.scored.event.day - t });
  // Items depend on "today" only through days_until: build each at most once per day and reuse it,
  // so the upcoming list is a slice over precomputed objects.
  let cacheDay = Number.NaN;
  let dayItems: (RiskItem | undefined)[] = [];
  const itemAt = (i: number, t: number): RiskItem => {
    if (t !== cacheDay) {
      cacheDay = t;
      dayItems = new Array(all.length);
    }
    let item = dayItems[i];
    if (item === undefined) {
      item = withDays(all[i] as Prepared, t);
      dayItems[i] = item;
    }
    return item;
  };

  function find(token: string, id: string): Prepared {
    const list = byToken.get(token.toLowerCase());
    if (!list) throw new UnlockLookupError("unknown_token");
    const p = byId.get(id);
    if (!p || p.scored.token.symbol.toLowerCase() !== token.toLowerCase())
      throw new UnlockLookupError("unknown_event");
    return p;
  }

  function lookupEvent(token: string, id: string): EventLookup {
    try {
      find(token, id);
      return "ok";
    } catch (err) {
      if (err instanceof UnlockLookupError) return err.reason;
      throw err;
    }
  }

  function upcoming(days: number, minRisk: number): UpcomingResponse {
    const t = today();
    const unlocks: RiskItem[] = [];
    let synthetic = false;
    for (let i = lowerBound(all, t); i < all.length; i++) {
      const p = all[i] as Prepared;
      if (p.scored.event.day > t + days) break;
      if (p.base.risk_score < minRisk) continue;
      unlocks.push(itemAt(i, t));
      synthetic ||= p.base.synthetic;
    }
    return {
      days,
      minRisk,
      window_start: formatDay(t),
      window_end: formatDay(t + days),
      count: unlocks.length,
      model_version: MODEL_VERSION,
      as_of: store.snapshot.as_of,
      synthetic: synthetic || (unlocks.length === 0 && anySyntheticItem),
      unlocks,
    };
  }

  function score(token: string, id: string, includeEvidence: boolean): RiskItem {
    const p = find(token, id);
    const item = withDays(p, today());
    if (includeEvidence)
      item.evidence = p.scored.evidence.map((e) => ({ ...e, assumptions: [...e.assumptions] }));
    return item;
  }

  function summary(token: string, lookbackDays: number): RiskSummary {
    const list = byToken.get(token.toLowerCase());
    const rec = store.tokenBySymbol.get(token.toLowerCase());
    if (!list || !rec) throw new UnlockLookupError("unknown_token");
    const t = today();
    const end = t + lookbackDays;
    const inWindow = list.filter((p) => p.scored.event.day >= t && p.scored.event.day <= end);
    const next = list.find((p) => p.scored.event.day >= t) ?? null;
    const tokensUnlocking = inWindow.reduce((s, p) => s + p.scored.event.amount, 0);
    const usdUnlocking = inWindow.reduce((s, p) => s + p.scored.amountUsd, 0);
    const circ = rec.supply.circulating;
    const byCat = new Map<RecipientCategory, CategoryTotal>();
    for (const p of inWindow) {
      const c = p.scored.event.recipientCategory;
      const cur = byCat.get(c) ?? { category: c, event_count: 0, amount_tokens: 0, amount_usd: 0 };
      cur.event_count++;
      cur.amount_tokens += p.scored.event.amount;
      cur.amount_usd += p.scored.amountUsd;
      byCat.set(c, cur);
    }
    const maxScore = inWindow.reduce((m, p) => Math.max(m, p.base.risk_score), Number.NEGATIVE_INFINITY);
    const top = [...inWindow]
      .sort((a, b) => b.base.risk_score - a.base.risk_score || a.scored.event.day - b.scored.event.day)
      .slice(0, TOP_EVENTS)
      .map((p) => withDays(p, t));
    const out: RiskSummary = {
      token: rec.symbol,
      token_name: rec.name,
      windowDays: lookbackDays,
      window_start: formatDay(t),
      window_end: formatDay(end),
      window_covers:
        "scheduled unlocks from today through today + windowDays (inclusive, UTC), scored with the snapshot's market context",
      eventCount: inWindow.length,
      mean_risk_score:
        inWindow.length === 0
          ? null
          : round(inWindow.reduce((s, p) => s + p.base.risk_score, 0) / inWindow.length, 2),
      next_unlock:
        next === null
          ? null
          : {
              unlock_event_id: next.base.unlock_event_id,
              unlock_date: next.base.unlock_date,
              days_until: next.scored.event.day - t,
              in_window: next.scored.event.day <= end,
              amount_tokens: next.base.amount_tokens,
              amount_usd: next.base.amount_usd,
              risk_score: next.base.risk_score,
              risk_level: next.base.risk_level,
            },
      tokens_unlocking: round(tokensUnlocking, 4),
      usd_unlocking: round(usdUnlocking, 2),
      pct_circulating_unlocking: circ > 0 ? round((tokensUnlocking / circ) * 100, 4) : null,
      circulating_supply: circ,
      by_category: [...byCat.values()]
        .map((c) => ({ ...c, amount_tokens: round(c.amount_tokens, 4), amount_usd: round(c.amount_usd, 2) }))
        .sort((a, b) => b.amount_usd - a.amount_usd),
      top_events: top,
      model_version: MODEL_VERSION,
      as_of: store.snapshot.as_of,
      synthetic: rec.market.synthetic || rec.supply.synthetic || inWindow.some((p) => p.base.synthetic),
    };
    if (inWindow.length > 0) {
      out.maxRiskScore = maxScore;
      out.riskLevel = riskLevel(maxScore);
    }
    return out;
  }

  function reactionsFor(candidates: readonly Prepared[], w: number) {
    const computable: { p: Prepared; r: Reaction }[] = [];
    for (const p of candidates) {
      const series = store.pricesBySymbol.get(p.scored.token.symbol.toLowerCase());
      if (!series) continue;
      const r = computeReaction(p.subject, series, store.benchmark, w);
      if (r) computable.push({ p, r });
    }
    const byId = new Map(computable.map((x) => [x.p.subject.id, x.r]));
    const { kept, dropped } = selectNonOverlapping(
      computable.map((x) => x.p.subject),
      w,
    );
    const ranked = [...kept].sort((a, b) => b.riskScore - a.riskScore || a.day - b.day);
    const chosen = new Set(ranked.slice(0, MAX_REACTIONS).map((s) => s.id));
    const reactions = kept.filter((s) => chosen.has(s.id)).map((s) => byId.get(s.id) as Reaction);
    return {
      candidates: computable.length,
      dropped,
      truncated: kept.length - reactions.length,
      reactions,
    };
  }

  function backtest(token: string, id: string, w: number): BacktestResult {
    const target = find(token, id);
    const e = target.scored.event;
    const isPast = e.day <= dataThroughDay;
    const tokenList = byToken.get(token.toLowerCase()) ?? [];
    const attempts: { basis: BacktestBasis; description: string; candidates: () => Prepared[] }[] = [
      {
        basis: "event",
        description: "the event itself: it is past and price history covers its window",
        candidates: () => (isDiscrete(e) && e.day + w <= dataThroughDay ? [target] : []),
      },
      {
        basis: "token_history",
        description: `earlier discrete unlocks of ${target.scored.token.symbol}`,
        candidates: () => tokenList.filter((p) => isDiscrete(p.scored.event) && p.scored.event.day < e.day),
      },
      {
        basis: "category_history",
        description: `past discrete unlocks of recipient category '${e.recipientCategory}' across all tokens`,
        candidates: () =>
          (discreteByCategory.get(e.recipientCategory) ?? []).filter((p) => p.scored.event.day < e.day),
      },
    ];
    let chosen: { basis: BacktestBasis; description: string; result: ReturnType<typeof reactionsFor> } = {
      basis: "none",
      description: "no past unlock with enough price history: nothing to measure",
      result: { candidates: 0, dropped: 0, truncated: 0, reactions: [] },
    };
    for (const a of attempts) {
      const result = reactionsFor(a.candidates(), w);
      if (result.reactions.length > 0) {
        chosen = { basis: a.basis, description: a.description, result };
        break;
      }
    }
    const reactions = chosen.result.reactions;
    return {
      token: target.scored.token.symbol,
      unlock_event_id: id,
      windowDays: w,
      basis: chosen.basis,
      basis_description: chosen.description,
      benchmark: store.benchmark.symbol,
      event: {
        unlock_date: e.date,
        recipient_category: e.recipientCategory,
        unlock_type: e.unlockType,
        is_past: isPast,
      },
      candidates: chosen.result.candidates,
      excluded_overlapping: chosen.result.dropped,
      excluded_truncated: chosen.result.truncated,
      reactions,
      summary: summarizeReactions(reactions),
      method:
        "daily 00:00 UTC prices; pre = day−w→day 0, post = day 0→day+w; abnormal = token return − benchmark return over the same days; unlocks of one token closer than w days are counted once (the higher-risk one is kept)",
      data_through: formatDay(dataThroughDay),
      model_version: MODEL_VERSION,
      synthetic: reactions.some((r) => r.synthetic) || (reactions.length > 0 && benchmarkSynthetic),
    };
  }

  return {
    lookupEvent,
    hasToken: (token) => byToken.has(token.toLowerCase()),
    upcoming,
    score,
    summary,
    backtest,
    events: () => all.map((p) => p.scored),
  };
}
