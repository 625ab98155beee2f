import Fastify, { type FastifyInstance } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import type { FreshnessSource } from "../../src/refresh/freshness.js";
import { tokensRoutes } from "../../src/routes/tokens.js";
import type { Derivatives } from "../../src/sources/derivatives/derivatives.js";
import { loadUnlockStore } from "../../src/unlocks/data/snapshot.js";
import { createUnlockService } from "../../src/unlocks/service.js";

/*
 * The token rows are built once per data generation, live maps, day and view: each of those changing shows at once,
 * and nothing else rebuilds them.
 */
const store = loadUnlockStore();
let app: FastifyInstance | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

const arbDerivatives = (funding: string): ReadonlyMap<string, Derivatives> =>
  new Map([
    [
      "ARB",
      {
        token: "ARB",
        symbol: "ARBUSDT",
        listed_at: null,
        funding_rate_last: funding,
        funding_rate_mean_7d: null,
        funding_as_of: "2026-11-22T08:00:00.000Z",
        open_interest_usd: null,
        open_interest_as_of: null,
        source: "stand-in",
      },
    ],
  ]);

async function start(state: { now: Date; derivatives: ReadonlyMap<string, Derivatives> }) {
  const service = createUnlockService(store, () => state.now);
  let generation = { service };
  const freshness: FreshnessSource = {
    intervalSeconds: 3600,
    sources: () => [],
    circulating: () => new Map(),
    derivatives: () => state.derivatives,
  };
  app = Fastify();
  await app.register(tokensRoutes, {
    unlocksFor: () => generation.service,
    freshness,
    clock: () => state.now,
  });
  const arb = async () => {
    const res = await (app as FastifyInstance).inject({ method: "GET", url: "/v1/tokens" });
    if (res.statusCode !== 200) throw new Error(`${res.statusCode}: ${res.body.slice(0, 300)}`);
    const body = res.json() as {
      today: string;
      tokens: { symbol: string; derivatives: Derivatives | null }[];
    };
    return { etag: res.headers.etag, today: body.today, row: body.tokens.find((t) => t.symbol === "ARB") };
  };
  const swap = () => {
    generation = { service: createUnlockService(store, () => state.now) };
  };
  return { arb, swap };
}

describe("GET /v1/tokens, built once per data, live maps, day and view", () => {
  it("a refresh that brings new derivatives shows at once, with a new ETag; an unchanged map keeps the ETag", async () => {
    const state = { now: new Date("2026-11-22T12:00:00Z"), derivatives: arbDerivatives("0.0001") };
    const t = await start(state);
    const a = await t.arb();
    expect(a.row?.derivatives?.funding_rate_last).toBe("0.0001");
    expect((await t.arb()).etag).toBe(a.etag);
    state.derivatives = arbDerivatives("0.0003");
    const b = await t.arb();
    expect(b.row?.derivatives?.funding_rate_last).toBe("0.0003");
    expect(b.etag).not.toBe(a.etag);
  });

  it("a new UTC day and a new data generation each rebuild the rows", async () => {
    const state = { now: new Date("2026-11-22T23:59:59Z"), derivatives: arbDerivatives("0.0001") };
    const t = await start(state);
    const a = await t.arb();
    state.now = new Date("2026-11-23T00:00:00Z");
    const b = await t.arb();
    expect(b.today).toBe("2026-11-23");
    expect(b.etag).not.toBe(a.etag);
    // A swapped-in generation is answered from its own rows: the same data here, so the same body and ETag.
    t.swap();
    expect((await t.arb()).etag).toBe(b.etag);
  });
});
