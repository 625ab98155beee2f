import type { ReactionSubject } from "./backtest.js";
import { formatDay, parseDay } from "./data/dates.js";
import type { UnlockStore } from "./data/snapshot.js";
import { RECIPIENT_CATEGORIES, type RecipientCategory, type TokenRecord } from "./data/types.js";
import {
  eventIdBase,
  expandTokenEventAt,
  expandTokenEvents,
  type UnlockEvent,
  type UnlockType,
} from "./events.js";
import { MODEL_VERSION, SCORE_KIND } from "./risk-model.js";
import { type ScoredCore, scoreCore } from "./scoring.js";
import { type RiskItem, UnlockLookupError } from "./service-types.js";
import {
  coverageOf,
  FRESH_LIQUIDITY_CONFIDENCE,
  liquidityConfidence,
  marketAgeDays,
  scoreKindWithAge,
} from "./supply.js";

/**
 * Every event of the store as a row of numbers (day, type, category, amounts, score), about 60 bytes per event.
 * Rows are numbered token by token in expansion order (so a token's events are one contiguous, day-sorted range);
 * `order` lists them by day, then risk score (highest first). Whatever a response shows beyond these numbers (ids,
 * components, market figures, evidence) is rebuilt from the schedule for the few events it shows (`preparedAt`):
 * keeping a full object per event cost about 7 kB each, 0.7 GB for a 100k-event store.
 */
export interface EventIndex {
  readonly size: number;
  /** Index into store.tokens. */
  readonly token: Uint32Array;
  readonly day: Int32Array;
  /** UNLOCK_TYPES index. */
  readonly type: Uint8Array;
  /** RECIPIENT_CATEGORIES index of the dominant recipient. */
  readonly category: Uint8Array;
  /** 1 when the event was valued with synthetic market figures. */
  readonly synthetic: Uint8Array;
  readonly amount: Float64Array;
  readonly amountUsd: Float64Array;
  readonly riskScore: Float64Array;
  /** NaN when unknown (null on the item). */
  readonly pctCirculating: Float64Array;
  /** Linear events' daily streams: rows streamStart[i]..streamStart[i + 1] of the three stream columns. */
  readonly streamStart: Uint32Array;
  readonly streamFrom: Int32Array;
  readonly streamTo: Int32Array;
  readonly streamPerDay: Float64Array;
  /** Rows of token k: tokenStart[k]..tokenStart[k + 1]. */
  readonly tokenStart: Uint32Array;
  /** Every row, sorted by day, then risk score (highest first), then row. */
  readonly order: Uint32Array;
  /** Rows in token order (row i at i): a token's rows are a subarray of it. */
  readonly rows: Uint32Array;
  /** Discrete rows per category, in `order`'s order (backtest's pooled basis). */
  readonly discreteByCategory: ReadonlyMap<RecipientCategory, Uint32Array>;
  /** Token index by lower-case symbol. */
  readonly tokenIndex: ReadonlyMap<string, number>;
}

export const UNLOCK_TYPES: readonly UnlockType[] = ["cliff", "step", "linear"];
const LINEAR = UNLOCK_TYPES.indexOf("linear");

/** A scored event with its response item prebuilt (everything but what depends on "today"). */
export interface Prepared {
  readonly row: number;
  readonly scored: ScoredCore;
  readonly base: Omit<RiskItem, "days_until" | "evidence" | "market"> & {
    market: Omit<RiskItem["market"], "stale_days">;
  };
  readonly priceDay: number;
}

export const round = (x: number, d: number): number => Math.round(x * 10 ** d) / 10 ** d;
export const isDiscreteRow = (index: EventIndex, row: number): boolean => index.type[row] !== LINEAR;

/** Grows by doubling: the row count is only known once every token is expanded. */
class Column<T extends Float64Array | Int32Array | Uint32Array | Uint8Array> {
  private data: T;
  length = 0;
  constructor(private readonly make: (n: number) => T) {
    this.data = make(1024);
  }
  push(v: number): void {
    if (this.length === this.data.length) {
      const next = this.make(this.data.length * 2);
      next.set(this.data);
      this.data = next;
    }
    this.data[this.length++] = v;
  }
  /** The filled part, copied to its exact size so the doubling slack is freed. */
  done(): T {
    return this.data.slice(0, this.length) as T;
  }
}

/** Builds the index in one go (start-up, tests, scripts). */
export function buildEventIndex(store: UnlockStore): EventIndex {
  const steps = eventIndexSteps(store);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/**
 * Builds the index a few tokens at a time, giving the event loop back whenever `sliceMs` of work has run, so the
 * requests served while a refresh rebuilds the data wait at most about one slice (plus one token's events), not the
 * whole build (about 100–300 ms on the shipped data, most of it in scoring).
 */
export async function buildEventIndexSliced(store: UnlockStore, sliceMs = 10): Promise<EventIndex> {
  const steps = eventIndexSteps(store);
  let sliceStart = performance.now();
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
    if (performance.now() - sliceStart >= sliceMs) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      sliceStart = performance.now();
    }
  }
}

/** The build, one token per step: the same rows in the same order however it is driven. */
function* eventIndexSteps(store: UnlockStore): Generator<void, EventIndex, void> {
  const cols = {
    token: new Column((n) => new Uint32Array(n)),
    day: new Column((n) => new Int32Array(n)),
    type: new Column((n) => new Uint8Array(n)),
    category: new Column((n) => new Uint8Array(n)),
    synthetic: new Column((n) => new Uint8Array(n)),
    amount: new Column((n) => new Float64Array(n)),
    amountUsd: new Column((n) => new Float64Array(n)),
    riskScore: new Column((n) => new Float64Array(n)),
    pctCirculating: new Column((n) => new Float64Array(n)),
    streamStart: new Column((n) => new Uint32Array(n)),
    streamFrom: new Column((n) => new Int32Array(n)),
    streamTo: new Column((n) => new Int32Array(n)),
    streamPerDay: new Column((n) => new Float64Array(n)),
  };
  const tokenStart = new Uint32Array(store.tokens.length + 1);
  const tokenIndex = new Map<string, number>();
  for (const [k, token] of store.tokens.entries()) {
    tokenIndex.set(token.symbol.toLowerCase(), k);
    tokenStart[k] = cols.day.length;
    for (const e of expandTokenEvents(token)) {
      const s = scoreCore(store, token, e);
      cols.token.push(k);
      cols.day.push(e.day);
      cols.type.push(UNLOCK_TYPES.indexOf(e.unlockType));
      cols.category.push(RECIPIENT_CATEGORIES.indexOf(e.recipientCategory));
      cols.synthetic.push(s.context.synthetic ? 1 : 0);
      cols.amount.push(e.amount);
      cols.amountUsd.push(s.amountUsd);
      cols.riskScore.push(s.risk.score);
      cols.pctCirculating.push(s.pctCirculating ?? Number.NaN);
      cols.streamStart.push(cols.streamFrom.length);
      for (const st of e.streams) {
        cols.streamFrom.push(st.from);
        cols.streamTo.push(st.to);
        cols.streamPerDay.push(st.perDay);
      }
    }
    yield;
  }
  const size = cols.day.length;
  tokenStart[store.tokens.length] = size;
  cols.streamStart.push(cols.streamFrom.length);
  const day = cols.day.done();
  const riskScore = cols.riskScore.done();
  const type = cols.type.done();
  const category = cols.category.done();
  const rows = new Uint32Array(size);
  for (let i = 0; i < size; i++) rows[i] = i;
  // Ties on day and score keep row order: the order the per-event objects were sorted stably in before.
  const order = rows
    .slice()
    .sort(
      (a, b) =>
        (day[a] as number) - (day[b] as number) ||
        (riskScore[b] as number) - (riskScore[a] as number) ||
        a - b,
    );
  const byCategory = new Map<RecipientCategory, number[]>();
  for (const i of order) {
    if (type[i] === LINEAR) continue;
    const cat = RECIPIENT_CATEGORIES[category[i] as number] as RecipientCategory;
    const list = byCategory.get(cat) ?? [];
    list.push(i);
    byCategory.set(cat, list);
  }
  return {
    size,
    token: cols.token.done(),
    day,
    type,
    category,
    synthetic: cols.synthetic.done(),
    amount: cols.amount.done(),
    amountUsd: cols.amountUsd.done(),
    riskScore,
    pctCirculating: cols.pctCirculating.done(),
    streamStart: cols.streamStart.done(),
    streamFrom: cols.streamFrom.done(),
    streamTo: cols.streamTo.done(),
    streamPerDay: cols.streamPerDay.done(),
    tokenStart,
    order,
    rows,
    discreteByCategory: new Map([...byCategory].map(([c, l]) => [c, Uint32Array.from(l)])),
    tokenIndex,
  };
}

export const tokenOf = (store: UnlockStore, index: EventIndex, row: number): TokenRecord =>
  store.tokens[index.token[row] as number] as TokenRecord;

export const categoryOf = (index: EventIndex, row: number): RecipientCategory =>
  RECIPIENT_CATEGORIES[index.category[row] as number] as RecipientCategory;

/** A token's rows (sorted by day), or undefined for an unknown symbol (any case). */
export function tokenRows(index: EventIndex, symbol: string): Uint32Array | undefined {
  const k = index.tokenIndex.get(symbol.toLowerCase());
  if (k === undefined) return undefined;
  return index.rows.subarray(index.tokenStart[k], index.tokenStart[k + 1]);
}

/** The event of a row, rebuilt from its token's schedule. */
export function eventAt(store: UnlockStore, index: EventIndex, row: number): UnlockEvent {
  const e = expandTokenEventAt(
    tokenOf(store, index, row),
    index.day[row] as number,
    index.type[row] === LINEAR,
  );
  if (e === null) throw new Error(`event index row ${row} has no event in its schedule`);
  return e;
}

/** A row's event id; discrete events always take the bare id, only a linear month may need its rebuilt event. */
export function eventIdAt(store: UnlockStore, index: EventIndex, row: number): string {
  if (index.type[row] !== LINEAR)
    return eventIdBase(tokenOf(store, index, row).symbol, index.day[row] as number);
  return eventAt(store, index, row).id;
}

/** The event's scoring and its response item, rebuilt for one row. */
export function preparedAt(store: UnlockStore, index: EventIndex, row: number): Prepared {
  const token = tokenOf(store, index, row);
  const s = scoreCore(store, token, eventAt(store, index, row));
  const e = s.event;
  const c = s.context;
  const base: Prepared["base"] = {
    token: token.symbol,
    unlock_event_id: e.id,
    risk_score: s.risk.score,
    risk_level: s.risk.level,
    score_kind: SCORE_KIND,
    token_name: token.name,
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
      segments: [...c.segments],
      circulating_supply_estimate: c.circulatingBefore === null ? null : round(c.circulatingBefore, 2),
      circulating_method: c.circulatingMethod,
    },
    supply_coverage: coverageOf(token, s.circulating, store.reports.get(token.symbol.toLowerCase())),
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
  return { row, scored: s, base, priceDay: parseDay(c.priceObservedAt) };
}

/** What a backtest needs of a row, from the numbers alone (candidates are many; their events are not rebuilt). */
export function subjectAt(store: UnlockStore, index: EventIndex, row: number): ReactionSubject {
  const pct = index.pctCirculating[row] as number;
  return {
    id: eventIdAt(store, index, row),
    symbol: tokenOf(store, index, row).symbol,
    day: index.day[row] as number,
    recipientCategory: categoryOf(index, row),
    unlockType: UNLOCK_TYPES[index.type[row] as number] as UnlockType,
    riskScore: index.riskScore[row] as number,
    pctCirculating: Number.isNaN(pct) ? null : pct,
  };
}

/**
 * The row of `id` in `token`. Ids are `unlock_<symbol>_<yyyy>_<mm>_<dd>[_n]`: the date narrows the search to the
 * token's events on that day, and the id must then equal one of theirs exactly.
 */
export function findEvent(store: UnlockStore, index: EventIndex, token: string, id: string): number {
  const rows = tokenRows(index, token);
  if (!rows) throw new UnlockLookupError("unknown_token");
  const prefix = `unlock_${token.toLowerCase()}_`;
  const m = id.startsWith(prefix) ? /^(\d{4})_(\d{2})_(\d{2})(?:_\d+)?$/.exec(id.slice(prefix.length)) : null;
  const day = m ? parseDay(`${m[1]}-${m[2]}-${m[3]}`) : Number.NaN;
  if (!Number.isNaN(day))
    for (let k = lowerBound(index, rows, day); k < rows.length && index.day[rows[k] as number] === day; k++)
      if (eventIdAt(store, index, rows[k] as number) === id) return rows[k] as number;
  throw new UnlockLookupError("unknown_event");
}

/** First position in `rows` (sorted by day) whose event day is ≥ day. */
export function lowerBound(index: EventIndex, rows: ArrayLike<number>, day: number): number {
  let lo = 0;
  let hi = rows.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((index.day[rows[mid] as number] as number) < day) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The response item for "today" = t. */
export function itemFor(p: Prepared, t: number): RiskItem {
  const age = marketAgeDays(p.priceDay, p.scored.event.day, t);
  const liquidity = liquidityConfidence(age);
  return {
    ...p.base,
    days_until: p.scored.event.day - t,
    // The score's confidence: the schedule's, times how much the market inputs have decayed (1 when fresh).
    confidence: round(p.base.confidence * (liquidity / FRESH_LIQUIDITY_CONFIDENCE), 4),
    schedule_confidence: p.base.confidence,
    score_kind: scoreKindWithAge(p.base.score_kind, age),
    market: {
      ...p.base.market,
      stale_days: t - p.priceDay,
      market_age_days: age,
      liquidity_confidence: round(liquidity, 4),
    },
  };
}
