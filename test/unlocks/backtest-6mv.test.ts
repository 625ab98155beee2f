import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { spearman } from "../../src/build/calibration.js";
import { load6mv, piecesFromDaily, type SixMvFile } from "../../src/build/import-6mv.js";
import { buildUnlockStore, validateUnlockSnapshot } from "../../src/unlocks/data/snapshot.js";
import type { UnlockSnapshot } from "../../src/unlocks/data/types.js";
import { createUnlockService } from "../../src/unlocks/service.js";

// Shipped copies (data/), never ../shared: see data/README.md for provenance.
const DIR = new URL("../../data/unlock-history-6mv/", import.meta.url);
const MARKET = new URL("../../data/market-history/", import.meta.url);
const imported = load6mv(DIR.pathname, MARKET.pathname);
const snap = validateUnlockSnapshot(imported.snapshot, "6mv");
const store = buildUnlockStore(snap);
const svc = createUnlockService(store, () => new Date("2023-05-01T00:00:00Z"));

/** Real ETH closes by candle date, straight from the shipped Binance spot CSV. */
const ethCandle = new Map(
  readFileSync(new URL("alt/binance-spot/ETH.csv", MARKET), "utf8")
    .trim()
    .split("\n")
    .slice(1)
    .map((l) => l.split(","))
    .map(([d, c]) => [d!, Number(c)]),
);

/**
 * Straight from the raw 6MV file: its row D is the 00:00 UTC price of D+1, i.e. the close of the
 * UTC day D — the same instant as the close of ETH's candle D.
 */
function raw(file: string): Map<string, { p: number; e: number }> {
  const f = JSON.parse(readFileSync(new URL(file, DIR), "utf8")) as SixMvFile;
  return new Map(f.days.map((d) => [d.date, { p: d.price_usd as number, e: ethCandle.get(d.date)! }]));
}
const shift = (date: string, days: number): string =>
  new Date(Date.parse(`${date}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10);

describe("backtest arithmetic on real 6MV events", () => {
  const cases = [
    { file: "looksrare.private.json", token: "LOOKSRARE", date: "2022-12-11", w: 14 },
    { file: "bitdao.private.json", token: "BITDAO", date: "2022-03-15", w: 7 },
    { file: "nym.private.json", token: "NYM", date: "2022-08-02", w: 30 },
  ];
  for (const c of cases) {
    it(`${c.token} ${c.date} ±${c.w}d matches an independent computation`, () => {
      const days = raw(c.file);
      const at = (k: number) => days.get(shift(c.date, k))!;
      const pre = (at(0).p / at(-c.w).p - 1) * 100;
      const post = (at(c.w).p / at(0).p - 1) * 100;
      // β: OLS of the table's daily log returns on ETH's over days −120..−31, pairs with a gap skipped.
      const xs: number[] = [];
      const ys: number[] = [];
      for (let k = -120; k <= -31; k++) {
        const a = days.get(shift(c.date, k));
        const b = days.get(shift(c.date, k + 1));
        if (!a?.p || !b?.p || !a.e || !b.e) continue;
        ys.push(Math.log(b.p / a.p));
        xs.push(Math.log(b.e / a.e));
      }
      const mx = xs.reduce((q, v) => q + v, 0) / xs.length;
      const my = ys.reduce((q, v) => q + v, 0) / ys.length;
      const beta =
        xs.reduce((q, x, i) => q + (x - mx) * (ys[i]! - my), 0) / xs.reduce((q, x) => q + (x - mx) ** 2, 0);
      const lr = (f: "p" | "e", a: number, b: number) => Math.log(at(b)[f] / at(a)[f]) * 100;
      const abPost = lr("p", 0, c.w) - beta * lr("e", 0, c.w);
      const abPre = lr("p", -c.w, 0) - beta * lr("e", -c.w, 0);
      let peak = 0;
      let dd = 0;
      for (let k = 0; k <= c.w; k++) {
        peak = Math.max(peak, at(k).p);
        dd = Math.min(dd, (at(k).p / peak - 1) * 100);
      }
      // Unlocks move with their prices: the 6MV row D unlock is dated D+1 (00:00 UTC).
      const id = `unlock_${c.token.toLowerCase()}_${shift(c.date, 1).replaceAll("-", "_")}`;
      const b = svc.backtest(c.token, id, c.w);
      expect(b.basis).toBe("event");
      expect(b.synthetic).toBe(false);
      expect(b.reactions).toHaveLength(1);
      const r = b.reactions[0]!;
      expect(r.unlock_date).toBe(shift(c.date, 1));
      expect(r.benchmark).toBe("ETH");
      expect(r.pre_return_pct).toBeCloseTo(pre, 3);
      expect(r.post_return_pct).toBeCloseTo(post, 3);
      expect(r.beta).toBeCloseTo(beta, 3);
      expect(r.abnormal_return_pct).toBeCloseTo(abPost, 3);
      expect(r.pre_abnormal_return_pct).toBeCloseTo(abPre, 3);
      expect(r.max_drawdown_pct).toBeCloseTo(dd, 3);
      expect(r.volume_change_pct).toBeNull();
      expect(b.summary.mean_abnormal_return_pct).toBeCloseTo(abPost, 3);
    });
  }

  it("an event whose estimation window (days −120..−31) is not covered is not measured from itself", () => {
    // APTOS's table starts 2022-11-11: 61 days before its 2023-01-12 unlock, too few to fit β.
    const b = svc.backtest("APTOS", "unlock_aptos_2023_01_12", 14);
    expect(b.basis).not.toBe("event");
  });

  it("does not double-count unlocks closer together than the window", () => {
    // LOOKSRARE unlocks on 2022-12-11 and 2022-12-12: a 2023-04 event's token history keeps one of them.
    const later = svc.events().find((s) => s.event.symbol === "LOOKSRARE" && s.event.date === "2023-03-13")!;
    const b = svc.backtest("LOOKSRARE", later.event.id, 14);
    expect(b.basis).toBe("event");
    // An event outside its token's price coverage (or a linear month): the token's own earlier discrete unlocks answer.
    const hist = svc
      .events()
      .filter((s) => svc.backtestRefusal(s.event.symbol, s.event.id, 30) === null)
      .map((s) => svc.backtest(s.event.symbol, s.event.id, 30))
      .find((b) => b.basis === "token_history" && b.excluded_overlapping > 0)!;
    expect(hist).toBeDefined();
    expect(hist.reactions.every((r) => r.token === hist.token)).toBe(true);
    const dates = hist.reactions.map((r) => Date.parse(r.unlock_date) / 86_400_000).sort((a, b) => a - b);
    for (let i = 1; i < dates.length; i++) expect(dates[i]! - dates[i - 1]!).toBeGreaterThanOrEqual(30);
    expect(hist.excluded_overlapping).toBeGreaterThan(0);
  });
});

describe("backtest fallback hierarchy", () => {
  it("falls back to the category across other tokens, pooled and said so; then refuses", () => {
    // A copy of the 6MV store plus a token whose only unlock is after the data ends.
    const extra: UnlockSnapshot = structuredClone(snap);
    const tmpl = extra.tokens.find((t) => t.symbol === "LOOKSRARE")!;
    extra.tokens.push({
      ...structuredClone(tmpl),
      symbol: "FRESH",
      prices: null,
      schedules: [{ ...tmpl.schedules[0]!, kind: "cliff", category: "team", start: "2023-12-01", end: null }],
    });
    extra.tokens.push({
      ...structuredClone(tmpl),
      symbol: "LONELY",
      prices: null,
      schedules: [
        { ...tmpl.schedules[0]!, kind: "cliff", category: "airdrop", start: "2023-12-01", end: null },
      ],
    });
    const s = createUnlockService(
      buildUnlockStore(validateUnlockSnapshot(extra)),
      () => new Date("2023-05-01T00:00:00Z"),
    );
    const b = s.backtest("FRESH", "unlock_fresh_2023_12_01", 14);
    expect(b.basis).toBe("category_history");
    expect(b.pooled_across_tokens).toBe(true);
    expect(b.reactions.length).toBeGreaterThan(0);
    expect(b.reactions.every((r) => r.recipient_category === "team" && r.token !== "FRESH")).toBe(true);
    expect(s.backtestRefusal("LONELY", "unlock_lonely_2023_12_01", 14)).toMatch(/No measurable reaction/);
  });
});

describe("6MV importer", () => {
  it("realigns the 4 tables labelled at lag 0 and excludes the 8 whose own ETH column matches at neither shift", () => {
    const failed = imported.gates
      .filter((g) => !g.passed)
      .map((g) => g.table)
      .sort();
    expect(failed).toEqual([
      "bitdao.public",
      "euler.private",
      "filecoin.private",
      "nym.public",
      "stakewise.private",
      "stakewise.public",
      "tornado-cash.private",
      "uniswap.private",
    ]);
    const lag0 = imported.gates
      .filter((g) => g.passed && g.shift === 0)
      .map((g) => g.table)
      .sort();
    expect(lag0).toEqual([
      "curve-dao-token.private",
      "pooltogether.public",
      "sweatcoin.private",
      "sweatcoin.public",
    ]);
    expect(imported.gates.filter((g) => g.passed)).toHaveLength(18);
    const symbols = snap.tokens.map((t) => t.symbol);
    for (const gone of ["EULER", "FILECOIN", "STAKEWISE", "TORNADOCASH", "UNISWAP"])
      expect(symbols).not.toContain(gone);
    for (const kept of ["CURVEDAOTOKEN", "SWEATCOIN"]) expect(symbols).toContain(kept);
    // A lag-0 table keeps its dates: its first row's price is the series' first value on the same day.
    const sweat = snap.tokens.find((t) => t.symbol === "SWEATCOIN")!;
    expect(sweat.prices!.start).toBe("2022-09-12");
    expect(snap.tokens.every((t) => t.prices?.benchmark_close === undefined)).toBe(true);
  });

  it("splits a daily series into a linear stream and a one-off release", () => {
    const days = new Map<number, number>();
    for (let d = 100; d < 130; d++) days.set(d, 10);
    days.set(115, 510);
    const pieces = piecesFromDaily(days, "Team", "team");
    const cliffs = pieces.filter((p) => p.kind === "cliff");
    expect(cliffs).toHaveLength(1);
    expect(cliffs[0]!.amount_tokens).toBe(500);
    expect(pieces.reduce((s, p) => s + p.amount_tokens, 0)).toBe(30 * 10 + 500);
  });

  it("spearman on known data", () => {
    expect(spearman([1, 2, 3, 4], [10, 20, 30, 40])).toBeCloseTo(1, 12);
    expect(spearman([1, 2, 3, 4], [4, 3, 2, 1])).toBeCloseTo(-1, 12);
    expect(spearman([1, 2, 3, 4, 5], [2, 1, 4, 3, 5])).toBeCloseTo(0.8, 12);
  });
});
