import { mkdtempSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../src/app.js";
import { loadCatalog } from "../../src/benchmark/catalog/snapshot.js";
import { createBenchmarkService } from "../../src/benchmark/service.js";
import { openLedger } from "../../src/ledger/embedded.js";
import { PRICES } from "../../src/operations/prices.js";
import { requirementsV2 } from "../../src/payments/terms/requirements.js";
import { createRefresher } from "../../src/refresh/refresher.js";
import { buildUnlockStore, readUnlockSnapshot } from "../../src/unlocks/data/snapshot.js";
import type { UnlockSnapshot } from "../../src/unlocks/data/types.js";
import { createUnlockService } from "../../src/unlocks/service.js";
import { TEST_PAY_TO, testConfig } from "../helpers/app.js";
import { fakeGateway } from "../helpers/fake-gateway.js";
import { b64, TEST_NETWORK, v2Proof } from "../helpers/proofs.js";

/**
 * A Binance USDⓈ-M stand-in for the derivatives evidence, in the documented shapes: exchangeInfo
 * `{symbols: [{symbol, status, contractType, onboardDate}]}`, fundingRate `[{symbol, fundingTime, fundingRate,
 * markPrice}]` and openInterestHist `[{symbol, sumOpenInterest, sumOpenInterestValue, timestamp}]`. No recording of
 * these exists in the repository: the values are hand-written (ARB's onboardDate is its 2023-03-23 listing).
 */
const HOUR = 3_600_000;
const t0 = Date.parse("2026-03-18T16:00:00Z");
let server: Server;
let base = "";
const served = { poisonApt: false };

beforeAll(async () => {
  server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const symbol = url.searchParams.get("symbol");
    const json = (body: unknown) =>
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body));
    if (url.pathname === "/fapi/v1/exchangeInfo")
      return json({
        timezone: "UTC",
        symbols: [
          {
            symbol: "ARBUSDT",
            status: "TRADING",
            contractType: "PERPETUAL",
            onboardDate: Date.parse("2023-03-23T00:00:00Z"),
          },
          {
            symbol: "APTUSDT",
            status: "TRADING",
            contractType: "PERPETUAL",
            onboardDate: Date.parse("2022-10-19T00:00:00Z"),
          },
          {
            symbol: "JUPUSDT",
            status: "SETTLING",
            contractType: "PERPETUAL",
            onboardDate: Date.parse("2024-01-31T00:00:00Z"),
          },
        ],
      });
    if (url.pathname === "/fapi/v1/fundingRate") {
      if (symbol === "APTUSDT" && served.poisonApt)
        return res.writeHead(200, { "content-type": "text/html" }).end("<html></html>");
      return json(
        [0, 1, 2].map((i) => ({
          symbol,
          fundingTime: t0 - (2 - i) * 8 * HOUR,
          fundingRate: ["0.00010000", "-0.00020000", "0.00007000"][i],
          markPrice: "0.1",
        })),
      );
    }
    if (url.pathname === "/futures/data/openInterestHist")
      return json([
        { symbol, sumOpenInterest: "1000", sumOpenInterestValue: "100000.5", timestamp: t0 - 24 * HOUR },
        { symbol, sumOpenInterest: "1100", sumOpenInterestValue: "110000.25", timestamp: t0 },
      ]);
    res.writeHead(400, { "content-type": "application/json" }).end('{"code":-1121,"msg":"Invalid symbol."}');
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

let refresher: ReturnType<typeof createRefresher>;
let snapshot: UnlockSnapshot;

describe("funding rate and open interest around unlocks: evidence with source and as-of", () => {
  it("reads them per listed perpetual, skips a contract that is not trading, and keeps a failed token's last figures", async () => {
    const full = readUnlockSnapshot(new URL("../../data/unlocks.snapshot.json", import.meta.url).pathname);
    snapshot = {
      ...full,
      tokens: full.tokens.filter((t) => ["ARB", "APT", "JUP"].includes(t.symbol)),
    };
    refresher = createRefresher({
      dataDir: mkdtempSync(join(tmpdir(), "p402-deriv-")),
      initial: snapshot,
      bases: { binance: base, bybit: base, coingecko: base },
      coinIds: new Map(),
      sources: ["derivatives"],
    });
    await refresher.runOnce(["derivatives"]);
    const arb = refresher.derivatives().get("ARB");
    expect(arb).toEqual({
      token: "ARB",
      symbol: "ARBUSDT",
      listed_at: "2023-03-23T00:00:00.000Z",
      funding_rate_last: "0.00007000",
      funding_rate_mean_7d: expect.closeTo(-0.00001, 12),
      funding_as_of: "2026-03-18T16:00:00.000Z",
      open_interest_usd: 110000.25,
      open_interest_as_of: "2026-03-18T16:00:00.000Z",
      source: expect.stringContaining("fundingRate"),
    });
    expect(refresher.derivatives().has("JUP")).toBe(false);
    const status = refresher.status().find((s) => s.source === "derivatives");
    expect(status?.last_error).toMatch(/JUP \(not a trading USDⓈ-M perpetual in exchangeInfo\)/);

    served.poisonApt = true;
    const before = refresher.derivatives().get("APT");
    await refresher.runOnce(["derivatives"]);
    expect(refresher.derivatives().get("APT")).toEqual(before);
    expect(refresher.status().find((s) => s.source === "derivatives")?.last_error).toMatch(
      /APT \(HTML page instead of JSON\)/,
    );
  });

  it("are shown, with source and as-of, in the paid unlock-risk answer's evidence (never a score input)", async () => {
    const now = new Date("2026-03-19T12:00:00Z");
    const clock = () => now;
    const unlocks = createUnlockService(buildUnlockStore(snapshot), clock);
    const ledger = openLedger(":memory:");
    const app = await buildApp({
      config: testConfig(),
      unlocks,
      freshness: {
        intervalSeconds: 3600,
        sources: () => refresher.status(),
        circulating: () => refresher.circulating(),
        derivatives: () => refresher.derivatives(),
      },
      benchmark: createBenchmarkService(loadCatalog(), { clock }),
      ledger,
      gateway: fakeGateway(),
      payTo: TEST_PAY_TO,
      facilitatorLabel: "fake",
      clock,
      logger: false,
    });
    try {
      const terms = { payTo: TEST_PAY_TO, maxTimeoutSeconds: 300, network: TEST_NETWORK };
      const risk = async (token: string, includeEvidence: boolean) => {
        const ev = unlocks.events().find((e) => e.event.symbol === token);
        expect(ev).toBeDefined();
        const res = await app.inject({
          method: "POST",
          url: "/v1/unlock-risk",
          headers: { "payment-signature": b64(v2Proof(requirementsV2(PRICES.unlockRisk, terms))) },
          payload: { token, unlock_event_id: ev?.event.id, includeEvidence },
        });
        expect(res.statusCode).toBe(200);
        return res.json() as { risk_score: number; derivatives?: Record<string, unknown> | null };
      };
      const arb = await risk("ARB", true);
      const { token: _t, ...shown } = refresher.derivatives().get("ARB") as unknown as Record<
        string,
        unknown
      >;
      expect(arb.derivatives).toEqual(shown);
      expect(arb.derivatives).toMatchObject({
        funding_as_of: "2026-03-18T16:00:00.000Z",
        open_interest_usd: 110000.25,
        source: expect.stringContaining("openInterestHist"),
      });
      // The same score without it: evidence only.
      const bare = await risk("ARB", false);
      expect(bare).not.toHaveProperty("derivatives");
      expect(bare.risk_score).toBe(arb.risk_score);
      // A token with no figures says so (null), nothing generated.
      expect((await risk("JUP", true)).derivatives).toBeNull();
    } finally {
      await app.close();
      await ledger.close();
    }
  });
});
