import { createRequire } from "node:module";
import { getAddress, type Hex, hexToBytes, keccak256 } from "viem";

/*
 * Why not viem's recoverAddress: it recovers with @noble/curves in JavaScript, ~2 ms of CPU per signature on this
 * machine, and every paid call's proof is checked locally before the facilitator is asked (src/payments/facilitator/gateway.ts).
 * libsecp256k1 through the `secp256k1` package's prebuilt N-API binding does the same in ~60 µs (it falls back to
 * elliptic in JavaScript where no binding loads). The result is the same address; test/payments/terms/ecrecover.test.ts
 * compares both on real signatures.
 */
const secp256k1 = createRequire(import.meta.url)("secp256k1") as typeof import("secp256k1");

/** The address that signed the 32-byte `hash` with the 65-byte `signature` (r ‖ s ‖ v); throws when it is malformed. */
export function recoverSigner(hash: Hex, signature: Hex): Hex {
  const sig = hexToBytes(signature);
  if (sig.length !== 65) throw new Error(`a signature is 65 bytes, not ${sig.length}`);
  const v = sig[64] as number;
  const recovery = v >= 27 ? v - 27 : v;
  if (recovery !== 0 && recovery !== 1) throw new Error(`invalid signature recovery byte ${v}`);
  const publicKey = secp256k1.ecdsaRecover(sig.subarray(0, 64), recovery, hexToBytes(hash), false);
  return getAddress(`0x${keccak256(publicKey.subarray(1)).slice(-40)}`);
}
