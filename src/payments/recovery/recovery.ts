import type { FastifyBaseLogger } from "fastify";
import type { Incarnation, LedgerPort, Receipt } from "../../ledger/port.js";
import type { PaymentObserver } from "../core/events.js";
import { ChainLookupDeferred, type ChainReader, type ChainVerdict } from "./chain-reader.js";

export type Resolution =
  | { kind: "settled"; receipt: Receipt }
  /** Unused and still usable: the buyer's retry may claim it again. */
  | { kind: "unused" }
  /** Settled the question against the buyer: nothing was charged to us (expired unused, or used elsewhere). */
  | { kind: "failed"; reason: string }
  /** No chain to ask, or the chain did not answer. */
  | { kind: "unknown" };

/**
 * Settles a receipt whose settlement outcome is unknown from the chain, and records the answer. Shared by the
 * background reconciler and a buyer's retry (whichever comes first; recording the same transaction twice is harmless).
 */
export async function resolveFromChain(
  ledger: LedgerPort,
  chain: ChainReader | undefined,
  receipt: Receipt,
  now: Date,
  log: FastifyBaseLogger,
  /** A buyer's request (default) does not repeat a lookup that just failed; the reconciler always asks. */
  origin: "request" | "reconciler" = "request",
): Promise<Resolution> {
  if (!chain) return { kind: "unknown" };
  let verdict: ChainVerdict;
  try {
    verdict = await chain.lookup({
      asset: receipt.identity.asset,
      payer: receipt.identity.payer,
      nonce: receipt.identity.nonce,
      payTo: receipt.payTo,
      amount: receipt.amount,
      transaction: receipt.transaction,
      since: new Date(receipt.createdAt),
      validBefore: receipt.validBefore,
      now,
      origin,
    });
  } catch (err) {
    if (err instanceof ChainLookupDeferred) return { kind: "unknown" };
    log.warn({ err, receipt: receipt.id }, "chain lookup failed");
    return { kind: "unknown" };
  }
  if (verdict.kind === "settled") {
    const r = await ledger.recordSettlement(receipt.id, {
      status: "settled",
      transaction: verdict.transaction,
      now,
    });
    if (r.ok) {
      log.info(
        { receipt: receipt.id, transaction: verdict.transaction },
        "settlement recovered from the chain",
      );
      return { kind: "settled", receipt: r.receipt };
    }
    log.error(
      { receipt: receipt.id, transaction: verdict.transaction, reason: r.reason },
      "chain settlement not recorded",
    );
    return { kind: "unknown" };
  }
  if (verdict.kind === "unused" && !verdict.expired) return { kind: "unused" };
  const reason = verdict.kind === "unused" ? "authorization_expired_unused" : "authorization_used_elsewhere";
  await ledger.recordFailure(receipt.id, { status: "failed", error: reason, now });
  log.info({ receipt: receipt.id, reason }, "unknown settlement resolved: nothing was paid");
  return { kind: "failed", reason };
}

/**
 * Which incarnations are dead: those the ledger knows are gone (`alive: false`, PostgreSQL's session locks); with one
 * process per ledger (SQLite) every other unfinished one; otherwise those whose heartbeat is older than `staleMs`.
 * One the ledger knows is alive never is, however late its heartbeat.
 */
export function deadIncarnations(
  all: Incarnation[],
  self: string,
  now: Date,
  opts: { singleInstance: boolean; staleMs: number },
): string[] {
  return all
    .filter((i) => i.id !== self && i.endedAt === null)
    .filter(
      (i) =>
        i.alive === false ||
        (i.alive === undefined &&
          (opts.singleInstance || Date.parse(i.heartbeatAt) < now.getTime() - opts.staleMs)),
    )
    .map((i) => i.id);
}

export interface ReconcilerDeps {
  ledger: LedgerPort;
  chain: ChainReader | undefined;
  observer: PaymentObserver;
  log: FastifyBaseLogger;
  clock: () => Date;
  batch?: number;
}

/** One pass over the unknown receipts, oldest first; reports the backlog left. Never throws. */
export async function reconcileOnce(deps: ReconcilerDeps): Promise<{ resolved: number; remaining: number }> {
  const batch = deps.batch ?? 50;
  let resolved = 0;
  try {
    const pending = await deps.ledger.unresolvedReceipts(batch);
    for (const r of pending) {
      const res = await resolveFromChain(deps.ledger, deps.chain, r, deps.clock(), deps.log, "reconciler");
      if (res.kind === "settled" || res.kind === "failed") resolved += 1;
    }
    const remaining = (await deps.ledger.unresolvedReceipts(10_000)).length;
    deps.observer.reconcilerBacklog(remaining);
    return { resolved, remaining };
  } catch (err) {
    deps.log.error({ err }, "reconciler pass failed");
    return { resolved, remaining: -1 };
  }
}
