import { describe, expect, it } from "vitest";
import { parseDay } from "../../src/unlocks/data/dates.js";
import { buildUnlockStore, loadUnlockStore } from "../../src/unlocks/data/snapshot.js";
import {
  buildEventIndex,
  buildEventIndexSliced,
  categoryOf,
  eventIdAt,
  findEvent,
  preparedAt,
  subjectAt,
  tokenRows,
  UNLOCK_TYPES,
} from "../../src/unlocks/event-index.js";
import { amountInWindow, expandTokenEventAt, expandTokenEvents } from "../../src/unlocks/events.js";
import { evidenceFor, scoreEvent } from "../../src/unlocks/scoring.js";
import type { UnlockLookupError } from "../../src/unlocks/service-types.js";
import { amountInWindowAt } from "../../src/unlocks/window.js";
import { piece, testToken } from "../helpers/schedules.js";

const store = loadUnlockStore();
const index = buildEventIndex(store);
/** Every event the eager path builds, in the index's row order (token by token, expansion order). */
const eager = store.tokens.flatMap((token) => expandTokenEvents(token).map((event) => ({ token, event })));

describe("rebuilding one event from the schedule", () => {
  it("gives exactly the event the full expansion gives, for every shipped event", () => {
    for (const { token, event } of eager)
      expect(expandTokenEventAt(token, event.day, event.unlockType === "linear")).toEqual(event);
  });

  it("finds nothing where the expansion has no event", () => {
    const arb = store.tokenBySymbol.get("arb")!;
    const days = new Set(expandTokenEvents(arb).map((e) => e.day));
    const empty = [...Array(4000).keys()].map((k) => parseDay("2023-01-01") + k).find((d) => !days.has(d))!;
    expect(expandTokenEventAt(arb, empty, false)).toBeNull();
    expect(expandTokenEventAt(arb, empty, true)).toBeNull();
  });

  it("numbers a linear month that starts on a discrete release's day after it (_2), like the expansion", () => {
    const token = testToken(store, [
      piece({ kind: "linear", start: "2027-03-05", end: "2027-06-05", amount_tokens: 900 }),
      piece({ kind: "cliff", start: "2027-03-05", amount_tokens: 50, category: "investors" }),
      piece({ kind: "step", start: "2027-02-05", end: "2027-05-05", steps: 4, step_days: "monthly" }),
      piece({ kind: "cliff", start: "2027-04-01", amount_tokens: 0 }),
    ]);
    const all = expandTokenEvents(token);
    expect(all.map((e) => e.id)).toContain("unlock_tst_2027_03_05_2");
    for (const e of all) expect(expandTokenEventAt(token, e.day, e.unlockType === "linear")).toEqual(e);
  });
});

describe("compact event index", () => {
  it("holds one row per expanded event with the eager scoring's numbers", () => {
    expect(index.size).toBe(eager.length);
    eager.forEach(({ token, event }, row) => {
      const s = scoreEvent(store, token, event);
      expect(store.tokens[index.token[row]!]).toBe(token);
      expect(index.day[row]).toBe(event.day);
      expect(UNLOCK_TYPES[index.type[row]!]).toBe(event.unlockType);
      expect(categoryOf(index, row)).toBe(event.recipientCategory);
      expect(index.amount[row]).toBe(event.amount);
      expect(index.amountUsd[row]).toBe(s.amountUsd);
      expect(index.riskScore[row]).toBe(s.risk.score);
      expect(index.synthetic[row]).toBe(s.context.synthetic ? 1 : 0);
      if (s.pctCirculating === null) expect(index.pctCirculating[row]).toBeNaN();
      else expect(index.pctCirculating[row]).toBe(s.pctCirculating);
      expect(eventIdAt(store, index, row)).toBe(event.id);
    });
  });

  it("rebuilds a row's scoring, and its evidence, exactly as the eager path computes them", () => {
    for (let row = 0; row < index.size; row += 7) {
      const { token, event } = eager[row]!;
      const { evidence, ...core } = scoreEvent(store, token, event);
      const p = preparedAt(store, index, row);
      expect(p.scored).toEqual(core);
      expect(evidenceFor(store, p.scored)).toEqual(evidence);
      expect(subjectAt(store, index, row)).toEqual({
        id: event.id,
        symbol: token.symbol,
        day: event.day,
        recipientCategory: event.recipientCategory,
        unlockType: event.unlockType,
        riskScore: core.risk.score,
        pctCirculating: core.pctCirculating,
      });
    }
  });

  it("orders rows by day, then risk score (highest first), each once", () => {
    expect(new Set(index.order).size).toBe(index.size);
    for (let k = 1; k < index.size; k++) {
      const a = index.order[k - 1]!;
      const b = index.order[k]!;
      expect(
        index.day[a]! < index.day[b]! ||
          (index.day[a] === index.day[b] && index.riskScore[a]! >= index.riskScore[b]!),
      ).toBe(true);
    }
  });

  it("counts the tokens released inside a window as the event does, streams prorated", () => {
    const t = parseDay("2026-11-22");
    for (const [from, to] of [
      [t, t + 31],
      [t - 400, t - 380],
      [t + 3, t + 4],
    ] as const)
      eager.forEach(({ event }, row) => {
        expect(amountInWindowAt(index, row, from, to)).toBe(amountInWindow(event, from, to));
      });
  });

  it("finds every event by token (any case) and id, and nothing else", () => {
    eager.forEach(({ token, event }, row) => {
      expect(findEvent(store, index, token.symbol, event.id)).toBe(row);
      expect(findEvent(store, index, token.symbol.toUpperCase(), event.id)).toBe(row);
    });
    const unknown = (token: string, id: string) => {
      try {
        findEvent(store, index, token, id);
        return "found";
      } catch (err) {
        return (err as UnlockLookupError).reason;
      }
    };
    const arb = expandTokenEvents(store.tokenBySymbol.get("arb")!)[0]!.id;
    expect(unknown("nope", arb)).toBe("unknown_token");
    const other = store.tokens.find((t) => t.symbol.toLowerCase() !== "arb")!.symbol;
    expect(unknown(other, arb)).toBe("unknown_event");
    expect(unknown("arb", arb.toUpperCase())).toBe("unknown_event");
    expect(unknown("arb", `${arb}_1`)).toBe("unknown_event");
    expect(unknown("arb", `${arb}_2`)).toBe("unknown_event");
    expect(unknown("arb", "unlock_arb_2026_02_31")).toBe("unknown_event");
    expect(unknown("arb", "")).toBe("unknown_event");
    expect(tokenRows(index, "ARB")?.length).toBe(expandTokenEvents(store.tokenBySymbol.get("arb")!).length);
  });

  it("indexes an empty store", () => {
    const empty = buildEventIndex(buildUnlockStore({ ...store.snapshot, tokens: [] }));
    expect(empty.size).toBe(0);
    expect(empty.order.length).toBe(0);
  });

  it("built in slices, it is the same index, and the event loop runs between slices", async () => {
    // A turn of the event loop counted each time it gets one: the one-go build never gives it one.
    let turns = 0;
    let counting = true;
    const count = () => {
      turns++;
      if (counting) setImmediate(count);
    };
    setImmediate(count);
    const whole = buildEventIndex(store);
    expect(turns).toBe(0);
    // A zero budget gives the loop back after every token: the turns counted are the yields, not time.
    const sliced = await buildEventIndexSliced(store, 0);
    counting = false;
    expect(turns).toBeGreaterThanOrEqual(store.tokens.length - 1);
    expect(sliced).toEqual(whole);
  });
});
