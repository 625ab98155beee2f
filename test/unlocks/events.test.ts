import { describe, expect, it } from "vitest";
import { parseDay } from "../../src/unlocks/data/dates.js";
import { loadUnlockStore } from "../../src/unlocks/data/snapshot.js";
import type { SchedulePiece, TokenRecord } from "../../src/unlocks/data/types.js";
import { expandTokenEvents, releasedBefore, stepDays } from "../../src/unlocks/events.js";
import { piece, testToken } from "../helpers/schedules.js";

const store = loadUnlockStore();
const token = (schedules: SchedulePiece[]): TokenRecord => testToken(store, schedules);

describe("event expansion", () => {
  it("gives ARB's 2026-12-16 monthly release (team + investors, 92.65M) a stable lowercase id", () => {
    const arb = expandTokenEvents(store.tokenBySymbol.get("arb")!);
    const e = arb.find((x) => x.id === "unlock_arb_2026_12_16")!;
    expect(e.amount).toBeCloseTo(92_645_833.33, 1);
    expect(e.unlockType).toBe("step");
    expect(e.components.map((c) => c.category).sort()).toEqual(["investors", "team"]);
    expect(e.recipientCategory).toBe("team");
  });

  it("matches the README's headline next unlocks", () => {
    const mon = expandTokenEvents(store.tokenBySymbol.get("mon")!).find(
      (e) => e.id === "unlock_mon_2026_11_24",
    )!;
    expect(mon.amount).toBeCloseTo(16.61e9, -8);
    const ondo = expandTokenEvents(store.tokenBySymbol.get("ondo")!).find(
      (e) => e.id === "unlock_ondo_2027_01_18",
    )!;
    expect(ondo.amount).toBeCloseTo(1.94e9, -8);
  });

  it("ids are unique per snapshot and a suffix separates events sharing a day", () => {
    const ids = store.tokens.flatMap((t) => expandTokenEvents(t).map((e) => e.id));
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(id).toMatch(/^unlock_[a-z0-9]+_\d{4}_\d{2}_\d{2}(_\d+)?$/);
    const events = expandTokenEvents(
      token([
        piece({ start: "2027-02-01" }),
        piece({ kind: "linear", start: "2027-02-01", end: "2027-03-01", amount_tokens: 28 }),
      ]),
    );
    expect(events.map((e) => [e.id, e.unlockType])).toEqual([
      ["unlock_tst_2027_02_01", "cliff"],
      ["unlock_tst_2027_02_01_2", "linear"],
    ]);
  });

  it("steps monthly from start, clamping to month ends, and conserves amounts", () => {
    const p = piece({
      kind: "step",
      start: "2027-01-31",
      end: "2027-04-30",
      steps: 4,
      step_days: "monthly",
      amount_tokens: 400,
    });
    expect(stepDays(p).map((d) => new Date(d * 86_400_000).toISOString().slice(0, 10))).toEqual([
      "2027-01-31",
      "2027-02-28",
      "2027-03-31",
      "2027-04-30",
    ]);
    const events = expandTokenEvents(token([p]));
    expect(events.map((e) => e.amount)).toEqual([100, 100, 100, 100]);
  });

  it("cuts linear streams into calendar months whose amounts add up to the piece", () => {
    const p = piece({ kind: "linear", start: "2027-01-15", end: "2027-04-15", amount_tokens: 900 });
    const events = expandTokenEvents(token([p]));
    expect(events.map((e) => e.date)).toEqual(["2027-01-15", "2027-02-01", "2027-03-01", "2027-04-01"]);
    expect(events.reduce((s, e) => s + e.amount, 0)).toBeCloseTo(900, 9);
    const perDay = 900 / (parseDay("2027-04-15") - parseDay("2027-01-15"));
    expect(events[1]!.amount).toBeCloseTo(28 * perDay, 9);
    expect(releasedBefore(p, parseDay("2027-02-01"))).toBeCloseTo(17 * perDay, 9);
  });

  it("every token's events add up to its scheduled total", () => {
    // Pure emission tokens (DOGE, LTC, TAO, TON) have no vesting pieces: nothing to add up.
    for (const t of store.tokens.filter((x) => x.schedules.length > 0)) {
      const total = t.schedules.reduce((s, p) => s + p.amount_tokens, 0);
      const sum = expandTokenEvents(t).reduce((s, e) => s + e.amount, 0);
      expect(sum / total).toBeCloseTo(1, 9);
    }
  });
});
