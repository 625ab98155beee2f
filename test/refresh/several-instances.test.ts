import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LedgerPort } from "../../src/ledger/port.js";
import { openPostgresLedger } from "../../src/ledger/postgres.js";
import { PRICES } from "../../src/operations/prices.js";
import { requirementsV2 } from "../../src/payments/terms/requirements.js";
import type { liveUnlockData } from "../../src/refresh/boot.js";
import { formatDay, parseDay } from "../../src/unlocks/data/dates.js";
import { readUnlockSnapshot } from "../../src/unlocks/data/snapshot.js";
import type { UnlockSnapshot } from "../../src/unlocks/data/types.js";
import { TEST_PAY_TO, testConfig } from "../helpers/app.js";
import { fakeGateway } from "../helpers/fake-gateway.js";
import { liveApp } from "../helpers/live-app.js";
import { asIfEarlier, type BinanceStandIn, binanceStandIn, downUrl } from "../helpers/market-standin.js";
import { startTestPostgres, type TestPostgres } from "../helpers/postgres.js";
import { b64, TEST_NETWORK, v2Proof } from "../helpers/proofs.js";

/*
 * Several instances on one PostgreSQL ledger, each refreshing on its own (no coordination) from the same source. Time
 * is a clock the test moves and every tick is a call the test makes: the source publishes each daily candle five
 * minutes after 00:00 UTC, instance A ticks at :10 past each hour and instance B at :40 (independent phases). At every
 * step, no instance serves a candle older than another's for longer than one period.
 */

const PERIOD_S = 3600;
const SHIPPED_LAST = "2026-03-18";
const HELD_BACK = 3;
const START_LAST = formatDay(parseDay(SHIPPED_LAST) - HELD_BACK); // 2026-03-15

interface Instance {
  readonly name: string;
  readonly app: FastifyInstance;
  readonly data: ReturnType<typeof liveUnlockData>;
  readonly ledger: LedgerPort;
  /** Tick offset within each period, in minutes. */
  readonly offsetMin: number;
}

let pgServer: TestPostgres;
let binance: BinanceStandIn;
let now = new Date(`${START_LAST}T00:00:00Z`);
const clock = () => now;
const instances: Instance[] = [];
const gateway = fakeGateway();
let full: UnlockSnapshot;

beforeAll(async () => {
  pgServer = await startTestPostgres();
  const ledgerUrl = await pgServer.freshSchema();
  full = readUnlockSnapshot(new URL("../../data/unlocks.snapshot.json", import.meta.url).pathname);
  const dir = mkdtempSync(join(tmpdir(), "p402-instances-"));
  const earlierFile = join(dir, "earlier.snapshot.json");
  writeFileSync(earlierFile, JSON.stringify(asIfEarlier(full, HELD_BACK)));
  binance = await binanceStandIn(full, START_LAST);
  const down = await downUrl();
  for (const [name, offsetMin] of [
    ["a", 10],
    ["b", 40],
  ] as const) {
    const config = testConfig({
      UNLOCKS_SNAPSHOT: earlierFile,
      DATA_DIR: join(dir, `data-${name}`),
      REFRESH_INTERVAL_SECONDS: String(PERIOD_S),
      BINANCE_FUTURES_BASE_URL: binance.url,
      BYBIT_BASE_URL: down,
      COINGECKO_BASE_URL: down,
      DEFILLAMA_BASE_URL: down,
    });
    // One after the other: each migrates the shared schema on open.
    const ledger = await openPostgresLedger(ledgerUrl);
    const { app, data } = await liveApp({ config, clock, ledger, gateway, ledgerShared: true });
    instances.push({ name, app, data, ledger, offsetMin });
  }
}, 180_000);

afterAll(async () => {
  for (const i of instances) {
    await i.data.refresh?.refresher.stop();
    await i.app.close();
    await i.ledger.close();
  }
  await binance?.close();
  await pgServer?.stop();
});

const servedDay = async (i: Instance, sym = "ARB"): Promise<string> => {
  const res = await i.app.inject({ method: "GET", url: "/v1/tokens" });
  expect(res.statusCode).toBe(200);
  const t = (res.json() as { tokens: { symbol: string; market: { price_as_of: string } }[] }).tokens.find(
    (x) => x.symbol === sym,
  );
  return t?.market.price_as_of as string;
};

describe("several instances, one PostgreSQL ledger, each refreshing on its own", () => {
  it("no instance serves data older than another's by more than one period", async () => {
    expect(instances).toHaveLength(2);
    for (const i of instances) expect(await servedDay(i)).toBe(START_LAST);

    // Steps in time order: the source's publications and each instance's ticks, over three days' candles.
    const from = Date.parse(`${formatDay(parseDay(START_LAST) + 1)}T22:00:00Z`);
    const until = Date.parse(`${formatDay(parseDay(SHIPPED_LAST) + 1)}T02:00:00Z`);
    type Step = { at: number; kind: "publish"; day: string } | { at: number; kind: "tick"; who: Instance };
    const steps: Step[] = [];
    for (let h = from; h < until; h += PERIOD_S * 1000) {
      const at = new Date(h);
      if (at.getUTCHours() === 0)
        steps.push({
          at: h + 5 * 60_000,
          kind: "publish",
          day: formatDay(parseDay(at.toISOString().slice(0, 10)) - 1),
        });
      for (const who of instances) steps.push({ at: h + who.offsetMin * 60_000, kind: "tick", who });
    }
    steps.sort((x, y) => x.at - y.at);

    /** When each instance first served each candle day. */
    const firstServed = new Map<string, Map<string, number>>(instances.map((i) => [i.name, new Map()]));
    const published = new Map<string, number>();
    let maxLagMs = 0;
    /** Whoever is behind has been behind another instance for at most one period (checked at `at`, before a step acts). */
    const checkLag = (at: number, days: Map<string, string>) => {
      for (const x of instances)
        for (const y of instances) {
          const dx = days.get(x.name) as string;
          const dy = days.get(y.name) as string;
          if (dx >= dy) continue;
          const ahead = formatDay(parseDay(dx) + 1);
          const since = Math.min(
            ...[...(firstServed.get(y.name) as Map<string, number>)]
              .filter(([d]) => d >= ahead)
              .map(([, t]) => t),
          );
          const lag = at - since;
          maxLagMs = Math.max(maxLagMs, lag);
          expect(
            lag,
            `${x.name} on ${dx} while ${y.name} on ${dy} at ${new Date(at).toISOString()}`,
          ).toBeLessThanOrEqual(PERIOD_S * 1000);
        }
    };
    let days = new Map<string, string>(instances.map((i) => [i.name, START_LAST]));
    for (const step of steps) {
      now = new Date(step.at);
      // The state since the previous step holds until this instant: its lag is largest now.
      checkLag(step.at, days);
      if (step.kind === "publish") {
        binance.through = step.day;
        published.set(step.day, step.at);
      } else await step.who.data.refresh?.refresher.runOnce(["binance"]);
      days = new Map();
      for (const i of instances) {
        const d = await servedDay(i);
        days.set(i.name, d);
        const seen = firstServed.get(i.name) as Map<string, number>;
        if (!seen.has(d)) seen.set(d, step.at);
      }
      checkLag(step.at, days);
    }
    // Every instance caught up with the source, each within one period of the publication.
    for (const i of instances) {
      expect(await servedDay(i)).toBe(SHIPPED_LAST);
      for (const [day, at] of published) {
        const seen = (firstServed.get(i.name) as Map<string, number>).get(day) as number;
        expect(seen - at).toBeGreaterThan(0);
        expect(seen - at).toBeLessThanOrEqual(PERIOD_S * 1000);
      }
    }
    // The phases differ by half a period: B serves a new candle 30 minutes after A, never more.
    expect(maxLagMs).toBe(30 * 60_000);
  });

  it("each instance answers paid requests (on the shared ledger) from its own refreshed data", async () => {
    const terms = { payTo: TEST_PAY_TO, maxTimeoutSeconds: 300, network: TEST_NETWORK };
    const answers: Map<string, string>[] = [];
    for (const i of instances) {
      const res = await i.app.inject({
        method: "GET",
        url: "/v1/unlocks/upcoming?days=60&limit=500&view=full",
        headers: { "payment-signature": b64(v2Proof(requirementsV2(PRICES.upcoming, terms))) },
      });
      expect(res.statusCode).toBe(200);
      const items = (
        res.json() as {
          unlocks: { token: string; unlock_event_id: string; market: { price_as_of: string } }[];
        }
      ).unlocks;
      const binanceItems = items.filter((x) => x.token !== "BLAST");
      expect(binanceItems.length).toBeGreaterThan(5);
      answers.push(
        new Map(binanceItems.map((x) => [`${x.token}/${x.unlock_event_id}`, x.market.price_as_of])),
      );
      expect(binanceItems.filter((x) => x.market.price_as_of === SHIPPED_LAST).length).toBeGreaterThan(5);
    }
    // Both instances price every item from the same candle.
    expect(answers[0]?.size).toBeGreaterThan(5);
    expect(answers[1]).toEqual(answers[0]);
  });
});
