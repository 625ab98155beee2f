import { formatDay, parseDay } from "./data/dates.js";
import type { UnlockStore } from "./data/snapshot.js";
import { RECIPIENT_CATEGORIES, type RecipientCategory } from "./data/types.js";
import {
  categoryOf,
  type EventIndex,
  itemFor,
  lowerBound,
  preparedAt,
  round,
  tokenOf,
  UNLOCK_TYPES,
} from "./event-index.js";
import { latestMarketProvenance } from "./market-context.js";
import { MODEL_VERSION, riskLevel, SCORE_KIND } from "./risk-model.js";
import type {
  CategoryTotal,
  RiskItem,
  RiskSummary,
  UpcomingFilter,
  UpcomingResponse,
  UpcomingSort,
} from "./service-types.js";
import { circulatingToday, coverageOf, marketAgeDays, scoreKindWithAge } from "./supply.js";

/** A linear month event starts at most this many days before any day it streams on. */
const MAX_MONTH_DAYS = 31;
const TOP_EVENTS = 5;
const LINEAR = UNLOCK_TYPES.indexOf("linear");

interface InWindow {
  readonly row: number;
  readonly tokens: number;
  readonly usd: number;
}

/**
 * Tokens a row releases on days [from, to): all of a discrete release on its day, and for a linear month exactly
 * each stream's daily rate times the days it shares with the window (amountInWindow, on the index's columns).
 */
export function amountInWindowAt(index: EventIndex, row: number, from: number, to: number): number {
  const first = index.streamStart[row] as number;
  const last = index.streamStart[row + 1] as number;
  if (index.type[row] !== LINEAR || first === last) {
    const day = index.day[row] as number;
    return day >= from && day < to ? (index.amount[row] as number) : 0;
  }
  let sum = 0;
  for (let s = first; s < last; s++)
    sum +=
      (index.streamPerDay[s] as number) *
      Math.max(0, Math.min(index.streamTo[s] as number, to) - Math.max(index.streamFrom[s] as number, from));
  return sum;
}

/**
 * Events releasing anything on days [t, t + days] (inclusive, UTC), with the tokens each releases
 * inside the window: discrete releases whole, linear streams prorated by day (so the current month's
 * remaining stream is counted and a window never takes a whole month for a few days).
 */
export function eventsInWindow(
  index: EventIndex,
  rows: ArrayLike<number>,
  t: number,
  days: number,
): InWindow[] {
  const out: InWindow[] = [];
  const end = t + days + 1;
  for (let k = lowerBound(index, rows, t - MAX_MONTH_DAYS); k < rows.length; k++) {
    const row = rows[k] as number;
    if ((index.day[row] as number) >= end) break;
    const tokens = amountInWindowAt(index, row, t, end);
    if (!(tokens > 0)) continue;
    const amount = index.amount[row] as number;
    const share = amount > 0 ? tokens / amount : 0;
    out.push({ row, tokens, usd: (index.amountUsd[row] as number) * share });
  }
  return out;
}

/**
 * An event's item in a window. A linear month that began before today is still streaming: it starts today
 * (days_until 0) and its window amounts are the share of its remaining days; release_start..release_end are the days
 * its tokens release inside the window (the stream's own start and end stay in `stream`).
 */
function windowItem(store: UnlockStore, index: EventIndex, w: InWindow, t: number, end: number): RiskItem {
  const p = preparedAt(store, index, w.row);
  const item = itemFor(p, t);
  const e = p.scored.event;
  return {
    ...item,
    days_until: Math.max(0, item.days_until),
    window_amount_tokens: round(w.tokens, 4),
    window_amount_usd: round(w.usd, 2),
    release_start: formatDay(Math.max(e.day, t)),
    release_end: formatDay(Math.min(e.endDay, end - 1)),
  };
}

/** The matched events of a window, in the order asked for; ties keep the index's (day, then score). */
function sortWindow(index: EventIndex, list: InWindow[], t: number, sort: UpcomingSort): InWindow[] {
  const start = (w: InWindow) => Math.max(index.day[w.row] as number, t);
  const pct = (w: InWindow) => windowPct(index, w) ?? Number.NEGATIVE_INFINITY;
  const risk = (w: InWindow) => index.riskScore[w.row] as number;
  const keyed = list.map((w, i) => ({ w, i }));
  const by: Record<UpcomingSort, (a: InWindow, b: InWindow) => number> = {
    date: (a, b) => start(a) - start(b) || risk(b) - risk(a),
    usd: (a, b) => b.usd - a.usd,
    pct_circulating: (a, b) => pct(b) - pct(a),
    risk: (a, b) => risk(b) - risk(a),
  };
  return keyed.sort((a, b) => by[sort](a.w, b.w) || a.i - b.i).map((k) => k.w);
}

/** The release's share of circulating supply, from the event's own percentage and the tokens it releases here. */
function windowPct(index: EventIndex, w: InWindow): number | null {
  const p = index.pctCirculating[w.row] as number;
  const amount = index.amount[w.row] as number;
  return Number.isNaN(p) || !(amount > 0) ? null : (p * w.tokens) / amount;
}

export function upcomingIn(
  store: UnlockStore,
  index: EventIndex,
  t: number,
  days: number,
  minRisk: number,
  filter: UpcomingFilter = {},
): UpcomingResponse {
  const end = t + days + 1;
  const tokens =
    filter.tokens && filter.tokens.length > 0
      ? new Set(filter.tokens.map((s) => index.tokenIndex.get(s.toLowerCase())))
      : null;
  const category = filter.category === undefined ? -1 : RECIPIENT_CATEGORIES.indexOf(filter.category);
  const type = filter.type === undefined ? -1 : UNLOCK_TYPES.indexOf(filter.type);
  const matched: InWindow[] = [];
  const byToken: Record<string, number> = {};
  let totalUsd = 0;
  for (const w of eventsInWindow(index, index.order, t, days)) {
    if ((index.riskScore[w.row] as number) < minRisk) continue;
    if (tokens && !tokens.has(index.token[w.row] as number)) continue;
    if (category >= 0 && index.category[w.row] !== category) continue;
    if (type >= 0 && index.type[w.row] !== type) continue;
    if (filter.minUsd !== undefined && w.usd < filter.minUsd) continue;
    if (filter.minPctCirculating !== undefined && !((windowPct(index, w) ?? -1) >= filter.minPctCirculating))
      continue;
    matched.push(w);
    totalUsd += w.usd;
    const symbol = tokenOf(store, index, w.row).symbol;
    byToken[symbol] = (byToken[symbol] ?? 0) + w.tokens;
  }
  for (const k of Object.keys(byToken)) byToken[k] = round(byToken[k] as number, 4);
  const sorted = sortWindow(index, matched, t, filter.sort ?? "date");
  const offset = Math.min(filter.offset ?? 0, sorted.length);
  const stop = filter.limit === undefined ? sorted.length : Math.min(sorted.length, offset + filter.limit);
  const unlocks = sorted.slice(offset, stop).map((w) => windowItem(store, index, w, t, end));
  return {
    days,
    minRisk,
    window_start: formatDay(t),
    window_end: formatDay(t + days),
    count: unlocks.length,
    total: sorted.length,
    total_amount_usd: round(totalUsd, 2),
    next_offset: stop < sorted.length ? stop : null,
    window_amount_tokens_by_token: byToken,
    model_version: MODEL_VERSION,
    score_kind: SCORE_KIND,
    as_of: store.snapshot.as_of,
    synthetic: matched.some((w) => index.synthetic[w.row] === 1),
    unlocks,
  };
}

export function summaryIn(
  store: UnlockStore,
  index: EventIndex,
  rows: Uint32Array,
  symbol: string,
  t: number,
  lookbackDays: number,
): RiskSummary {
  const rec = store.tokenBySymbol.get(symbol.toLowerCase());
  if (!rec) throw new Error(`no token ${symbol}`);
  const end = t + lookbackDays;
  const inWindow = eventsInWindow(index, rows, t, lookbackDays);
  const nextRow = rows.find((row) => (index.day[row] as number) >= t);
  const next = nextRow === undefined ? null : preparedAt(store, index, nextRow);
  const tokensUnlocking = inWindow.reduce((s, w) => s + w.tokens, 0);
  const usdUnlocking = inWindow.reduce((s, w) => s + w.usd, 0);
  // Circulating supply today: every release up to yesterday's end, anchored on the latest report before today.
  const reports = store.reports.get(rec.symbol.toLowerCase());
  const pit = circulatingToday(rec, reports, t);
  const latest = latestMarketProvenance(store, rec);
  const marketAge = marketAgeDays(parseDay(rec.market.as_of), t, t);
  const circ = pit.value ?? 0;
  const circMethod = pit.method;
  const byCat = new Map<RecipientCategory, CategoryTotal>();
  for (const w of inWindow) {
    const c = categoryOf(index, w.row);
    const cur = byCat.get(c) ?? { category: c, event_count: 0, amount_tokens: 0, amount_usd: 0 };
    cur.event_count++;
    cur.amount_tokens += w.tokens;
    cur.amount_usd += w.usd;
    byCat.set(c, cur);
  }
  const score = (w: InWindow): number => index.riskScore[w.row] as number;
  const maxScore = inWindow.reduce((m, w) => Math.max(m, score(w)), Number.NEGATIVE_INFINITY);
  const top = [...inWindow]
    .sort((a, b) => score(b) - score(a) || (index.day[a.row] as number) - (index.day[b.row] as number))
    .slice(0, TOP_EVENTS)
    .map((w) => windowItem(store, index, w, t, end + 1));
  const out: RiskSummary = {
    token: rec.symbol,
    token_name: rec.name,
    windowDays: lookbackDays,
    window_start: formatDay(t),
    window_end: formatDay(end),
    window_covers:
      "tokens scheduled to unlock from today through today + windowDays (inclusive, UTC): discrete releases on those days and each linear stream's daily share of those days",
    eventCount: inWindow.length,
    mean_risk_score:
      inWindow.length === 0 ? null : round(inWindow.reduce((s, w) => s + score(w), 0) / inWindow.length, 2),
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
    pct_max_supply_unlocking:
      rec.max_supply !== null && rec.max_supply > 0
        ? round((tokensUnlocking / rec.max_supply) * 100, 4)
        : null,
    pct_circulating_unlocking: circ > 0 ? round((tokensUnlocking / circ) * 100, 4) : null,
    circulating_supply: circ > 0 ? round(circ, 2) : null,
    circulating_method: circMethod,
    supply_coverage: coverageOf(rec, pit, reports),
    market: {
      price_usd: rec.market.price_usd,
      price_as_of: rec.market.as_of,
      adv_30d_usd: rec.market.adv_30d_usd === null ? null : round(rec.market.adv_30d_usd, 2),
      adv_as_of: rec.market.as_of,
      depth_2pct_usd: rec.market.depth_2pct_usd,
      venue: rec.market.venue ?? null,
      instrument: rec.market.instrument ?? null,
      source_url: latest.source_url,
      segments: latest.segments,
      stale_days: t - parseDay(rec.market.as_of),
      circulating_supply_estimate: circ > 0 ? round(circ, 2) : null,
      circulating_method: circMethod,
    },
    by_category: [...byCat.values()]
      .map((c) => ({ ...c, amount_tokens: round(c.amount_tokens, 4), amount_usd: round(c.amount_usd, 2) }))
      .sort((a, b) => b.amount_usd - a.amount_usd),
    top_events: top,
    model_version: MODEL_VERSION,
    score_kind: scoreKindWithAge(SCORE_KIND, marketAge),
    as_of: store.snapshot.as_of,
    synthetic: rec.market.synthetic || inWindow.some((w) => index.synthetic[w.row] === 1),
  };
  if (inWindow.length > 0) {
    out.maxRiskScore = maxScore;
    out.riskLevel = riskLevel(maxScore);
  }
  return out;
}
