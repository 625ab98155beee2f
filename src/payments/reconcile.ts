import { createPublicClient, type Hex, http, isAddress, isHex, parseAbi, parseEventLogs } from "viem";

/**
 * Settlement reconciliation against the chain. When a settlement's outcome was lost (facilitator timeout after
 * broadcast, a crash between settle and receipt), the proof no longer verifies because its EIP-3009 authorisation
 * was used. Reading the token contract tells whether that use paid *us* this amount, and in which transaction, so
 * the buyer gets the response it paid for instead of being asked to pay again.
 */
export interface ChainSettlement {
  transaction: Hex;
  payer: Hex;
}

export interface Reconciler {
  findSettlement(
    payload: Record<string, unknown>,
    terms: { asset: string; payTo: string; amount: string },
  ): Promise<ChainSettlement | undefined>;
}

const EIP3009 = parseAbi([
  "function authorizationState(address authorizer, bytes32 nonce) view returns (bool)",
  "event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)",
  "event Transfer(address indexed from, address indexed to, uint256 value)",
]);

interface Authorization {
  from: Hex;
  nonce: Hex;
}

/** The exact scheme's EIP-3009 authorisation, if the payload carries one (other schemes are not reconciled). */
function authorizationOf(payload: Record<string, unknown>): Authorization | undefined {
  const auth = payload.authorization as Record<string, unknown> | undefined;
  const from = auth?.from;
  const nonce = auth?.nonce;
  if (typeof from !== "string" || !isAddress(from)) return undefined;
  if (typeof nonce !== "string" || !isHex(nonce) || nonce.length !== 66) return undefined;
  return { from, nonce };
}

/**
 * @param lookbackBlocks how far back to look for the AuthorizationUsed event. Authorisations live at most
 *   PAYMENT_TIMEOUT_SECONDS, so a lost settlement is recent: 10,000 blocks is over 5 hours of Base's 2 s blocks.
 */
export function createChainReconciler(rpcUrl: string, lookbackBlocks = 10_000n): Reconciler {
  const client = createPublicClient({ transport: http(rpcUrl, { timeout: 5000, retryCount: 1 }) });
  return {
    async findSettlement(payload, terms) {
      const auth = authorizationOf(payload);
      if (!auth || !isAddress(terms.asset)) return undefined;
      const used = await client.readContract({
        address: terms.asset,
        abi: EIP3009,
        functionName: "authorizationState",
        args: [auth.from, auth.nonce],
      });
      if (!used) return undefined;
      const latest = await client.getBlockNumber();
      const logs = await client.getContractEvents({
        address: terms.asset,
        abi: EIP3009,
        eventName: "AuthorizationUsed",
        args: { authorizer: auth.from, nonce: auth.nonce },
        fromBlock: latest > lookbackBlocks ? latest - lookbackBlocks : 0n,
        toBlock: latest,
      });
      const hash = logs[0]?.transactionHash;
      if (!hash) return undefined;
      // The authorisation could also have been cancelled or paid to someone else: only a transfer of the full amount
      // from the payer to our payTo in that same transaction counts as our settlement.
      const receipt = await client.getTransactionReceipt({ hash });
      if (receipt.status !== "success") return undefined;
      const transfers = parseEventLogs({ abi: EIP3009, eventName: "Transfer", logs: receipt.logs });
      const paid = transfers.some(
        (t) =>
          t.address.toLowerCase() === terms.asset.toLowerCase() &&
          t.args.from.toLowerCase() === auth.from.toLowerCase() &&
          t.args.to.toLowerCase() === terms.payTo.toLowerCase() &&
          t.args.value === BigInt(terms.amount),
      );
      return paid ? { transaction: hash, payer: auth.from } : undefined;
    },
  };
}
