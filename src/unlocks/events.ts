import { addMonths, dayOfUnix, formatDay, monthStart, parseDay } from "./data/dates.js";
import type {
  RecipientCategory,
  SchedulePiece,
  SourceType,
  SupplyPiece,
  TimingPrecision,
  TokenRecord,
} from "./data/types.js";
import { RECIPIENT_CATEGORIES } from "./data/types.js";

export type UnlockType = "cliff" | "step" | "linear";

/** One schedule piece's share of an event. */
export interface ReleaseComponent {
  readonly recipient: string;
  readonly category: RecipientCategory;
  readonly kind: UnlockType;
  readonly amount: number;
  readonly sourceType: SourceType;
  readonly timingPrecision: TimingPrecision;
  readonly sourceUrl: string | null;
}

/**
 * An unlock event: every discrete (cliff or step) release of one token on one day, or one calendar
 * month of a token's linear streams (dated on the month's first streaming day).
 */
export interface UnlockEvent {
  readonly id: string;
  readonly symbol: string;
  readonly day: number;
  readonly date: string;
  /** Last day covered: the same day for discrete releases, the month's last streaming day for linear. */
  readonly endDay: number;
  readonly unlockType: UnlockType;
  readonly amount: number;
  readonly recipientCategory: RecipientCategory;
  readonly components: readonly ReleaseComponent[];
  /** Linear events only: the daily streams making up the month, each over days [from, to). */
  readonly streams: readonly Stream[];
}

/** `perDay` tokens on each day in [from, to). */
export interface Stream {
  readonly from: number;
  readonly to: number;
  readonly perDay: number;
}

interface Release {
  readonly day: number;
  readonly endDay: number;
  readonly amount: number;
  readonly piece: SchedulePiece;
  readonly linear: boolean;
  readonly stream?: Stream;
}

/**
 * Release days of a step piece: `steps` equal releases, the first on start, spaced by step_days or calendar months;
 * an adapter's step clock, when the piece carries one, dates each release from the adapter's own timestamps.
 */
const stepDaysMemo = new WeakMap<SupplyPiece, number[]>();

export function stepDays(piece: SupplyPiece): number[] {
  const memo = stepDaysMemo.get(piece);
  if (memo) return memo;
  const start = parseDay(piece.start);
  const steps = piece.steps ?? 1;
  const out: number[] = [];
  const clock = piece.step_clock;
  for (let k = 0; k < steps; k++) {
    if (clock) out.push(dayOfUnix(clock.start_unix + (k + 1) * clock.period_s));
    else out.push(piece.step_days === "monthly" ? addMonths(start, k) : start + k * (piece.step_days ?? 1));
  }
  stepDaysMemo.set(piece, out);
  return out;
}

function discreteReleases(piece: SchedulePiece): Release[] {
  if (piece.kind === "cliff") {
    const d = parseDay(piece.start);
    return [{ day: d, endDay: d, amount: piece.amount_tokens, piece, linear: false }];
  }
  const days = stepDays(piece);
  const each = piece.amount_tokens / days.length;
  return days.map((d) => ({ day: d, endDay: d, amount: each, piece, linear: false }));
}

/** A linear piece's release in the calendar month starting on `month`, if the piece streams in it. */
function linearReleaseIn(piece: SchedulePiece, month: number): Release | null {
  const start = parseDay(piece.start);
  const end = parseDay(piece.end as string);
  const perDay = piece.amount_tokens / (end - start);
  const from = Math.max(start, month);
  const to = Math.min(addMonths(month, 1), end);
  if (!(from < to)) return null;
  return {
    day: from,
    endDay: to - 1,
    amount: perDay * (to - from),
    piece,
    linear: true,
    stream: { from, to, perDay },
  };
}

/** A linear piece streams amount/(end-start) per day on days [start, end); cut into calendar months. */
function linearReleases(piece: SchedulePiece): Release[] {
  const end = parseDay(piece.end as string);
  const out: Release[] = [];
  for (let month = monthStart(parseDay(piece.start)); month < end; month = addMonths(month, 1)) {
    const r = linearReleaseIn(piece, month);
    if (r) out.push(r);
  }
  return out;
}

/** Tokens a piece has released on days strictly before `day`. */
export function releasedBefore(piece: SupplyPiece, day: number): number {
  const start = parseDay(piece.start);
  if (day <= start) return 0;
  if (piece.kind === "cliff") return piece.amount_tokens;
  if (piece.kind === "linear") {
    const end = parseDay(piece.end as string);
    return piece.amount_tokens * Math.min(1, (day - start) / (end - start));
  }
  const days = stepDays(piece);
  let done = 0;
  while (done < days.length && (days[done] as number) < day) done++;
  return (piece.amount_tokens * done) / days.length;
}

export function scheduledReleasedBefore(token: TokenRecord, day: number): number {
  let sum = 0;
  for (const p of token.schedules) sum += releasedBefore(p, day);
  return sum;
}

const componentKeys = new WeakMap<SchedulePiece, string>();

/** Pieces with the same key merge into one component; memoised because every release of a piece asks for it. */
function componentKey(p: SchedulePiece): string {
  let key = componentKeys.get(p);
  if (key === undefined) {
    key = `${p.recipient}\u0000${p.category}\u0000${p.kind}\u0000${p.source_type}\u0000${p.timing_precision}`;
    componentKeys.set(p, key);
  }
  return key;
}

function dominantCategory(components: readonly ReleaseComponent[]): RecipientCategory {
  const byCat = new Map<RecipientCategory, number>();
  for (const c of components) byCat.set(c.category, (byCat.get(c.category) ?? 0) + c.amount);
  let best: RecipientCategory = "other";
  let bestAmt = -1;
  for (const cat of RECIPIENT_CATEGORIES) {
    const a = byCat.get(cat) ?? -1;
    if (a > bestAmt) {
      best = cat;
      bestAmt = a;
    }
  }
  return best;
}

function dominantType(components: readonly ReleaseComponent[]): UnlockType {
  const cliff = components.filter((c) => c.kind === "cliff").reduce((s, c) => s + c.amount, 0);
  const step = components.filter((c) => c.kind === "step").reduce((s, c) => s + c.amount, 0);
  const linear = components.filter((c) => c.kind === "linear").reduce((s, c) => s + c.amount, 0);
  if (linear > 0 && cliff === 0 && step === 0) return "linear";
  return cliff >= step ? "cliff" : "step";
}

interface Group {
  day: number;
  endDay: number;
  linear: boolean;
  components: Map<string, ReleaseComponent>;
  streams: Stream[];
}

function addRelease(group: Group, r: Release): void {
  const key = componentKey(r.piece);
  const prev = group.components.get(key);
  group.components.set(key, {
    recipient: r.piece.recipient,
    category: r.piece.category,
    kind: r.piece.kind,
    amount: (prev?.amount ?? 0) + r.amount,
    sourceType: r.piece.source_type,
    timingPrecision: r.piece.timing_precision,
    sourceUrl: r.piece.source_url,
  });
  if (r.stream) group.streams.push(r.stream);
  group.day = Math.min(group.day, r.day);
  group.endDay = Math.max(group.endDay, r.endDay);
}

export function eventIdBase(symbol: string, day: number): string {
  return `unlock_${symbol.toLowerCase()}_${formatDay(day).replaceAll("-", "_")}`;
}

function releasesOf(piece: SchedulePiece): Release[] {
  return piece.kind === "linear" ? linearReleases(piece) : discreteReleases(piece);
}

function newGroup(r: Release): Group {
  return { day: r.day, endDay: r.endDay, linear: r.linear, components: new Map(), streams: [] };
}

/** The event of a group; `n` is its rank among the token's events on the same day (1 = the bare id). */
function eventOf(token: TokenRecord, g: Group, n: number): UnlockEvent {
  const base = eventIdBase(token.symbol, g.day);
  const components = [...g.components.values()].sort((a, b) => b.amount - a.amount);
  return {
    id: n === 1 ? base : `${base}_${n}`,
    symbol: token.symbol,
    day: g.day,
    date: formatDay(g.day),
    endDay: g.endDay,
    unlockType: g.linear ? "linear" : dominantType(components),
    amount: components.reduce((s, c) => s + c.amount, 0),
    recipientCategory: dominantCategory(components),
    components,
    streams: g.streams,
  };
}

/**
 * Expands a token's schedules into events, sorted by day. Ids are `unlock_<symbol>_<yyyy>_<mm>_<dd>`;
 * when two events share a day (a discrete release and a linear month) the later ones get `_2`, `_3`…
 * Discrete releases always take the bare id, so ids stay put when data is refreshed.
 */
export function expandTokenEvents(token: TokenRecord): UnlockEvent[] {
  const discrete = new Map<number, Group>();
  const linear = new Map<number, Group>();
  for (const piece of token.schedules) {
    if (piece.amount_tokens <= 0) continue;
    for (const r of releasesOf(piece)) {
      if (r.amount <= 0) continue;
      const key = r.linear ? monthStart(r.day) : r.day;
      const map = r.linear ? linear : discrete;
      let g = map.get(key);
      if (!g) {
        g = newGroup(r);
        map.set(key, g);
      }
      addRelease(g, r);
    }
  }
  const groups = [...discrete.values(), ...linear.values()].sort(
    (a, b) => a.day - b.day || Number(a.linear) - Number(b.linear),
  );
  const usedOnDay = new Map<number, number>();
  return groups.map((g) => {
    const n = (usedOnDay.get(g.day) ?? 0) + 1;
    usedOnDay.set(g.day, n);
    return eventOf(token, g, n);
  });
}

/**
 * The one event of `token` that expandTokenEvents dates on `day` (its linear month when `linear`), rebuilt from
 * the schedule alone, or null when there is none. Releases are added in the same order as there (piece by piece),
 * so amounts, component order and id are identical: the compact event index keeps only numbers per event and
 * rebuilds the few events a response shows.
 */
export function expandTokenEventAt(token: TokenRecord, day: number, linear: boolean): UnlockEvent | null {
  const month = monthStart(day);
  let group: Group | null = null;
  let discreteOnDay = false;
  for (const piece of token.schedules) {
    if (piece.amount_tokens <= 0) continue;
    if (piece.kind === "linear") {
      if (!linear) continue;
      const r = linearReleaseIn(piece, month);
      if (r === null || r.amount <= 0) continue;
      group ??= newGroup(r);
      addRelease(group, r);
      continue;
    }
    for (const r of discreteReleases(piece)) {
      if (r.day !== day || r.amount <= 0) continue;
      discreteOnDay = true;
      if (linear) break;
      group ??= newGroup(r);
      addRelease(group, r);
    }
  }
  if (group === null || group.day !== day) return null;
  // Only a linear month can share its day with a discrete release, and it sorts after it.
  return eventOf(token, group, linear && discreteOnDay ? 2 : 1);
}

/**
 * Tokens an event releases on days [from, to): all of a discrete release on its day, and for a
 * linear month exactly each stream's daily rate times the days it shares with the window.
 */
export function amountInWindow(event: UnlockEvent, from: number, to: number): number {
  if (event.unlockType !== "linear" || event.streams.length === 0)
    return event.day >= from && event.day < to ? event.amount : 0;
  let sum = 0;
  for (const s of event.streams) sum += s.perDay * Math.max(0, Math.min(s.to, to) - Math.max(s.from, from));
  return sum;
}
