import { type Hex, type Log, type PublicClient, parseAbi, parseEventLogs } from "viem";
import type { PaymentNetwork } from "./networks.js";

/**
 * How the chain records an x402 `exact` payment: USDC's EIP-3009 `transferWithAuthorization` emits
 * AuthorizationUsed(authorizer, nonce) and then Transfer(from, to, value) in one transaction. The one reader of those
 * logs, for the recovery of lost settlements (src/payments/recovery/chain-reader.ts) and the operator's verify and reconcile
 * (src/ops/chain-payments.ts).
 */
export const EIP3009_ABI = parseAbi([
  "function authorizationState(address authorizer, bytes32 nonce) view returns (bool)",
  "event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)",
  "event Transfer(address indexed from, address indexed to, uint256 value)",
]);
export const AUTHORIZATION_USED = EIP3009_ABI[1];
export const TRANSFER = EIP3009_ABI[2];

/** A transfer of `asset` made by an EIP-3009 authorization, as its logs show it. */
export interface AuthorizedTransfer {
  transaction: Hex;
  blockNumber: bigint;
  logIndex: number;
  payer: string;
  to: string;
  nonce: string;
  /** Atomic units, decimal string. */
  amount: string;
}

/**
 * The authorized transfers among `logs` (one transaction's receipt, or a range's getLogs answers): each Transfer of
 * the token contract `asset` paired with the AuthorizationUsed of the same payer, by the same contract, just before it
 * in the same transaction. A log of another contract, a removed (reorganized) log or a plain transfer is not one.
 */
export function authorizedTransfers(logs: readonly Log[], asset: string): AuthorizedTransfer[] {
  const ours = logs.filter((l) => l.address.toLowerCase() === asset.toLowerCase() && !l.removed);
  const uses = parseEventLogs({ abi: EIP3009_ABI, eventName: "AuthorizationUsed", logs: ours, strict: true });
  const transfers = parseEventLogs({ abi: EIP3009_ABI, eventName: "Transfer", logs: ours, strict: true });
  const out: AuthorizedTransfer[] = [];
  for (const t of transfers) {
    if (t.transactionHash === null || t.blockNumber === null || t.logIndex === null) continue;
    const payer = t.args.from.toLowerCase();
    const use = uses
      .filter(
        (u) =>
          u.transactionHash === t.transactionHash &&
          u.args.authorizer.toLowerCase() === payer &&
          u.logIndex !== null &&
          u.logIndex < (t.logIndex as number),
      )
      .sort((a, b) => (b.logIndex as number) - (a.logIndex as number))[0];
    if (!use) continue;
    out.push({
      transaction: t.transactionHash,
      blockNumber: t.blockNumber,
      logIndex: t.logIndex,
      payer,
      to: t.args.to.toLowerCase(),
      nonce: use.args.nonce.toLowerCase(),
      amount: t.args.value.toString(),
    });
  }
  return out;
}

/** Thrown when an RPC serves another chain than the configured network's. */
export class WrongChainError extends Error {
  override readonly name = "WrongChainError";
}

/** Refuses an RPC whose chain id is not the network's: its logs would be another chain's money. */
export async function assertChain(
  client: Pick<PublicClient, "getChainId">,
  network: PaymentNetwork,
): Promise<void> {
  const id = await client.getChainId();
  if (id !== network.chainId)
    throw new WrongChainError(
      `the RPC serves chain id ${id}, not ${network.chainId} (${network.label}, ${network.caip2}); point it at ${network.label} or set the network it serves`,
    );
}
