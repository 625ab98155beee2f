import { describe, expect, it } from "vitest";
import { EMISSION_SECTIONS } from "../../src/build/import-schedules.js";
import { EMISSION_BY_SOURCE, UNDATED_ADAPTERS } from "../../src/build/import-wide.js";
import { dayOfUnix, formatDay } from "../../src/unlocks/data/dates.js";
import { loadUnlockStore } from "../../src/unlocks/data/snapshot.js";
import { expandTokenEvents, stepDays } from "../../src/unlocks/events.js";
import { createUnlockService } from "../../src/unlocks/service.js";

const store = loadUnlockStore();
const NOW = new Date("2026-11-26T00:00:00Z");
const svc = createUnlockService(store, () => NOW);
const events = (symbol: string) => expandTokenEvents(store.tokenBySymbol.get(symbol.toLowerCase())!);

describe("emission sections are never scored as vesting unlocks", () => {
  it("no event of any token carries a section decided to be an emission", () => {
    const decided = { ...EMISSION_SECTIONS, ...EMISSION_BY_SOURCE };
    for (const [symbol, sections] of Object.entries(decided)) {
      const names = new Set(Object.keys(sections));
      for (const e of events(symbol))
        for (const c of e.components)
          expect(names.has(c.recipient), `${symbol} ${e.id} ${c.recipient}`).toBe(false);
      // Each decision says why, on the token.
      if (EMISSION_SECTIONS[symbol])
        expect(store.tokenBySymbol.get(symbol.toLowerCase())!.notes).toContain(
          "Not scored as vesting unlocks",
        );
    }
  });

  it("USUAL's 365-day list has no Community Incentives; PYTH's May cliffs carry no Publisher Rewards", () => {
    const usual = svc.upcoming(365, 0).unlocks.filter((u) => u.token === "USUAL");
    expect(usual.length).toBeGreaterThan(0);
    for (const u of usual) expect(u.recipients.map((r) => r.recipient)).not.toContain("Community Incentives");
    const pyth = events("PYTH").find((e) => e.date === "2026-05-20")!;
    expect(pyth.amount).toBeCloseTo(2.125e9 - 537.5e6, 0);
  });
});

describe("one adapter release is one event", () => {
  it("SUI 2026-12-01 and GMT 2026-12-07 are one event each, not split across two days", () => {
    const sui = events("SUI").filter((e) => e.date === "2026-12-01" || e.date === "2026-12-02");
    expect(sui.map((e) => e.date)).toEqual(["2026-12-01"]);
    expect(sui[0]!.amount).toBeCloseTo(39_975_238, -1);
    const gmt = events("GMT").filter((e) => e.date === "2026-12-07" || e.date === "2026-12-08");
    expect(gmt.map((e) => e.date)).toEqual(["2026-12-07"]);
    expect(svc.lookupEvent("SUI", "unlock_sui_2026_12_02")).toBe("unknown_event");
  });

  it("dates an adapter's monthly steps from its own timestamps", () => {
    const piece = {
      kind: "step" as const,
      start: "2024-05-02",
      end: "2024-08-01",
      amount_tokens: 3,
      steps: 3,
      step_days: "monthly" as const,
      step_clock: { start_unix: 1714628926, period_s: 2_629_743 },
    };
    expect(stepDays(piece).map(formatDay)).toEqual(
      [1, 2, 3].map((i) => formatDay(dayOfUnix(1714628926 + i * 2_629_743))),
    );
  });
});

describe("the smaller wrong numbers", () => {
  it("FIL: its adapter's dates are not the token's, so no event is scored from them and circulating is the report", () => {
    expect(UNDATED_ADAPTERS.FIL).toBeDefined();
    const fil = store.tokenBySymbol.get("fil")!;
    expect(fil.supply_schedule).toBeUndefined();
    expect(events("FIL")).toHaveLength(0);
    const s = svc.summary("FIL", 30);
    expect(s.supply_coverage.circulating_rule).toBe("reported+schedule");
    expect(s.supply_coverage.circulating_is_lower_bound).toBe(true);
    expect(s.circulating_supply).toBeCloseTo(s.supply_coverage.circulating_report!.circulating_supply, 0);
  });

  it("W's 650M Ecosystem & Incubation releases are labelled ecosystem, not team", () => {
    for (const e of events("W"))
      for (const c of e.components)
        if (c.recipient === "Ecosystem & Incubation") expect(c.category).toBe("ecosystem");
    expect(events("W").find((e) => e.date === "2027-04-03")!.recipientCategory).toBe("ecosystem");
  });

  it("says how much of max supply a schedule leaves out (HYPE 0.61×, ZK 0.71×)", () => {
    const hype = svc.summary("HYPE", 30).supply_coverage;
    expect(hype.schedule_share_of_max_supply).toBeCloseTo(0.6111, 4);
    expect(hype.schedule_coverage_note).toMatch(/61\.1 % of max supply/);
    expect(svc.summary("ZK", 30).supply_coverage.schedule_share_of_max_supply).toBeCloseTo(0.7073, 4);
    expect(svc.summary("SAGA", 30).supply_coverage.schedule_coverage_note).toBeNull();
  });

  it("SAGA's two identical sections are both real: without either the schedule would fall short of max supply", () => {
    const saga = store.tokenBySymbol.get("saga")!;
    const total = saga.supply_schedule!.pieces.reduce((s, p) => s + p.amount_tokens, 0);
    expect(total).toBeCloseTo(saga.max_supply!, 0);
  });

  it("an ongoing monthly stream starts today with the share of its remaining days: no negative days_until", () => {
    const items = svc.upcoming(365, 0).unlocks;
    expect(items.filter((u) => u.days_until < 0)).toEqual([]);
    const ongoing = items.filter((u) => u.unlock_type === "linear" && u.unlock_date < "2026-11-26");
    expect(ongoing.length).toBeGreaterThan(0);
    for (const u of ongoing) {
      expect(u.days_until).toBe(0);
      expect(u.window_amount_tokens!).toBeLessThan(u.amount_tokens);
    }
  });
});
