import { randomBytes } from "node:crypto";
import { brotliDecompressSync, gunzipSync } from "node:zlib";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import Fastify, { type FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { compressBody } from "../../src/http/encoding.js";
import type { PaidHandlers } from "../../src/operations/handler.js";
import { PRICES } from "../../src/operations/prices.js";
import { unlockHandlers } from "../../src/operations/unlocks.js";
import { requirementsV2 } from "../../src/payments/terms/requirements.js";
import { paidRoutes } from "../../src/routes/paid.js";
import { upcomingAnswerBody } from "../../src/routes/unlocks.js";
import { ProblemSchema } from "../../src/schemas/common.js";
import type { UnlockService, UpcomingResponse } from "../../src/unlocks/service.js";
import { TEST_NOW, TEST_PAY_TO, type TestApp, testApp } from "../helpers/app.js";
import { b64, TEST_NETWORK, v2Proof } from "../helpers/proofs.js";

const terms = { payTo: TEST_PAY_TO, maxTimeoutSeconds: 300, network: TEST_NETWORK };
/** A proof of a new payer each time: one payer's second proof for the same request would re-read the first. */
const pay = () => {
  const proof = v2Proof(requirementsV2(PRICES.upcoming, terms));
  proof.payload.authorization.from = `0x${randomBytes(20).toString("hex")}`;
  return { "payment-signature": b64(proof) };
};
const DAY_MS = 86_400_000;

describe("GET /v1/unlocks/upcoming over the real app: compression", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await testApp();
  });
  afterAll(() => t.close());

  const get = (headers: Record<string, string>) =>
    t.app.inject({ method: "GET", url: "/v1/unlocks/upcoming?days=365&limit=500&view=full", headers });

  it("br and gzip bodies decode to exactly the identity JSON", async () => {
    const identity = await get(pay());
    expect(identity.statusCode).toBe(200);
    expect(identity.headers["content-encoding"]).toBeUndefined();
    expect(identity.body.length).toBeGreaterThan(100_000);

    const br = await get({ ...pay(), "accept-encoding": "br" });
    expect(br.statusCode).toBe(200);
    expect(br.headers["content-encoding"]).toBe("br");
    expect(br.headers.vary).toMatch(/accept-encoding/i);
    const cors = await get({ ...pay(), "accept-encoding": "br", origin: "https://buyer.example" });
    expect(cors.headers.vary).toMatch(/origin/i);
    expect(cors.headers.vary).toMatch(/accept-encoding/i);
    expect(br.headers["payment-response"]).toBeTruthy();
    expect(br.rawPayload.length).toBeLessThan(identity.body.length / 4);
    expect(brotliDecompressSync(br.rawPayload).toString("utf8")).toBe(identity.body);

    // The cached compressed copy (brotli quality 5), not a fresh per-request one from the plugin (quality 4).
    expect(br.rawPayload.equals(compressBody(identity.body, "br"))).toBe(true);
    const again = await get({ ...pay(), "accept-encoding": "gzip;q=0.5, br" });
    expect(again.rawPayload.equals(br.rawPayload)).toBe(true);

    const gz = await get({ ...pay(), "accept-encoding": "gzip, deflate" });
    expect(gz.headers["content-encoding"]).toBe("gzip");
    expect(gunzipSync(gz.rawPayload).toString("utf8")).toBe(identity.body);
    expect(JSON.parse(identity.body)).toMatchObject({ days: 365, minRisk: 0 });
  });

  it("the 402 challenge is never served from the answer cache: its header as is, its body the v1 requirements", async () => {
    // The v1 body lists every input field, so with the filters it passes the 2 KiB compression threshold as the POST
    // routes' 402s do; whatever the encoding, it decodes to the requirements, never to a cached answer.
    const res = await get({ "accept-encoding": "br, gzip" });
    expect(res.statusCode).toBe(402);
    expect(res.headers["payment-required"]).toBeTruthy();
    const encoding = res.headers["content-encoding"];
    const text =
      encoding === "br"
        ? brotliDecompressSync(res.rawPayload).toString("utf8")
        : encoding === "gzip"
          ? gunzipSync(res.rawPayload).toString("utf8")
          : res.body;
    expect(JSON.parse(text)).toMatchObject({ x402Version: 1 });
  });

  it("an idempotent replay stored from a compressed reply decodes to the same body", async () => {
    const headers = { ...pay(), "idempotency-key": "compress-replay-1" };
    const first = await get({ ...headers, "accept-encoding": "gzip" });
    expect(first.statusCode).toBe(200);
    const replay = await get({ ...headers, "accept-encoding": "br" });
    expect(replay.headers["idempotent-replayed"]).toBe("true");
    const plain = await get(headers);
    expect(plain.headers["content-encoding"]).toBeUndefined();
    expect(brotliDecompressSync(replay.rawPayload).toString("utf8")).toBe(plain.body);
    expect(gunzipSync(first.rawPayload).toString("utf8")).toBe(plain.body);
  });
});

/** The route alone, with a free guard and a service that counts its calls, so what the cache does is visible. */
async function routeWithCountingService() {
  const state = { now: TEST_NOW, version: "v1", calls: 0 };
  const unlocks = {
    today: () => new Date(Math.floor(state.now.getTime() / DAY_MS) * DAY_MS).toISOString().slice(0, 10),
    data: () => ({ snapshot: { as_of: "2026-11-22" } }),
    hasToken: () => true,
    upcoming: (days: number, minRisk: number): UpcomingResponse => {
      state.calls++;
      const day = new Date(Math.floor(state.now.getTime() / DAY_MS) * DAY_MS).toISOString().slice(0, 10);
      return {
        days,
        minRisk,
        window_start: day,
        window_end: day,
        count: 0,
        total: 0,
        total_amount_usd: 0,
        next_offset: null,
        model_version: state.version,
        as_of: day,
        synthetic: false,
        score_kind: "supply-pressure ranking",
        window_amount_tokens_by_token: {},
        unlocks: [],
      };
    },
  } as unknown as UnlockService;
  const app = Fastify({ logger: false }).withTypeProvider<TypeBoxTypeProvider>();
  app.addSchema(ProblemSchema);
  app.decorate("payments", {
    guard: () => async () => {},
    reconcileNow: async () => ({ resolved: 0, remaining: 0 }),
    incarnation: "test",
  } as unknown as FastifyInstance["payments"]);
  const handlers = unlockHandlers({ unlocksFor: () => unlocks });
  await app.register(paidRoutes, {
    // Only the unlock routes are registered: the benchmark's handler is never reached.
    handlers: { ...handlers, benchmark: handlers.upcoming as unknown as PaidHandlers["benchmark"] },
    network: TEST_NETWORK,
    provisional: false,
    tag: "unlocks",
    answerBodies: {
      upcoming: upcomingAnswerBody({ clock: () => state.now, dataVersion: () => state.version }),
    },
  });
  await app.ready();
  const body = async (qs = "days=30") => {
    const res = await app.inject({ method: "GET", url: `/v1/unlocks/upcoming?${qs}` });
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toBe("application/json; charset=utf-8");
    return res.json() as UpcomingResponse;
  };
  return { app, state, body };
}

describe("GET /v1/unlocks/upcoming: the body is computed once per (data version, UTC day, query)", () => {
  it("reuses the body within a day, recomputes on the next UTC day and on a new data version", async () => {
    const { app, state, body } = await routeWithCountingService();
    try {
      const first = await body();
      expect(await body()).toEqual(first);
      expect(state.calls).toBe(1);

      await body("days=30&minRisk=10");
      await body("days=30&pp_ref=campaign-1"); // the tag does not change the body: same entry
      expect(state.calls).toBe(2);
      // The same query written in another order, or with its defaults spelt out, is the same entry.
      await body("minRisk=10&days=30");
      await body("sort=date&days=30&view=compact&limit=100");
      expect(state.calls).toBe(2);
      await body("days=30&view=full");
      await body("days=30&sort=usd");
      expect(state.calls).toBe(4);

      state.now = new Date(TEST_NOW.getTime() + 11 * 3_600_000); // 23:00 the same UTC day
      await body();
      expect(state.calls).toBe(4);

      state.now = new Date(TEST_NOW.getTime() + 12 * 3_600_000); // 00:00 the next UTC day
      const nextDay = await body();
      expect(state.calls).toBe(5);
      expect(nextDay.window_start).not.toBe(first.window_start);

      state.version = "v2";
      const reloaded = await body();
      expect(state.calls).toBe(6);
      expect(reloaded.model_version).toBe("v2");
      await body();
      expect(state.calls).toBe(6);
    } finally {
      await app.close();
    }
  });
});
