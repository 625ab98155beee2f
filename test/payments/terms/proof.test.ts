import { describe, expect, it } from "vitest";
import { canonicalJson, decodeProof, requestFingerprint } from "../../../src/payments/terms/proof.js";
import { requirementsV2 } from "../../../src/payments/terms/requirements.js";
import { junkProofs } from "../../helpers/junk.js";
import { b64, TEST_NETWORK, v1Proof, v2Proof } from "../../helpers/proofs.js";

const req = requirementsV2(
  { amount: "20000", description: "d", acceptsV1: true },
  { payTo: "0x00000000000000000000000000000000000000aa", maxTimeoutSeconds: 300, network: TEST_NETWORK },
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
    [b64({ x402Version: 2 }), /not an x402 exact payment payload: accepted must be an object/],
    [b64({ x402Version: 1, scheme: "exact", network: "base", payload: "x" }), /payload must be an object/],
    [b64(null), /must be a JSON object/],
  ])("refuses %j", (value, why) => {
    const result = decodeProof("payment-signature", value);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.detail).toMatch(why);
  });
});

describe("strict shape of the exact scheme's payload", () => {
  it("refuses every kind of junk, each with a reason, before anything else touches it", () => {
    for (const [kind, value] of junkProofs(req)) {
      const result = decodeProof("payment-signature", value);
      expect(result.ok, kind).toBe(false);
    }
  });

  it("refuses an ERC-6492-wrapped signature, a nesting bomb and unknown authorization fields by name", () => {
    const p = v2Proof(req);
    const erc6492 = {
      ...p,
      payload: { ...p.payload, signature: `0x${"ab".repeat(100)}${"6492".repeat(16)}` },
    };
    expect(decodeProof("payment-signature", b64(erc6492))).toMatchObject({ ok: false, detail: /ERC-6492/ });
    let deep: unknown = [];
    for (let i = 0; i < 2700; i++) deep = [deep];
    const bomb = b64({ ...p, extensions: { x: deep } });
    expect(bomb.length).toBeLessThan(8192);
    expect(decodeProof("payment-signature", bomb)).toMatchObject({ ok: false, detail: /nested deeper/ });
    // What clients really echo: our own Bazaar extension (a JSON schema, ~10 levels deep) is accepted and passed on.
    let schema: Record<string, unknown> = { type: "string" };
    for (let i = 0; i < 10; i++) schema = { type: "object", properties: { f: schema } };
    const echoed = decodeProof("payment-signature", b64({ ...p, extensions: { bazaar: { schema } } }));
    expect(echoed).toMatchObject({ ok: true, proof: { payload: { extensions: { bazaar: { schema } } } } });
    const extra = {
      ...p,
      payload: { ...p.payload, authorization: { ...p.payload.authorization, memo: "x" } },
    };
    expect(decodeProof("payment-signature", b64(extra))).toMatchObject({
      ok: false,
      detail: /unknown field\(s\) memo/,
    });
  });

  it("keeps only validated fields, and exposes the authorization for the payment's identity", () => {
    const p = v2Proof(req);
    const decoded = decodeProof("payment-signature", b64({ ...p, resource: { url: "https://x.example/r" } }));
    if (!decoded.ok) throw new Error(decoded.detail);
    expect(decoded.proof.exact.authorization).toEqual(p.payload.authorization);
    expect(Object.keys(decoded.proof.payload).sort()).toEqual([
      "accepted",
      "payload",
      "resource",
      "x402Version",
    ]);
  });
});

describe("fingerprints", () => {
  it("request identity ignores pp_ref and key order, not the body", () => {
    const a = requestFingerprint("post", "/r", { pp_ref: "x" }, { a: 1, b: 2 });
    expect(requestFingerprint("POST", "/r", {}, { b: 2, a: 1 })).toBe(a);
    expect(requestFingerprint("POST", "/r", {}, { a: 1, b: 3 })).not.toBe(a);
    expect(requestFingerprint("POST", "/other", {}, { a: 1, b: 2 })).not.toBe(a);
  });

  it("canonicalJson sorts keys recursively and drops undefined", () => {
    expect(canonicalJson({ b: [{ d: 1, c: 2 }], a: undefined, e: null })).toBe(
      '{"b":[{"c":2,"d":1}],"e":null}',
    );
  });
});
