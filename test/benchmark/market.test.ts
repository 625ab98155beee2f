import { describe, expect, it } from "vitest";
import { CATEGORIES } from "../../src/benchmark/catalog/schema.js";
import { loadCatalog } from "../../src/benchmark/catalog/snapshot.js";
import { figures, freshness, serviceVotes } from "../../src/benchmark/market.js";
import { buildMarketIndex, type IndexedEntry } from "../../src/benchmark/market-index.js";
import { serviceIds } from "../../src/benchmark/sellers.js";
import { harrellDavis, incompleteBeta } from "../../src/benchmark/stats.js";

const index = buildMarketIndex(loadCatalog());

function largestService(entries: readonly IndexedEntry[]): string {
  const counts = new Map<string, number>();
  for (const e of entries) counts.set(e.service, (counts.get(e.service) ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))[0]?.[0] as string;
}

describe("one vote per service on the shipped market", () => {
  it.each(CATEGORIES.map((c) => [c]))(
    "%s: p90 moves by at most a tenth when its largest service is removed",
    (cat) => {
      const pool = index.pools.get(cat);
      if (pool === undefined) throw new Error(`no ${cat} market`);
      const big = largestService(pool.entries);
      const all = figures(serviceVotes(pool.entries));
      const without = figures(serviceVotes(pool.entries.filter((e) => e.service !== big)));
      expect(all.service_count).toBeGreaterThanOrEqual(30);
      const change = Math.abs((without.p90 as number) / (all.p90 as number) - 1);
      expect(change).toBeLessThanOrEqual(0.1);
    },
  );

  it("counts a service with many endpoints once", () => {
    const pool = index.pools.get("data")!;
    const big = largestService(pool.entries);
    const votes = serviceVotes(pool.entries);
    const vote = votes.find((v) => v.service === big)!;
    expect(vote.endpoints).toBeGreaterThan(50);
    expect(votes.filter((v) => v.service === big).length).toBe(1);
    expect(figures(votes)).toMatchObject({
      endpoint_count: pool.entries.length,
      service_count: votes.length,
    });
  });
});

describe("services", () => {
  it("groups listings that share a host or a payTo address (EVM addresses case-insensitively)", () => {
    const ids = serviceIds([
      { url: "https://a.example/x", pay_to: "0xAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" },
      { url: "https://a.example/y", pay_to: "0x1111111111111111111111111111111111111111" },
      { url: "https://b.example/z", pay_to: "0xaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" },
      { url: "https://www.c.example/z", pay_to: null },
      { url: "https://c.example/w", pay_to: "0x2222222222222222222222222222222222222222" },
      { url: "https://d.example/", pay_to: "0x3333333333333333333333333333333333333333" },
    ]);
    expect(ids).toEqual(["a.example", "a.example", "a.example", "c.example", "c.example", "d.example"]);
  });
});

describe("Harrell–Davis quantiles", () => {
  it("matches known values", () => {
    expect(incompleteBeta(0.5, 2, 2)).toBeCloseTo(0.5, 12);
    expect(incompleteBeta(0.3, 1, 1)).toBeCloseTo(0.3, 12);
    expect(incompleteBeta(0.2, 2, 3)).toBeCloseTo(0.1808, 10);
    // Symmetric data: the median is the middle; a constant sample is itself.
    expect(harrellDavis([1, 2, 3, 4, 5], 50)).toBeCloseTo(3, 10);
    expect(harrellDavis([7, 7, 7], 90)).toBeCloseTo(7, 10);
    expect(harrellDavis([], 50)).toBeNull();
    const q = harrellDavis([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 90) as number;
    expect(q).toBeGreaterThan(8.5);
    expect(q).toBeLessThan(10);
  });
});

describe("freshness", () => {
  it("takes the newest dated observation as the as-of date and counts undated ones", () => {
    const pool = index.pools.get("search")!;
    const f = freshness(pool.entries, new Date("2026-11-22T00:00:00Z"));
    const dated = pool.entries
      .map((e) => e.entry.observed_at)
      .filter((t): t is string => t !== null)
      .sort();
    expect(f.as_of).toBe(dated.at(-1));
    expect(f.oldest_observed_at).toBe(dated[0]);
    expect(f.dated_count + f.undated_count).toBe(pool.entries.length);
    expect(f.age_days).toBe(
      Math.floor((Date.parse("2026-11-22T00:00:00Z") - Date.parse(f.as_of as string)) / 86_400_000),
    );
  });
});
