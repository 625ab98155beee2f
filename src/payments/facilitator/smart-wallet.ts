import {
  type Address,
  type Client,
  createClient,
  encodeDeployData,
  encodeFunctionData,
  erc6492SignatureValidatorAbi,
  erc6492SignatureValidatorByteCode,
  type Hex,
  hashTypedData,
  http,
  parseAbi,
  parseErc6492Signature,
} from "viem";
import { call, getCode } from "viem/actions";
import type { ExactPayload } from "../terms/proof.js";
import { type AuthorizationDomain, TRANSFER_WITH_AUTHORIZATION } from "../terms/signature.js";

/**
 * The smart-wallet (ERC-1271 / ERC-6492) signature check, run against the chain before any facilitator call, in the
 * way @x402/evm's facilitator checks it (the EIP-712 digest of TransferWithAuthorization under the token's domain;
 * a deployed `from` is asked `isValidSignature(digest, signature)` with the 6492 wrapper removed; a counterfactual one
 * goes through the ERC-6492 validator, deployless) — but with a gas cap on the eth_call and a time budget on the
 * whole check, so a contract that burns gas or time is refused here for the price of one capped eth_call, instead of
 * holding a facilitator verify until it times out.
 */
export interface SmartWalletCheckOptions {
  /** The whole check (code lookup + eth_call) must answer within this many ms. */
  timeoutMs: number;
  /** Gas given to the eth_call: a wallet whose check needs more is refused. */
  gasCap: bigint;
}

export const DEFAULT_SMART_WALLET_CHECK: SmartWalletCheckOptions = { timeoutMs: 750, gasCap: 1_000_000n };

/**
 * "valid": the contract answered the magic value (or the 6492 validator true) within budget and gas cap.
 * "not_a_contract": `from` has no code and the signature carries no deployment: an EOA whose signature did not
 * recover — not this check's question. Otherwise refused, with why: "rejected" — the wallet answered, cheaply, that the
 * signature is not its own (what junk naming an honest wallet gets); "failed" — the call reverted or ran out of gas;
 * "out_of_budget" — no answer in time. Only the last two cost us, so only they back the contract off; a plain revert
 * counts as "rejected" (see callFailure).
 */
export type SmartWalletVerdict =
  | { kind: "valid" }
  | { kind: "not_a_contract" }
  | { kind: "refused"; why: "rejected" | "failed" | "out_of_budget" };

export type SmartWalletCheck = (
  exact: ExactPayload,
  domain: AuthorizationDomain,
) => Promise<SmartWalletVerdict>;

const ERC1271_MAGIC = "0x1626ba7e";
const erc1271Abi = parseAbi([
  "function isValidSignature(bytes32 hash, bytes signature) view returns (bytes4)",
]);

class OutOfBudget extends Error {}

function withinBudget<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expiry = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new OutOfBudget()), ms);
  });
  return Promise.race([work, expiry]).finally(() => clearTimeout(timer));
}

/** The EIP-712 digest @x402/evm's facilitator verifies a smart-wallet signature against. */
export function authorizationDigest(exact: ExactPayload, domain: AuthorizationDomain): Hex {
  const a = exact.authorization;
  return hashTypedData({
    domain: { ...domain, verifyingContract: domain.verifyingContract as Address },
    types: TRANSFER_WITH_AUTHORIZATION,
    primaryType: "TransferWithAuthorization",
    message: {
      from: a.from as Address,
      to: a.to as Address,
      value: BigInt(a.value),
      validAfter: BigInt(a.validAfter),
      validBefore: BigInt(a.validBefore),
      nonce: a.nonce as Hex,
    },
  });
}

/** A check over `client` (any viem client: tests count its calls). */
/**
 * Why an isValidSignature call threw. A plain revert is how most real wallets (Coinbase Smart Wallet, Safe,
 * OpenZeppelin's ECDSA) answer a signature that is not their owner's: as cheap and as clean as a "not mine", so it is
 * "rejected" and never backs the wallet off for junk that merely names it. Running out of the gas cap, or an RPC that
 * refuses the call, is "failed".
 */
export function callFailure(err: unknown): "rejected" | "failed" {
  const parts: string[] = [];
  for (let e: unknown = err, depth = 0; e && depth < 6; depth++) {
    const x = e as { message?: unknown; details?: unknown; shortMessage?: unknown; cause?: unknown };
    for (const v of [x.message, x.details, x.shortMessage]) if (typeof v === "string") parts.push(v);
    e = x.cause;
  }
  const text = parts.join("\n");
  if (/out of gas|outofgas|gas required exceeds|intrinsic gas/i.test(text)) return "failed";
  return /revert/i.test(text) ? "rejected" : "failed";
}

export function smartWalletCheckOver(client: Client, opts: SmartWalletCheckOptions): SmartWalletCheck {
  const check = async (exact: ExactPayload, domain: AuthorizationDomain): Promise<SmartWalletVerdict> => {
    const from = exact.authorization.from as Address;
    const digest = authorizationDigest(exact, domain);
    const { address: factory, data: factoryData, signature: inner } = parseErc6492Signature(exact.signature);
    const code = await getCode(client, { address: from });
    const deployed = code !== undefined && code !== "0x";
    const counterfactual = !deployed && factory !== undefined && factoryData !== undefined;
    if (!deployed && !counterfactual) return { kind: "not_a_contract" };
    try {
      if (deployed) {
        const { data } = await call(client, {
          to: from,
          gas: opts.gasCap,
          data: encodeFunctionData({
            abi: erc1271Abi,
            functionName: "isValidSignature",
            args: [digest, inner],
          }),
        });
        // No 32-byte answer (an RPC may answer "0x" for a call halted out of gas) is a failure, not a clean "no".
        if (data === undefined || data.length < 66) return { kind: "refused", why: "failed" };
        return data.slice(0, 10).toLowerCase() === ERC1271_MAGIC
          ? { kind: "valid" }
          : { kind: "refused", why: "rejected" };
      }
      // Deployless: the validator deploys the wallet through its factory in the call, then asks it.
      const { data } = await call(client, {
        gas: opts.gasCap,
        data: encodeDeployData({
          abi: erc6492SignatureValidatorAbi,
          args: [from, digest, exact.signature],
          bytecode: erc6492SignatureValidatorByteCode,
        }),
      });
      if (data === undefined || data.length < 66) return { kind: "refused", why: "failed" };
      return BigInt(data) === 1n ? { kind: "valid" } : { kind: "refused", why: "rejected" };
    } catch (err) {
      return { kind: "refused", why: callFailure(err) };
    }
  };
  return async (exact, domain) => {
    try {
      return await withinBudget(check(exact, domain), opts.timeoutMs);
    } catch {
      // Out of budget, or the code lookup failed (RPC down): the signature was not shown valid in time.
      return { kind: "refused", why: "out_of_budget" };
    }
  };
}

/** The check over a JSON-RPC URL: one attempt per call (no retries), each bounded by the budget. */
export function createSmartWalletCheck(rpcUrl: string, opts: SmartWalletCheckOptions): SmartWalletCheck {
  return smartWalletCheckOver(
    createClient({ transport: http(rpcUrl, { timeout: opts.timeoutMs, retryCount: 0 }) }),
    opts,
  );
}
