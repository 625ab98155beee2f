import { describe, expect, it } from "vitest";
import { canonicalJson, decodeProof, proofFingerprint, requestFingerprint } from "../../src/payments/proof.js";
import { requirementsV2 } from "../../src/payments/requirements.js";
import { b64, v1Proof, v2Proof } from "../helpers/proofs.js";

const req = requirementsV2(
  { amount: "20000", description: "d", acceptsV1: true },
  { payTo: "0x00000000000000000000000000000000000000aa", maxTimeoutSeconds: 300 },
);

describe("decodeProof", () => {
  it("decodes v2 and v1 payloads", () => {
    const v2 = decodeProof("payment-signature", b64(v2Proof(req)));
    expect(v2.ok && v2.proof.version).toBe(2);
    const v1 = decodeProof("x-payment", b64(v1Proof("20000", req.payTo)));
    expect(v1.ok && v1.proof.version).toBe(1);
  });

  it.each([
    ["", /empty/],
    ["a".repeat(9000), /longer than/],
    ["abc$", /base64/],
    ["YWJj", /JSON/], // "abc"
    [b64({ x402Version: 2 }), /not an x402 payment payload/],
    [b64({ x402Version: 1, scheme: "exact", network: "base", payload: "x" }), /not an x402 payment payload/],
    [b64(null), /not an x402 payment payload/],
  ])("refuses %j", (value, why) => {
    const result = decodeProof("payment-signature", value);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.detail).toMatch(why);
  });
});

describe("fingerprints", () => {
  it("a proof's identity ignores key order and the v1/v2 envelope", () => {
    const p = v2Proof(req);
    const reordered = { ...p, payload: { authorization: p.payload.authorization, signature: p.payload.signature } };
    const a = decodeProof("payment-signature", b64(p));
    const b = decodeProof("payment-signature", b64(reordered));
    if (!a.ok || !b.ok) throw new Error("decode failed");
    expect(proofFingerprint(a.proof)).toBe(proofFingerprint(b.proof));
    const other = decodeProof("payment-signature", b64(v2Proof(req)));
    if (!other.ok) throw new Error("decode failed");
    expect(proofFingerprint(other.proof)).not.toBe(proofFingerprint(a.proof));
  });

  it("request identity ignores pp_ref and key order, not the body", () => {
    const a = requestFingerprint("post", "/r", { pp_ref: "x" }, { a: 1, b: 2 });
    expect(requestFingerprint("POST", "/r", {}, { b: 2, a: 1 })).toBe(a);
    expect(requestFingerprint("POST", "/r", {}, { a: 1, b: 3 })).not.toBe(a);
    expect(requestFingerprint("POST", "/other", {}, { a: 1, b: 2 })).not.toBe(a);
  });

  it("canonicalJson sorts keys recursively and drops undefined", () => {
    expect(canonicalJson({ b: [{ d: 1, c: 2 }], a: undefined, e: null })).toBe('{"b":[{"c":2,"d":1}],"e":null}');
  });
});
