import type { PaymentRequirements } from "@x402/core/types";
import { b64, v2Proof } from "./proofs.js";

/**
 * Every kind of junk proof a hostile buyer's review used, as PAYMENT-SIGNATURE values: each must be refused
 * before the facilitator, so none can crash an encoder or count against the circuit breaker.
 */
export function junkProofs(accepted: PaymentRequirements): [string, string][] {
  const p = v2Proof(accepted);
  const auth = p.payload.authorization;
  const withAuth = (over: Record<string, unknown>) =>
    b64({ ...p, payload: { ...p.payload, authorization: { ...auth, ...over } } });
  const withPayload = (over: Record<string, unknown>) => b64({ ...p, payload: { ...p.payload, ...over } });
  let arrays: unknown = [];
  for (let i = 0; i < 2700; i++) arrays = [arrays];
  let objects: unknown = {};
  for (let i = 0; i < 1500; i++) objects = { a: objects };
  return [
    ["arrays nested 2,700 deep", b64({ ...p, extensions: { bomb: arrays } })],
    ["objects nested 1,500 deep", b64({ ...p, accepted: { ...p.accepted, extra: objects } })],
    ["deep nesting in the payload", withPayload({ signature: arrays })],
    ["ERC-6492 signature", withPayload({ signature: `0x${"00".repeat(64)}${"6492".repeat(16)}` })],
    [
      "ERC-6492 signature with factory data",
      withPayload({ signature: `0x${"ab".repeat(300)}${"6492".repeat(16)}` }),
    ],
    ["signature not hex", withPayload({ signature: "0xzz" })],
    ["signature odd length", withPayload({ signature: `0x${"1".repeat(131)}` })],
    ["signature too short", withPayload({ signature: `0x${"11".repeat(64)}` })],
    ["signature too long", withPayload({ signature: `0x${"11".repeat(2000)}` })],
    ["signature a number", withPayload({ signature: 1 })],
    ["unknown payload field", withPayload({ permit2: {} })],
    ["authorization missing", b64({ ...p, payload: { signature: p.payload.signature } })],
    ["from not an address", withAuth({ from: "0x1234" })],
    ["to an object", withAuth({ to: { x: 1 } })],
    ["value with a sign", withAuth({ value: "-20000" })],
    ["value a float", withAuth({ value: "20000.5" })],
    ["value above uint256", withAuth({ value: "9".repeat(78) })],
    ["value with leading zeros", withAuth({ value: "020000" })],
    ["validBefore hex", withAuth({ validBefore: "0xff" })],
    ["validAfter a number", withAuth({ validAfter: 0 })],
    ["nonce short", withAuth({ nonce: "0x1234" })],
    ["nonce not hex", withAuth({ nonce: `0x${"g".repeat(64)}` })],
    ["unknown authorization field", withAuth({ extra: "1" })],
    ["accepted missing", b64({ x402Version: 2, payload: p.payload })],
    [
      "accepted.maxTimeoutSeconds a string",
      b64({ ...p, accepted: { ...p.accepted, maxTimeoutSeconds: "300" } }),
    ],
    ["accepted with unknown field", b64({ ...p, accepted: { ...p.accepted, admin: true } })],
    ["top-level unknown field", b64({ ...p, debug: true })],
    [
      "too many values",
      b64({ ...p, accepted: { ...p.accepted, extra: { list: Array.from({ length: 300 }, (_, i) => i) } } }),
    ],
    [
      "too many values in extensions",
      b64({ ...p, extensions: { list: Array.from({ length: 2100 }, () => 0) } }),
    ],
    ["a huge string", b64({ ...p, resource: { url: "x".repeat(3000) } })],
    ["x402Version 3", b64({ ...p, x402Version: 3 })],
    ["x402Version as a string", b64({ ...p, x402Version: "2" })],
    ["an array", b64([p])],
    ["null", b64(null)],
  ];
}
