import { createPublicClient, type Hex, http, type Log, type PublicClient } from "viem";
import { AUTHORIZATION_USED, authorizedTransfers, TRANSFER } from "../chain/eip3009.js";
import type { PaymentNetwork } from "../chain/networks.js";

/**
 * The x402 payments the chain holds for a payee: every USDC transfer to it made by an EIP-3009 authorization (a
 * Transfer log and, in the same transaction, the token's AuthorizationUsed log of the same payer). A plain transfer
 * to the payee is not a paid call and is not listed. The chain is the record: the ledger is checked against this.
 * What the RPC answers is checked, not believed: a log of another contract, to another payee or outside the range
 * asked for is set aside as `rejected` (an honest RPC never returns one).
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

/** A log the RPC returned that is not a payment to us in the range asked for, and why. */
export interface RejectedLog {
  transaction: string;
  block: string;
  reason: string;
}

export interface ScanRange {
  fromBlock: bigint;
  /** Inclusive; default the latest block. */
  toBlock?: bigint | undefined;
  /** Largest block range per eth_getLogs call (providers cap it). */
  chunkBlocks?: bigint;
}

export function chainClient(rpcUrl: string): PublicClient {
  return createPublicClient({ cacheTime: 0, transport: http(rpcUrl, { retryCount: 2, timeout: 15_000 }) });
}

/** The payments to `payTo` in the network's USDC over the block range, in chain order, and the range actually read. */
export async function scanPayments(
  client: PublicClient,
  network: PaymentNetwork,
  payTo: `0x${string}`,
  range: ScanRange,
): Promise<{ payments: ChainPayment[]; rejected: RejectedLog[]; fromBlock: bigint; toBlock: bigint }> {
  const asset = network.usdc.address;
  const toBlock = range.toBlock ?? (await client.getBlockNumber());
  const chunk = range.chunkBlocks ?? 10_000n;
  const payments: ChainPayment[] = [];
  const rejected: RejectedLog[] = [];
  const times = new Map<bigint, Date>();
  const reject = (l: Log, reason: string) =>
    rejected.push({ transaction: l.transactionHash ?? "", block: String(l.blockNumber ?? ""), reason });
  for (let from = range.fromBlock; from <= toBlock; from += chunk) {
    const to = from + chunk - 1n < toBlock ? from + chunk - 1n : toBlock;
    const transfers = await client.getLogs({
      address: asset,
      event: TRANSFER,
      args: { to: payTo },
      fromBlock: from,
      toBlock: to,
    });
    if (transfers.length === 0) continue;
    const uses = await client.getLogs({
      address: asset,
      event: AUTHORIZATION_USED,
      fromBlock: from,
      toBlock: to,
    });
    const inRange = (l: Log) => l.blockNumber !== null && l.blockNumber >= from && l.blockNumber <= to;
    const kept: Log[] = [];
    for (const t of transfers) {
      if (t.address.toLowerCase() !== asset.toLowerCase())
        reject(t, `a log of ${t.address}, not ${network.label} USDC`);
      else if (t.args.to?.toLowerCase() !== payTo.toLowerCase())
        reject(t, `a transfer to ${t.args.to}, not PAY_TO`);
      else if (!inRange(t))
        reject(t, `a log of block ${t.blockNumber}, outside the blocks asked for (${from}–${to})`);
      else kept.push(t);
    }
    for (const p of authorizedTransfers([...uses.filter(inRange), ...kept], asset)) {
      let time = times.get(p.blockNumber);
      if (!time) {
        const block = await client.getBlock({ blockNumber: p.blockNumber });
        time = new Date(Number(block.timestamp) * 1000);
        times.set(p.blockNumber, time);
      }
      payments.push({
        transaction: p.transaction,
        blockNumber: p.blockNumber,
        time,
        payer: p.payer,
        nonce: p.nonce,
        amount: p.amount,
      });
    }
  }
  payments.sort((a, b) => (a.blockNumber < b.blockNumber ? -1 : a.blockNumber > b.blockNumber ? 1 : 0));
  return { payments, rejected, fromBlock: range.fromBlock, toBlock };
}

/**
 * Whether the transaction's own receipt confirms the payment: it succeeded, and its logs hold this very authorized
 * transfer (same payer, nonce, payee and amount, by the network's USDC). A second question to the chain about each
 * payment before anything is written for it.
 */
export async function receiptConfirms(
  client: Pick<PublicClient, "getTransactionReceipt">,
  network: PaymentNetwork,
  payTo: string,
  p: Pick<ChainPayment, "transaction" | "payer" | "nonce" | "amount" | "blockNumber">,
): Promise<boolean> {
  const receipt = await client.getTransactionReceipt({ hash: p.transaction }).catch(() => undefined);
  if (receipt?.status !== "success" || receipt.blockNumber !== p.blockNumber) return false;
  return authorizedTransfers(receipt.logs, network.usdc.address).some(
    (t) =>
      t.transaction.toLowerCase() === p.transaction.toLowerCase() &&
      t.payer === p.payer.toLowerCase() &&
      t.nonce === p.nonce.toLowerCase() &&
      t.to === payTo.toLowerCase() &&
      t.amount === p.amount,
  );
}

/** The block of a transaction, when the chain has it (verify places a receipt's transaction by it). */
export async function blockOfTransaction(
  client: Pick<PublicClient, "getTransactionReceipt">,
  hash: string,
): Promise<bigint | undefined> {
  const receipt = await client.getTransactionReceipt({ hash: hash as Hex }).catch(() => undefined);
  return receipt?.status === "success" ? receipt.blockNumber : undefined;
}
