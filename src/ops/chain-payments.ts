import { createPublicClient, type Hex, http, type PublicClient, parseAbi } from "viem";

/**
 * The x402 payments the chain holds for a payee: every USDC transfer to it made by an EIP-3009 authorization (a
 * Transfer log and, in the same transaction, the token's AuthorizationUsed log of the same payer). A plain transfer
 * to the payee is not a paid call and is not listed. The chain is the record: the ledger is checked against this.
 */
export interface ChainPayment {
  transaction: Hex;
  blockNumber: bigint;
  /** The block's time: when the money moved. */
  time: Date;
  payer: string;
  nonce: string;
  /** Atomic USDC, decimal string. */
  amount: string;
}

const EVENTS = parseAbi([
  "event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)",
  "event Transfer(address indexed from, address indexed to, uint256 value)",
]);

export interface ScanRange {
  fromBlock: bigint;
  /** Inclusive; default the latest block. */
  toBlock?: bigint | undefined;
  /** Largest block range per eth_getLogs call (providers cap it). */
  chunkBlocks?: bigint;
}

export function chainClient(rpcUrl: string): PublicClient {
  return createPublicClient({ transport: http(rpcUrl, { retryCount: 2, timeout: 15_000 }) });
}

/** The payments to `payTo` in `asset` over the block range, in chain order, and the range actually read. */
export async function scanPayments(
  client: PublicClient,
  asset: `0x${string}`,
  payTo: `0x${string}`,
  range: ScanRange,
): Promise<{ payments: ChainPayment[]; fromBlock: bigint; toBlock: bigint }> {
  const toBlock = range.toBlock ?? (await client.getBlockNumber());
  const chunk = range.chunkBlocks ?? 10_000n;
  const payments: ChainPayment[] = [];
  const times = new Map<bigint, Date>();
  for (let from = range.fromBlock; from <= toBlock; from += chunk) {
    const to = from + chunk - 1n < toBlock ? from + chunk - 1n : toBlock;
    const transfers = await client.getLogs({
      address: asset,
      event: EVENTS[1],
      args: { to: payTo },
      fromBlock: from,
      toBlock: to,
    });
    if (transfers.length === 0) continue;
    const uses = await client.getLogs({ address: asset, event: EVENTS[0], fromBlock: from, toBlock: to });
    const usesByTx = new Map<string, typeof uses>();
    for (const u of uses) {
      const list = usesByTx.get(u.transactionHash) ?? [];
      list.push(u);
      usesByTx.set(u.transactionHash, list);
    }
    for (const t of transfers) {
      const payer = t.args.from?.toLowerCase();
      // The authorization of this transfer: used by the same payer in the same transaction, just before it.
      const use = (usesByTx.get(t.transactionHash) ?? [])
        .filter((u) => u.args.authorizer?.toLowerCase() === payer && u.logIndex < t.logIndex)
        .sort((a, b) => b.logIndex - a.logIndex)[0];
      if (!payer || !use?.args.nonce || t.args.value === undefined) continue;
      let time = times.get(t.blockNumber);
      if (!time) {
        const block = await client.getBlock({ blockNumber: t.blockNumber });
        time = new Date(Number(block.timestamp) * 1000);
        times.set(t.blockNumber, time);
      }
      payments.push({
        transaction: t.transactionHash,
        blockNumber: t.blockNumber,
        time,
        payer,
        nonce: use.args.nonce.toLowerCase(),
        amount: t.args.value.toString(),
      });
    }
  }
  return { payments, fromBlock: range.fromBlock, toBlock };
}
