import compress from "@fastify/compress";
import cors from "@fastify/cors";
import helmet from "@fastify/helmet";
import rateLimit from "@fastify/rate-limit";
import swagger from "@fastify/swagger";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import underPressure from "@fastify/under-pressure";
import Fastify, { type FastifyInstance, type FastifyServerOptions } from "fastify";
import type { BenchmarkService } from "./benchmark/service.js";
import type { Config } from "./config.js";
import { HttpProblem, registerProblemHandlers } from "./http/problem.js";
import { validatorCompiler } from "./http/validation.js";
import type { FacilitatorGateway } from "./payments/facilitator.js";
import payments from "./payments/plugin.js";
import type { Reconciler } from "./payments/reconcile.js";
import { benchmarkRoutes } from "./routes/benchmark.js";
import { metaRoutes } from "./routes/meta.js";
import { unlockRoutes } from "./routes/unlocks.js";
import { ProblemSchema } from "./schemas/common.js";
import type { Ledger } from "./store/ledger.js";
import type { UnlockService } from "./unlocks/service.js";

export const SERVICE_VERSION = "1.0.0";

export interface AppDeps {
  config: Config;
  unlocks: UnlockService;
  benchmark: BenchmarkService;
  ledger: Ledger;
  gateway: FacilitatorGateway;
  /** Recovers lost settlements from the chain (optional). */
  reconciler?: Reconciler | undefined;
  payTo: `0x${string}`;
  /** Human label of the facilitator in use (URL, "cdp" or "devnet"); shown on GET /. */
  facilitatorLabel: string;
  clock?: () => Date;
  logger?: FastifyServerOptions["logger"];
}

/** Payment proofs and credentials must never reach a log line. */
export const REDACT = [
  "req.headers['payment-signature']",
  "req.headers['x-payment']",
  "req.headers.authorization",
  "req.headers.cookie",
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
    return503OnClosing: true,
    ajv: { customOptions: { removeAdditional: false } },
  }).withTypeProvider<TypeBoxTypeProvider>();
  app.setValidatorCompiler(validatorCompiler);
  app.addSchema(ProblemSchema);
  // Bodies are JSON only (the contract); anything else is a 415 rather than a string the schema then rejects.
  app.removeContentTypeParser("text/plain");
  registerProblemHandlers(app);

  // External plugins first, then the app's own (fastify/demo order).
  await app.register(helmet, { global: true });
  await app.register(cors, {
    origin: true,
    methods: ["GET", "POST", "OPTIONS"],
    allowedHeaders: [
      "Content-Type",
      "PAYMENT-SIGNATURE",
      "X-PAYMENT",
      "Idempotency-Key",
      "Access-Control-Expose-Headers",
    ],
    exposedHeaders: [
      "PAYMENT-REQUIRED",
      "PAYMENT-RESPONSE",
      "X-PAYMENT-RESPONSE",
      "Retry-After",
      "Idempotent-Replayed",
    ],
    maxAge: 600,
  });
  await app.register(rateLimit, {
    global: true,
    max: config.rateLimit.max,
    timeWindow: config.rateLimit.windowMs,
    enableDraftSpec: true,
    errorResponseBuilder: (_request, context) =>
      new HttpProblem(
        429,
        "rate-limited",
        `Rate limit of ${context.max} requests per ${context.after} exceeded.`,
      ),
  });
  await app.register(underPressure, {
    maxEventLoopDelay: config.maxEventLoopDelayMs,
    retryAfter: 5,
    exposeStatusRoute: false,
  });
  // Before the routes: it attaches itself to each route as it is added. Its hook runs after the payments hook, so
  // receipts and idempotency records keep the identity body. Bodies under 2 KiB (every 402, problem and small result)
  // are sent as they are: compressing them costs more than it saves.
  await app.register(compress, { global: true, threshold: 2048, encodings: ["br", "gzip"] });
  await app.register(swagger, {
    // Components are named by their $id ("Problem") instead of def-N.
    refResolver: {
      buildLocalReference: (json, _base, _fragment, i) =>
        typeof json.$id === "string" ? json.$id : `def-${i}`,
    },
    openapi: {
      openapi: "3.1.0",
      info: {
        title: "pressure402",
        version: SERVICE_VERSION,
        description:
          "Pay-per-call API for token unlock sell-pressure risk and x402 endpoint price benchmarks. Every paid route " +
          "is settled with x402 in USDC on Base (eip155:8453): call without a proof to receive 402 and PAYMENT-REQUIRED, " +
          "then repeat the identical request with PAYMENT-SIGNATURE (x402 v2) or, on the unlock routes, X-PAYMENT (v1).",
      },
      tags: [
        { name: "unlocks", description: "Token unlock sell-pressure intelligence" },
        { name: "benchmark", description: "x402 endpoint price benchmarks (provisional)" },
        { name: "meta", description: "Free service routes" },
      ],
    },
  });

  await app.register(payments, {
    gateway: deps.gateway,
    ledger: deps.ledger,
    terms: { payTo: deps.payTo, maxTimeoutSeconds: config.paymentTimeoutSeconds },
    publicBaseUrl: config.publicBaseUrl,
    idempotencyTtlMs: config.idempotencyTtlSeconds * 1000,
    reconciler: deps.reconciler,
  });
  await app.register(metaRoutes, {
    payTo: deps.payTo,
    facilitator: deps.facilitatorLabel,
    version: SERVICE_VERSION,
  });
  await app.register(unlockRoutes, { unlocks: deps.unlocks, clock });
  await app.register(benchmarkRoutes, {
    benchmark: deps.benchmark,
    ledger: deps.ledger,
    phase: config.benchmark.phase,
    provisionalCap: config.benchmark.provisionalCap,
    clock,
  });

  // Registered after the payments hook so it runs once settlement is done: a keep-alive socket of a request still in
  // flight at close would otherwise hold app.close() open for keepAliveTimeout (72 s), past the grace period.
  let closing = false;
  app.addHook("preClose", async () => {
    closing = true;
  });
  app.addHook("onSend", async (_request, reply, payload) => {
    if (closing) reply.header("Connection", "close");
    return payload;
  });
  return app;
}
