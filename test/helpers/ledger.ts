import type {
  ClaimRequest,
  LedgerPort,
  Receipt,
  SettlementRecord,
  SettlementResult,
} from "../../src/ledger/port.js";

/** One payer's authorization identity on Base USDC; `nonce` tells the authorizations apart. */
export const testIdentity = (nonce: string) => ({
  network: "eip155:8453",
  asset: "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913",
  payer: "0xb0b0",
  nonce,
});

/** A claim of `nonce` by incarnation "i1" on `GET /x`, as the SQLite ledger tests make it; `over` changes any field. */
export const testClaim = (nonce: string, now: Date, over: Partial<ClaimRequest> = {}): ClaimRequest => ({
  identity: testIdentity(nonce),
  route: "GET /x",
  requestFingerprint: "rf",
  x402Version: 2,
  amount: "50000",
  payTo: "0xaa",
  incarnation: "i1",
  lockTtlMs: 1000,
  now,
  ...over,
});

/** Claims `nonce` (which must be new) and returns its receipt. */
export async function claimNew(ledger: LedgerPort, request: ClaimRequest): Promise<Receipt> {
  const c = await ledger.claimAuthorization(request);
  if (c.kind !== "claimed") throw new Error(c.kind);
  return c.receipt;
}

/** Claims, begins and records one settlement, as the payment core does for a paid call. */
export async function settleNew(
  ledger: LedgerPort,
  request: ClaimRequest,
  record: Omit<SettlementRecord, "now">,
): Promise<SettlementResult> {
  const receipt = await claimNew(ledger, request);
  await ledger.beginSettlement(receipt.id, request.incarnation, request.now);
  return ledger.recordSettlement(receipt.id, { ...record, now: request.now });
}
