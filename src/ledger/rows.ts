import type {
  ClaimResult,
  KeyBinding,
  PaymentIdentity,
  Receipt,
  ReceiptStatus,
  StoredResponse,
} from "./port.js";

/**
 * A `receipts` row as a driver hands it back. The columns are the same on every backend; only how a timestamp and the
 * stored response arrive differs (SQLite: ISO text and JSON text; PostgreSQL: Date and parsed JSONB).
 */
export interface ReceiptRow<Time, Response> {
  id: string;
  network: string;
  asset: string;
  payer: string;
  nonce: string;
  route: string;
  request_fingerprint: string;
  x402_version: number;
  amount: string;
  pay_to: string;
  pp_ref: string | null;
  idempotency_key: string | null;
  payment_id: string | null;
  status: ReceiptStatus;
  transaction: string | null;
  error: string | null;
  incarnation: string | null;
  lock_expires_at: Time | null;
  created_at: Time;
  updated_at: Time;
  settled_at: Time | null;
  response: Response | null;
  response_expires_at: Time | null;
  valid_before: string | null;
}

/** How one backend's timestamps and stored responses become the port's ISO text and StoredResponse. */
export interface RowDecoders<Time, Response> {
  time: (t: Time) => string;
  response: (r: Response | null) => StoredResponse | null;
}

export function receiptFromRow<Time, Response>(
  r: ReceiptRow<Time, Response>,
  decode: RowDecoders<Time, Response>,
): Receipt {
  const optionalTime = (t: Time | null): string | null => (t === null ? null : decode.time(t));
  return {
    id: r.id,
    identity: { network: r.network, asset: r.asset, payer: r.payer, nonce: r.nonce },
    route: r.route,
    requestFingerprint: r.request_fingerprint,
    x402Version: r.x402_version,
    amount: r.amount,
    payTo: r.pay_to,
    ppRef: r.pp_ref,
    idempotencyKey: r.idempotency_key,
    paymentId: r.payment_id ?? null,
    status: r.status,
    transaction: r.transaction,
    error: r.error,
    incarnation: r.incarnation,
    createdAt: decode.time(r.created_at),
    updatedAt: decode.time(r.updated_at),
    settledAt: optionalTime(r.settled_at),
    response: decode.response(r.response),
    responseExpiresAt: optionalTime(r.response_expires_at),
    validBefore: r.valid_before,
  };
}

/** Statuses that hold a cap slot: paid, or possibly being paid (an SQL list, the same on every backend). */
export const LIVE_STATUSES_SQL = "('claimed', 'settling', 'settled', 'pending', 'unknown')";

/** Paid or possibly paid, and never delivered (an SQL condition, the same on every backend). */
export const UNDELIVERED_SQL = "status IN ('settled', 'pending', 'unknown') AND response_expires_at IS NULL";

/** An unexpired `idempotency` row: the request and the payment the payer's key was first used for. */
export interface IdempotencyRecord {
  request_fingerprint: string;
  network: string;
  asset: string;
  nonce: string;
}

/**
 * The idempotency row's values in column order (payer, key, request_fingerprint, network, asset, nonce, receipt_id,
 * incarnation, created_at, expires_at), times as the backend stores them.
 */
export type KeyRecord = Omit<KeyBinding, "key" | "paymentId"> & { key: string };

/**
 * The idempotency rows a binding writes: one per secret it names. The binding's secrets are already digests
 * (secrets.ts `hashedBinding`), each of its own kind, so a key and an id never share a row.
 */
export const bindingRecords = (b: KeyBinding): { record: KeyRecord; secret: "key" | "payment_id" }[] => {
  const { key, paymentId, ...rest } = b;
  const out: { record: KeyRecord; secret: "key" | "payment_id" }[] = [];
  if (key !== undefined) out.push({ record: { ...rest, key }, secret: "key" });
  if (paymentId !== undefined) out.push({ record: { ...rest, key: paymentId }, secret: "payment_id" });
  return out;
};

export const keyRecordValues = <T>(b: KeyRecord, time: (d: Date) => T) =>
  [
    b.identity.payer,
    b.key,
    b.requestFingerprint,
    b.identity.network,
    b.identity.asset,
    b.identity.nonce,
    b.receiptId,
    b.incarnation,
    time(b.now),
    time(new Date(b.now.getTime() + b.ttlMs)),
  ] as const;

/** A claim's answer when the payer's key already stands for another request or another payment; else undefined. */
export function idempotencyConflict(
  rec: IdempotencyRecord | undefined,
  requestFingerprint: string,
  identity: PaymentIdentity,
): ClaimResult | undefined {
  if (rec && rec.request_fingerprint !== requestFingerprint)
    return { kind: "idempotency_conflict", reason: "different_request" };
  if (
    rec &&
    (rec.network !== identity.network || rec.asset !== identity.asset || rec.nonce !== identity.nonce)
  )
    return { kind: "idempotency_conflict", reason: "different_payment" };
  return undefined;
}

/**
 * A claim's answer when the authorization already has a receipt that is being settled, held by a live claim, paid or
 * unresolved; undefined when the claim may take the receipt over (refused, or a claim whose lock lapsed).
 */
export function existingReceiptAnswer<Row extends ReceiptRow<unknown, unknown>>(
  existing: Row,
  lockLive: boolean,
  toReceipt: (r: Row) => Receipt,
): ClaimResult | undefined {
  if (existing.status === "settling" || (existing.status === "claimed" && lockLive))
    return { kind: "in_progress", receipt: toReceipt(existing) };
  if (existing.status === "settled" || existing.status === "pending")
    return { kind: "paid", receipt: toReceipt(existing) };
  if (existing.status === "unknown") return { kind: "unresolved", receipt: toReceipt(existing) };
  return undefined;
}
