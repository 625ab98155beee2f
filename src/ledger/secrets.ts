import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { chmodSync, closeSync, mkdirSync, openSync, readFileSync, statSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import type { ClaimRequest, KeyBinding, Receipt } from "./port.js";

/**
 * The payer's secrets (Idempotency-Key, payment-identifier id, the retry key the server issues) are what a replay of a
 * stored response must present. The ledger keeps only their keyed digests (HMAC-SHA256 under a server key that is not
 * in the ledger), so a backup or a stolen ledger file holds nothing a client could present. Both adapters hash through
 * here, at their entry, so the port's callers keep passing and comparing the secrets themselves.
 */

/** What a stored digest starts with: tells a digest from a secret stored in plaintext by an older schema. */
export const DIGEST_PREFIX = "hmac-sha256:";
const CONTEXT = "pressure402 ledger secret\0";
/** At least 256 bits of key. */
export const SECRET_KEY_BYTES = 32;

export interface SecretHasher {
  /** The keyed digest stored in place of `secret`. */
  digest(secret: string): string;
}

export function secretHasher(key: Buffer): SecretHasher {
  if (key.length < SECRET_KEY_BYTES)
    throw new Error(`the ledger secret key must hold at least ${SECRET_KEY_BYTES} bytes`);
  const k = Buffer.from(key);
  return {
    digest: (secret) =>
      DIGEST_PREFIX + createHmac("sha256", k).update(CONTEXT).update(secret).digest("base64url"),
  };
}

/** LEDGER_SECRET_KEY's form: hex, 64 to 128 digits (32 to 64 bytes; `openssl rand -hex 32`). */
export const SECRET_KEY_PATTERN = "^[0-9a-fA-F]{64,128}$";

export const parseSecretKey = (hex: string): Buffer => {
  if (!new RegExp(SECRET_KEY_PATTERN).test(hex))
    throw new Error("the ledger secret key must be 64 to 128 hex digits (openssl rand -hex 32)");
  return Buffer.from(hex, "hex");
};

/** The key file of a SQLite ledger when no key is configured: beside the ledger, never inside it or its backups. */
export const keyFileOf = (ledgerPath: string) => `${ledgerPath}.key`;

/**
 * The key in `file`, created on first use (random, owner read/write only). Created exclusively, so two processes
 * starting together on one fresh ledger end up with the same key.
 */
export function loadOrCreateKeyFile(file: string): Buffer {
  mkdirSync(dirname(file), { recursive: true });
  try {
    const fd = openSync(file, "wx", 0o600);
    try {
      writeSync(fd, `${randomBytes(SECRET_KEY_BYTES).toString("hex")}\n`);
    } finally {
      closeSync(fd);
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
  }
  // A file copied in with wider permissions is narrowed: the key is as sensitive as the secrets it protects.
  if ((statSync(file).mode & 0o077) !== 0) chmodSync(file, 0o600);
  return parseSecretKey(readFileSync(file, "utf8").trim());
}

/**
 * The key of a process that was given none (a test ledger, an in-memory ledger): random and never written down, so
 * only this process can match the secrets it stores. One per process, so ledgers it opens on one database agree.
 */
let processKey: Buffer | undefined;
export function processSecretKey(): Buffer {
  processKey ??= randomBytes(SECRET_KEY_BYTES);
  return processKey;
}

/** The idempotency row key and receipt column of a payment-identifier id: a digest no Idempotency-Key can have. */
const paymentIdInput = (id: string) => `payment-identifier ${id}`;

export const keyDigest = (h: SecretHasher, key: string) => h.digest(key);
export const paymentIdDigest = (h: SecretHasher, id: string) => h.digest(paymentIdInput(id));

/** A claim whose Idempotency-Key is replaced by its digest, as the adapters store and look it up. */
export const hashedClaim = (h: SecretHasher, req: ClaimRequest): ClaimRequest =>
  req.idempotency
    ? { ...req, idempotency: { ...req.idempotency, key: keyDigest(h, req.idempotency.key) } }
    : req;

/** A binding whose secrets are replaced by their digests (each one's own, so a key and an id never share a row). */
export const hashedBinding = (h: SecretHasher, b: KeyBinding): KeyBinding => ({
  ...b,
  key: b.key === undefined ? undefined : keyDigest(h, b.key),
  paymentId: b.paymentId === undefined ? undefined : paymentIdDigest(h, b.paymentId),
});

const same = (stored: string | null, digest: string): boolean => {
  if (stored === null || stored.length !== digest.length) return false;
  return timingSafeEqual(Buffer.from(stored), Buffer.from(digest));
};

/** Which of the presented secrets is the one bound to the receipt (whose fields hold digests), if any. */
export function boundSecret(
  h: SecretHasher,
  receipt: Pick<Receipt, "idempotencyKey" | "paymentId">,
  presented: { key?: string | undefined; paymentId?: string | undefined },
): "key" | "payment_id" | undefined {
  if (presented.key !== undefined && same(receipt.idempotencyKey, keyDigest(h, presented.key))) return "key";
  if (presented.paymentId !== undefined && same(receipt.paymentId, paymentIdDigest(h, presented.paymentId)))
    return "payment_id";
  return undefined;
}

/**
 * The in-place upgrade of a ledger that stored secrets in plaintext: each value's digest, as the adapters would
 * have written it. Idempotency rows keep the payment-identifier id with its prefix, so both kinds hash alike.
 */
export const migratedSecret = {
  receiptKey: (h: SecretHasher, v: string) => keyDigest(h, v),
  receiptPaymentId: (h: SecretHasher, v: string) => paymentIdDigest(h, v),
  idempotencyRow: (h: SecretHasher, v: string) => h.digest(v),
};
