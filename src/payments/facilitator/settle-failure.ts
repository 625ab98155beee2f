/**
 * Settle refusals that are final: the facilitator refused before sending anything (its re-verification of the
 * proof), so nothing can have moved. @x402/evm's exact scheme answers these from `verify` inside `settle`, and parses
 * the same codes out of a reverted simulation; x402's generic codes name the same checks. Every other reason —
 * `invalid_exact_evm_transaction_failed` (@x402/evm answers it when its broadcast call throws, so a flaky RPC is
 * enough), `invalid_exact_evm_nonce_already_used` (possibly our own earlier transfer), `invalid_transaction_state`,
 * `unexpected_settle_error`, a raw error message — may hide a transfer that lands later: only the chain settles it.
 */
const REFUSED_BEFORE_SENDING = new Set([
  "insufficient_funds",
  "invalid_scheme",
  "invalid_network",
  "invalid_payload",
  "invalid_payment_requirements",
  "invalid_x402_version",
  "unsupported_scheme",
  "invalid_exact_evm_scheme",
  "invalid_exact_evm_network_mismatch",
  "invalid_exact_evm_missing_eip712_domain",
  "invalid_exact_evm_recipient_mismatch",
  "invalid_exact_evm_signature",
  "invalid_exact_evm_payload_signature",
  "invalid_exact_evm_payload_authorization_valid_before",
  "invalid_exact_evm_payload_authorization_valid_after",
  "invalid_exact_evm_authorization_value",
  "invalid_exact_evm_payload_authorization_value",
  "invalid_exact_evm_payload_authorization_value_mismatch",
  "invalid_exact_evm_payload_recipient_mismatch",
  "invalid_exact_evm_token_name_mismatch",
  "invalid_exact_evm_token_version_mismatch",
  "invalid_exact_evm_eip3009_not_supported",
  "invalid_exact_evm_insufficient_balance",
  "invalid_exact_evm_transaction_simulation_failed",
  "invalid_exact_evm_failed_to_parse_signature",
  "asset_not_deployed_contract",
  "eip6492_factory_not_allowed",
]);

/** `refused`: final, nothing moved. `unknown`: the transfer may exist or still land; ask the chain. */
export const settleFailureKind = (reason: string): "refused" | "unknown" =>
  REFUSED_BEFORE_SENDING.has(reason) ? "refused" : "unknown";

/** An x402 reason code: lower-case snake case, what every facilitator's `errorReason`/`invalidReason` should be. */
const REASON_CODE = /^[a-z][a-z0-9_]{0,79}$/;

/**
 * A revert's reason, as a node's gas estimate or simulation reports it inside an error message, by the x402 code of the
 * same check. Only an estimate or a simulation reverts in a thrown error (a mined transaction that reverts is a
 * receipt, answered with its own code), so the transfer was never sent.
 */
const REVERT_REASONS: Array<[RegExp, string]> = [
  [/exceeds balance|insufficient (balance|funds)/i, "invalid_exact_evm_insufficient_balance"],
  [/authorization is used|used or canceled|nonce/i, "invalid_exact_evm_nonce_already_used"],
  [/invalid signature/i, "invalid_exact_evm_signature"],
  [/not yet valid/i, "invalid_exact_evm_payload_authorization_valid_after"],
  [/authorization is expired|expired/i, "invalid_exact_evm_payload_authorization_valid_before"],
];

/**
 * The reason code of a facilitator's answer: a code as it is; a raw error message (the @x402/evm v1 scheme answers a
 * thrown error's whole text: contract call, arguments, sender, library version) by the code of what it says, or
 * `fallback`. Only the code ever reaches a buyer; the text stays in the log.
 */
export function reasonCode(reason: string, fallback: string): string {
  if (REASON_CODE.test(reason)) return reason;
  if (/revert/i.test(reason)) {
    for (const [pattern, code] of REVERT_REASONS) if (pattern.test(reason)) return code;
    return "invalid_exact_evm_transaction_simulation_failed";
  }
  return fallback;
}
