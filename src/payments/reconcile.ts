import {
  createPublicClient,
  type Hex,
  http,
  isAddress,
  isHex,
  type PublicClient,
  parseAbi,
  parseEventLogs,
} from "viem";

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
  /** When the receipt was created: logs are searched from the block of that time on, however long ago. */
  since: Date;
  /** The authorization's validBefore (unix seconds), to tell "not used yet" from "can never be used". */
  validBefore?: string | null | undefined;
  now: Date;
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

const EIP3009 = parseAbi([
  "function authorizationState(address authorizer, bytes32 nonce) view returns (bool)",
  "event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)",
  "event Transfer(address indexed from, address indexed to, uint256 value)",
]);

/** Some margin before the receipt's time: the server's clock and the chain's block times differ slightly. */
const CLOCK_MARGIN_SECONDS = 300n;

export interface ChainReaderOptions {
  /** Largest block range per eth_getLogs call (providers cap it); the search walks the whole range in such chunks. */
  chunkBlocks?: bigint;
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

export function chainReaderFor(client: PublicClient, opts: ChainReaderOptions = {}): ChainReader {
  const chunk = opts.chunkBlocks ?? 10_000n;

  /** The last block at or before `seconds` (binary search on timestamps; O(log n) calls, no fixed lookback). */
  async function blockAtOrBefore(seconds: bigint, latest: bigint): Promise<bigint> {
    let lo = 0n;
    let hi = latest;
    while (lo < hi) {
      const mid = (lo + hi + 1n) / 2n;
      const block = await client.getBlock({ blockNumber: mid });
      if (block.timestamp <= seconds) lo = mid;
      else hi = mid - 1n;
    }
    return lo;
  }

  async function paysUs(hash: Hex, q: ChainQuery): Promise<boolean> {
    const receipt = await client.getTransactionReceipt({ hash }).catch(() => undefined);
    if (receipt?.status !== "success") return false;
    const used = parseEventLogs({ abi: EIP3009, eventName: "AuthorizationUsed", logs: receipt.logs }).some(
      (l) =>
        l.address.toLowerCase() === q.asset.toLowerCase() &&
        l.args.authorizer.toLowerCase() === q.payer.toLowerCase() &&
        l.args.nonce.toLowerCase() === q.nonce.toLowerCase(),
    );
    // Only a transfer of the full amount from the payer to our payTo, in the transaction that used this very
    // authorization, counts as our settlement.
    return (
      used &&
      parseEventLogs({ abi: EIP3009, eventName: "Transfer", logs: receipt.logs }).some(
        (t) =>
          t.address.toLowerCase() === q.asset.toLowerCase() &&
          t.args.from.toLowerCase() === q.payer.toLowerCase() &&
          t.args.to.toLowerCase() === q.payTo.toLowerCase() &&
          t.args.value === BigInt(q.amount),
      )
    );
  }

  async function findUse(q: ChainQuery, fromBlock: bigint, latest: bigint): Promise<Hex | undefined> {
    for (let from = fromBlock; from <= latest; from += chunk) {
      const to = from + chunk - 1n < latest ? from + chunk - 1n : latest;
      const logs = await client.getContractEvents({
        address: q.asset as Hex,
        abi: EIP3009,
        eventName: "AuthorizationUsed",
        args: { authorizer: q.payer as Hex, nonce: q.nonce as Hex },
        fromBlock: from,
        toBlock: to,
      });
      const hash = logs[0]?.transactionHash;
      if (hash) return hash;
    }
    return undefined;
  }

  return {
    async lookup(q) {
      if (!isAddress(q.asset) || !isAddress(q.payer) || !isHex(q.nonce) || q.nonce.length !== 66)
        return { kind: "unused", expired: false };
      if (q.transaction && isHex(q.transaction) && (await paysUs(q.transaction, q)))
        return { kind: "settled", transaction: q.transaction };
      const used = await client.readContract({
        address: q.asset,
        abi: EIP3009,
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
      const latest = await client.getBlockNumber({ cacheTime: 0 });
      const since = BigInt(Math.floor(q.since.getTime() / 1000)) - CLOCK_MARGIN_SECONDS;
      const start = await blockAtOrBefore(since, latest);
      // From the receipt's own block; should the clocks disagree more than the margin, the rest of the chain too.
      const hash =
        (await findUse(q, start, latest)) ?? (start > 0n ? await findUse(q, 0n, start - 1n) : undefined);
      if (hash && (await paysUs(hash, q))) return { kind: "settled", transaction: hash };
      return { kind: "used_elsewhere" };
    },
  };
}
