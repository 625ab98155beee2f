import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PRICES } from "../../src/operations/prices.js";
import { requirementsV2 } from "../../src/payments/terms/requirements.js";
import { TEST_PAY_TO, type TestApp, testApp } from "../helpers/app.js";
import { b64, TEST_NETWORK, v2Proof } from "../helpers/proofs.js";

let t: TestApp;
beforeAll(async () => {
  t = await testApp();
});
afterAll(() => t.close());

const terms = { payTo: TEST_PAY_TO, maxTimeoutSeconds: 300, network: TEST_NETWORK };
const pay = (price: (typeof PRICES)[keyof typeof PRICES]) => ({
  "payment-signature": b64(v2Proof(requirementsV2(price, terms))),
});
const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  t.app.inject({
    method: "POST",
    url,
    headers: { "content-type": "application/json", ...headers },
    payload: JSON.stringify(body),
  });

function expectProblem(
  res: { statusCode: number; headers: Record<string, unknown>; json(): unknown },
  status: number,
) {
  expect(res.statusCode).toBe(status);
  expect(res.headers["content-type"]).toMatch(/^application\/problem\+json/);
  expect(res.headers["payment-required"]).toBeUndefined();
}

describe("GET /v1/unlocks/upcoming: the contract's query", () => {
  it.each([
    ["days=0", "/days"],
    ["days=366", "/days"],
    ["days=1.5", "/days"],
    ["days=abc", "/days"],
    ["days=0x10", "/days"],
    ["minRisk=-1", "/minRisk"],
    ["minRisk=101", "/minRisk"],
    ["minRisk=5.5", "/minRisk"],
    ["foo=1", "/foo"],
    ["pp_ref=has%20space", "/pp_ref"],
    [`pp_ref=${"a".repeat(129)}`, "/pp_ref"],
  ])("?%s → 400 naming %s, no payment request", async (qs, pointer) => {
    const res = await t.app.inject({ method: "GET", url: `/v1/unlocks/upcoming?${qs}` });
    expectProblem(res, 400);
    expect((res.json() as { errors: { pointer: string; in: string }[] }).errors).toContainEqual(
      expect.objectContaining({ in: "query", pointer }),
    );
  });

  it("names every bad field at once", async () => {
    const res = await t.app.inject({ method: "GET", url: "/v1/unlocks/upcoming?days=0&minRisk=500" });
    const pointers = (res.json() as { errors: { pointer: string }[] }).errors.map((e) => e.pointer).sort();
    expect(pointers).toEqual(["/days", "/minRisk"]);
  });

  it("applies the defaults and echoes them once paid", async () => {
    const res = await t.app.inject({
      method: "GET",
      url: "/v1/unlocks/upcoming",
      headers: pay(PRICES.upcoming),
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ days: 30, minRisk: 0 });
    const custom = await t.app.inject({
      method: "GET",
      url: "/v1/unlocks/upcoming?days=365&minRisk=40",
      headers: pay(PRICES.upcoming),
    });
    const body = custom.json() as { days: number; minRisk: number; unlocks: { risk_score: number }[] };
    expect(body).toMatchObject({ days: 365, minRisk: 40 });
    expect(body.unlocks.length).toBeGreaterThan(0);
    for (const u of body.unlocks) expect(u.risk_score).toBeGreaterThanOrEqual(40);
  });

  it("asks for payment with the 0.02 USD price when valid and unpaid", async () => {
    const res = await t.app.inject({ method: "GET", url: "/v1/unlocks/upcoming?days=7" });
    expect(res.statusCode).toBe(402);
    expect(res.json()).toMatchObject({ x402Version: 1, accepts: [{ maxAmountRequired: "20000" }] });
  });
});

describe("POST routes: bodies as the contract states", () => {
  const cases: [string, string, unknown, string][] = [
    ["/v1/unlock-risk", "missing token", { unlock_event_id: "x" }, "/token"],
    ["/v1/unlock-risk", "empty token", { token: "", unlock_event_id: "x" }, "/token"],
    ["/v1/unlock-risk", "empty event id", { token: "ARB", unlock_event_id: "" }, "/unlock_event_id"],
    ["/v1/unlock-risk", "extra field", { token: "ARB", unlock_event_id: "x", extra: 1 }, "/extra"],
    [
      "/v1/unlock-risk",
      "string boolean",
      { token: "ARB", unlock_event_id: "x", includeEvidence: "true" },
      "/includeEvidence",
    ],
    ["/v1/token/risk-summary", "lookback 0", { token: "ARB", lookbackDays: 0 }, "/lookbackDays"],
    ["/v1/token/risk-summary", "lookback 366", { token: "ARB", lookbackDays: 366 }, "/lookbackDays"],
    ["/v1/token/risk-summary", "fractional lookback", { token: "ARB", lookbackDays: 1.5 }, "/lookbackDays"],
    ["/v1/token/risk-summary", "string lookback", { token: "ARB", lookbackDays: "30" }, "/lookbackDays"],
    [
      "/v1/unlock/backtest",
      "window 121",
      { token: "ARB", unlock_event_id: "x", windowDays: 121 },
      "/windowDays",
    ],
    ["/v1/unlock/backtest", "window 0", { token: "ARB", unlock_event_id: "x", windowDays: 0 }, "/windowDays"],
    ["/v1/benchmark/endpoint", "relative url", { endpoint_url: "/api/x" }, "/endpoint_url"],
    ["/v1/benchmark/endpoint", "ftp url", { endpoint_url: "ftp://a.example/x" }, "/endpoint_url"],
    ["/v1/benchmark/endpoint", "credentials", { endpoint_url: "https://u:p@a.example/x" }, "/endpoint_url"],
    [
      "/v1/benchmark/endpoint",
      "bad category",
      { endpoint_url: "https://a.example/x", category_hint: "food" },
      "/category_hint",
    ],
    ["/v1/benchmark/endpoint", "extra field", { endpoint_url: "https://a.example/x", price: 1 }, "/price"],
  ];
  it.each(cases)("%s %s → 400 at %s", async (url, _name, body, pointer) => {
    const before = t.gateway.calls.verify;
    const res = await post(url, body, pay(PRICES.unlockRisk));
    expectProblem(res, 400);
    expect((res.json() as { errors: { pointer: string }[] }).errors.map((e) => e.pointer)).toContain(pointer);
    expect(t.gateway.calls.verify).toBe(before);
  });

  it("a body that is not JSON is a 400; a non-JSON content type is a 415", async () => {
    const bad = await t.app.inject({
      method: "POST",
      url: "/v1/unlock-risk",
      headers: { "content-type": "application/json" },
      payload: "{",
    });
    expectProblem(bad, 400);
    const text = await t.app.inject({
      method: "POST",
      url: "/v1/unlock-risk",
      headers: { "content-type": "text/plain" },
      payload: "x",
    });
    expectProblem(text, 415);
  });

  it("prototype poisoning is refused", async () => {
    const res = await t.app.inject({
      method: "POST",
      url: "/v1/token/risk-summary",
      headers: { "content-type": "application/json" },
      payload: '{"token":"ARB","__proto__":{"polluted":true}}',
    });
    expectProblem(res, 400);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("a body over the limit is a 413", async () => {
    const res = await post("/v1/token/risk-summary", { token: "A".repeat(40_000) });
    expectProblem(res, 413);
  });
});

describe("unknown tokens and events: 404 before any payment request", () => {
  it.each([
    ["/v1/unlock-risk", { token: "NOPE", unlock_event_id: "unlock_nope_2027_01_01" }],
    ["/v1/unlock-risk", { token: "ARB", unlock_event_id: "unlock_arb_1999_01_01" }],
    ["/v1/token/risk-summary", { token: "NOPE" }],
    ["/v1/unlock/backtest", { token: "ARB", unlock_event_id: "does-not-exist" }],
  ])("%s %j", async (url, body) => {
    const before = t.gateway.calls.verify;
    const res = await post(url, body, pay(PRICES.unlockRisk));
    expectProblem(res, 404);
    expect(t.gateway.calls.verify).toBe(before);
  });

  it("an event of another token is unknown for this token", async () => {
    const upcoming = await t.app.inject({
      method: "GET",
      url: "/v1/unlocks/upcoming?days=365",
      headers: pay(PRICES.upcoming),
    });
    const items = (upcoming.json() as { unlocks: { token: string; unlock_event_id: string }[] }).unlocks;
    const first = items[0]!;
    const other = items.find((u) => u.token !== first.token)!;
    const res = await post("/v1/unlock-risk", { token: other.token, unlock_event_id: first.unlock_event_id });
    expectProblem(res, 404);
  });
});

describe("paid unlock routes return the contract's fields", () => {
  it("score, summary and backtest of a real upcoming event", async () => {
    const upcoming = await t.app.inject({
      method: "GET",
      url: "/v1/unlocks/upcoming?days=90",
      headers: pay(PRICES.upcoming),
    });
    const item = (upcoming.json() as { unlocks: { token: string; unlock_event_id: string }[] }).unlocks[0]!;
    expect(item).toMatchObject({
      token: expect.any(String),
      unlock_event_id: expect.stringMatching(/^unlock_[a-z0-9]+_\d{4}_\d{2}_\d{2}/),
    });

    const risk = await post(
      "/v1/unlock-risk",
      { token: item.token.toLowerCase(), unlock_event_id: item.unlock_event_id },
      pay(PRICES.unlockRisk),
    );
    expect(risk.statusCode).toBe(200);
    const scored = risk.json() as Record<string, unknown>;
    expect(scored).toMatchObject({
      token: item.token,
      unlock_event_id: item.unlock_event_id,
      risk_score: expect.any(Number),
      legend: { fields: expect.any(Object), codes: expect.any(Object) },
    });
    expect(scored.size_band).toBeUndefined();
    expect(Array.isArray(scored.evidence)).toBe(true);
    const full = await post(
      "/v1/unlock-risk",
      { token: item.token, unlock_event_id: item.unlock_event_id, view: "full" },
      pay(PRICES.unlockRisk),
    );
    expect(full.json()).toMatchObject({ size_band: expect.any(String), market: expect.any(Object) });
    const noEvidence = await post(
      "/v1/unlock-risk",
      { token: item.token, unlock_event_id: item.unlock_event_id, includeEvidence: false },
      pay(PRICES.unlockRisk),
    );
    expect((noEvidence.json() as Record<string, unknown>).evidence).toBeUndefined();

    const summary = await post("/v1/token/risk-summary", { token: item.token }, pay(PRICES.riskSummary));
    expect(summary.json()).toMatchObject({
      token: item.token,
      windowDays: 90,
      eventCount: expect.any(Number),
    });

    const backtest = await post(
      "/v1/unlock/backtest",
      { token: item.token, unlock_event_id: item.unlock_event_id },
      pay(PRICES.backtest),
    );
    expect(backtest.statusCode).toBe(200);
    expect(backtest.json()).toMatchObject({ windowDays: 14, reactions: expect.any(Array) });
  });
});

describe("backtest tells the truth", () => {
  /** ARB's 00:00 UTC prices straight from the shipped CSVs: the close of the previous UTC day's candle. */
  function closeBefore(file: string): (date: string, offset: number) => number {
    const read = (path: string) =>
      readFileSync(new URL(`../../data/market-history/${path}`, import.meta.url), "utf8")
        .trim()
        .split("\n")
        .slice(1)
        .map((l) => l.split(","))
        .map(([d, c]) => [d!, Number(c)] as const);
    // Days before the perp's first candle come from Binance spot (how the snapshot splices them).
    const rows = new Map([...read(`alt/binance-spot/${file}`), ...read(file)]);
    return (date, offset) => {
      const day = new Date(Date.parse(`${date}T00:00:00Z`) + (offset - 1) * 86_400_000)
        .toISOString()
        .slice(0, 10);
      const v = rows.get(day);
      if (v === undefined) throw new Error(`${file}: no candle ${day}`);
      return v;
    };
  }

  /** OLS slope of ARB's daily log returns on ETH's over days −120..−31 (the estimation window), from the CSVs. */
  function betaOver(tok: (d: string, k: number) => number, mkt: (d: string, k: number) => number, d: string) {
    const xs: number[] = [];
    const ys: number[] = [];
    for (let k = -120; k <= -31; k++) {
      ys.push(Math.log(tok(d, k + 1) / tok(d, k)));
      xs.push(Math.log(mkt(d, k + 1) / mkt(d, k)));
    }
    const mx = xs.reduce((a, b) => a + b, 0) / xs.length;
    const my = ys.reduce((a, b) => a + b, 0) / ys.length;
    let sxy = 0;
    let sxx = 0;
    xs.forEach((x, i) => {
      sxy += (x - mx) * (ys[i]! - my);
      sxx += (x - mx) ** 2;
    });
    return sxy / sxx;
  }

  it.each([14, 30, 60])(
    "ARB 2024-03-16 cliff, %i days: reactions match an independent computation to 0.01 pp",
    async (w) => {
      const arb = closeBefore("ARB.csv");
      const eth = closeBefore("ETH.csv");
      const d = "2024-03-16";
      const pre = (arb(d, 0) / arb(d, -w) - 1) * 100;
      const postRet = (arb(d, w) / arb(d, 0) - 1) * 100;
      const beta = betaOver(arb, eth, d);
      const lr = (f: (d: string, k: number) => number, a: number, b: number) =>
        Math.log(f(d, b) / f(d, a)) * 100;
      const abPre = lr(arb, -w, 0) - beta * lr(eth, -w, 0);
      const abPost = lr(arb, 0, w) - beta * lr(eth, 0, w);
      const res = await post(
        "/v1/unlock/backtest",
        { token: "ARB", unlock_event_id: "unlock_arb_2024_03_16", windowDays: w },
        pay(PRICES.backtest),
      );
      expect(res.statusCode).toBe(200);
      const compact = res.json() as { price_sources?: unknown; legend: { fields: { method: string } } };
      expect(compact.price_sources).toBeUndefined();
      expect(compact.legend.fields.method).toEqual(expect.any(String));
      const full = await post(
        "/v1/unlock/backtest",
        { token: "ARB", unlock_event_id: "unlock_arb_2024_03_16", windowDays: w, view: "full" },
        pay(PRICES.backtest),
      );
      const body = full.json() as {
        basis: string;
        synthetic: boolean;
        pooled_across_tokens: boolean;
        reactions: Record<string, number | string>[];
      };
      expect(body).toMatchObject({ basis: "event", synthetic: false, pooled_across_tokens: false });
      expect(
        (
          body as unknown as { price_sources: { symbol: string; segments: { venue: string }[] }[] }
        ).price_sources.map((p) => p.symbol),
      ).toEqual(["ARB", "ETH"]);
      expect(body.reactions).toHaveLength(1);
      const r = body.reactions[0]!;
      expect(r).toMatchObject({ token: "ARB", unlock_event_id: "unlock_arb_2024_03_16", date: d });
      // The compact reactions hold the same figures, without what repeats (window, benchmark, synthetic).
      const compactReaction = (compact as unknown as { reactions: Record<string, unknown>[] }).reactions[0]!;
      for (const [k, v] of Object.entries(compactReaction)) expect(r[k]).toEqual(v);
      expect(
        Object.keys(r)
          .filter((k) => !(k in compactReaction))
          .sort(),
      ).toEqual(["benchmark", "synthetic", "window_days"]);
      expect(Math.abs((r.pre_return_pct as number) - pre)).toBeLessThan(0.01);
      expect(Math.abs((r.post_return_pct as number) - postRet)).toBeLessThan(0.01);
      expect(Math.abs((r.beta as number) - beta)).toBeLessThan(1e-3);
      expect(Math.abs((r.abnormal_return_pct as number) - abPost)).toBeLessThan(0.01);
      expect(Math.abs((r.pre_abnormal_return_pct as number) - abPre)).toBeLessThan(0.01);
    },
  );

  it.each([
    ["TIA", "2024-10-31"],
    ["PYTH", "2024-05-20"],
    ["AVAX", "2024-02-22"],
  ])(
    "%s %s: a paid backtest answers from the event itself (history kept from the listing)",
    async (sym, date) => {
      const id = `unlock_${sym.toLowerCase()}_${date.replaceAll("-", "_")}`;
      const res = await post(
        "/v1/unlock/backtest",
        { token: sym, unlock_event_id: id, windowDays: 14 },
        pay(PRICES.backtest),
      );
      expect(res.statusCode).toBe(200);
      const body = res.json() as { basis: string; reactions: { token: string; unlock_event_id: string }[] };
      expect(body.basis).toBe("event");
      expect(body.reactions.map((r) => [r.token, r.unlock_event_id])).toEqual([[sym, id]]);
    },
  );

  it("ARB 2024-03-16: pct_circulating from the complete schedule is within 15 % of 87 (1.11B against ~1.28B)", async () => {
    const res = await post(
      "/v1/unlock/backtest",
      { token: "ARB", unlock_event_id: "unlock_arb_2024_03_16", windowDays: 14 },
      pay(PRICES.backtest),
    );
    const r = (res.json() as { reactions: { pct_circulating: number }[] }).reactions[0]!;
    expect(Math.abs(r.pct_circulating / 87 - 1)).toBeLessThan(0.15);
  });

  it("a backtest with no measurable reaction is refused with a problem before any payment request", async () => {
    const before = t.gateway.calls.verify;
    const unpaid = await post("/v1/unlock/backtest", {
      token: "APT",
      unlock_event_id: "unlock_apt_2022_10_12",
      windowDays: 14,
    });
    expectProblem(unpaid, 422);
    expect((unpaid.json() as { detail: string }).detail).toMatch(/No measurable reaction/);
    const paid = await post(
      "/v1/unlock/backtest",
      { token: "APT", unlock_event_id: "unlock_apt_2022_10_12", windowDays: 14 },
      pay(PRICES.backtest),
    );
    expectProblem(paid, 422);
    expect(t.gateway.calls.verify).toBe(before);
  });

  it("a future event falls back to the token's own history, each reaction naming its event", async () => {
    const res = await post(
      "/v1/unlock/backtest",
      { token: "ARB", unlock_event_id: "unlock_arb_2026_12_16", windowDays: 30 },
      pay(PRICES.backtest),
    );
    const body = res.json() as { basis: string; reactions: { token: string; unlock_event_id: string }[] };
    expect(body.basis).toBe("token_history");
    expect(body.reactions.length).toBeGreaterThan(0);
    for (const r of body.reactions) expect(r.unlock_event_id).toMatch(/^unlock_arb_/);
  });
});

describe("GET /v1/unlocks/upcoming: the filters buyers use", () => {
  type Item = {
    unlock_event_id: string;
    token: string;
    date: string;
    date_end?: string;
    type: string;
    category: string;
    amount_usd: number;
    pct_circulating: number | null;
    risk_score: number;
    codes: string[];
  };
  type List = {
    count: number;
    total: number;
    total_amount_usd: number;
    next_cursor: string | null;
    window_start: string;
    window_end: string;
    legend: { fields: Record<string, string>; codes: Record<string, string> };
    unlocks: Item[];
  };
  const list = async (qs: string): Promise<List> => {
    const res = await t.app.inject({
      method: "GET",
      url: `/v1/unlocks/upcoming?${qs}`,
      headers: pay(PRICES.upcoming),
    });
    expect(res.statusCode).toBe(200);
    return res.json() as List;
  };

  it.each([
    ["minUsd=-1", "/minUsd"],
    ["minUsd=abc", "/minUsd"],
    ["minPctCirculating=-0.1", "/minPctCirculating"],
    ["minPctCirculating=100.5", "/minPctCirculating"],
    ["tokens=", "/tokens"],
    ["tokens=ARB,,OP", "/tokens"],
    ["tokens=AR%20B", "/tokens"],
    [`tokens=${"A".repeat(65)}`, "/tokens"],
    [`tokens=${Array.from({ length: 51 }, () => "ARB").join(",")}`, "/tokens"],
    ["tokens=ARB,NOPE", "/tokens"],
    ["category=food", "/category"],
    ["type=vesting", "/type"],
    ["sort=size", "/sort"],
    ["limit=0", "/limit"],
    ["limit=501", "/limit"],
    ["limit=1.5", "/limit"],
    ["cursor=garbage", "/cursor"],
    [`cursor=${"1".repeat(41)}`, "/cursor"],
    ["cursor=0_0123456789abcdef", "/cursor"],
    ["view=tiny", "/view"],
  ])("?%s → 400 naming %s, before any payment request or facilitator call", async (qs, pointer) => {
    const unpaid = await t.app.inject({ method: "GET", url: `/v1/unlocks/upcoming?${qs}` });
    expectProblem(unpaid, 400);
    expect((unpaid.json() as { errors: { pointer: string; in: string }[] }).errors).toContainEqual(
      expect.objectContaining({ in: "query", pointer }),
    );
    const before = t.gateway.calls.verify;
    const paid = await t.app.inject({
      method: "GET",
      url: `/v1/unlocks/upcoming?${qs}`,
      headers: pay(PRICES.upcoming),
    });
    expectProblem(paid, 400);
    expect(t.gateway.calls.verify).toBe(before);
  });

  it("accepts each filter at its bounds", async () => {
    for (const qs of [
      "minUsd=0",
      "minPctCirculating=0",
      "minPctCirculating=100",
      "limit=1",
      "limit=500",
      `tokens=${Array.from({ length: 50 }, () => "arb").join(",")}`,
    ])
      expect((await list(qs)).count).toBeGreaterThanOrEqual(0);
  });

  it("each filter keeps exactly the items of the unfiltered list that pass it", async () => {
    const all = await list("days=90&limit=500");
    expect(all.total).toBe(all.count);
    expect(all.count).toBeGreaterThan(20);
    const same = (filtered: List, keep: (u: Item) => boolean) => {
      const want = all.unlocks.filter(keep).map((u) => u.unlock_event_id);
      expect(want.length).toBeGreaterThan(0);
      expect(filtered.unlocks.map((u) => u.unlock_event_id).sort()).toEqual([...want].sort());
      expect(filtered.total).toBe(want.length);
    };
    same(await list("days=90&limit=500&tokens=arb,OP"), (u) => u.token === "ARB" || u.token === "OP");
    same(await list("days=90&limit=500&category=investors"), (u) => u.category === "investors");
    same(await list("days=90&limit=500&type=cliff"), (u) => u.type === "cliff");
    same(await list("days=90&limit=500&type=linear"), (u) => u.type === "linear");
    same(await list("days=90&limit=500&minUsd=5000000"), (u) => u.amount_usd >= 5_000_000);
    same(await list("days=90&limit=500&minPctCirculating=0.5"), (u) => (u.pct_circulating ?? -1) >= 0.5);
    same(await list("days=90&limit=500&minRisk=30"), (u) => u.risk_score >= 30);
  });

  it("sorts by date (the first release day in the window), usd, pct_circulating or risk", async () => {
    const byDate = await list("days=90&limit=500");
    const dates = byDate.unlocks.map((u) => u.date);
    expect([...dates].sort()).toEqual(dates);
    // Dated by the release inside the window, never by a stream's earlier start.
    for (const u of byDate.unlocks) {
      expect(u.date >= byDate.window_start && u.date <= byDate.window_end).toBe(true);
      if (u.type === "linear") expect(u.date_end! >= u.date && u.date_end! <= byDate.window_end).toBe(true);
      else expect(u.date_end).toBeUndefined();
    }
    const desc = (xs: number[]) => expect([...xs].sort((a, b) => b - a)).toEqual(xs);
    desc((await list("days=90&limit=500&sort=usd")).unlocks.map((u) => u.amount_usd));
    desc((await list("days=90&limit=500&sort=risk")).unlocks.map((u) => u.risk_score));
    const pct = (await list("days=90&limit=500&sort=pct_circulating")).unlocks.map((u) => u.pct_circulating);
    const known = pct.filter((p): p is number => p !== null);
    desc(known);
    // Unknown shares come last.
    expect(pct.slice(0, known.length)).toEqual(known);
  });

  it("pages with limit and cursor through exactly the unpaged list; a cursor for another query is refused", async () => {
    const whole = await list("days=60&limit=500&sort=usd");
    const seen: string[] = [];
    let page = await list("days=60&limit=7&sort=usd");
    expect(page.count).toBe(7);
    expect(page.total).toBe(whole.total);
    expect(page.total_amount_usd).toBe(whole.total_amount_usd);
    for (let guard = 0; guard < 100; guard++) {
      seen.push(...page.unlocks.map((u) => u.unlock_event_id));
      if (page.next_cursor === null) break;
      page = await list(`days=60&limit=7&sort=usd&cursor=${page.next_cursor}`);
    }
    expect(seen).toEqual(whole.unlocks.map((u) => u.unlock_event_id));
    const first = await list("days=60&limit=7&sort=usd");
    const other = await t.app.inject({
      method: "GET",
      url: `/v1/unlocks/upcoming?days=60&limit=7&sort=risk&cursor=${first.next_cursor}`,
    });
    expectProblem(other, 400);
  });

  it("compact and full views of one answer hold the same figures; prose is said once, in the legend", async () => {
    const compact = await list("days=30&limit=500");
    const full = await list("days=30&limit=500&view=full");
    expect(full.unlocks.length).toBe(compact.unlocks.length);
    const { unlocks: cu, legend: cl, ...cTop } = compact;
    const { unlocks: fu, legend: fl, ...fTop } = full as List & { window_amount_tokens_by_token?: unknown };
    expect(fTop).toMatchObject(cTop);
    expect(fl).toEqual(cl);
    compact.unlocks.forEach((c, i) => {
      const f = full.unlocks[i] as Item & Record<string, unknown>;
      expect(Object.fromEntries(Object.keys(c).map((k) => [k, f[k]]))).toEqual(c);
      expect(f).toMatchObject({ size_band: expect.any(String), market: expect.any(Object) });
      for (const code of c.codes) expect(compact.legend.codes[code]).toEqual(expect.any(String));
      // No sentence rides in a compact item.
      for (const v of Object.values(c)) if (typeof v === "string") expect(v.length).toBeLessThan(48);
    });
    expect(compact.legend.fields.risk_score).toMatch(/not a forecast/);
  });

  it("an ongoing stream shows what it still releases, not its whole month", async () => {
    const full = await list("days=30&limit=500&view=full&type=linear");
    const ongoing = full.unlocks.filter((u) => u.codes.includes("on")) as (Item & {
      amount_tokens: number;
      event_amount_tokens: number;
      stream: { stream_start: string; month_amount_tokens: number };
    })[];
    expect(ongoing.length).toBeGreaterThan(0);
    for (const u of ongoing) {
      expect(u.date).toBe(full.window_start);
      expect(u.stream.stream_start < u.date).toBe(true);
      expect(u.amount_tokens).toBeLessThan(u.stream.month_amount_tokens);
      expect(u.event_amount_tokens).toBe(u.stream.month_amount_tokens);
    }
  });
});

describe("POST routes: compact by default, the same figures in view=full", () => {
  it("risk summary", async () => {
    const compact = (
      await post("/v1/token/risk-summary", { token: "ARB" }, pay(PRICES.riskSummary))
    ).json() as Record<string, unknown>;
    const full = (
      await post("/v1/token/risk-summary", { token: "ARB", view: "full" }, pay(PRICES.riskSummary))
    ).json() as Record<string, unknown>;
    expect(compact.supply_coverage).toBeUndefined();
    expect(full.supply_coverage).toEqual(expect.any(Object));
    for (const [k, v] of Object.entries(compact)) {
      if (k === "top_events")
        (v as Record<string, unknown>[]).forEach((e, i) => {
          const fe = (full.top_events as Record<string, unknown>[])[i]!;
          expect(Object.fromEntries(Object.keys(e).map((key) => [key, fe[key]]))).toEqual(e);
        });
      else expect(full[k]).toEqual(v);
    }
    expect(JSON.stringify(compact).length).toBeLessThan(JSON.stringify(full).length / 2);
  });
});
