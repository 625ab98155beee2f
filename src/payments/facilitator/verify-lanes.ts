/**
 * The facilitator's verify capacity shared between proof kinds. A proof whose signature recovers to its payer (an
 * EOA) costs the facilitator one cheap check; any other proof (a smart wallet, or junk that only the chain can tell
 * apart) may cost it a slow contract call under its own gas. So every non-EOA verify runs in one bounded lane: at
 * most `maxInFlight` of them at once, `perContract` per claimed wallet and `perSender` per client address. EOA
 * verifies never enter the lane, so whatever the non-EOA proofs do, the rest of the facilitator's capacity stays
 * theirs. A verify over a limit waits in line (a wallet's honest parallel calls, each bounded by the facilitator
 * timeout) up to `queue` waiters per limit; beyond that it is refused (payer_limited, nothing charged). Pure counters, no timers.
 */
export interface VerifyLaneOptions {
  /** Non-EOA verifies in flight at the facilitator, all senders and contracts together. */
  maxInFlight: number;
  /** Non-EOA verifies in flight per claimed payer (the wallet contract). */
  perContract: number;
  /** Non-EOA verifies in flight per sender (the request's client address). */
  perSender: number;
  /** Verifies that may wait for each of those limits; past it the next is refused. */
  queue: number;
}

export const DEFAULT_VERIFY_LANE: VerifyLaneOptions = {
  maxInFlight: 8,
  perContract: 2,
  perSender: 2,
  queue: 16,
};

/** One limit: `running` holders, the waiters woken one at a time as holders leave. */
interface Slot {
  running: number;
  waiting: (() => void)[];
}

/** Which limit refused a verify, for the answer's wording. */
export type LaneRefusal = "sender" | "contract" | "lane";

export class LaneFull extends Error {
  constructor(readonly limit: LaneRefusal) {
    super(`the ${limit} verify limit is full`);
  }
}

export interface VerifyLane {
  /**
   * Takes the sender's, the contract's and the lane's slots in that order (one fixed order, so holders never wait on
   * each other in a cycle), waiting in line where one is full; throws LaneFull when a line is full too. The returned
   * function gives all three back.
   */
  enter(contract: string, sender: string | undefined): Promise<() => void>;
  /** Non-EOA verifies at the facilitator now (tests, metrics). */
  readonly inFlight: number;
  /** The most that were ever in flight at once (tests). */
  readonly peak: number;
}

export function createVerifyLane(opts: Partial<VerifyLaneOptions> = {}): VerifyLane {
  const o = { ...DEFAULT_VERIFY_LANE, ...opts };
  const senders = new Map<string, Slot>();
  const contracts = new Map<string, Slot>();
  const lane: Slot = { running: 0, waiting: [] };
  let peak = 0;

  async function take(
    table: Map<string, Slot> | undefined,
    key: string,
    cap: number,
    limit: LaneRefusal,
  ): Promise<Slot> {
    let slot = table ? table.get(key) : lane;
    if (!slot) {
      slot = { running: 0, waiting: [] };
      table?.set(key, slot);
    }
    if (slot.running < cap) {
      slot.running += 1;
      return slot;
    }
    if (slot.waiting.length >= o.queue) throw new LaneFull(limit);
    // The slot is handed over by the holder that leaves (see give): first come, first served.
    const waiting = slot;
    await new Promise<void>((resolve) => waiting.waiting.push(resolve));
    return waiting;
  }

  function give(table: Map<string, Slot> | undefined, key: string, slot: Slot): void {
    const next = slot.waiting.shift();
    if (next) {
      next();
      return;
    }
    slot.running -= 1;
    if (table && slot.running === 0) table.delete(key);
  }

  return {
    async enter(contract, sender) {
      const held: (() => void)[] = [];
      const release = () => {
        for (const h of held.splice(0).reverse()) h();
      };
      try {
        if (sender !== undefined) {
          const s = await take(senders, sender, o.perSender, "sender");
          held.push(() => give(senders, sender, s));
        }
        const key = contract.toLowerCase();
        const c = await take(contracts, key, o.perContract, "contract");
        held.push(() => give(contracts, key, c));
        const l = await take(undefined, "", o.maxInFlight, "lane");
        held.push(() => give(undefined, "", l));
      } catch (error) {
        release();
        throw error;
      }
      peak = Math.max(peak, lane.running);
      let done = false;
      return () => {
        if (done) return;
        done = true;
        release();
      };
    },
    get inFlight() {
      return lane.running;
    },
    get peak() {
      return peak;
    },
  };
}
