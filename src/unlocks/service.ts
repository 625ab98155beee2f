import { backtestResult, chooseBasis, refusalReason } from "./backtest-basis.js";
import { dayOf, formatDay } from "./data/dates.js";
import type { UnlockStore } from "./data/snapshot.js";
import {
  buildEventIndex,
  buildEventIndexSliced,
  type EventIndex,
  eventAt,
  eventIdAt,
  findEvent,
  itemFor,
  lowerBound,
  preparedAt,
  round,
  tokenOf,
  tokenRows,
  UNLOCK_TYPES,
} from "./event-index.js";
import { evidenceFor, scoreEvent } from "./scoring.js";
import {
  type EventLookup,
  NoReactionsError,
  type RiskItem,
  type TokenNextUnlock,
  UnlockLookupError,
  type UnlockService,
  type UpcomingFilter,
  type UpcomingResponse,
} from "./service-types.js";
import { amountInWindowAt, summaryIn, upcomingIn } from "./window.js";

export { MAX_REACTIONS } from "./backtest-basis.js";
export * from "./service-types.js";

/**
 * The unlock service: every event is expanded and scored once into a compact index of numbers (event-index);
 * requests slice it (window: upcoming, summary) or measure reactions (backtest-basis), and rebuild only the events
 * they return. `clock` decides "today".
 */
export function createUnlockService(
  store: UnlockStore,
  clock: () => Date = () => new Date(),
  /** The store's index when already built (off the request path: `createUnlockServiceSliced`). */
  prebuilt?: EventIndex,
): UnlockService {
  const index = prebuilt ?? buildEventIndex(store);
  const today = (): number => dayOf(clock());
  // Not memoised here: the route serialises each (data version, day, query) answer once and keeps the body
  // (routes/unlocks.ts), which is the only caller on a hot path.
  function upcoming(days: number, minRisk: number, filter?: UpcomingFilter): UpcomingResponse {
    return upcomingIn(store, index, today(), days, minRisk, filter);
  }

  function nextUnlock(symbol: string): TokenNextUnlock | null {
    const rows = tokenRows(index, symbol);
    if (!rows) return null;
    const k = lowerBound(index, rows, today());
    if (k >= rows.length) return null;
    const row = rows[k] as number;
    const pct = index.pctCirculating[row] as number;
    return {
      unlock_event_id: eventIdAt(store, index, row),
      date: formatDay(index.day[row] as number),
      type: UNLOCK_TYPES[index.type[row] as number] as TokenNextUnlock["type"],
      amount_tokens: round(index.amount[row] as number, 4),
      amount_usd: round(index.amountUsd[row] as number, 2),
      pct_circulating: Number.isNaN(pct) ? null : round(pct, 4),
    };
  }

  function lookupEvent(token: string, id: string): EventLookup {
    try {
      findEvent(store, index, token, id);
      return "ok";
    } catch (err) {
      if (err instanceof UnlockLookupError) return err.reason;
      throw err;
    }
  }

  function score(token: string, id: string, includeEvidence: boolean): RiskItem {
    const row = findEvent(store, index, token, id);
    const p = preparedAt(store, index, row);
    const t = today();
    const item = itemFor(p, t);
    const e = p.scored.event;
    // A stream already under way shows what is still to come from today, never the whole month as if ahead.
    const ongoing = e.unlockType === "linear" && e.day < t && t <= e.endDay;
    const tokens = ongoing ? amountInWindowAt(index, row, t, e.endDay + 1) : e.amount;
    const share = e.amount > 0 ? tokens / e.amount : 0;
    item.window_amount_tokens = round(tokens, 4);
    item.window_amount_usd = round(p.scored.amountUsd * share, 2);
    item.release_start = formatDay(ongoing ? t : e.day);
    item.release_end = formatDay(e.endDay);
    if (includeEvidence) item.evidence = evidenceFor(store, p.scored);
    return item;
  }

  function summary(token: string, lookbackDays: number) {
    const rows = tokenRows(index, token);
    if (!rows) throw new UnlockLookupError("unknown_token");
    return summaryIn(store, index, rows, token, today(), lookbackDays);
  }

  function backtestRefusal(token: string, id: string, w: number): string | null {
    const target = findEvent(store, index, token, id);
    return chooseBasis(store, index, target, w) === null ? refusalReason(store, index, target, w) : null;
  }

  function backtest(token: string, id: string, w: number) {
    const target = findEvent(store, index, token, id);
    const basis = chooseBasis(store, index, target, w);
    if (basis === null) throw new NoReactionsError(refusalReason(store, index, target, w));
    return backtestResult(store, index, target, w, basis);
  }

  return {
    lookupEvent,
    hasToken: (token) => index.tokenIndex.has(token.toLowerCase()),
    upcoming,
    today: () => formatDay(today()),
    nextUnlock,
    score,
    summary,
    backtestRefusal,
    backtest,
    data: () => store,
    // Calibration and diagnostics only: every event rebuilt and scored in full, with its evidence.
    events: () =>
      Array.from(index.order, (row) =>
        scoreEvent(store, tokenOf(store, index, row), eventAt(store, index, row)),
      ),
  };
}

/**
 * The same service, its index built in slices that give the event loop back (`buildEventIndexSliced`): what a refresh
 * swaps in while requests are being served.
 */
export async function createUnlockServiceSliced(
  store: UnlockStore,
  clock: () => Date = () => new Date(),
): Promise<UnlockService> {
  return createUnlockService(store, clock, await buildEventIndexSliced(store));
}
