import { createPublicClient, type Hex, http, isAddress, isHex, type PublicClient } from "viem";
import { authorizedTransfers, EIP3009_ABI } from "../../chain/eip3009.js";

/**
 * Settlement questions answered by the chain. When a settlement's outcome was lost (facilitator timeout after
 * broadcast, a crash between settle and receipt), the token contract knows: `authorizationState(payer, nonce)` says
 * whether the EIP-3009 authorization was used, and its AuthorizationUsed log names the transaction, whose Transfer
 * says whether that use paid *us* this amount.
 */
export interface ChainQuery {
  asset: string;
  payer: string;
  nonce: string;
  payTo: string;
  amount: string;
  /** A transaction the facilitator already named for it (a pending settlement), checked first. */
  transaction?: string | null | undefined;
  /**
   * When the receipt was created. Our settlement cannot have landed before it (less a clock margin), so it is the
   * window's lower bound whenever it is later than validAfter (a validAfter of 0 would otherwise mean block 0).
   */
  since: Date;
  /** The authorization's validAfter (unix seconds), when known: no use of it can be older. */
  validAfter?: string | null | undefined;
  /** The authorization's validBefore (unix seconds), to tell "not used yet" from "can never be used". */
  validBefore?: string | null | undefined;
  now: Date;
  /**
   * Who asks. A buyer's request never repeats a lookup that just failed (the chain or its RPC is down): that question
   * waits for the background reconciler, which always asks.
   */
  origin?: "request" | "reconciler";
}

export type ChainVerdict =
  /** The authorization paid payTo the full amount in this transaction. */
  | { kind: "settled"; transaction: Hex }
  /** Not used (yet). `expired`: past validBefore, so it never will be: nobody was charged. */
  | { kind: "unused"; expired: boolean }
  /** Used, but not as a payment of this amount to us (cancelled, or paid elsewhere). */
  | { kind: "used_elsewhere" };

export interface ChainReader {
  lookup(q: ChainQuery): Promise<ChainVerdict>;
}

/** A lookup a request may not make now: the same one failed moments ago; the reconciler retries it. */
export class ChainLookupDeferred extends Error {
  override readonly name = "ChainLookupDeferred";
}

/** Some margin around the window: the server's clock and the chain's block times differ slightly. */
const CLOCK_MARGIN_SECONDS = 300n;

export interface ChainReaderOptions {
  /** Largest block range per eth_getLogs call (providers cap it); the window is read in such pages. */
  chunkBlocks?: bigint;
  /** The chain's usual block interval, for the first guess of a block by time (Base: 2 s); a guess, never trusted. */
  blockSeconds?: number;
  /** After a failed lookup, how long requests for the same authorization leave it to the reconciler (ms). */
  deferAfterFailureMs?: number;
  /** Wall clock of the deferral (tests). */
  clock?: () => number;
}

export function createChainReader(rpcUrl: string, opts: ChainReaderOptions = {}): ChainReader {
  // cacheTime 0: viem caches the block number for 4 s by default, and a lookup seconds after the previous one must see
  // the block that settled this authorization (otherwise its AuthorizationUsed log falls outside the searched range).
  const client = createPublicClient({
    cacheTime: 0,
    transport: http(rpcUrl, { timeout: 5000, retryCount: 1 }),
  });
  return chainReaderFor(client as PublicClient, opts);
}

/** What findAuthorizationUse needs: the authorization's identity, our terms, and its validity window. */
export type AuthorizationUseQuery = Pick<
  ChainQuery,
  "asset" | "payer" | "nonce" | "payTo" | "amount" | "since" | "validAfter" | "validBefore"
>;

export interface AuthorizationUse {
  /** The transaction whose AuthorizationUsed(payer, nonce) log the window holds. */
  transaction: Hex;
  blockNumber: bigint;
  /** Whether that transaction paid payTo the full amount from the payer (our settlement), or used it elsewhere. */
  paysUs: boolean;
}

interface BlockPoint {
  number: bigint;
  timestamp: bigint;
}

/** How close (in blocks) a time-to-block search must get; the pages read cover the rest. */
const BLOCK_TOLERANCE = 64n;
/** At most this many header reads to place one time on the chain; past it the bracket found so far is used. */
const MAX_BLOCK_PROBES = 8;

/**
 * The last block at or before `seconds` — or an earlier one within BLOCK_TOLERANCE — and the first block at or after
 * it (or a later one), found by interpolation from the latest block: two or three header reads on a chain with a
 * steady block time, never a walk from genesis.
 */
export async function blocksAround(
  client: Pick<PublicClient, "getBlock">,
  seconds: bigint,
  latest: BlockPoint,
  blockSeconds: number,
): Promise<{ atOrBefore: bigint; atOrAfter: bigint }> {
  if (seconds >= latest.timestamp) return { atOrBefore: latest.number, atOrAfter: latest.number };
  const read = async (n: bigint): Promise<BlockPoint> => {
    const b = await client.getBlock({ blockNumber: n });
    return { number: n, timestamp: b.timestamp };
  };
  let hi = latest;
  let lo: BlockPoint | undefined;
  let step = BigInt(Math.max(1, Math.ceil(Number(latest.timestamp - seconds) / blockSeconds)));
  for (let probes = 0; probes < MAX_BLOCK_PROBES; probes++) {
    let guess: bigint;
    if (lo === undefined) {
      // Not bracketed yet: guess back from hi by the assumed block time, doubling the step until below `seconds`.
      guess = hi.number > step ? hi.number - step : 0n;
      step *= 2n;
    } else {
      if (hi.number - lo.number <= BLOCK_TOLERANCE) break;
      const span = hi.timestamp - lo.timestamp;
      const frac = span > 0n ? ((seconds - lo.timestamp) * (hi.number - lo.number)) / span : 0n;
      guess = lo.number + frac;
      // Keep strictly inside the bracket so each probe narrows it.
      if (guess <= lo.number) guess = lo.number + 1n;
      if (guess >= hi.number) guess = hi.number - 1n;
    }
    const p = await read(guess);
    if (p.timestamp <= seconds) lo = p;
    else hi = p;
    if (lo === undefined && guess === 0n) return { atOrBefore: 0n, atOrAfter: hi.number };
  }
  return { atOrBefore: lo?.number ?? 0n, atOrAfter: hi.number };
}

/**
 * Finds the AuthorizationUsed log of (payer, nonce) on `asset` within the authorization's validity window — from
 * max(validAfter, receipt time) to validBefore, each widened by a clock margin and mapped to blocks — read in pages of
 * `chunkBlocks`, and says whether that transaction paid us. Undefined when the window holds no use (a cancellation
 * leaves AuthorizationCanceled, not AuthorizationUsed). Never reads outside the window, however deep the chain.
 */
export async function findAuthorizationUse(
  client: PublicClient,
  q: AuthorizationUseQuery,
  opts: Pick<ChainReaderOptions, "chunkBlocks" | "blockSeconds"> = {},
): Promise<AuthorizationUse | undefined> {
  const chunk = opts.chunkBlocks ?? 10_000n;
  const blockSeconds = opts.blockSeconds ?? 2;
  const head = await client.getBlock({ blockTag: "latest" });
  const latest: BlockPoint = { number: head.number as bigint, timestamp: head.timestamp };
  const since = BigInt(Math.floor(q.since.getTime() / 1000));
  const validAfter = q.validAfter ? BigInt(q.validAfter) : 0n;
  const low = (since > validAfter ? since : validAfter) - CLOCK_MARGIN_SECONDS;
  const fromBlock = (await blocksAround(client, low, latest, blockSeconds)).atOrBefore;
  let toBlock = latest.number;
  if (q.validBefore) {
    const high = BigInt(q.validBefore) + CLOCK_MARGIN_SECONDS;
    if (high < latest.timestamp) toBlock = (await blocksAround(client, high, latest, blockSeconds)).atOrAfter;
  }
  for (let from = fromBlock; from <= toBlock; from += chunk) {
    const to = from + chunk - 1n < toBlock ? from + chunk - 1n : toBlock;
    const logs = await client.getContractEvents({
      address: q.asset as Hex,
      abi: EIP3009_ABI,
      eventName: "AuthorizationUsed",
      args: { authorizer: q.payer as Hex, nonce: q.nonce as Hex },
      fromBlock: from,
      toBlock: to,
    });
    const log = logs[0];
    if (log?.transactionHash)
      return {
        transaction: log.transactionHash,
        blockNumber: log.blockNumber ?? from,
        paysUs: await paysUs(client, log.transactionHash, q),
      };
  }
  return undefined;
}

/** Whether transaction `hash` used this very authorization to pay payTo the full amount from the payer. */
async function paysUs(client: PublicClient, hash: Hex, q: AuthorizationUseQuery): Promise<boolean> {
  const receipt = await client.getTransactionReceipt({ hash }).catch(() => undefined);
  if (receipt?.status !== "success") return false;
  // Only a transfer of the full amount from the payer to our payTo, paired with this very authorization's use in the
  // same transaction, counts as our settlement.
  return authorizedTransfers(receipt.logs, q.asset).some(
    (t) =>
      t.payer === q.payer.toLowerCase() &&
      t.nonce === q.nonce.toLowerCase() &&
      t.to === q.payTo.toLowerCase() &&
      t.amount === BigInt(q.amount).toString(),
  );
}

/** How many failed authorizations a reader remembers for deferral (oldest forgotten first). */
const MAX_DEFERRED = 1000;

export function chainReaderFor(client: PublicClient, opts: ChainReaderOptions = {}): ChainReader {
  const deferMs = opts.deferAfterFailureMs ?? 30_000;
  const clock = opts.clock ?? Date.now;
  /** `${payer}:${nonce}` → until when requests leave it to the reconciler. */
  const deferred = new Map<string, number>();
  /** One lookup per authorization at a time: concurrent retries of one proof share it. */
  const inFlight = new Map<string, Promise<ChainVerdict>>();

  async function ask(q: ChainQuery): Promise<ChainVerdict> {
    if (!isAddress(q.asset) || !isAddress(q.payer) || !isHex(q.nonce) || q.nonce.length !== 66)
      return { kind: "unused", expired: false };
    if (q.transaction && isHex(q.transaction) && (await paysUs(client, q.transaction, q)))
      return { kind: "settled", transaction: q.transaction };
    const used = await client.readContract({
      address: q.asset,
      abi: EIP3009_ABI,
      functionName: "authorizationState",
      args: [q.payer, q.nonce as Hex],
    });
    if (!used) {
      const expired =
        q.validBefore !== null &&
        q.validBefore !== undefined &&
        BigInt(Math.floor(q.now.getTime() / 1000)) >= BigInt(q.validBefore);
      return { kind: "unused", expired };
    }
    const use = await findAuthorizationUse(client, q, opts);
    if (use?.paysUs) return { kind: "settled", transaction: use.transaction };
    return { kind: "used_elsewhere" };
  }

  return {
    lookup(q) {
      const key = `${q.payer.toLowerCase()}:${q.nonce.toLowerCase()}`;
      const until = deferred.get(key);
      if (q.origin !== "reconciler" && until !== undefined && until > clock())
        return Promise.reject(
          new ChainLookupDeferred(
            "a lookup of this authorization failed moments ago; the reconciler retries it",
          ),
        );
      const running = inFlight.get(key);
      if (running) return running;
      const p = ask(q)
        .then(
          (v) => {
            deferred.delete(key);
            return v;
          },
          (err: unknown) => {
            deferred.delete(key);
            deferred.set(key, clock() + deferMs);
            if (deferred.size > MAX_DEFERRED) deferred.delete(deferred.keys().next().value as string);
            throw err;
          },
        )
        .finally(() => inFlight.delete(key));
      inFlight.set(key, p);
      return p;
    },
  };
}
