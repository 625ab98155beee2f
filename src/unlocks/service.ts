import { dayOf } from "../store/unlocks-dates.js";
import type { UnlockStore } from "../store/unlocks-snapshot.js";
import { backtestResult, chooseBasis, refusalReason } from "./backtest-basis.js";
import { buildEventIndex, findEvent, itemFor } from "./event-index.js";
import {
  type EventLookup,
  NoReactionsError,
  type RiskItem,
  UnlockLookupError,
  type UpcomingResponse,
  type UnlockService,
} from "./service-types.js";
import { summaryIn, upcomingIn } from "./window.js";

export * from "./service-types.js";
export { MAX_REACTIONS } from "./backtest-basis.js";

/**
 * The unlock service: every event is expanded and scored once (event-index), requests slice those
 * (window: upcoming, summary) or measure reactions (backtest-basis). `clock` decides "today".
 */
export function createUnlockService(store: UnlockStore, clock: () => Date = () => new Date()): UnlockService {
  const index = buildEventIndex(store);
  const today = (): number => dayOf(clock());
  // Not memoised here: the route serialises each (data version, day, query) answer once and keeps the body
  // (routes/unlocks.ts), which is the only caller on a hot path.
  function upcoming(days: number, minRisk: number): UpcomingResponse {
    return upcomingIn(store, index, today(), days, minRisk);
  }

  function lookupEvent(token: string, id: string): EventLookup {
    try {
      findEvent(index, token, id);
      return "ok";
    } catch (err) {
      if (err instanceof UnlockLookupError) return err.reason;
      throw err;
    }
  }

  function score(token: string, id: string, includeEvidence: boolean): RiskItem {
    const p = findEvent(index, token, id);
    const item = itemFor(p, today());
    if (includeEvidence)
      item.evidence = p.scored.evidence.map((e) => ({ ...e, assumptions: [...e.assumptions] }));
    return item;
  }

  function summary(token: string, lookbackDays: number) {
    const list = index.byToken.get(token.toLowerCase());
    if (!list) throw new UnlockLookupError("unknown_token");
    return summaryIn(store, list, token, today(), lookbackDays);
  }

  function backtestRefusal(token: string, id: string, w: number): string | null {
    const target = findEvent(index, token, id);
    return chooseBasis(store, index, target, w) === null ? refusalReason(target, w) : null;
  }

  function backtest(token: string, id: string, w: number) {
    const target = findEvent(index, token, id);
    const basis = chooseBasis(store, index, target, w);
    if (basis === null) throw new NoReactionsError(refusalReason(target, w));
    return backtestResult(store, target, w, basis);
  }

  return {
    lookupEvent,
    hasToken: (token) => index.byToken.has(token.toLowerCase()),
    upcoming,
    score,
    summary,
    backtestRefusal,
    backtest,
    events: () => index.all.map((p) => p.scored),
  };
}
