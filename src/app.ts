import { randomUUID } from "node:crypto";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { SupportedResponse } from "@x402/core/types";
import Fastify, { type FastifyInstance, type FastifyServerOptions } from "fastify";
import type { BenchmarkService } from "./benchmark/service.js";
import type { Config } from "./config.js";
import { ownershipProofCache } from "./discovery/documents.js";
import { describeRoutes } from "./discovery/openapi.js";
import { registerPrecompressedChallenges } from "./http/encoding.js";
import { clientErrorProblem, registerProblemHandlers } from "./http/problem.js";
import { registerSecurityHeaders } from "./http/security-headers.js";
import { validatorCompiler } from "./http/validation.js";
import type { LedgerPort } from "./ledger/port.js";
import mcp from "./mcp/plugin.js";
import { registerFreshnessMetrics, servedDataAsOf } from "./observability/freshness.js";
import {
  combineObservers,
  createMetrics,
  type Metrics,
  registerLedgerMetrics,
  registerMetrics,
} from "./observability/metrics.js";
import {
  type CheckResult,
  createHealthMonitor,
  createReadiness,
  type HealthMonitor,
  ledgerWriteProbe,
  withMetricsListener,
} from "./observability/readiness.js";
import { REQUEST_ID_HEADER, requestIdFor } from "./observability/request-id.js";
import { readinessRoutes } from "./observability/routes.js";
import { benchmarkHandlers } from "./operations/benchmark.js";
import { unlockHandlers } from "./operations/unlocks.js";
import type { PaymentObserver } from "./payments/core/events.js";
import type { FacilitatorGateway } from "./payments/facilitator/gateway.js";
import { registerPaywall } from "./payments/http/paywall.js";
import payments from "./payments/http/plugin.js";
import type { ChainReader } from "./payments/recovery/chain-reader.js";
import type { ServiceIdentity } from "./payments/terms/requirements.js";
import * as compress from "./plugins/external/compress.js";
import * as cors from "./plugins/external/cors.js";
import * as rateLimit from "./plugins/external/rate-limit.js";
import * as swagger from "./plugins/external/swagger.js";
import * as underPressure from "./plugins/external/under-pressure.js";
import type { FreshnessSource } from "./refresh/freshness.js";
import type { LiveUnlocks, UnlockGeneration } from "./refresh/live-unlocks.js";
import { discoveryRoutes } from "./routes/discovery.js";
import { docsRoutes } from "./routes/docs.js";
import { metaRoutes } from "./routes/meta.js";
import { type PaidRoutesOptions, paidRoutes } from "./routes/paid.js";
import { tokensRoutes } from "./routes/tokens.js";
import { upcomingAnswerBody } from "./routes/unlocks.js";
import { ProblemSchema } from "./schemas/common.js";
import type { UnlockService } from "./unlocks/service.js";

export const SERVICE_VERSION = "1.0.0";
/** The seller as every 402 names it (`resource.serviceName`, `resource.iconUrl`); the icon is served by docsRoutes. */
export const SERVICE: ServiceIdentity = { name: "pressure402", iconPath: "/favicon.svg" };

declare module "fastify" {
  interface FastifyInstance {
    /** The cached health state behind /ready, and the metrics the metrics listener serves. */
    observability: {
      health: HealthMonitor;
      metrics: Metrics;
      /** Whether the metrics listener listens (the server tells once it tried), shown in /ready's checks. */
      reportMetricsListener(state: CheckResult): void;
    };
  }
}

export interface AppDeps {
  config: Config;
  unlocks: UnlockService;
  benchmark: BenchmarkService;
  ledger: LedgerPort;
  /** Other instances may share the ledger (PostgreSQL): dead incarnations are told by the ledger, not assumed. */
  ledgerShared?: boolean;
  gateway: FacilitatorGateway;
  /** Settles lost settlement outcomes from the chain (optional). */
  chain?: ChainReader | undefined;
  /** Receives payment outcomes, facilitator latency, circuit state and reconciler backlog besides /metrics. */
  paymentObserver?: PaymentObserver;
  /** Clock of the payment core (tests inject one); default real time. */
  paymentsClock?: () => Date;
  /** Background reconciler / heartbeat period in ms; 0 (tests) runs it once at start only. */
  paymentsMaintenanceMs?: number;
  payTo: `0x${string}`;
  /** Human label of the facilitator in use (URL, "cdp" or "devnet"); shown on GET /. */
  facilitatorLabel: string;
  clock?: () => Date;
  logger?: FastifyServerOptions["logger"];
  /** The facilitator's GET /supported, for /ready; without it /ready reports the facilitator as unchecked (503). */
  supported?: () => Promise<SupportedResponse>;
  /** Unlock data refreshed while serving: each request is answered from the generation current when it arrived. */
  liveUnlocks?: LiveUnlocks;
  /** Per-source refresh state, shown on GET /, /ready, /v1/tokens and /metrics. */
  freshness?: FreshnessSource;
}

/** Payment proofs and credentials must never reach a log line. */
export const REDACT = [
  "req.headers['payment-signature']",
  "req.headers['x-payment']",
  "req.headers.authorization",
  "req.headers.cookie",
  // The secrets that alone recover a paid response (the proof itself becomes public on chain).
  "req.headers['idempotency-key']",
  "res.headers['idempotency-key']",
  "res.headers['payment-response']",
  "res.headers['x-payment-response']",
  "res.headers['payment-required']",
];

export function loggerOptions(level: string): FastifyServerOptions["logger"] {
  return { level, redact: { paths: REDACT, censor: "[redacted]" } };
}

/** Builds the app with its dependencies injected: no I/O here, so tests drive it with `inject`. */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const { config } = deps;
  const clock = deps.clock ?? (() => new Date());
  const app = Fastify({
    logger: deps.logger ?? loggerOptions(config.logLevel),
    bodyLimit: config.bodyLimit,
    // Fastify takes a hop count at run time (proxy-addr), though its types omit number.
    trustProxy: config.trustProxy as boolean | string[],
    requestTimeout: config.requestTimeoutMs,
    onProtoPoisoning: "error",
    onConstructorPoisoning: "error",
    clientErrorHandler: clientErrorProblem,
    return503OnClosing: true,
    ajv: { customOptions: { removeAdditional: false } },
    requestIdHeader: false,
    genReqId: requestIdFor,
  }).withTypeProvider<TypeBoxTypeProvider>();
  // Hooks every request runs are callback hooks: an async one costs a promise and a microtask per request.
  app.addHook("onRequest", (request, reply, done) => {
    reply.header(REQUEST_ID_HEADER, request.id);
    done();
  });
  app.setValidatorCompiler(validatorCompiler);
  app.addSchema(ProblemSchema);
  // Bodies are JSON only (the contract); anything else is a 415 rather than a string the schema then rejects.
  app.removeContentTypeParser("text/plain");

  registerSecurityHeaders(app);
  // External plugins first, then the app's own (fastify/demo order).
  await app.register(cors.default, cors.autoConfig);
  await app.register(rateLimit.default, rateLimit.autoConfig(config));
  // After the rate limiter: unknown paths are limited too.
  registerProblemHandlers(app);
  await app.register(underPressure.default, underPressure.autoConfig(config));
  // Before the routes: it attaches itself to each route as it is added. Its hook runs after the payments hook, so
  // receipts and idempotency records keep the identity body.
  await app.register(compress.default, compress.autoConfig);
  await app.register(swagger.default, swagger.autoConfig(config, SERVICE_VERSION));

  describeRoutes(app);

  const incarnation = randomUUID();
  const metrics = createMetrics();
  const observer = deps.paymentObserver
    ? combineObservers(metrics.observer, deps.paymentObserver)
    : metrics.observer;
  const circuit = () => deps.gateway.position();
  metrics.beforeScrape = () => metrics.observer.circuitState(circuit());
  registerFreshnessMetrics(metrics.registry, deps.freshness, clock, () =>
    servedDataAsOf((deps.liveUnlocks?.current().service ?? deps.unlocks).data(), deps.freshness),
  );
  await registerMetrics(app, metrics, { token: config.metricsToken });
  const ledgerStats = deps.ledger.inFlightStats?.bind(deps.ledger);
  if (ledgerStats) registerLedgerMetrics(metrics.registry, ledgerStats, deps.paymentsClock);
  const health = createHealthMonitor(
    createReadiness({
      supported: deps.supported ?? (() => Promise.reject(new Error("no facilitator probe configured"))),
      scheme: "exact",
      network: config.network.caip2,
      probeLedger: ledgerWriteProbe(deps.ledger, incarnation),
      circuit,
      observer,
      // Only a probe that really asked the facilitator says anything about its health: with no probe configured the
      // failing stand-in must not count toward the circuit (every refresh would, and the circuit would open).
      ...(deps.supported
        ? { onFacilitatorProbe: (reachable: boolean) => deps.gateway.probed?.(reachable) }
        : {}),
    }),
    circuit,
  );
  let metricsListenerState: CheckResult | undefined;
  app.decorate("observability", {
    health,
    metrics,
    reportMetricsListener: (state: CheckResult) => {
      metricsListenerState = state;
    },
  });
  app.addHook("onReady", async () => health.start(config.healthRefreshMs));
  app.addHook("onClose", async () => health.stop());
  await app.register(readinessRoutes, {
    check: async () => withMetricsListener(await health.report(), metricsListenerState),
    freshness: deps.freshness,
    clock,
  });

  await app.register(payments, {
    gateway: deps.gateway,
    observer,
    incarnation,
    ledger: deps.ledger,
    terms: {
      payTo: deps.payTo,
      network: config.network,
      maxTimeoutSeconds: config.paymentTimeoutSeconds,
      service: SERVICE,
    },
    publicBaseUrl: config.publicBaseUrl,
    requirePublicBaseUrl: config.env === "production",
    idempotencyTtlMs: config.idempotencyTtlSeconds * 1000,
    chain: deps.chain,
    // Payment time is real time (authorization validity, retention), whatever clock the domain data is read at.
    ...(deps.paymentsClock ? { clock: deps.paymentsClock } : {}),
    maintenanceMs: deps.paymentsMaintenanceMs ?? 0,
    singleInstance: !deps.ledgerShared,
    rereadWindowMs: config.paidRereadSeconds * 1000,
    dataGeneration: (request) => generationOf(request).version,
  });
  // After the payments hook: a browser's GET 402 becomes the paywall page.
  registerPaywall(app);
  registerPrecompressedChallenges(app);
  // Verified once per origin: a signature check is cheap, but not free for every crawler hit.
  const proofsFor = ownershipProofCache(deps.payTo, config.ownershipProofs);
  await app.register(metaRoutes, {
    payTo: deps.payTo,
    facilitator: deps.facilitatorLabel,
    version: SERVICE_VERSION,
    publicBaseUrl: config.publicBaseUrl,
    proofsFor,
    network: config.network,
    freshness: deps.freshness,
    clock,
  });
  await app.register(discoveryRoutes, {
    publicBaseUrl: config.publicBaseUrl,
    proofsFor,
    network: config.network,
  });
  await app.register(docsRoutes);
  // A refresh swaps the unlock data whole; a request keeps the generation it arrived with to its end.
  const live = deps.liveUnlocks;
  const pinned = new WeakMap<object, UnlockGeneration>();
  if (live)
    app.addHook("onRequest", async (request) => {
      pinned.set(request, live.current());
    });
  const generationOf = (request: object): UnlockGeneration =>
    pinned.get(request) ?? live?.current() ?? { service: deps.unlocks, version: "static" };
  // Each paid operation's checks and answer, whether its HTTP route or its MCP tool carries the call.
  const handlers = {
    ...unlockHandlers({
      unlocksFor: (request) => generationOf(request).service,
      derivatives: deps.freshness?.derivatives?.bind(deps.freshness),
    }),
    ...benchmarkHandlers({
      benchmark: deps.benchmark,
      ledger: deps.ledger,
      phase: config.benchmark.phase,
      provisionalCap: config.benchmark.provisionalCap,
      clock,
    }),
  };
  const paidRoutesOptions: PaidRoutesOptions = {
    handlers,
    network: config.network,
    provisional: config.benchmark.phase === "provisional",
    answerBodies: {
      upcoming: upcomingAnswerBody({ clock, dataVersion: (request) => generationOf(request).version }),
    },
  };
  // Two groups around the free token list: the published OpenAPI document lists its paths in this order.
  await app.register(paidRoutes, { ...paidRoutesOptions, tag: "unlocks" });
  await app.register(tokensRoutes, {
    unlocksFor: (request) => generationOf(request).service,
    freshness: deps.freshness,
    clock,
  });
  await app.register(paidRoutes, { ...paidRoutesOptions, tag: "benchmark" });
  // The same operations as MCP tools (x402 MCP transport), on the payment core without an HTTP hop.
  await app.register(mcp, { version: SERVICE_VERSION, network: config.network, handlers });

  // Registered after the payments hook so it runs once settlement is done: a keep-alive socket of a request still in
  // flight at close would otherwise hold app.close() open for keepAliveTimeout (72 s), past the grace period.
  let closing = false;
  app.addHook("preClose", async () => {
    closing = true;
  });
  app.addHook("onSend", (_request, reply, payload, done) => {
    if (closing) reply.header("Connection", "close");
    done(null, payload);
  });
  return app;
}
