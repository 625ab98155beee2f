import { describe, expect, it } from "vitest";
import { chooseProofHeader, requirementsFor } from "../../../src/payments/terms/matching.js";
import { decodeProof, type Proof } from "../../../src/payments/terms/proof.js";
import { requirementsV2 } from "../../../src/payments/terms/requirements.js";
import { b64, TEST_NETWORK, v1Proof, v2Proof } from "../../helpers/proofs.js";

const terms = {
  payTo: "0x00000000000000000000000000000000000000aa" as const,
  maxTimeoutSeconds: 300,
  network: TEST_NETWORK,
};
const both = { amount: "20000", description: "d", acceptsV1: true };
const v2only = { ...both, acceptsV1: false };
const decode = (name: "payment-signature" | "x-payment", value: unknown): Proof => {
  const r = decodeProof(name, b64(value));
  if (!r.ok) throw new Error(r.detail);
  return r.proof;
};

describe("chooseProofHeader", () => {
  it("prefers PAYMENT-SIGNATURE, takes X-PAYMENT only where v1 is accepted", () => {
    expect(chooseProofHeader("a", undefined, false)).toEqual({
      kind: "pay",
      name: "payment-signature",
      value: "a",
    });
    expect(chooseProofHeader(undefined, "b", true)).toEqual({ kind: "pay", name: "x-payment", value: "b" });
    expect(chooseProofHeader(undefined, "b", false)).toEqual({ kind: "v1_not_accepted" });
    expect(chooseProofHeader("a", "b", true)).toEqual({ kind: "both" });
    expect(chooseProofHeader("a", "b", false)).toMatchObject({ kind: "pay", name: "payment-signature" });
    expect(chooseProofHeader(undefined, undefined, true)).toEqual({ kind: "none" });
  });
});

describe("requirementsFor", () => {
  const v2 = chooseProofHeader("x", undefined, true) as {
    kind: "pay";
    name: "payment-signature";
    value: string;
  };
  const v1 = chooseProofHeader(undefined, "x", true) as { kind: "pay"; name: "x-payment"; value: string };

  it("accepts a v2 proof for exactly our requirements (addresses case-insensitively)", () => {
    const accepted = requirementsV2(both, terms);
    const r = requirementsFor(
      decode(
        "payment-signature",
        v2Proof({ ...accepted, payTo: accepted.payTo.toUpperCase().replace("0X", "0x") }),
      ),
      v2,
      both,
      terms,
      "u",
    );
    expect(r).toEqual({ ok: true, requirements: accepted });
  });

  it.each([
    ["amount", { amount: "19999" }, /amount 19999 ≠ 20000/],
    ["payTo", { payTo: "0x00000000000000000000000000000000000000bb" }, /payTo/],
    ["network", { network: "eip155:84532" as const }, /network/],
    ["asset", { asset: "0x0000000000000000000000000000000000000001" }, /asset/],
    ["scheme", { scheme: "upto" }, /scheme/],
  ])("refuses a v2 proof with another %s", (_f, change, why) => {
    const r = requirementsFor(
      decode("payment-signature", v2Proof({ ...requirementsV2(both, terms), ...change })),
      v2,
      both,
      terms,
      "u",
    );
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error).toMatch(why);
  });

  it("v1: exact on base, as v1 requirements; refuses other networks and v1 on v2-only routes", () => {
    const ok = requirementsFor(
      decode("x-payment", v1Proof("20000", terms.payTo)),
      v1,
      both,
      terms,
      "https://r",
    );
    expect(ok.ok && ok.requirements).toMatchObject({
      network: "base",
      maxAmountRequired: "20000",
      resource: "https://r",
    });
    const sepolia = requirementsFor(
      decode("x-payment", { ...v1Proof("20000", terms.payTo), network: "base-sepolia" }),
      v1,
      both,
      terms,
      "u",
    );
    expect(sepolia.ok).toBe(false);
    const onV2Route = requirementsFor(
      decode("payment-signature", v1Proof("20000", terms.payTo)),
      v2,
      v2only,
      terms,
      "u",
    );
    expect(onV2Route).toEqual({
      ok: false,
      error: "x402 v1 proofs are not accepted on this route; pay with x402 v2",
    });
  });
});

describe("withoutPpRef", () => {
  it("drops every pp_ref and keeps the rest of the target", async () => {
    const { withoutPpRef } = await import("../../../src/payments/http/plugin.js");
    expect(withoutPpRef("/v1/unlocks/upcoming?days=30&pp_ref=a.b")).toBe("/v1/unlocks/upcoming?days=30");
    expect(withoutPpRef("/x?pp_ref=a&pp_ref=b")).toBe("/x");
    expect(withoutPpRef("/x?pp_refx=1")).toBe("/x?pp_refx=1");
    expect(withoutPpRef("/x?days=7")).toBe("/x?days=7");
    expect(withoutPpRef("/x")).toBe("/x");
  });
});
