import type { FacilitatorClient } from "@x402/core/server";
import {
  FacilitatorResponseError,
  FacilitatorTimeoutError,
  type PaymentPayload,
  type PaymentRequirements,
  SettleError,
  type SettleResponse,
  VerifyError,
  type VerifyResponse,
} from "@x402/core/types";
import type { FacilitatorConfig } from "../config.js";
import { cdpAuthHeaders } from "./cdp-auth.js";
import {
  admit,
  type CircuitLabel,
  type CircuitOptions,
  type CircuitState,
  circuitLabel,
  closedCircuit,
  recordFailure,
  recordNeutral,
  recordSuccess,
} from "./circuit.js";
import { createFacilitatorHttpClient, FacilitatorUnreachableError } from "./facilitator-client.js";

export interface FacilitatorTarget {
  url: string;
  timeoutMs: number;
  cdp?: { apiKeyId: string; apiKeySecret: string };
}

/** Where and how to reach the configured facilitator (the devnet's is a plain URL known only once it runs). */
export function facilitatorTarget(config: FacilitatorConfig, url: string): FacilitatorTarget {
  return {
    url,
    timeoutMs: config.timeoutMs,
    ...(config.kind === "cdp"
      ? { cdp: { apiKeyId: config.apiKeyId, apiKeySecret: config.apiKeySecret } }
      : {}),
  };
}

export function createFacilitatorClient(target: FacilitatorTarget): FacilitatorClient {
  return createFacilitatorHttpClient({
    url: target.url,
    timeoutMs: target.timeoutMs,
    ...(target.cdp ? { createAuthHeaders: cdpAuthHeaders(target.url, target.cdp) } : {}),
  });
}

/** The facilitator could not give an answer: the request fails closed with this status, never with free content. */
export class FacilitatorFault extends Error {
  constructor(
    readonly status: 502 | 503,
    readonly reason: string,
    readonly retryAfterSeconds: number,
    message: string,
  ) {
    super(message);
  }
}

export const SETTLEMENT_PENDING = "settlement_pending";

export interface FacilitatorGateway {
  verify(payload: PaymentPayload, requirements: PaymentRequirements): Promise<VerifyResponse>;
  settle(payload: PaymentPayload, requirements: PaymentRequirements): Promise<SettleResponse>;
  readonly circuit: Readonly<CircuitState>;
  /** The circuit's position now (metrics, readiness). */
  position(): CircuitLabel;
  /** The background health probe's outcome (GET /supported answered or not): the facilitator's own health. */
  probed?(reachable: boolean): void;
}

/** "Facilitator verify failed (503): …" — how @x402/core's HTTP client reports a non-2xx answer without a verdict. */
const HTTP_STATUS = /^Facilitator \w+ failed \((\d{3})\)/;

/**
 * Maps an error of a facilitator call to the fault answered to the client, and says whether it is the facilitator's
 * own fault (timeouts, unreachable, its 5xx, a malformed answer): only those count toward the circuit. Anything
 * else — its 4xx to a request we built, or an error of our own process — must not let a sender trip the breaker.
 */
export function classify(
  error: unknown,
  operation: string,
  retryAfterSeconds: number,
): { fault: FacilitatorFault; counts: boolean } {
  if (error instanceof FacilitatorFault) return { fault: error, counts: true };
  if (error instanceof FacilitatorTimeoutError)
    return {
      fault: new FacilitatorFault(
        503,
        "facilitator_timeout",
        retryAfterSeconds,
        `facilitator ${operation} timed out`,
      ),
      counts: true,
    };
  if (error instanceof FacilitatorResponseError)
    return {
      fault: new FacilitatorFault(502, "facilitator_bad_response", retryAfterSeconds, error.message),
      counts: true,
    };
  const message = error instanceof Error ? error.message : String(error);
  // Refused/reset connections and DNS failures: ours on verify/settle, fetch's TypeError("fetch failed") on /supported.
  if (
    error instanceof FacilitatorUnreachableError ||
    (error instanceof TypeError && message === "fetch failed")
  )
    return {
      fault: new FacilitatorFault(
        503,
        "facilitator_unreachable",
        retryAfterSeconds,
        `facilitator ${operation}: ${message}`,
      ),
      counts: true,
    };
  const status = Number(HTTP_STATUS.exec(message)?.[1] ?? 0);
  return {
    fault: new FacilitatorFault(
      502,
      "facilitator_error",
      retryAfterSeconds,
      `facilitator ${operation}: ${message}`,
    ),
    counts: status >= 500,
  };
}

/**
 * Wraps a FacilitatorClient with fail-closed error mapping and a circuit breaker. A verify/settle *answer* (valid or
 * not, settled or not) is a success for the circuit; only transport faults and malformed answers count against it.
 */
export function createFacilitatorGateway(
  client: FacilitatorClient,
  opts: CircuitOptions,
  now: () => number = Date.now,
): FacilitatorGateway {
  const circuit = closedCircuit();
  const retryAfter = () => Math.max(1, Math.ceil(opts.cooldownMs / 1000));

  async function guarded<T>(operation: string, call: () => Promise<T>): Promise<T> {
    const admission = admit(circuit, opts, now());
    if (!admission.allowed)
      throw new FacilitatorFault(
        503,
        "facilitator_circuit_open",
        Math.max(1, Math.ceil(admission.retryAfterMs / 1000)),
        "facilitator is failing; not calling it until the cool-down ends",
      );
    try {
      const result = await call();
      recordSuccess(circuit);
      return result;
    } catch (error) {
      const { fault, counts } = classify(error, operation, retryAfter());
      if (counts) recordFailure(circuit, opts, now());
      else recordNeutral(circuit);
      throw fault;
    }
  }

  return {
    circuit,
    position: () => circuitLabel(circuit, opts.cooldownMs, now()),
    verify: (payload, requirements) =>
      guarded("verify", async () => {
        try {
          return await client.verify(payload, requirements);
        } catch (error) {
          if (error instanceof VerifyError)
            return {
              isValid: false,
              invalidReason: error.invalidReason ?? "invalid_payment",
              invalidMessage: error.invalidMessage,
              payer: error.payer,
            };
          throw error;
        }
      }),
    settle: (payload, requirements) =>
      guarded("settle", async () => {
        const once = async (): Promise<SettleResponse> => {
          try {
            return await client.settle(payload, requirements);
          } catch (error) {
            if (error instanceof SettleError)
              return {
                success: false,
                errorReason: error.errorReason ?? "settlement_failed",
                errorMessage: error.errorMessage,
                payer: error.payer,
                transaction: error.transaction ?? "",
                network: error.network ?? requirements.network,
              } as SettleResponse;
            throw error;
          }
        };
        const first = await once();
        // A broadcast-but-unconfirmed settlement is retried once with the same payload: the facilitator reconciles
        // against the transaction it already sent instead of sending a second one (as @x402/core's server does).
        if (!first.success && first.errorReason === SETTLEMENT_PENDING && first.transaction) return once();
        return first;
      }),
  };
}
