import type { Reaction } from "./backtest.js";
import type { Derivatives } from "../sources/derivatives/derivatives.js";
import { SCORE_KIND } from "./risk-model.js";
import type { BacktestResult, RiskItem, RiskSummary, UpcomingResponse } from "./service-types.js";
import { STALE_AFTER_DAYS } from "./supply.js";

/**
 * What the paid unlock answers look like on the wire. Compact (the default) keeps per item its figures, ids and short
 * codes; every sentence that would repeat from item to item is said once per answer, in `legend`. `view=full` adds
 * each item's detail (market figures with their sources, supply coverage, recipients, confidences) to the very same
 * compact fields: the full item is the compact item plus more keys, never other figures.
 */
export type View = "compact" | "full";

/** The short codes an item (or a token summary) may carry, each explained once in the answer's legend. */
export const CODES = {
  st: `price and volume are more than ${STALE_AFTER_DAYS} days older than the event (or than today, for an event still ahead): liquidity counts for less (view=full: market.market_age_days, market.liquidity_confidence = 0.8 × 0.5^(age / 30))`,
  syn: "valued with synthetic (generated) market figures, not observed ones",
  cr: "circulating supply = the latest reported figure before the day plus what the complete schedule releases after it (view=full: supply_coverage.circulating_report)",
  cs: "no reported circulating figure before the day: circulating supply = what the complete schedule has unlocked by then; burns and unscheduled transfers are not counted",
  cu: "no circulating supply figure: pct_circulating is null",
  lb: "some allocations could not be evaluated: circulating supply is a lower bound, so pct_circulating is an upper bound (view=full: supply_coverage.unevaluated_sections)",
  sg: "the schedule covers less than 99 % of max supply (view=full: supply_coverage.schedule_coverage_note)",
  rg: "the latest reported circulating figure and the schedule's rebuilt one differ by more than 25 % (view=full: supply_coverage.reported_vs_rebuilt)",
  em: "most modelled supply is issuance (block rewards, staking, gauges); it counts toward circulating supply but is never scored as a vesting unlock",
  on: "a linear stream already under way: amounts are what it releases from date to date_end, not its whole month (view=full: stream.month_amount_tokens)",
} as const;
export type Code = keyof typeof CODES;

const FIELD_NOTES = {
  risk_score: `0–100, a ${SCORE_KIND}`,
  size_band:
    "risk_score band (low < 25 ≤ medium < 50 ≤ high < 75 ≤ critical): the size of the supply pressure, not a predicted price move",
  date: "first day the tokens release in the window; a stream releases daily from date through date_end (view=full: event_date, stream)",
  amount_tokens:
    "tokens released from date through date_end; amount_usd at the last observed price; pct_circulating of circulating supply before the event",
  view: "view=full adds per item: token_name, size_band, days_until, pct_max_supply, absorption_ratio, the whole event's amounts, confidences, market, supply_coverage, recipients",
} as const;

export interface Legend {
  fields: Record<string, string>;
  codes: Partial<Record<Code, string>>;
}

function legendOf(fields: readonly (keyof typeof FIELD_NOTES)[], codes: Iterable<Code>, extra = {}): Legend {
  const used = [...new Set(codes)].sort();
  return {
    fields: { ...Object.fromEntries(fields.map((f) => [f, FIELD_NOTES[f]])), ...extra },
    codes: Object.fromEntries(used.map((c) => [c, CODES[c]])),
  };
}

type Coverage = RiskItem["supply_coverage"];

/** The codes of a token's supply coverage (how circulating was counted and how complete the schedule is). */
export function coverageCodes(c: Coverage, circulatingKnown: boolean): Code[] {
  const out: Code[] = [];
  if (!circulatingKnown || c.circulating_rule === "unknown") out.push("cu");
  else out.push(c.circulating_rule === "reported+schedule" ? "cr" : "cs");
  if (c.circulating_is_lower_bound === true) out.push("lb");
  if (c.schedule_coverage_note !== null) out.push("sg");
  if (c.reported_vs_rebuilt !== null) out.push("rg");
  if (c.supply_model === "emission") out.push("em");
  return out;
}

export function itemCodes(item: RiskItem): Code[] {
  const out = coverageCodes(item.supply_coverage, item.pct_circulating !== null);
  if ((item.market.market_age_days ?? 0) > STALE_AFTER_DAYS) out.push("st");
  if (item.synthetic) out.push("syn");
  if (item.unlock_type === "linear" && item.stream && item.release_start !== item.stream.stream_start)
    out.push("on");
  return out;
}

const round = (x: number, d: number): number => Math.round(x * 10 ** d) / 10 ** d;

/** The wire item: compact fields first, then (full view) the detail. */
export interface WireItem {
  unlock_event_id: string;
  token: string;
  date: string;
  date_end?: string;
  type: string;
  category: string;
  amount_tokens: number;
  amount_usd: number;
  pct_circulating: number | null;
  risk_score: number;
  codes: Code[];
  [detail: string]: unknown;
}

/** The fields a compact item carries (a full item carries them with the same values, then its detail). */
export const COMPACT_ITEM_FIELDS = [
  "unlock_event_id",
  "token",
  "date",
  "date_end",
  "type",
  "category",
  "amount_tokens",
  "amount_usd",
  "pct_circulating",
  "risk_score",
  "codes",
] as const;

export function wireItem(
  item: RiskItem,
  view: View,
  derivatives?: Omit<Derivatives, "token"> | null,
): WireItem {
  const tokens = item.window_amount_tokens ?? item.amount_tokens;
  const share = item.amount_tokens > 0 ? tokens / item.amount_tokens : 0;
  const linear = item.unlock_type === "linear";
  const out: WireItem = {
    unlock_event_id: item.unlock_event_id,
    token: item.token,
    date: item.release_start ?? item.unlock_date,
    ...(linear ? { date_end: item.release_end ?? item.stream?.stream_end ?? item.unlock_date } : {}),
    type: item.unlock_type,
    category: item.recipient_category,
    amount_tokens: tokens,
    amount_usd: item.window_amount_usd ?? item.amount_usd,
    pct_circulating: item.pct_circulating === null ? null : round(item.pct_circulating * share, 4),
    risk_score: item.risk_score,
    codes: itemCodes(item),
  };
  if (view === "full")
    Object.assign(out, {
      token_name: item.token_name,
      size_band: item.risk_level,
      days_until: item.days_until,
      event_date: item.unlock_date,
      event_amount_tokens: item.amount_tokens,
      event_amount_usd: item.amount_usd,
      event_pct_circulating: item.pct_circulating,
      pct_max_supply: item.pct_max_supply === null ? null : round(item.pct_max_supply * share, 4),
      absorption_ratio: item.absorption_ratio,
      schedule_confidence: item.schedule_confidence ?? item.confidence,
      input_confidence: item.confidence,
      ...(item.stream ? { stream: item.stream } : {}),
      market: item.market,
      supply_coverage: item.supply_coverage,
      recipients: item.recipients,
    });
  // Evidence is one event's own detail, asked for with includeEvidence: shown in either view.
  if (item.evidence) out.evidence = item.evidence;
  if (derivatives !== undefined) out.derivatives = derivatives;
  return out;
}

const ITEM_FIELDS = ["risk_score", "size_band", "date", "amount_tokens", "view"] as const;

export interface UpcomingWire {
  days: number;
  minRisk: number;
  window_start: string;
  window_end: string;
  count: number;
  total: number;
  total_amount_usd: number;
  next_cursor: string | null;
  model_version: string;
  as_of: string;
  synthetic: boolean;
  legend: Legend;
  unlocks: WireItem[];
  window_amount_tokens_by_token?: Record<string, number>;
}

export function upcomingView(r: UpcomingResponse, view: View, nextCursor: string | null): UpcomingWire {
  const unlocks = r.unlocks.map((u) => wireItem(u, view));
  return {
    days: r.days,
    minRisk: r.minRisk,
    window_start: r.window_start,
    window_end: r.window_end,
    count: r.count,
    total: r.total,
    total_amount_usd: r.total_amount_usd,
    next_cursor: nextCursor,
    model_version: r.model_version,
    as_of: r.as_of,
    synthetic: r.synthetic,
    legend: legendOf(
      ITEM_FIELDS,
      unlocks.flatMap((u) => u.codes),
    ),
    unlocks,
    ...(view === "full" ? { window_amount_tokens_by_token: r.window_amount_tokens_by_token } : {}),
  };
}

/** One event's answer: its item with the legend beside it. */
export function riskView(
  item: RiskItem,
  view: View,
  derivatives?: Omit<Derivatives, "token"> | null,
): WireItem & { legend: Legend; model_version: string; as_of: string; synthetic: boolean } {
  const wire = wireItem(item, view, derivatives);
  return {
    ...wire,
    model_version: item.model_version,
    as_of: item.as_of,
    synthetic: item.synthetic,
    legend: legendOf(ITEM_FIELDS, wire.codes),
  };
}

export function summaryView(s: RiskSummary, view: View): Record<string, unknown> {
  const top = s.top_events.map((e) => wireItem(e, view));
  const codes = coverageCodes(s.supply_coverage, s.circulating_supply !== null);
  if (s.market.stale_days > STALE_AFTER_DAYS) codes.push("st");
  if (s.synthetic) codes.push("syn");
  const next = s.next_unlock;
  const out: Record<string, unknown> = {
    token: s.token,
    windowDays: s.windowDays,
    window_start: s.window_start,
    window_end: s.window_end,
    eventCount: s.eventCount,
    ...(s.maxRiskScore === undefined ? {} : { maxRiskScore: s.maxRiskScore, sizeBand: s.riskLevel }),
    mean_risk_score: s.mean_risk_score,
    next_unlock:
      next === null
        ? null
        : {
            unlock_event_id: next.unlock_event_id,
            date: next.unlock_date,
            days_until: next.days_until,
            in_window: next.in_window,
            amount_tokens: next.amount_tokens,
            amount_usd: next.amount_usd,
            risk_score: next.risk_score,
            size_band: next.risk_level,
          },
    tokens_unlocking: s.tokens_unlocking,
    usd_unlocking: s.usd_unlocking,
    pct_circulating_unlocking: s.pct_circulating_unlocking,
    pct_max_supply_unlocking: s.pct_max_supply_unlocking,
    circulating_supply: s.circulating_supply,
    price_usd: s.market.price_usd,
    price_as_of: s.market.price_as_of,
    codes,
    by_category: s.by_category,
    top_events: top,
    model_version: s.model_version,
    as_of: s.as_of,
    synthetic: s.synthetic,
    legend: legendOf(ITEM_FIELDS, [...codes, ...top.flatMap((e) => e.codes)], {
      window: s.window_covers,
      tokens_unlocking:
        "tokens_unlocking, usd_unlocking and the percentages add every event's release inside the window (streams by day); pct_circulating_unlocking is against today's circulating supply",
    }),
  };
  if (view === "full")
    Object.assign(out, {
      token_name: s.token_name,
      circulating_method: s.circulating_method,
      supply_coverage: s.supply_coverage,
      market: s.market,
    });
  return out;
}

function reactionView(r: Reaction, view: View): Record<string, unknown> {
  const out: Record<string, unknown> = {
    unlock_event_id: r.unlock_event_id,
    token: r.token,
    date: r.unlock_date,
    category: r.recipient_category,
    type: r.unlock_type,
    risk_score: r.risk_score,
    pct_circulating: r.pct_circulating,
    pre_return_pct: r.pre_return_pct,
    post_return_pct: r.post_return_pct,
    benchmark_pre_return_pct: r.benchmark_pre_return_pct,
    benchmark_post_return_pct: r.benchmark_post_return_pct,
    ...(r.beta === undefined ? {} : { beta: r.beta }),
    pre_abnormal_return_pct: r.pre_abnormal_return_pct,
    abnormal_return_pct: r.abnormal_return_pct,
    max_drawdown_pct: r.max_drawdown_pct,
    volume_change_pct: r.volume_change_pct,
  };
  if (view === "full")
    Object.assign(out, { window_days: r.window_days, benchmark: r.benchmark, synthetic: r.synthetic });
  return out;
}

export function backtestView(b: BacktestResult, view: View): Record<string, unknown> {
  const out: Record<string, unknown> = {
    token: b.token,
    unlock_event_id: b.unlock_event_id,
    windowDays: b.windowDays,
    basis: b.basis,
    pooled_across_tokens: b.pooled_across_tokens,
    benchmark: b.benchmark,
    event: {
      date: b.event.unlock_date,
      category: b.event.recipient_category,
      type: b.event.unlock_type,
      is_past: b.event.is_past,
    },
    candidates: b.candidates,
    excluded_overlapping: b.excluded_overlapping,
    excluded_truncated: b.excluded_truncated,
    summary: b.summary,
    data_through: b.data_through,
    reactions: b.reactions.map((r) => reactionView(r, view)),
    model_version: b.model_version,
    synthetic: b.synthetic,
    legend: {
      fields: {
        basis: b.basis_description,
        method: b.method,
        reactions: `each past unlock's returns over windowDays days before (pre_) and after it, the benchmark's (${b.benchmark}) over the same days, and the abnormal return against it; view=full adds the venue and instrument of every price series (price_sources)`,
      },
      codes: {},
    },
  };
  if (view === "full")
    Object.assign(out, {
      basis_description: b.basis_description,
      method: b.method,
      price_sources: b.price_sources,
    });
  return out;
}
