import type { BindResult, KeyBinding, LedgerPort } from "../../ledger/port.js";

/**
 * Binds a verified payment's secrets, a payment-identifier id being one payer's alone: the same id already held by
 * another payer is "same id, different payload" (a conflict, in the extension's words), so the proof is given back unsettled. The
 * ledger scopes keys to the payer, hence the lookup across payers first. Two payers binding one id at the same moment
 * can both pass it; each then pays its own payment and gets its own answer, so nobody is charged for another's.
 */
export async function bindPaymentSecrets(ledger: LedgerPort, binding: KeyBinding): Promise<BindResult> {
  if (
    binding.paymentId !== undefined &&
    (await ledger.paymentIdHeldByOther(binding.paymentId, binding.identity.payer, binding.now))
  )
    return { ok: false, reason: "different_payment", secret: "payment_id" };
  return ledger.bindIdempotencyKey(binding);
}
