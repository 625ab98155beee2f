import type { FastifyBaseLogger } from "fastify";
import { flushUnwritten, type PaymentCore, releaseDeadIncarnations } from "../core/core.js";
import { reconcileOnce } from "./recovery.js";

export interface Maintenance {
  /** One reconciler pass now (tests, operations): unrecorded writes first, then the unknown receipts. */
  reconcileNow(): Promise<{ resolved: number; remaining: number }>;
  /** Registers this incarnation, releases what dead ones left and starts the periodic loop (`every` ms; 0: none). */
  start(every: number): Promise<void>;
  /** Stops the loop and ends this incarnation cleanly. */
  stop(): Promise<void>;
}

/**
 * The ledger's upkeep beside the requests: this incarnation's heartbeat, the release of dead incarnations' claims,
 * the purge of expired entries, and the reconciler that settles unknown outcomes from the chain.
 */
export function createMaintenance(core: PaymentCore, log: FastifyBaseLogger): Maintenance {
  const { clock, incarnation } = core;
  let timer: NodeJS.Timeout | undefined;

  // Writes the ledger refused after a settlement go first; the backlog counts them with the unknown receipts.
  const reconcileNow = async () => {
    const unwritten = await flushUnwritten(core);
    const r = await reconcileOnce({
      ledger: core.ledger,
      chain: core.chain,
      observer: core.observer,
      log,
      clock,
    });
    if (unwritten === 0 || r.remaining < 0) return r;
    core.observer.reconcilerBacklog(r.remaining + unwritten);
    return { ...r, remaining: r.remaining + unwritten };
  };

  // Recovery of what a dead incarnation left: before the server takes requests, its claims and in-flight keys are
  // released (the buyer's retry is never blocked); its unknown settlements go to the background reconciler.
  async function start(every: number): Promise<void> {
    const now = clock();
    await core.ledger.startIncarnation(incarnation, now);
    await releaseDeadIncarnations(core, now);
    void reconcileNow();
    if (every <= 0) return;
    timer = setInterval(() => {
      void (async () => {
        const t = clock();
        await core.ledger.heartbeat(incarnation, t);
        // With several instances on one ledger, another one may have died since this one started.
        if (!core.singleInstance) await releaseDeadIncarnations(core, t);
        await core.ledger.purgeExpired(t);
        await reconcileNow();
      })().catch((err: unknown) => log.error({ err }, "payments maintenance failed"));
    }, every);
    timer.unref();
  }

  async function stop(): Promise<void> {
    if (timer) clearInterval(timer);
    // A clean stop leaves nothing in `settling`: what is still unrecorded becomes `unknown`, for the chain to settle
    // at the next start. If the ledger still cannot write, the incarnation stays unended, so the next start releases
    // it as a dead one instead of trusting it.
    try {
      await flushUnwritten(core);
      await core.ledger.releaseIncarnation(incarnation, clock());
    } catch (err) {
      log.error(
        { err, unwritten: core.unwritten.size },
        "payments: the ledger could not close this incarnation",
      );
    }
  }

  return { reconcileNow, start, stop };
}
