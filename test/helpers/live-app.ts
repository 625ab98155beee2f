import type { FastifyInstance } from "fastify";
import { buildApp } from "../../src/app.js";
import { loadCatalog } from "../../src/benchmark/catalog/snapshot.js";
import { createBenchmarkService } from "../../src/benchmark/service.js";
import type { Config } from "../../src/config.js";
import type { LedgerPort } from "../../src/ledger/port.js";
import { liveUnlockData, loadServedSnapshot, servedReports } from "../../src/refresh/boot.js";
import type { ReadLimits } from "../../src/sources/http.js";
import { buildUnlockStore } from "../../src/unlocks/data/snapshot.js";
import { TEST_PAY_TO } from "./app.js";
import type { FakeGateway } from "./fake-gateway.js";

export interface LiveApp {
  app: FastifyInstance;
  data: ReturnType<typeof liveUnlockData>;
  /** Whether the served snapshot was seeded from the shipped one on this start. */
  seeded: boolean;
}

/**
 * The app as the server builds it with its refresh loop: the snapshot served from DATA_DIR, the live unlock data
 * and its freshness, a fake facilitator. The refresh sources are whatever `config` points at (the tests' stand-ins).
 */
export async function liveApp(o: {
  config: Config;
  clock: () => Date;
  ledger: LedgerPort;
  gateway: FakeGateway;
  limits?: ReadLimits;
  ledgerShared?: boolean;
}): Promise<LiveApp> {
  const loaded = loadServedSnapshot(o.config);
  const data = liveUnlockData(o.config, buildUnlockStore(loaded.snapshot, servedReports(o.config)), {
    clock: o.clock,
    ...(o.limits ? { limits: o.limits } : {}),
  });
  const app = await buildApp({
    config: o.config,
    unlocks: data.service,
    liveUnlocks: data.live,
    ...(data.refresh ? { freshness: data.refresh.freshness } : {}),
    benchmark: createBenchmarkService(loadCatalog(), { clock: o.clock }),
    ledger: o.ledger,
    ...(o.ledgerShared ? { ledgerShared: true } : {}),
    gateway: o.gateway,
    payTo: TEST_PAY_TO,
    facilitatorLabel: "fake",
    clock: o.clock,
    logger: false,
  });
  await app.ready();
  return { app, data, seeded: loaded.seeded };
}
