import { caip2OfV1 } from "../chain/networks.js";

/**
 * The ledger as the payment core sees it: a port with SQLite (src/ledger/embedded.ts) and PostgreSQL behind it. Every
 * method is asynchronous and is one whole operation (one transaction in the adapter), so the rules of "paid exactly
 * once, delivered at least once" hold whatever the backend and however many instances share it:
 *
 * - a payment's identity is its authorization (network, asset, payer, nonce), unique in the ledger;
 * - an on-chain transaction is credited to one receipt only (unique transaction hash);
 * - Idempotency-Keys are scoped to the payer;
 * - secrets (Idempotency-Keys, retry keys, payment-identifier ids) are stored only as keyed digests (secrets.ts);
 * - claims (in-flight locks) and idempotency records are tagged with the process incarnation that holds them, so a
 *   dead incarnation's can be released without touching a live one's.
 *
 * Times go in as `Date` (callers inject their clock) and come out as ISO-8601 strings.
 */

export interface PaymentIdentity {
  /** CAIP-2 (`eip155:<chain id>`); adapters store what `normalizeIdentity` returns. */
  network: string;
  /** Token contract address, lower case. */
  asset: string;
  /** The authorizer (EIP-3009 `from`), lower case. */
  payer: string;
  /** EIP-3009 nonce (bytes32 hex), lower case. */
  nonce: string;
}

/**
 * claimed: held by a live request (verifying, handler running), not yet sent to settle; releasable.
 * settling: settle was called; only its outcome (or the reconciler) moves it on.
 * settled | pending: a transaction exists; the buyer is owed this request's response.
 * failed: the settlement was refused; nothing moved; the authorization may be claimed again.
 * unknown: the settlement's outcome was lost (timeout, crash); the reconciler or a retry settles it from the chain.
 */
export type ReceiptStatus = "claimed" | "settling" | "settled" | "pending" | "failed" | "unknown";

export interface StoredResponse {
  statusCode: number;
  headers: Record<string, string>;
  body: string;
  /** The data generation the body was answered from (absent on responses stored before it was kept). */
  generation?: string | undefined;
}

export interface Receipt {
  id: string;
  identity: PaymentIdentity;
  route: string;
  requestFingerprint: string;
  x402Version: number;
  /** USDC atomic units, decimal string. */
  amount: string;
  payTo: string;
  ppRef: string | null;
  /**
   * The keyed digest of the secret bound to the paying request (its Idempotency-Key or the retry key issued with it):
   * the ledger never holds the secret itself; `LedgerPort.boundSecret` tells whether a presented one matches.
   */
  idempotencyKey: string | null;
  /** The keyed digest of the x402 `payment-identifier` id the paying request carried (a secret the chain never sees). */
  paymentId: string | null;
  status: ReceiptStatus;
  transaction: string | null;
  error: string | null;
  /** The process incarnation that last claimed it. */
  incarnation: string | null;
  createdAt: string;
  updatedAt: string;
  settledAt: string | null;
  /** The response delivered for it, kept until `responseExpiresAt` (the at-least-once retention window). */
  response: StoredResponse | null;
  /** Null while nothing was delivered; stays set after the response itself is purged. */
  responseExpiresAt: string | null;
  /** The authorization's validBefore (unix seconds, decimal), when known: past it, an unused one never settles. */
  validBefore: string | null;
}

export interface ClaimRequest {
  identity: PaymentIdentity;
  route: string;
  requestFingerprint: string;
  x402Version: number;
  amount: string;
  payTo: string;
  ppRef?: string | undefined;
  /** The authorization's validBefore (unix seconds, decimal); kept on the receipt for the reconciler. */
  validBefore?: string | undefined;
  idempotency?: { key: string; ttlMs: number } | undefined;
  incarnation: string;
  /** How long a `claimed` row stays locked if its request never finishes (a hung client); settling rows never expire. */
  lockTtlMs: number;
  /** Provisional cap: the claim is refused when `limit` claims of this route since `since` are live or paid. */
  cap?: { limit: number; since: Date } | undefined;
  now: Date;
}

export type ClaimResult =
  /** The authorization is now held by the caller; it must end in releaseClaim, beginSettlement or recordFailure. */
  | { kind: "claimed"; receipt: Receipt }
  /** Another live request holds it (claimed or settling). */
  | { kind: "in_progress"; receipt: Receipt }
  /** It already paid (settled or pending): replay or deliver, never settle again. */
  | { kind: "paid"; receipt: Receipt }
  /** Its settlement's outcome is unknown: ask the chain (reclaimUnresolved when it was not used). */
  | { kind: "unresolved"; receipt: Receipt }
  /** The payer's Idempotency-Key was used for another request or another authorization. */
  | { kind: "idempotency_conflict"; reason: "different_request" | "different_payment" }
  /** The route's provisional cap is taken by live or paid claims. */
  | { kind: "cap_reached"; used: number };

/**
 * Binds a payer's secrets (Idempotency-Key, payment-identifier id; at least one) to a claim once its proof has verified
 * (never before: see bindIdempotencyKey).
 */
export interface KeyBinding {
  receiptId: string;
  identity: PaymentIdentity;
  key?: string | undefined;
  paymentId?: string | undefined;
  requestFingerprint: string;
  ttlMs: number;
  incarnation: string;
  now: Date;
}

export type BindResult =
  | { ok: true }
  /** The payer's key or id already stands for another request or another authorization: nothing was written. */
  | { ok: false; reason: "different_request" | "different_payment"; secret: "key" | "payment_id" };

export type SettlementRecord = {
  status: "settled" | "pending";
  transaction: string;
  /** Stored with the settlement in one write, so a receipt that paid always has the response it paid for. */
  response?: { value: StoredResponse; expiresAt: Date } | undefined;
  now: Date;
};

export type SettlementResult =
  | { ok: true; receipt: Receipt }
  /** The transaction is already credited to another receipt: nothing was written. */
  | { ok: false; reason: "transaction_already_credited"; receiptId: string }
  | { ok: false; reason: "not_found" };

export interface InFlightStats {
  /** Receipts per in-flight state (claimed, settling, pending, unknown); settled and failed are not counted here. */
  byStatus: Record<"claimed" | "settling" | "pending" | "unknown", number>;
  /** When the oldest receipt still `settling` began settling (ISO 8601), or null when none is. */
  oldestSettlingSince: string | null;
}

export interface Incarnation {
  id: string;
  startedAt: string;
  heartbeatAt: string;
  endedAt: string | null;
  /**
   * Whether its process is still connected, when the backend can tell (PostgreSQL: a session lock held by the
   * process, released by the server the moment the connection dies, kill -9 included). Undefined: unknown, judge by
   * the heartbeat.
   */
  alive?: boolean | undefined;
}

export interface ReleasedIncarnation {
  /** Claims that had not reached settlement: deleted, with their idempotency records. */
  releasedClaims: number;
  /** Its settling/unknown receipts, now `unknown`, for the reconciler. */
  unresolved: Receipt[];
}

export interface LedgerPort {
  claimAuthorization(req: ClaimRequest): Promise<ClaimResult>;
  /**
   * Writes the payer's key record for a claim whose proof's signature checked out (the facilitator verified it), and
   * names the key on the receipt. Called after verification, so a proof that merely claims to be the payer can neither
   * squat on the payer's key nor learn whether it was used.
   */
  bindIdempotencyKey(binding: KeyBinding): Promise<BindResult>;
  /** Gives up a claim that never reached settlement (proof refused, handler error): deletes it and its key record. */
  releaseClaim(receiptId: string, incarnation: string): Promise<void>;
  /** claimed → settling, only for the incarnation holding it; false when the claim was lost (expired, taken over). */
  beginSettlement(receiptId: string, incarnation: string, now: Date): Promise<boolean>;
  /** settling/unknown/claimed → settled|pending with its transaction (unique across receipts). */
  recordSettlement(receiptId: string, record: SettlementRecord): Promise<SettlementResult>;
  /** failed (refused, nothing moved; the authorization is claimable again) or unknown (outcome lost). */
  recordFailure(
    receiptId: string,
    outcome: { status: "failed" | "unknown"; error: string; now: Date },
  ): Promise<void>;
  /** Keeps the response delivered for a paid receipt (one recovered from the chain) for the retention window. */
  storeResponse(receiptId: string, response: StoredResponse, expiresAt: Date, now: Date): Promise<void>;
  /** unknown → claimed by `incarnation` (the chain says the authorization is unused); false when someone else did. */
  reclaimUnresolved(receiptId: string, incarnation: string, lockTtlMs: number, now: Date): Promise<boolean>;

  receipt(id: string): Promise<Receipt | undefined>;
  receiptFor(identity: PaymentIdentity): Promise<Receipt | undefined>;
  /**
   * The payer's oldest receipt for this request that paid or may have paid (settled, pending, unknown) and whose
   * response was never delivered: what a fresh proof from the same payer recovers instead of paying again.
   */
  undeliveredFor(payer: string, requestFingerprint: string): Promise<Receipt | undefined>;
  /**
   * The payer's receipts for this request created since `since` that paid, may have paid or are being paid (every
   * status but failed), oldest first, at most `limit`: what a fresh proof of the same payer re-reads instead of paying
   * again.
   */
  purchasesOf(payer: string, requestFingerprint: string, since: Date, limit: number): Promise<Receipt[]>;
  /**
   * Whether a payer other than `payer` holds this payment-identifier id (a live idempotency record of it): an id is
   * one payer's, and bindIdempotencyKey, scoped to the payer, does not see another payer's.
   */
  paymentIdHeldByOther(paymentId: string, payer: string, now: Date): Promise<boolean>;
  /** Receipts whose settlement outcome is unknown, oldest first. */
  unresolvedReceipts(limit: number): Promise<Receipt[]>;
  /** Calls of a route since a time that are paid or being paid (claimed, settling, settled, pending, unknown). */
  countPaidSince(route: string, since: Date): Promise<number>;
  /** Every receipt, oldest first (tests, operations). */
  receipts(): Promise<Receipt[]>;
  /** Read-only, for metrics: receipts in the states still in flight, and when the oldest settlement began. */
  inFlightStats?(): Promise<InFlightStats>;
  /**
   * Which of the presented secrets (Idempotency-Key or retry key, payment-identifier id) is the one bound to the
   * receipt, if any. The ledger stores only keyed digests of secrets, so this is the only way to compare them.
   */
  boundSecret(
    receipt: Pick<Receipt, "idempotencyKey" | "paymentId">,
    presented: { key?: string | undefined; paymentId?: string | undefined },
  ): "key" | "payment_id" | undefined;

  startIncarnation(id: string, now: Date): Promise<void>;
  heartbeat(id: string, now: Date): Promise<void>;
  /** A clean stop: its claims are gone by then, so nothing is left to release. */
  endIncarnation(id: string, now: Date): Promise<void>;
  incarnations(): Promise<Incarnation[]>;
  /** What a dead incarnation left: claims released, settling receipts marked unknown; marks it ended. */
  releaseIncarnation(id: string, now: Date): Promise<ReleasedIncarnation>;

  /** Drops expired idempotency records and responses past their retention; returns how many of each. */
  purgeExpired(now: Date): Promise<{ idempotency: number; responses: number }>;
  close(): Promise<void>;
}

/** A network as CAIP-2 (v2), x402 v1 names translated; unknown names kept, lower-cased, so nothing is silently merged. */
export function normalizeNetwork(network: string): string {
  const n = network.trim().toLowerCase();
  return caip2OfV1(n) ?? n;
}

/** The one spelling of an identity the ledger stores and compares: CAIP-2 network, lower-case hex. */
export function normalizeIdentity(id: PaymentIdentity): PaymentIdentity {
  return {
    network: normalizeNetwork(id.network),
    asset: id.asset.toLowerCase(),
    payer: id.payer.toLowerCase(),
    nonce: id.nonce.toLowerCase(),
  };
}
