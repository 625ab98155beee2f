import Fastify, { type FastifyInstance } from "fastify";
import pino from "pino";
import { registerProblemHandlers } from "../../src/http/problem.js";
import { validatorCompiler } from "../../src/http/validation.js";
import type { LedgerPort } from "../../src/ledger/port.js";
import type { Attempt, PaidRoute, PaymentCore } from "../../src/payments/core/core.js";
import { createPaymentCore } from "../../src/payments/core/create-core.js";
import { noopObserver } from "../../src/payments/core/events.js";
import type { FacilitatorGateway } from "../../src/payments/facilitator/gateway.js";
import { KEPT_AS_SENT } from "../../src/payments/http/http-answers.js";
import payments from "../../src/payments/http/plugin.js";
import { decodeProof, requestFingerprint } from "../../src/payments/terms/proof.js";
import { requirementsV2 } from "../../src/payments/terms/requirements.js";
import { b64, TEST_NETWORK } from "./proofs.js";

export const CORE_TERMS = {
  payTo: "0x00000000000000000000000000000000000000aa",
  maxTimeoutSeconds: 300,
  network: TEST_NETWORK,
} as const;
export const CORE_NOW = new Date("2026-01-15T12:00:00Z");
export const silentLog = pino({ level: "silent" });
/** A paid operation of the core's own, known to no route. */
export const CORE_ROUTE: PaidRoute = {
  route: "POST /score",
  amount: "100000",
  description: "a paid call",
  acceptsV1: false,
};
/** A handler's successful answer, as the core settles and keeps it. */
export const HANDLER_OK = {
  statusCode: 200,
  contentType: "application/json; charset=utf-8",
  body: '{"score":42}',
};

/** The payment core alone, as a transport would build it: a fixed clock and incarnation, one-minute windows. */
export function testCore(gateway: FacilitatorGateway, ledger: LedgerPort): PaymentCore {
  return createPaymentCore(
    {
      answers: KEPT_AS_SENT,
      gateway,
      ledger,
      terms: CORE_TERMS,
      observer: noopObserver,
      clock: () => CORE_NOW,
      incarnation: "test-incarnation",
      idempotencyTtlMs: 60_000,
      lockTtlMs: 60_000,
    },
    silentLog,
  );
}

/**
 * A bare Fastify app with the product's validator, error handler and the payments plugin alone (CORE_TERMS,
 * PUBLIC_BASE_URL https://api.example): the plugin tested without the product's routes, which a test then adds.
 */
export async function paymentsApp(gateway: FacilitatorGateway, ledger: LedgerPort): Promise<FastifyInstance> {
  const app = Fastify({ logger: false });
  app.setValidatorCompiler(validatorCompiler);
  registerProblemHandlers(app);
  await app.register(payments, {
    gateway,
    ledger,
    terms: CORE_TERMS,
    publicBaseUrl: "https://api.example",
    idempotencyTtlMs: 60_000,
  });
  return app;
}

/** A v2 proof of CORE_ROUTE as the core receives it: decoded, matched to its requirements, for `POST {token: ARB}`. */
export function coreAttempt(proof: unknown, at: Partial<Attempt> = {}): Attempt {
  const decoded = decodeProof("payment-signature", b64(proof));
  if (!decoded.ok) throw new Error(decoded.detail);
  return {
    route: CORE_ROUTE,
    proof: decoded.proof,
    requirements: requirementsV2(CORE_ROUTE, CORE_TERMS),
    requestFingerprint: requestFingerprint("POST", CORE_ROUTE.route, {}, { token: "ARB" }),
    idempotencyKey: undefined,
    paymentId: undefined,
    ppRef: undefined,
    now: CORE_NOW,
    log: silentLog,
    ...at,
  };
}
