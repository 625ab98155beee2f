import { randomBytes } from "node:crypto";
import { performance } from "node:perf_hooks";
import type { PaymentPayload, PaymentRequirements, SettleResponse } from "@x402/core/types";
import type { FastifyBaseLogger } from "fastify";
import {
  type LedgerPort,
  normalizeNetwork,
  type PaymentIdentity,
  type Receipt,
  type StoredResponse,
} from "../../ledger/port.js";
import {
  FacilitatorFault,
  type FacilitatorGateway,
  type GatewayVerdict,
  localSignatureCheck,
  SETTLEMENT_PENDING,
} from "../facilitator/gateway.js";
import { reasonCode, settleFailureKind } from "../facilitator/settle-failure.js";
import type { ChainReader } from "../recovery/chain-reader.js";
import { deadIncarnations, resolveFromChain } from "../recovery/recovery.js";
import type { Proof } from "../terms/proof.js";
import type { PaymentTerms, RoutePrice } from "../terms/requirements.js";
import type { PaymentObserver, PaymentOutcome } from "./events.js";
import {
  BEING_CONFIRMED,
  BUSY_RETRY_SECONDS,
  capReached,
  type FaultReason,
  NOT_CONFIRMED,
  NOTHING_CHARGED,
  type OutcomeOf,
  type ProvisionalCap,
  type Settlement,
  unconfirmed,
} from "./outcomes.js";
import { bindPaymentSecrets } from "./payment-id-scope.js";

/**
 * The payment decision, free of any transport: claim → verify → (the caller runs its handler) → settle → deliver, and
 * the recoveries in between. Plain functions over the ledger port, the facilitator gateway and the chain reader, in
 * the spirit of @x402/core's resource server. decide.ts runs them for one paid call of any transport; every answer
 * is an outcome in x402 terms (outcomes.ts), never a status or a header: http-answers.ts renders it for HTTP and
 * src/mcp for a tool call. test/payments/core/core.test.ts calls them directly.
 */
export interface PaymentCore {
  /** How the transport's answers are judged and kept (one stored form for every transport). */
  answers: AnswerKeeping;
  gateway: FacilitatorGateway;
  ledger: LedgerPort;
  terms: PaymentTerms;
  chain: ChainReader | undefined;
  observer: PaymentObserver;
  clock: () => Date;
  incarnation: string;
  idempotencyTtlMs: number;
  retentionMs: number;
  lockTtlMs: number;
  /** One process per ledger (SQLite): any other unfinished incarnation is dead. */
  singleInstance: boolean;
  staleIncarnationMs: number;
  log: FastifyBaseLogger;
  /**
   * Ledger writes after a settlement that failed (a full disk, a lost database): kept here, by receipt, and retried by
   * `flushUnwritten` until the ledger takes them, so a charge is never stranded in `settling`.
   */
  unwritten: Map<string, () => Promise<unknown>>;
  /**
   * How long a payer re-reads, with a fresh proof of its own, the answer it bought for the same request (same price,
   * same data generation) instead of paying again; 0: never.
   */
  rereadWindowMs: number;
  /** How long a fresh proof waits for the payer's earlier purchase of the same request still in flight. */
  inFlightWaitMs: number;
  /** How often that wait asks the ledger (another instance's purchase sends this one no signal). */
  inFlightPollMs: number;
  /** This process's waiters on a receipt's end (settled, released, failed), by receipt id. */
  waiters: Map<string, Set<() => void>>;
  /**
   * This process's claims inside their facilitator verify, past their own re-read and not yet bound: a fresh proof of
   * the same payer for the same request waits for them. A claim here never waits for another, so no two wait in a ring.
   */
  verifying: Set<string>;
  /** The data generation a request is answered from (its transport's request object). */
  dataGeneration: (request: object) => string | undefined;
}

/** Wakes whoever waits on this receipt in this process (a fresh proof waiting for the purchase it re-reads). */
function receiptEnded(core: PaymentCore, receiptId: string): void {
  const set = core.waiters.get(receiptId);
  if (!set) return;
  core.waiters.delete(receiptId);
  for (const wake of set) wake();
}

/** Resolves when the receipt ends in this process, after `pollMs` (to ask the ledger again) or `ms`, whichever first. */
function receiptEnd(core: PaymentCore, receiptId: string, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const set = core.waiters.get(receiptId) ?? new Set<() => void>();
    core.waiters.set(receiptId, set);
    const wake = () => {
      clearTimeout(timer);
      set.delete(wake);
      resolve();
    };
    const timer = setTimeout(wake, Math.max(0, Math.min(ms, core.inFlightPollMs)));
    timer.unref?.();
    set.add(wake);
  });
}

/**
 * A ledger write that must not be lost once money has moved: tried now; if the ledger fails, kept for
 * `flushUnwritten` (the reconciler's pass, the clean stop) and the request goes on.
 */
async function mustWrite(
  core: PaymentCore,
  receiptId: string,
  write: () => Promise<unknown>,
  log: FastifyBaseLogger,
) {
  try {
    await write();
    core.unwritten.delete(receiptId);
  } catch (err) {
    log.error({ err, receipt: receiptId }, "ledger write after settlement failed; kept to retry");
    core.unwritten.set(receiptId, write);
  }
}

/** Retries the writes the ledger refused; returns how many are still waiting. */
export async function flushUnwritten(core: PaymentCore): Promise<number> {
  for (const [id, write] of [...core.unwritten]) {
    try {
      await write();
      core.unwritten.delete(id);
    } catch {
      break; // the ledger still refuses: keep the rest, in order, for the next pass
    }
  }
  return core.unwritten.size;
}

/**
 * A provisional cap, reserved atomically with the claim: `limit` paid calls since `since`, and what a buyer is told
 * when it is reached (the operation's check tells it the same before any PaymentRequired).
 */
export type CapRule = (now: Date) => ProvisionalCap | undefined;

export interface PaidRoute extends RoutePrice {
  /** Stable route id for receipts, e.g. "POST /v1/unlock-risk". */
  route: string;
  cap?: CapRule | undefined;
}

/** One request's attempt to pay: what the transport decoded and matched, nothing of the transport itself. */
export interface Attempt {
  route: PaidRoute;
  proof: Proof;
  requirements: PaymentRequirements;
  requestFingerprint: string;
  idempotencyKey: string | undefined;
  /** The x402 `payment-identifier` id in the proof's extensions (validated), a secret like the key. */
  paymentId: string | undefined;
  ppRef: string | undefined;
  /** The sender's address (the request's IP): what a smart-wallet check's back-off is keyed by. */
  client?: string | undefined;
  /** The data generation the answer will come from: an answer bought from another one is not re-read for free. */
  generation?: string | undefined;
  now: Date;
  log: FastifyBaseLogger;
}

/** A verified payment held by one request until its response is settled (or given back). */
export interface Payment extends Omit<Attempt, "now"> {
  identity: PaymentIdentity;
  receiptId: string;
  /** It had an unknown settlement outcome before this request took it over: never forget that. */
  reclaimed: boolean;
  /** Already paid (found on chain), never delivered: deliver this settlement, do not settle again. */
  deliver?: Receipt;
  /**
   * The retry key this server bound to a payment that came with no secret of its own: every answer of the paying
   * request carries it, and only a retry that sends it back (as Idempotency-Key) gets what the payment bought.
   */
  issuedKey?: string | undefined;
}

/** What the transport answers instead of running the handler, or that it may run it. */
export type Admission =
  | { kind: "proceed"; payment: Payment }
  | OutcomeOf<"replay" | "payment_required" | "busy" | "unconfirmed" | "refused" | "fault">;

/** The handler's answer, as the payment core needs it to settle and to keep it for a retry. */
export interface HandlerResponse {
  statusCode: number;
  contentType: string | undefined;
  body: string;
}

/**
 * Which answers are paid for, and what the ledger keeps of one for a retry. Given by the transport layer: the kept form
 * is shared by every transport, so a replay on any of them gives the same bytes.
 */
export interface AnswerKeeping {
  succeeded(response: HandlerResponse): boolean;
  kept(response: HandlerResponse, settlement: Settlement, generation: string | undefined): StoredResponse;
}

/** What follows the handler's answer: delivered with its settlement, or what replaces it. */
export type Completion = OutcomeOf<
  "delivered" | "unpaid" | "taken_over" | "unconfirmed" | "payment_required" | "fault"
>;

const settled = (version: 1 | 2, response: SettleResponse): Settlement => ({ response, version });

/** The settlement of a failed settlement: `success: false`, the reason, no transaction. */
const failed = (p: Payment, errorReason: string): Settlement =>
  settled(p.proof.version, {
    success: false,
    errorReason,
    transaction: "",
    network: p.requirements.network,
    payer: p.identity.payer,
  });

/** A fault outcome; the failure's own words stay for the log. */
const fault = (
  f: { reason: FaultReason; retryAfterSeconds: number; message: string },
  consequence: string,
  settlement?: Settlement,
): OutcomeOf<"fault"> => ({
  kind: "fault",
  reason: f.reason,
  retryAfterSeconds: f.retryAfterSeconds,
  message: f.message,
  consequence,
  ...(settlement ? { settlement } : {}),
});

function report(core: PaymentCore, p: { route: PaidRoute; proof?: Proof }, o: PaymentOutcome) {
  core.observer.paymentOutcome({
    route: p.route.route,
    x402Version: p.proof?.version ?? 2,
    outcome: o,
    amount: p.route.amount,
  });
}

export { report as reportOutcome };

const lastCircuit = new WeakMap<FacilitatorGateway, string>();
/** A facilitator call, timed for the observer, which also hears of every change of the circuit's position. */
async function timed<T>(
  core: PaymentCore,
  operation: "verify" | "settle",
  call: () => Promise<T>,
): Promise<T> {
  const t0 = performance.now();
  let ok = false;
  try {
    const r = await call();
    ok = true;
    return r;
  } finally {
    core.observer.facilitatorCall({ operation, seconds: (performance.now() - t0) / 1000, ok });
    const now = core.gateway.position();
    const before = lastCircuit.get(core.gateway) ?? "closed";
    if (now !== before) core.observer.circuitState(now);
    lastCircuit.set(core.gateway, now);
  }
}

/** A kept answer replayed to a proof of `version`, with the settlement of the transaction that paid for it. */
function replay(version: 1 | 2, stored: StoredResponse, receipt: Receipt): OutcomeOf<"replay"> {
  return {
    kind: "replay",
    response: stored,
    version,
    paid: receipt.transaction
      ? {
          success: true,
          transaction: receipt.transaction,
          network: receipt.identity.network as PaymentRequirements["network"],
          payer: receipt.identity.payer,
        }
      : undefined,
  };
}

/** Ends a claim that did not settle: released, or back to unknown when an earlier settlement may have happened. */
async function giveBack(core: PaymentCore, p: Pick<Payment, "receiptId" | "reclaimed">): Promise<void> {
  core.verifying.delete(p.receiptId);
  try {
    if (p.reclaimed)
      await core.ledger.recordFailure(p.receiptId, {
        status: "unknown",
        error: "retry_not_settled",
        now: core.clock(),
      });
    else await core.ledger.releaseClaim(p.receiptId, core.incarnation);
  } finally {
    receiptEnded(core, p.receiptId);
  }
}

/** Releases what dead incarnations left (claims, key records); `only`: just that one. Returns how many were dead. */
export async function releaseDeadIncarnations(core: PaymentCore, now: Date, only?: string): Promise<number> {
  const dead = deadIncarnations(await core.ledger.incarnations(), core.incarnation, now, {
    singleInstance: core.singleInstance,
    staleMs: core.staleIncarnationMs,
  }).filter((id) => only === undefined || id === only);
  for (const id of dead) {
    const released = await core.ledger.releaseIncarnation(id, now);
    core.log.warn(
      { incarnation: id, releasedClaims: released.releasedClaims, unresolved: released.unresolved.length },
      "released a dead incarnation's claims",
    );
  }
  return dead.length;
}

/** A claim held by another instance that died (kill -9): released now, so the buyer's retry is not kept waiting. */
async function releaseDeadHolder(core: PaymentCore, r: Receipt, now: Date): Promise<boolean> {
  if (core.singleInstance || r.incarnation === null || r.incarnation === core.incarnation) return false;
  return (await releaseDeadIncarnations(core, now, r.incarnation)) > 0;
}

type Secret = "key" | "payment_id";

/** A secret reused for another request or another payment (the extension's "same id, different payload"). */
const secretReused = (
  secret: Secret,
  reason: "different_request" | "different_payment",
): OutcomeOf<"refused"> => {
  const what = reason === "different_request" ? "a different request" : "a different payment proof";
  return secret === "key"
    ? {
        kind: "refused",
        code: "idempotency-key-reused",
        detail: `this Idempotency-Key was used with ${what}`,
      }
    : {
        kind: "refused",
        code: "payment-identifier-reused",
        detail: `this payment-identifier id was used with ${what}; nothing was charged`,
      };
};

/**
 * Which secret of the paying request this attempt presents, if any. The proof alone is never one: once settled, its
 * authorization and signature are public on chain, so anyone can present them.
 */
function secretOf(
  core: PaymentCore,
  a: Pick<Attempt, "idempotencyKey" | "paymentId">,
  r: Receipt,
): Secret | undefined {
  // The ledger keeps only keyed digests of secrets: it alone can compare one.
  return core.ledger.boundSecret(r, { key: a.idempotencyKey, paymentId: a.paymentId });
}

/**
 * The one answer to a paid authorization presented without its secret: the same whether the proof is the buyer's own
 * (copied from the chain), rebuilt or forged, and whatever the request, so it tells nobody which request was bought.
 */
export const ALREADY_USED =
  "payment_already_used: retry with the Idempotency-Key or payment-identifier id you paid with";

/** A random retry key for a payment that came without a secret (192 bits, URL-safe). */
const newRetryKey = () => randomBytes(24).toString("base64url");

/**
 * A claim that found the authorization already paid: the same request with the paying request's secret gets its
 * response again (at least once); anything else gets the one answer that names no request.
 */
function answerPaid(
  core: PaymentCore,
  a: Attempt,
  base: Omit<Payment, "receiptId" | "reclaimed">,
  r: Receipt,
): Admission {
  const secret = secretOf(core, a, r);
  if (secret === undefined) {
    report(core, a, "refused");
    return { kind: "payment_required", error: ALREADY_USED };
  }
  if (r.requestFingerprint !== a.requestFingerprint) {
    report(core, a, "refused");
    return secretReused(secret, "different_request");
  }
  if (r.response && (!r.responseExpiresAt || Date.parse(r.responseExpiresAt) > a.now.getTime())) {
    report(core, a, "replayed");
    return replay(a.proof.version, r.response, r);
  }
  if (r.responseExpiresAt === null && r.transaction)
    // Paid (found on chain) and never delivered: run the handler and deliver, with no second settlement.
    return { kind: "proceed", payment: { ...base, receiptId: r.id, reclaimed: false, deliver: r } };
  report(core, a, "refused");
  return {
    kind: "refused",
    code: "payment-already-used",
    detail:
      "This payment already bought this request's response, which is no longer kept (retention window passed).",
  };
}

/**
 * A payment of this payer for this request that paid (on chain) but was never delivered, if any: an unknown one is
 * asked of the chain first. The caller has verified a fresh proof of the payer, so it is the payer asking.
 */
async function owedTo(core: PaymentCore, a: Attempt): Promise<Receipt | undefined> {
  const found = await core.ledger.undeliveredFor(a.proof.exact.authorization.from, a.requestFingerprint);
  if (!found) return undefined;
  if (found.status !== "unknown") return found.transaction ? found : undefined;
  const res = await resolveFromChain(core.ledger, core.chain, found, a.now, a.log);
  return res.kind === "settled" && res.receipt.transaction ? res.receipt : undefined;
}

/** A purchase whose kept answer a fresh proof re-reads: paid, same price, same data generation, still kept. */
function rereadable(r: Receipt, a: Attempt): r is Receipt & { response: StoredResponse } {
  return (
    (r.status === "settled" || r.status === "pending") &&
    r.response !== null &&
    r.amount === a.route.amount &&
    r.response.generation === a.generation &&
    (!r.responseExpiresAt || Date.parse(r.responseExpiresAt) > a.now.getTime())
  );
}

/** Another live request holds this payment. */
const busy = (withKey: boolean): OutcomeOf<"busy"> => ({
  kind: "busy",
  withKey,
  retryAfterSeconds: BUSY_RETRY_SECONDS,
});

/** What a fresh proof is answered while the payer's earlier purchase of the same request is still being paid. */
const STILL_BUYING: OutcomeOf<"refused"> = {
  kind: "refused",
  code: "purchase-in-progress",
  detail:
    "Your earlier payment for this same request is still being settled; nothing was charged for this one. Do not pay again: retry shortly to get that answer.",
  retryAfterSeconds: 2,
};

/**
 * The payer's own fresh proof for a request it already bought, within the re-read window: the answer it bought
 * (replayed; this proof's authorization is never settled), or, while that purchase is still in flight, that answer
 * once it lands (a bounded wait). Undefined: nothing to re-read (none, failed and given back, another price or data
 * generation): a purchase like any other. `proven` says the proof is the payer's own; it is asked only when an
 * earlier purchase exists, and "unproven" is returned when it is not (the facilitator's verify proves it later).
 * A chain observer holds the payer's settled (from, nonce) and signature but cannot sign a fresh proof as the payer.
 *
 * A purchase past its verify (settling, or claimed with its secret bound) is waited for until it ends; one still inside
 * its verify (this process's `verifying`, or another instance's claim made earlier and within the wait) until it is
 * bound or given back. That one is not yet known to be the payer's: the wait is only a delay, and if it outlasts the
 * wait this proof is bought on its own.
 */
async function rereadEarlier(
  core: PaymentCore,
  a: Attempt,
  mine: Receipt,
  proven: () => Promise<boolean>,
): Promise<Admission | "unproven" | undefined> {
  if (core.rereadWindowMs <= 0) return undefined;
  const payer = a.proof.exact.authorization.from;
  const since = new Date(a.now.getTime() - core.rereadWindowMs);
  const waitUntil = performance.now() + core.inFlightWaitMs;
  let isProven = false;
  for (;;) {
    const earlier = (await core.ledger.purchasesOf(payer, a.requestFingerprint, since, 16)).filter(
      (r) => r.id !== mine.id && r.amount === a.route.amount,
    );
    const bought = earlier.filter((r) => rereadable(r, a)).at(-1);
    // A secret is bound only after the facilitator verified the proof and its request waited for nobody.
    const pastVerify = earlier.find(
      (r) =>
        r.status === "settling" ||
        (r.status === "claimed" && (r.idempotencyKey !== null || r.paymentId !== null)),
    );
    const inFlight = pastVerify ?? earlier.find((r) => insideVerify(core, r, mine, a.now));
    if (!bought && !inFlight) return undefined;
    if (!isProven) {
      if (!(await proven())) return "unproven";
      isProven = true;
    }
    if (bought) {
      a.log.info({ receipt: bought.id }, "a fresh proof of the payer re-reads the answer it bought");
      report(core, a, "replayed");
      return replay(a.proof.version, bought.response, bought);
    }
    if (!inFlight) return undefined;
    const left = waitUntil - performance.now();
    // Still unverified after the whole wait: not known to be the payer's purchase, so this proof buys on its own.
    if (left <= 0) return pastVerify ? STILL_BUYING : undefined;
    await receiptEnd(core, inFlight.id, left);
  }
}

/**
 * Whether an unbound claim of the payer is inside its facilitator verify: one of this process's (known exactly), or
 * another instance's claimed before `mine` and recently enough to still be verifying. Both kinds never wait for a
 * later claim, so waits only ever point back in time or at a claim that waits for nobody.
 */
function insideVerify(core: PaymentCore, r: Receipt, mine: Receipt, now: Date): boolean {
  if (r.status !== "claimed" || r.idempotencyKey !== null || r.paymentId !== null) return false;
  if (r.incarnation === core.incarnation) return core.verifying.has(r.id);
  const at = Date.parse(r.createdAt);
  return at < Date.parse(mine.createdAt) && at > now.getTime() - core.inFlightWaitMs;
}

/**
 * Whether the facilitator's "invalid signature" is in fact the payer's own signature it could not check (its chain is
 * down): the gateway recovered it to `from` before asking. Only an EOA's signature is proven without the chain; a
 * contract wallet's was vouched for by our chain read and the facilitator may still refuse it for reasons of its own,
 * so it stays the buyer's PaymentRequired. A gateway that says nothing proved nothing: a PaymentRequired, never a
 * fault inviting free retries.
 */
const payersOwnSignature = (verdict: GatewayVerdict, reason: string): boolean =>
  reason === "invalid_exact_evm_signature" && verdict.signature === "eoa";

/**
 * Claim → verify: whether the request may run its handler as a paid call, and if not, what it is answered. The
 * Idempotency-Key is bound only once the facilitator has verified the proof, so a proof that merely names a payer gets
 * exactly what any invalid proof gets, whatever that payer's keys.
 */
export async function admitPayment(core: PaymentCore, a: Attempt): Promise<Admission> {
  const { route, proof, requirements, now } = a;
  const identity: PaymentIdentity = {
    network: requirements.network,
    asset: requirements.asset,
    payer: proof.exact.authorization.from,
    nonce: proof.exact.authorization.nonce,
  };
  const { now: _now, ...attempt } = a;
  const base = { ...attempt, identity };
  const cap = route.cap?.(now);
  const claimIt = () =>
    core.ledger.claimAuthorization({
      identity,
      route: route.route,
      requestFingerprint: a.requestFingerprint,
      x402Version: proof.version,
      amount: route.amount,
      payTo: core.terms.payTo,
      ppRef: a.ppRef,
      validBefore: proof.exact.authorization.validBefore,
      incarnation: core.incarnation,
      lockTtlMs: core.lockTtlMs,
      cap,
      now,
    });
  let claim = await claimIt();
  if (claim.kind === "in_progress" && (await releaseDeadHolder(core, claim.receipt, now)))
    claim = await claimIt();

  let receiptId: string;
  let reclaimed = false;
  let mine: Receipt | undefined;
  switch (claim.kind) {
    case "idempotency_conflict": // only when a key is passed to the claim, which this core never does
      return secretReused("key", claim.reason);
    case "cap_reached":
      report(core, a, "refused");
      // The ledger is asked only with a cap, so there is one.
      return capReached(cap as ProvisionalCap, now);
    case "in_progress":
      return busy(secretOf(core, a, claim.receipt) !== undefined);
    case "paid":
      return answerPaid(core, a, base, claim.receipt);
    case "unresolved": {
      // An earlier settlement of this authorization has no known outcome: the chain settles it, now.
      const res = await resolveFromChain(core.ledger, core.chain, claim.receipt, now, a.log);
      if (res.kind === "settled") return answerPaid(core, a, base, res.receipt);
      if (res.kind === "failed") {
        report(core, a, "invalid");
        return { kind: "payment_required", error: "invalid_exact_evm_nonce_already_used" };
      }
      // Only the paying request's secret may take an unresolved payment over: its proof may already be public.
      if (
        secretOf(core, a, claim.receipt) === undefined ||
        claim.receipt.requestFingerprint !== a.requestFingerprint
      )
        return unconfirmed();
      // Unused, or no chain to ask: this request takes it over and pays normally. The chain refuses a second use
      // of one authorization, so at worst the facilitator refuses it and the question stays open.
      if (!(await core.ledger.reclaimUnresolved(claim.receipt.id, core.incarnation, core.lockTtlMs, now)))
        return busy(false);
      receiptId = claim.receipt.id;
      reclaimed = true;
      break;
    }
    case "claimed":
      receiptId = claim.receipt.id;
      mine = claim.receipt;
      break;
  }

  const payment: Payment = { ...base, receiptId, reclaimed };
  // The payer's own fresh proof for a request it bought: proven locally (an EOA's signature) it needs no facilitator
  // call; otherwise it is asked again once the facilitator has verified it.
  let reread: Awaited<ReturnType<typeof rereadEarlier>>;
  if (mine) {
    try {
      reread = await rereadEarlier(
        core,
        a,
        mine,
        async () => (await localSignatureCheck(proof.payload as PaymentPayload, requirements)) === "eoa",
      );
    } catch (err) {
      await giveBack(core, payment);
      throw err;
    }
    if (reread !== undefined && reread !== "unproven") {
      await giveBack(core, payment);
      return reread;
    }
  }
  // Whoever might already have been charged for it is told so, never "nothing was charged".
  const consequence = reclaimed ? BEING_CONFIRMED : NOTHING_CHARGED;
  core.verifying.add(receiptId);
  try {
    const verdict = await timed(core, "verify", () =>
      core.gateway.verify(proof.payload as PaymentPayload, requirements, { client: a.client }),
    );
    if (!verdict.isValid) {
      await giveBack(core, payment);
      const reason = reasonCode(verdict.invalidReason ?? "invalid_payment", "invalid_payment");
      a.log.info({ reason, detail: verdict.invalidMessage }, "payment proof refused by the facilitator");
      if (payersOwnSignature(verdict, reason)) {
        // The payer's own signature, proven by the gateway without the chain: the facilitator could not check it.
        report(core, a, "facilitator_error");
        return fault(
          {
            reason: "facilitator_chain_unavailable",
            retryAfterSeconds: 30,
            message: `verify said ${reason} for a valid signature`,
          },
          consequence,
        );
      }
      if (reclaimed) return unconfirmed();
      report(core, a, "invalid");
      return { kind: "payment_required", error: reason };
    }
  } catch (error) {
    await giveBack(core, payment);
    if (error instanceof FacilitatorFault) {
      report(core, a, "facilitator_error");
      return fault(error, consequence);
    }
    throw error;
  }
  // Every payment that may settle has a secret bound before it does: the buyer's, or one issued here.
  const issuedKey = a.idempotencyKey === undefined && a.paymentId === undefined ? newRetryKey() : undefined;
  const bindSecret = (id: string, of: PaymentIdentity) =>
    bindPaymentSecrets(core.ledger, {
      receiptId: id,
      identity: of,
      key: a.idempotencyKey ?? issuedKey,
      paymentId: a.paymentId,
      requestFingerprint: a.requestFingerprint,
      ttlMs: core.idempotencyTtlMs,
      incarnation: core.incarnation,
      now,
    });
  if (mine && reread === "unproven") {
    // Verified by the facilitator now (a smart wallet's signature, proven on chain): the payer's own proof. It may
    // wait for a purchase still verifying, so it leaves `verifying` first.
    core.verifying.delete(receiptId);
    const again = await rereadEarlier(core, a, mine, async () => true).catch(async (err) => {
      await giveBack(core, payment);
      throw err;
    });
    if (again !== undefined && again !== "unproven") {
      await giveBack(core, payment);
      return again;
    }
  }
  if (!reclaimed) {
    const owed = await owedTo(core, a);
    if (owed) {
      // The payer already paid for this very request and never got it (a lost answer, a crash): this fresh proof,
      // which only the payer can sign, recovers that payment and is itself given back unused.
      await giveBack(core, payment);
      const rebound = await bindSecret(owed.id, owed.identity);
      if (!rebound.ok) return secretReused(rebound.secret, rebound.reason);
      a.log.info({ receipt: owed.id }, "a fresh proof recovers an undelivered payment");
      return {
        kind: "proceed",
        payment: { ...base, receiptId: owed.id, reclaimed: false, deliver: owed, issuedKey },
      };
    }
  }
  const bound = await bindSecret(receiptId, identity).finally(() => core.verifying.delete(receiptId));
  if (!bound.ok) {
    await giveBack(core, payment);
    return secretReused(bound.secret, bound.reason);
  }
  return { kind: "proceed", payment: { ...payment, issuedKey } };
}

function logSettled(p: Payment, transaction: string, status: "settled" | "pending") {
  p.log.info(
    {
      receipt: p.receiptId,
      route: p.route.route,
      payer: p.identity.payer.toLowerCase(),
      amount: p.route.amount,
      network: normalizeNetwork(p.identity.network),
      transaction,
      pp_ref: p.ppRef ?? null,
      status,
    },
    "payment settled",
  );
}

/** Delivers a settlement that already exists (found on chain): kept with this response, no second settlement. */
async function deliverPaid(
  core: PaymentCore,
  p: Payment,
  paid: Receipt,
  response: HandlerResponse,
): Promise<Completion> {
  const transaction = paid.transaction as string;
  const settlement = settled(p.proof.version, {
    success: true,
    transaction,
    network: p.requirements.network,
    payer: p.identity.payer,
  });
  const now = core.clock();
  try {
    await core.ledger.storeResponse(
      p.receiptId,
      core.answers.kept(response, settlement, p.generation),
      new Date(now.getTime() + core.retentionMs),
      now,
    );
  } catch (err) {
    // Already settled and recorded: only the copy kept for a retry is missing. The buyer still gets it now.
    p.log.error({ err, receipt: p.receiptId }, "delivered response not kept");
  }
  logSettled(p, transaction, "settled");
  report(core, p, "settled");
  return { kind: "delivered", settlement };
}

/**
 * Settle → deliver → recover, once the handler has answered. Only a successful answer is settled; the body is
 * delivered only when a transaction exists. A failure without a transaction is an unknown until the chain proves it:
 * the receipt stays `unknown` (the reconciler and the buyer's retry settle it) and the buyer is told to retry with the
 * same proof, never handed a fresh PaymentRequired that invites a second payment.
 */
export async function completePayment(
  core: PaymentCore,
  p: Payment,
  response: HandlerResponse,
): Promise<Completion> {
  try {
    const c = await complete(core, p, response);
    // Whatever this answer is, only the key issued to this payment recovers it.
    return p.issuedKey === undefined ? c : { ...c, retryKey: p.issuedKey };
  } finally {
    receiptEnded(core, p.receiptId);
  }
}

async function complete(core: PaymentCore, p: Payment, response: HandlerResponse): Promise<Completion> {
  if (p.deliver) {
    if (!core.answers.succeeded(response)) return { kind: "unpaid" };
    return deliverPaid(core, p, p.deliver, response);
  }
  if (!core.answers.succeeded(response)) {
    // Nothing was settled: a ledger that cannot release the claim now (a full disk) leaves it to its lock's expiry.
    await giveBack(core, p).catch((err) => p.log.error({ err, receipt: p.receiptId }, "claim not released"));
    return { kind: "unpaid" };
  }
  const started = core.clock();
  if (!(await core.ledger.beginSettlement(p.receiptId, core.incarnation, started)))
    return { kind: "taken_over", retryAfterSeconds: BUSY_RETRY_SECONDS };
  try {
    return await settleAndRecord(core, p, response, started);
  } catch (err) {
    // The ledger failed somewhere after settle was called: the outcome is an unknown the chain settles, never an error.
    p.log.error({ err, receipt: p.receiptId }, "ledger failed after settlement began");
    if (!core.unwritten.has(p.receiptId))
      core.unwritten.set(p.receiptId, () =>
        core.ledger.recordFailure(p.receiptId, {
          status: "unknown",
          error: "ledger_unavailable",
          now: core.clock(),
        }),
      );
    report(core, p, "unknown");
    // Whether the transfer happened is unknown here: a fault that says so, never a `success: false`.
    return fault({ reason: "ledger_unavailable", retryAfterSeconds: 5, message: String(err) }, NOT_CONFIRMED);
  }
}

async function settleAndRecord(
  core: PaymentCore,
  p: Payment,
  response: HandlerResponse,
  started: Date,
): Promise<Completion> {
  let result: SettleResponse;
  try {
    result = await timed(core, "settle", () =>
      core.gateway.settle(p.proof.payload as PaymentPayload, p.requirements),
    );
  } catch (error) {
    // Indeterminate: the facilitator may or may not have settled. The body is withheld; the buyer's retry with the
    // same proof (or the background reconciler) settles the question on chain, so nobody pays twice or for nothing.
    const error_ = error instanceof FacilitatorFault ? error.reason : "settle_error";
    await mustWrite(
      core,
      p.receiptId,
      () => core.ledger.recordFailure(p.receiptId, { status: "unknown", error: error_, now: core.clock() }),
      p.log,
    );
    report(core, p, "unknown");
    p.log.warn(
      {
        reason: error_,
        detail: error instanceof Error ? error.message : String(error),
        receipt: p.receiptId,
      },
      "settlement outcome unknown",
    );
    // Unknown is not failure: the buyer may be charged, so it is told to wait and not pay again, never `success: false`.
    return unconfirmed();
  }

  const pending = !result.success && result.errorReason === SETTLEMENT_PENDING && Boolean(result.transaction);
  if (!result.success && !pending) return settleFailed(core, p, result, response);

  // Settled, or broadcast and awaiting confirmation: the transaction exists, so the buyer gets what it paid for.
  const status = pending ? "pending" : "settled";
  const settlement = settled(p.proof.version, result);
  const record = {
    status,
    transaction: result.transaction,
    response: {
      value: core.answers.kept(response, settlement, p.generation),
      expiresAt: new Date(started.getTime() + core.retentionMs),
    },
    now: core.clock(),
  } as const;
  let rec: Awaited<ReturnType<LedgerPort["recordSettlement"]>>;
  try {
    rec = await core.ledger.recordSettlement(p.receiptId, record);
  } catch (err) {
    // The money moved and the ledger cannot say so yet (a full disk): the buyer gets what it paid for now, and the
    // write waits in memory for the ledger (and, should this process stop first, the chain settles it on restart).
    p.log.error(
      { err, receipt: p.receiptId, transaction: result.transaction },
      "settlement not recorded yet",
    );
    core.unwritten.set(p.receiptId, () =>
      core.ledger.recordSettlement(p.receiptId, { ...record, now: core.clock() }),
    );
    logSettled(p, result.transaction, status);
    report(core, p, status);
    return { kind: "delivered", settlement };
  }
  if (!rec.ok) {
    // The facilitator named a transaction that already paid for another receipt: not a payment for this one.
    p.log.error(
      { receipt: p.receiptId, transaction: result.transaction, reason: rec.reason },
      "settlement not credited",
    );
    await core.ledger.recordFailure(p.receiptId, { status: "failed", error: rec.reason, now: core.clock() });
    report(core, p, "settle_failed");
    return fault(
      { reason: "facilitator_bad_response", retryAfterSeconds: 5, message: rec.reason },
      "Nothing was delivered; retry later.",
      failed(p, rec.reason),
    );
  }
  logSettled(p, result.transaction, status);
  report(core, p, status);
  return { kind: "delivered", settlement };
}

/** A settle answer `success: false`: a refusal before anything was sent, or an unknown only the chain settles. */
async function settleFailed(
  core: PaymentCore,
  p: Payment,
  result: SettleResponse,
  response: HandlerResponse,
): Promise<Completion> {
  const reason = reasonCode(result.errorReason ?? "settlement_failed", "unexpected_settle_error");
  p.log.warn(
    { reason, detail: result.errorMessage ?? result.errorReason, receipt: p.receiptId },
    "settlement failed",
  );
  // A refusal of a claim that was already unknown may be the earlier settlement's doing (its transfer spent the
  // balance or the nonce): still an unknown.
  if (settleFailureKind(reason) === "refused" && !p.reclaimed) {
    await mustWrite(
      core,
      p.receiptId,
      () => core.ledger.recordFailure(p.receiptId, { status: "failed", error: reason, now: core.clock() }),
      p.log,
    );
    report(core, p, "settle_failed");
    return { kind: "payment_required", error: `settlement_failed: ${reason}`, settlement: failed(p, reason) };
  }
  await mustWrite(
    core,
    p.receiptId,
    () => core.ledger.recordFailure(p.receiptId, { status: "unknown", error: reason, now: core.clock() }),
    p.log,
  );
  const receipt = await core.ledger.receipt(p.receiptId).catch(() => undefined);
  // The transfer may already be on chain (an earlier attempt's, or this one's whose answer was an error): ask now.
  const res = receipt
    ? await resolveFromChain(core.ledger, core.chain, receipt, core.clock(), p.log)
    : undefined;
  if (res?.kind === "settled") return deliverPaid(core, p, res.receipt, response);
  if (res?.kind === "failed") {
    // The chain proves nothing moved for good (its validity window passed unused, or it was cancelled).
    report(core, p, "settle_failed");
    return { kind: "payment_required", error: `settlement_failed: ${reason}`, settlement: failed(p, reason) };
  }
  // Still unknown: the reconciler and the buyer's retry with the same proof resolve it from the chain.
  report(core, p, "unknown");
  return unconfirmed();
}
