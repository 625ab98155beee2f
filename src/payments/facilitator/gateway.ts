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
import type { FacilitatorConfig } from "../../config.js";
import type { FaultReason } from "../core/outcomes.js";
import { createPayerLimits, type PayerLimitOptions, type PayerLimits } from "../core/payer-limits.js";
import type { ExactPayload } from "../terms/proof.js";
import { type AuthorizationDomain, authorizationDomainOf, signedByPayer } from "../terms/signature.js";
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
import type { SmartWalletCheck } from "./smart-wallet.js";
import { createVerifyLane, LaneFull, type VerifyLane, type VerifyLaneOptions } from "./verify-lanes.js";

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

/** The facilitator could not give an answer: the request fails closed with this reason, never with free content. */
export class FacilitatorFault extends Error {
  constructor(
    readonly reason: FaultReason,
    readonly retryAfterSeconds: number,
    message: string,
  ) {
    super(message);
  }
}

export const SETTLEMENT_PENDING = "settlement_pending";

/**
 * This payer's proofs may not reach the facilitator now: too many of its verifications are running, or its recent
 * ones timed out or failed (back-off). Retry later, nothing charged; the facilitator's circuit is untouched.
 */
export class PayerLimited extends FacilitatorFault {
  constructor({ retryAfterMs, why }: { retryAfterMs: number; why: "busy" | "backoff" | "lane" }) {
    super(
      "payer_limited",
      Math.max(1, Math.ceil(retryAfterMs / 1000)),
      why === "busy"
        ? "too many payment verifications of this payer are running"
        : why === "lane"
          ? "too many verifications of smart-wallet payments are running"
          : "this payer's recent payment verifications failed; backing off",
    );
  }
}

/**
 * What the gateway proved of a proof's signature before asking the facilitator: "eoa" — it recovers to the
 * authorization's `from`; "contract" — the wallet contract at `from` vouched for it on chain (ERC-1271); "unproven" —
 * neither (a wrong signature, a smart wallet with no chain check configured or refused by it, a proof naming no payer).
 */
export type SignatureCheck = "eoa" | "contract" | "unproven";

/**
 * The facilitator's verdict with the gateway's own word on the proof's signature, so nobody checks it again. The
 * gateway always sets `signature` itself, never from the facilitator's answer. A gateway that leaves it out (a fake, a
 * pass-through) proved nothing: read it as "unproven".
 */
export type GatewayVerdict = VerifyResponse & { signature?: SignatureCheck };

/**
 * The local signature check, before any facilitator call: "eoa" when the 65-byte signature recovers to the
 * authorization's `from` (ecrecover, well under a millisecond); "unproven" otherwise — a smart-wallet (ERC-1271)
 * signature or a wrong one, which only the chain can tell apart. Only faults met by proven proofs are evidence against
 * the facilitator; an unproven proof's faults are its payer's alone.
 */
export async function localSignatureCheck(
  payload: PaymentPayload,
  requirements: PaymentRequirements,
): Promise<"eoa" | "unproven"> {
  const checkable = checkableProof(payload, requirements);
  if (!checkable) return "unproven";
  return (await signedByPayer(checkable.exact, checkable.domain)) ? "eoa" : "unproven";
}

/** The proof's exact payload and its token's EIP-712 domain, when the proof and requirements name them all. */
function checkableProof(
  payload: PaymentPayload,
  requirements: PaymentRequirements,
): { exact: ExactPayload; domain: AuthorizationDomain } | undefined {
  const exact = (payload as { payload?: unknown }).payload as ExactPayload | undefined;
  const domain = authorizationDomainOf(requirements);
  if (typeof exact?.signature !== "string" || typeof exact.authorization?.from !== "string" || !domain)
    return undefined;
  return { exact, domain };
}

/** The payer an exact payload names (lower case), if it names one. */
function payerOf(payload: PaymentPayload): string | undefined {
  const from = (payload as { payload?: { authorization?: { from?: unknown } } }).payload?.authorization?.from;
  return typeof from === "string" ? from.toLowerCase() : undefined;
}

export interface GatewayOptions extends CircuitOptions {
  /** Per-payer verification limits (defaults: DEFAULT_PAYER_LIMITS). */
  payerLimits?: Partial<PayerLimitOptions>;
  /**
   * The chain check of smart-wallet signatures, run before the facilitator for a proof whose signature does not
   * recover to `from`. Unset (no chain RPC): such proofs go to the facilitator under the payer limits only.
   */
  smartWallet?: SmartWalletCheck;
  /** Per-contract limits of that check, stricter than the payer limits (defaults: DEFAULT_SMART_WALLET_LIMITS). */
  smartWalletLimits?: Partial<PayerLimitOptions>;
  /**
   * The facilitator capacity proofs not signed by an EOA may use (smart wallets and junk, bounded per contract and
   * per sender); EOA-signed proofs are never held by it. Defaults: DEFAULT_VERIFY_LANE.
   */
  smartWalletLane?: Partial<VerifyLaneOptions>;
}

/**
 * One chain check at a time per contract (the others wait in line, up to SMART_WALLET_QUEUE, instead of being
 * refused), and a check that runs out of time backs it off at once (1 s doubling to 60 s): a contract whose
 * isValidSignature burns time costs at most one budgeted eth_call per back-off period.
 */
export const DEFAULT_SMART_WALLET_LIMITS: Partial<PayerLimitOptions> = {
  maxInFlight: 1,
  faultsBeforeBackoff: 1,
};

/**
 * Checks of one contract that may wait for its running one: a wallet's honest parallel calls queue (each check is
 * bounded by its time budget, so the wait is too); beyond this many waiting, the next is refused as busy.
 */
export const SMART_WALLET_QUEUE = 16;

/** What a smart-wallet signature refused by the chain check is answered: the facilitator's own reason. */
export const SMART_WALLET_REFUSED = "invalid_exact_evm_signature";

export interface FacilitatorGateway {
  /**
   * The facilitator's verdict and what the gateway proved of the signature on the way (see GatewayVerdict).
   * `context.client`: who sent the proof (the request's address), what a smart-wallet check's back-off is keyed by.
   */
  verify(
    payload: PaymentPayload,
    requirements: PaymentRequirements,
    context?: { client?: string | undefined },
  ): Promise<GatewayVerdict>;
  settle(payload: PaymentPayload, requirements: PaymentRequirements): Promise<SettleResponse>;
  readonly circuit: Readonly<CircuitState>;
  /** Per-payer verification slots and back-off. */
  readonly payers?: PayerLimits;
  /** Per-contract slots and back-off of the smart-wallet chain check. */
  readonly contracts?: PayerLimits;
  /** The facilitator verifies of non-EOA proofs: in flight now and at most. */
  readonly smartWalletLane?: Pick<VerifyLane, "inFlight" | "peak">;
  /** The circuit's position now (metrics, readiness). */
  position(): CircuitLabel;
  /** The background health probe's outcome (GET /supported answered or not): the facilitator's own health. */
  probed?(reachable: boolean): void;
}

/**
 * "Facilitator verify failed (<status>): …" — how @x402/core's HTTP client reports a non-2xx answer without a
 * verdict; a server error of the facilitator's (5xx) is its own fault.
 */
const FACILITATOR_SERVER_ERROR = /^Facilitator \w+ failed \(5\d\d\)/;

/**
 * Maps an error of a facilitator call to the fault answered to the client, and says whether it is the facilitator's
 * own fault (timeouts, unreachable, its 5xx, a malformed answer): only those count toward the circuit. Anything
 * else — its 4xx to a request we built, or an error of our own process — must not let a sender trip the breaker.
 */
export function classify(
  error: unknown,
  operation: string,
  retryAfterSeconds: number,
): { fault: FacilitatorFault; counts: boolean; unreachable?: boolean } {
  if (error instanceof FacilitatorFault) return { fault: error, counts: true };
  if (error instanceof FacilitatorTimeoutError)
    return {
      fault: new FacilitatorFault(
        "facilitator_timeout",
        retryAfterSeconds,
        `facilitator ${operation} timed out`,
      ),
      counts: true,
    };
  if (error instanceof FacilitatorResponseError)
    return {
      fault: new FacilitatorFault("facilitator_bad_response", retryAfterSeconds, error.message),
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
        "facilitator_unreachable",
        retryAfterSeconds,
        `facilitator ${operation}: ${message}`,
      ),
      counts: true,
      unreachable: true,
    };
  return {
    fault: new FacilitatorFault(
      "facilitator_error",
      retryAfterSeconds,
      `facilitator ${operation}: ${message}`,
    ),
    counts: FACILITATOR_SERVER_ERROR.test(message),
  };
}

/**
 * Whose a fault is: "own" — no payer, or no answer at all (the facilitator is down for everyone); a payer address —
 * a proven proof met it, one witness toward the circuit; "payer_only" — an unproven proof met it: its payer's alone.
 */
type Attribution = "own" | "payer_only" | { witness: string };

/**
 * Wraps a FacilitatorClient with fail-closed error mapping, a circuit breaker and per-payer limits. A verify/settle
 * *answer* (valid or not, settled or not) is a success for the circuit; only transport faults and malformed answers
 * count against it — and a fault met by one payer's proof counts against that payer (its slots and back-off), toward
 * the circuit only as one witness, and not at all when the proof's signature could not be checked locally.
 */
export function createFacilitatorGateway(
  client: FacilitatorClient,
  opts: GatewayOptions,
  now: () => number = Date.now,
): FacilitatorGateway {
  const circuit = closedCircuit();
  const payers = createPayerLimits(opts.payerLimits);
  const contracts = createPayerLimits({ ...DEFAULT_SMART_WALLET_LIMITS, ...opts.smartWalletLimits });
  const lane = createVerifyLane(opts.smartWalletLane);
  /** Per contract, the checks waiting for its running one, woken one at a time as each check ends. */
  const waiting = new Map<string, (() => void)[]>();
  async function contractSlot(payer: string): Promise<void> {
    const key = payer.toLowerCase();
    for (;;) {
      const slot = contracts.admit(key, now());
      if (slot.allowed) return;
      const queue = waiting.get(key) ?? [];
      if (slot.why !== "busy" || queue.length >= SMART_WALLET_QUEUE) throw new PayerLimited(slot);
      waiting.set(key, queue);
      await new Promise<void>((resolve) => queue.push(resolve));
    }
  }
  const wakeNext = (payer: string) => {
    const key = payer.toLowerCase();
    const queue = waiting.get(key);
    const next = queue?.shift();
    if (queue && queue.length === 0) waiting.delete(key);
    next?.();
  };
  const retryAfter = () => Math.max(1, Math.ceil(opts.cooldownMs / 1000));
  /** Faults that were the facilitator failing on a request (timeout, 5xx, malformed answer), not unreachable. */
  const costly = new WeakSet<FacilitatorFault>();
  /** What verify proved of each proof it saw, so settling that same proof does not recover its signature again. */
  const checked = new WeakMap<
    PaymentPayload,
    { requirements: PaymentRequirements; signature: SignatureCheck }
  >();
  const signatureOf = async (payload: PaymentPayload, requirements: PaymentRequirements) => {
    const seen = checked.get(payload);
    return seen?.requirements === requirements ? seen.signature : localSignatureCheck(payload, requirements);
  };

  async function guarded<T>(operation: string, call: () => Promise<T>, by: Attribution = "own"): Promise<T> {
    const admission = admit(circuit, opts, now());
    if (!admission.allowed)
      throw new FacilitatorFault(
        "facilitator_circuit_open",
        Math.max(1, Math.ceil(admission.retryAfterMs / 1000)),
        "facilitator is failing; not calling it until the cool-down ends",
      );
    try {
      const result = await call();
      recordSuccess(circuit);
      return result;
    } catch (error) {
      const { fault, counts, unreachable } = classify(error, operation, retryAfter());
      if (counts && !unreachable) costly.add(fault);
      if (!counts) recordNeutral(circuit);
      else if (unreachable || by === "own") recordFailure(circuit, opts, now());
      else if (by === "payer_only") recordNeutral(circuit);
      else recordFailure(circuit, opts, now(), by.witness);
      throw fault;
    }
  }

  /** Verify under the payer's limits: its slot is held until the facilitator's answer (or fault) comes back. */
  async function verifyFor(
    payload: PaymentPayload,
    requirements: PaymentRequirements,
    call: () => Promise<VerifyResponse>,
    client: string | undefined,
  ): Promise<GatewayVerdict> {
    const payer = payerOf(payload);
    if (payer === undefined) return { ...(await guarded("verify", call)), signature: "unproven" };
    let signature: SignatureCheck = await localSignatureCheck(payload, requirements);
    const eoa = signature === "eoa";
    if (!eoa && opts.smartWallet) {
      const onChain = await smartWalletVerdict(payer, payload, requirements, opts.smartWallet, client);
      if (onChain !== "not_a_contract") {
        if (onChain !== "valid") return { ...onChain, signature: "unproven" };
        signature = "contract";
      }
    }
    checked.set(payload, { requirements, signature });
    const proven = signature !== "unproven";
    // Only a proof signed by `from` (or vouched for by its wallet contract) speaks for that payer. Anything else is
    // limited under a key of its own, so proofs that merely name a victim cannot take the victim's slots or put the
    // victim in back-off; and a proven payer's parallel calls are not capped (back-off after faults still applies).
    const key = proven ? payer : `unproven:${payer}`;
    // A proof not signed by an EOA first waits for (or is refused) a slot of the non-EOA lane, so such proofs can never
    // hold more of the facilitator than the lane; an EOA's proof goes straight through. The payer's own slot is taken
    // only once the lane lets it through: a proof waiting in line holds nobody's slot. A payer in back-off does not
    // wait in line for nothing.
    const backedOff = payers.peek(key);
    if (backedOff && backedOff.until > now())
      throw new PayerLimited({ retryAfterMs: backedOff.until - now(), why: "backoff" });
    let leave: (() => void) | undefined;
    if (!eoa) {
      try {
        leave = await lane.enter(payer, client);
      } catch (error) {
        if (error instanceof LaneFull) throw new PayerLimited({ retryAfterMs: 1000, why: "lane" });
        throw error;
      }
    }
    const slot = payers.admit(key, now(), !proven);
    if (!slot.allowed) {
      leave?.();
      throw new PayerLimited(slot);
    }
    let outcome: "answer" | "fault" | "neutral" = "neutral";
    try {
      // Only an EOA's own signature makes a witness against the facilitator: a contract wallet vouched for by the chain
      // may still be slow on purpose under the facilitator's own (larger) gas, so its faults stay its own.
      const verdict = await guarded("verify", call, eoa ? { witness: payer } : "payer_only");
      outcome = "answer";
      return { ...verdict, signature };
    } catch (error) {
      // What this proof cost: a timeout, an error or a malformed answer on it. Not the facilitator being unreachable
      // or its circuit open (everyone's), nor a fault of our own process.
      if (error instanceof FacilitatorFault && costly.has(error)) outcome = "fault";
      throw error;
    } finally {
      leave?.();
      payers.settle(key, outcome, now());
    }
  }

  /**
   * The chain's word on a smart-wallet signature, under the contract's own limits: a refusal is answered as an invalid
   * proof (nothing charged, no facilitator call). A check that ran out of gas or time backs off the sender of that
   * proof for that contract (`client`, what the attacker controls: the claimed `from` is anyone's to name), or the
   * contract itself when the sender is unknown; nobody else is touched.
   */
  async function smartWalletVerdict(
    payer: string,
    payload: PaymentPayload,
    requirements: PaymentRequirements,
    check: SmartWalletCheck,
    client: string | undefined,
  ): Promise<"valid" | "not_a_contract" | VerifyResponse> {
    const checkable = checkableProof(payload, requirements);
    if (!checkable) return "not_a_contract";
    const blame = client === undefined ? undefined : `${payer.toLowerCase()}@${client}`;
    if (blame !== undefined) {
      // Back-off only (uncapped): the one-at-a-time slot below stays the contract's.
      const held = contracts.admit(blame, now(), false);
      if (!held.allowed) throw new PayerLimited(held);
    }
    try {
      await contractSlot(payer);
    } catch (error) {
      if (blame !== undefined) contracts.settle(blame, "neutral", now());
      throw error;
    }
    // A check of this sender's that ran while this one waited may have backed the sender off: no chain call then.
    const until = blame === undefined ? 0 : (contracts.peek(blame)?.until ?? 0);
    if (blame !== undefined && until > now()) {
      contracts.settle(blame, "neutral", now());
      contracts.settle(payer, "neutral", now());
      wakeNext(payer);
      throw new PayerLimited({ retryAfterMs: until - now(), why: "backoff" });
    }
    let outcome: "answer" | "fault" | "neutral" = "neutral";
    try {
      const verdict = await check(checkable.exact, checkable.domain);
      if (verdict.kind === "valid") outcome = "answer";
      if (verdict.kind !== "refused") return verdict.kind;
      // A clean "not mine" (a plain revert counts as one: see callFailure) is what junk naming an honest wallet gets:
      // the claimed `from` is the attacker's choice, so it never backs that wallet off. Out of gas or time is the
      // contract's own cost, and backs it off.
      if (verdict.why !== "rejected") outcome = "fault";
      return {
        isValid: false,
        invalidReason: SMART_WALLET_REFUSED,
        invalidMessage:
          verdict.why === "out_of_budget"
            ? "the smart-wallet signature could not be checked on chain within its time budget"
            : verdict.why === "failed"
              ? "the smart wallet's isValidSignature failed or needed more than its gas cap"
              : "the smart wallet did not confirm the signature (isValidSignature)",
        payer: checkable.exact.authorization.from,
      };
    } finally {
      if (blame === undefined) contracts.settle(payer, outcome, now());
      else {
        contracts.settle(blame, outcome, now());
        contracts.settle(payer, outcome === "fault" ? "neutral" : outcome, now());
      }
      // After a back-off every waiter wakes: those it holds off leave without a chain call, the others queue again.
      if (outcome === "fault") while (waiting.has(payer.toLowerCase())) wakeNext(payer);
      else wakeNext(payer);
    }
  }

  return {
    circuit,
    payers,
    contracts,
    smartWalletLane: lane,
    position: () => circuitLabel(circuit, opts.cooldownMs, now()),
    probed: (reachable) => {
      if (!reachable) recordFailure(circuit, opts, now());
    },
    verify: (payload, requirements, context) =>
      verifyFor(
        payload,
        requirements,
        async () => {
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
        },
        context?.client,
      ),
    settle: async (payload, requirements) => {
      const payer = payerOf(payload);
      const eoa = payer !== undefined && (await signatureOf(payload, requirements)) === "eoa";
      return guarded(
        "settle",
        async () => {
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
        },
        // Only verified proofs are settled: a fault there is one witness against the facilitator — an EOA's. A
        // contract wallet's settlement may be slow by its own doing, so it counts for that payer only.
        payer === undefined ? "own" : eoa ? { witness: payer } : "payer_only",
      );
    },
  };
}
