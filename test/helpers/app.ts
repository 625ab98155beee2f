import type { FastifyInstance } from "fastify";
import { type AppDeps, buildApp } from "../../src/app.js";
import { loadCatalog } from "../../src/benchmark/catalog/snapshot.js";
import { createBenchmarkService } from "../../src/benchmark/service.js";
import { type Config, parseConfig } from "../../src/config.js";
import { type Ledger, openLedger } from "../../src/ledger/embedded.js";
import type { FacilitatorGateway } from "../../src/payments/facilitator/gateway.js";
import { loadUnlockStore } from "../../src/unlocks/data/snapshot.js";
import { createUnlockService } from "../../src/unlocks/service.js";
import { type FakeGateway, fakeGateway } from "./fake-gateway.js";

export const TEST_NOW = new Date("2026-11-22T12:00:00Z");
export const TEST_PAY_TO = "0x00000000000000000000000000000000000000aa" as const;

const unlockStore = loadUnlockStore();
const catalog = loadCatalog();

export interface TestApp {
  app: FastifyInstance;
  gateway: FakeGateway;
  ledger: Ledger;
  config: Config;
  close(): Promise<void>;
}

/** Test configuration: quiet, no rate limit or load shedding in the way, overridable per test (strings, as in env). */
export const testConfig = (env: Record<string, string> = {}): Config =>
  parseConfig({
    NODE_ENV: "test",
    LOG_LEVEL: "silent",
    RATE_LIMIT_MAX: "100000",
    CLIENT_MAX_IN_FLIGHT: "100000",
    MAX_EVENT_LOOP_DELAY_MS: "0",
    ...env,
  });

/** The real app over the shipped snapshots, with the gateway and ledger a test chooses. */
export function appWith(deps: {
  config: Config;
  gateway: FacilitatorGateway;
  ledger: Ledger;
  ledgerShared?: boolean;
  clock?: () => Date;
  logger?: AppDeps["logger"];
  facilitatorLabel?: string;
  chain?: AppDeps["chain"];
  paymentObserver?: AppDeps["paymentObserver"];
  paymentsClock?: AppDeps["paymentsClock"];
  payTo?: `0x${string}`;
  supported?: AppDeps["supported"];
}): Promise<FastifyInstance> {
  const clock = deps.clock ?? (() => TEST_NOW);
  return buildApp({
    config: deps.config,
    unlocks: createUnlockService(unlockStore, clock),
    benchmark: createBenchmarkService(catalog, { clock }),
    ledger: deps.ledger,
    ...(deps.ledgerShared ? { ledgerShared: true } : {}),
    gateway: deps.gateway,
    payTo: deps.payTo ?? TEST_PAY_TO,
    facilitatorLabel: deps.facilitatorLabel ?? "fake",
    clock,
    chain: deps.chain,
    ...(deps.paymentObserver ? { paymentObserver: deps.paymentObserver } : {}),
    ...(deps.paymentsClock ? { paymentsClock: deps.paymentsClock } : {}),
    ...(deps.supported ? { supported: deps.supported } : {}),
    logger: deps.logger ?? false,
  });
}

/** The real app with real services and snapshots, a fake facilitator gateway and an in-memory ledger (or LEDGER_PATH). */
export async function testApp(
  env: Record<string, string> = {},
  clock: () => Date = () => TEST_NOW,
  logger?: AppDeps["logger"],
): Promise<TestApp> {
  const config = testConfig(env);
  const gateway = fakeGateway();
  const ledger = openLedger(env.LEDGER_PATH ?? ":memory:");
  const app = await appWith({ config, gateway, ledger, clock, logger });
  await app.ready();
  return {
    app,
    gateway,
    ledger,
    config,
    close: async () => {
      await app.close();
      await ledger.close();
    },
  };
}
