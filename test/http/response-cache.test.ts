import { describe, expect, it } from "vitest";
import { createResponseCache } from "../../src/http/response-cache.js";

const counting = () => {
  let calls = 0;
  const make = (body: string) => () => {
    calls++;
    return body;
  };
  return { make, calls: () => calls };
};

describe("response cache", () => {
  it("computes a key once per generation and reuses the body", () => {
    const cache = createResponseCache({ maxEntries: 8, maxUnits: 1000 });
    const c = counting();
    expect(cache.get("v1|100", "30|0", c.make("a"))).toBe("a");
    expect(cache.get("v1|100", "30|0", c.make("b"))).toBe("a");
    expect(c.calls()).toBe(1);
    expect(cache.get("v1|100", "60|0", c.make("c"))).toBe("c");
    expect(c.calls()).toBe(2);
  });

  it("drops every entry when the generation (data version or day) changes", () => {
    const cache = createResponseCache({ maxEntries: 8, maxUnits: 1000 });
    cache.get("v1|100", "k1", () => "day 100");
    cache.get("v1|100", "k2", () => "day 100 too");
    expect(cache.get("v1|101", "k1", () => "day 101")).toBe("day 101");
    expect(cache.size).toBe(1);
    expect(cache.get("v2|101", "k1", () => "v2")).toBe("v2");
    // Going back to an older generation recomputes too: nothing of it was kept.
    expect(cache.get("v1|101", "k1", () => "v1 again")).toBe("v1 again");
  });

  it("evicts the least recently used entry past maxEntries", () => {
    const cache = createResponseCache({ maxEntries: 2, maxUnits: 1000 });
    cache.get("g", "a", () => "A");
    cache.get("g", "b", () => "B");
    cache.get("g", "a", () => "A2"); // a is now the most recent
    cache.get("g", "c", () => "C"); // evicts b
    expect(cache.size).toBe(2);
    expect(cache.get("g", "a", () => "A3")).toBe("A");
    expect(cache.get("g", "b", () => "B2")).toBe("B2");
  });

  it("keeps its size under maxUnits, and does not keep a body larger than the bound", () => {
    const cache = createResponseCache({ maxEntries: 100, maxUnits: 10 });
    cache.get("g", "a", () => "aaaa");
    cache.get("g", "b", () => "bbbb");
    cache.get("g", "c", () => "cccc"); // 12 > 10: a goes
    expect(cache.units).toBe(8);
    expect(cache.get("g", "a", () => "new")).toBe("new");
    expect(cache.units).toBeLessThanOrEqual(10);
    const big = "x".repeat(11);
    expect(cache.get("g", "big", () => big)).toBe(big);
    expect(cache.get("g", "big", () => "recomputed")).toBe("recomputed");
  });
});
