import type { FacilitatorClient } from "@x402/core/server";
import type { PaymentPayload, PaymentRequirements, VerifyResponse } from "@x402/core/types";
import { describe, expect, it } from "vitest";
import { PRICES } from "../../../src/operations/prices.js";
import {
  createFacilitatorGateway,
  FacilitatorFault,
  SMART_WALLET_REFUSED,
} from "../../../src/payments/facilitator/gateway.js";
import {
  callFailure,
  type SmartWalletCheck,
  type SmartWalletVerdict,
} from "../../../src/payments/facilitator/smart-wallet.js";
import { requirementsV2 } from "../../../src/payments/terms/requirements.js";
import { TEST_PAY_TO } from "../../helpers/app.js";
import { TEST_NETWORK, v2Proof } from "../../helpers/proofs.js";

/*
 * The gateway's smart-wallet path with the chain check replaced by a double (the devnet test runs the real one): a
 * refusal is an invalid proof with no facilitator call, backs that contract off at once, and leaves other payers and
 * the circuit alone; a wallet the chain vouches for goes on to the facilitator.
 */
const requirements = requirementsV2(PRICES.upcoming, {
  payTo: TEST_PAY_TO,
  maxTimeoutSeconds: 300,
  network: TEST_NETWORK,
}) as PaymentRequirements;
const WALLET = "0x5100000000000000000000000000000000000bad";
const OTHER = "0x5100000000000000000000000000000000000001";

function proofFrom(from: string): PaymentPayload {
  const p = v2Proof(requirements);
  return {
    ...p,
    payload: { ...p.payload, authorization: { ...p.payload.authorization, from } },
  } as PaymentPayload;
}

/** A facilitator whose verify answers with `verify` (by default: valid, for the proof's own payer); never settles. */
function verifyOnly(
  verify: (payload: PaymentPayload) => Promise<VerifyResponse> = async (payload) => ({
    isValid: true,
    payer: (payload.payload as { authorization: { from: string } }).authorization.from,
  }),
): FacilitatorClient {
  return {
    verify,
    settle: async () => {
      throw new Error("not used");
    },
    getSupported: async () => ({ kinds: [], extensions: [], signers: {} }),
  } as unknown as FacilitatorClient;
}

/** The gateway under test: a circuit that opens on one fault, a 1 s cool-down, and `check` as its wallet check. */
const walletGateway = (client: FacilitatorClient, check: SmartWalletCheck, now: () => number = () => 0) =>
  createFacilitatorGateway(client, { failureThreshold: 1, cooldownMs: 1000, smartWallet: check }, now);

/** A proof naming WALLET whose signature is not its owner's. */
function junk(): PaymentPayload {
  const p = proofFrom(WALLET);
  return { ...p, payload: { ...p.payload, signature: `0x${"ee".repeat(65)}` } } as PaymentPayload;
}

function setup(verdict: (from: string) => SmartWalletVerdict) {
  let now = 0;
  const verifies: string[] = [];
  const checks: string[] = [];
  const client = verifyOnly(async (payload) => {
    const from = (payload.payload as { authorization: { from: string } }).authorization.from;
    verifies.push(from);
    return { isValid: true, payer: from };
  });
  const check: SmartWalletCheck = async (exact) => {
    checks.push(exact.authorization.from);
    return verdict(exact.authorization.from);
  };
  const gateway = walletGateway(client, check, () => now);
  return { gateway, verifies, checks, advance: (ms: number) => (now += ms) };
}

describe("the smart-wallet check before the facilitator", () => {
  it("a refused wallet: invalid proof, no facilitator call, that contract backed off, others untouched", async () => {
    const s = setup((from) =>
      from === WALLET ? { kind: "refused", why: "out_of_budget" } : { kind: "valid" },
    );
    const first = await s.gateway.verify(proofFrom(WALLET), requirements);
    expect(first).toMatchObject({ isValid: false, invalidReason: SMART_WALLET_REFUSED });
    await expect(s.gateway.verify(proofFrom(WALLET), requirements)).rejects.toMatchObject({
      reason: "payer_limited",
    });
    expect(s.checks).toEqual([WALLET]); // the back-off spares the chain too
    expect(await s.gateway.verify(proofFrom(OTHER), requirements)).toMatchObject({ isValid: true });
    expect(s.verifies).toEqual([OTHER]);
    expect(s.gateway.position()).toBe("closed");
    // After the back-off the contract is checked again, refused again, and waits twice as long.
    s.advance(1000);
    expect(await s.gateway.verify(proofFrom(WALLET), requirements)).toMatchObject({ isValid: false });
    s.advance(1000);
    await expect(s.gateway.verify(proofFrom(WALLET), requirements)).rejects.toMatchObject({
      reason: "payer_limited",
    });
    expect(s.checks.filter((c) => c === WALLET)).toHaveLength(2);
    expect(s.verifies).not.toContain(WALLET);
  });

  it("a wallet that cleanly answers 'not mine' (junk naming it) is refused but not backed off", async () => {
    const s = setup(() => ({ kind: "refused", why: "rejected" }));
    for (let i = 0; i < 3; i++)
      expect(await s.gateway.verify(proofFrom(WALLET), requirements)).toMatchObject({
        isValid: false,
        invalidReason: SMART_WALLET_REFUSED,
      });
    expect(s.checks).toHaveLength(3);
    expect(s.verifies).toEqual([]);
    expect(s.gateway.contracts?.peek(WALLET)).toMatchObject({ inFlight: 0, faults: 0, until: 0 });
  });

  it("a wallet the chain vouches for goes to the facilitator; an address with no code goes there unchecked", async () => {
    const s = setup((from) => (from === WALLET ? { kind: "valid" } : { kind: "not_a_contract" }));
    expect(await s.gateway.verify(proofFrom(WALLET), requirements)).toMatchObject({ isValid: true });
    expect(await s.gateway.verify(proofFrom(OTHER), requirements)).toMatchObject({ isValid: true });
    expect(s.verifies).toEqual([WALLET, OTHER]);
    expect(s.gateway.contracts?.peek(WALLET)).toMatchObject({ inFlight: 0, faults: 0 });
  });
});

describe("junk naming a smart wallet that reverts on it (as most real wallets do)", () => {
  it("never backs that wallet off: its honest payments pass between 4 junk proofs a second", async () => {
    let now = 0;
    const honestSig = `0x${"11".repeat(65)}`; // v2Proof's signature: the wallet's own, for this test
    const client = verifyOnly();
    // The wallet's isValidSignature reverts on any signature that is not its owner's: the check reads the revert as
    // the wallet's "not mine" (callFailure), as the real check does.
    const revert = Object.assign(new Error("Execution reverted with reason: ECDSA: invalid signature."), {
      cause: { details: "execution reverted" },
    });
    const check: SmartWalletCheck = async (exact) =>
      exact.signature === honestSig ? { kind: "valid" } : { kind: "refused", why: callFailure(revert) };
    const gateway = walletGateway(client, check, () => now);
    let honestPaid = 0;
    for (let round = 0; round < 15; round++) {
      for (let j = 0; j < 4; j++) {
        // Refused every time (an invalid proof), never served.
        const refused = await gateway.verify(junk(), requirements).catch((e: unknown) => e);
        expect((refused as VerifyResponse).isValid === true).toBe(false);
        if (j < 3) now += 250;
      }
      // The wallet's own payment, right after the junk of that second.
      const verdict = await gateway.verify(proofFrom(WALLET), requirements).catch((e: unknown) => e);
      if ((verdict as VerifyResponse).isValid === true) honestPaid += 1;
      now += 250;
    }
    process.stdout.write(`smart wallet under 4 junk/s: honest paid ${honestPaid}/15\n`);
    expect(honestPaid).toBe(15);
    expect(gateway.contracts?.peek(WALLET)).toMatchObject({ until: 0 });
  });
});

describe("junk that makes an honest wallet's check run out of gas or time", () => {
  it("backs off its sender for that wallet, not the wallet: the owner from another address still pays", async () => {
    const honestSig = `0x${"11".repeat(65)}`;
    // E.g. a Safe-style contract signature naming a gas-burning "signer" the wallet calls before checking it is an
    // owner: the check fails for the junk's sake, while the owner's own signatures stay cheap and valid.
    const check: SmartWalletCheck = async (exact) =>
      exact.signature === honestSig ? { kind: "valid" } : { kind: "refused", why: "failed" };
    const gateway = walletGateway(
      verifyOnly(async () => ({ isValid: true, payer: WALLET })),
      check,
    );
    const attacker = { client: "198.51.100.66" };
    const owner = { client: "203.0.113.7" };
    expect(await gateway.verify(junk(), requirements, attacker)).toMatchObject({ isValid: false });
    // The attacker is held off that wallet at once, without another chain call...
    await expect(gateway.verify(junk(), requirements, attacker)).rejects.toMatchObject({
      reason: "payer_limited",
    });
    // ...while the owner's payments from its own address go through, again and again.
    for (let i = 0; i < 3; i++)
      expect(await gateway.verify(proofFrom(WALLET), requirements, owner)).toMatchObject({ isValid: true });
    expect(gateway.contracts?.peek(WALLET)).toMatchObject({ inFlight: 0, until: 0 });
    expect(gateway.contracts?.peek(`${WALLET}@${attacker.client}`)?.until).toBeGreaterThan(0);
    // Without a known sender (a caller that does not say), the contract itself is backed off, as before.
    expect(await gateway.verify(junk(), requirements)).toMatchObject({ isValid: false });
    await expect(gateway.verify(proofFrom(WALLET), requirements)).rejects.toMatchObject({
      reason: "payer_limited",
    });
  });
});

describe("a sender backed off while its other checks of that wallet wait in line", () => {
  it("its waiting checks leave without a chain call; another sender's waiting check runs", async () => {
    const honestSig = `0x${"11".repeat(65)}`;
    let release: () => void = () => {};
    const held = new Promise<void>((r) => {
      release = r;
    });
    const checked: string[] = [];
    const check: SmartWalletCheck = async (exact) => {
      checked.push(exact.signature);
      if (checked.length === 1) await held;
      return exact.signature === honestSig ? { kind: "valid" } : { kind: "refused", why: "out_of_budget" };
    };
    const gateway = walletGateway(
      verifyOnly(async () => ({ isValid: true, payer: WALLET })),
      check,
    );
    const attacker = { client: "198.51.100.66" };
    const outcome = (p: Promise<VerifyResponse>) =>
      p.then(
        (v) => (v.isValid ? "valid" : "invalid"),
        (e: { reason?: string }) => String(e.reason),
      );
    const first = outcome(gateway.verify(junk(), requirements, attacker));
    const queued = [1, 2, 3].map(() => outcome(gateway.verify(junk(), requirements, attacker)));
    const owner = outcome(gateway.verify(proofFrom(WALLET), requirements, { client: "203.0.113.7" }));
    release();
    expect(await first).toBe("invalid");
    expect(await Promise.all(queued)).toEqual(["payer_limited", "payer_limited", "payer_limited"]);
    expect(await owner).toBe("valid");
    expect(checked).toEqual([`0x${"ee".repeat(65)}`, honestSig]);
  });
});

describe("a smart wallet's honest parallel calls", () => {
  it("queue for the one-at-a-time chain check instead of being refused: 8 at once, 8 verified", async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    let running = 0;
    let most = 0;
    let entered!: () => void;
    const firstIn = new Promise<void>((r) => {
      entered = r;
    });
    const check: SmartWalletCheck = async () => {
      running += 1;
      most = Math.max(most, running);
      entered();
      await held;
      running -= 1;
      return { kind: "valid" };
    };
    const client = verifyOnly();
    const gateway = walletGateway(client, check);
    const calls = Array.from({ length: 8 }, () =>
      gateway.verify(proofFrom(WALLET), requirements).then(
        (v) => (v.isValid ? "valid" : "invalid"),
        (e: { reason?: string }) => String(e.reason),
      ),
    );
    await firstIn; // one check is running, the other seven wait in line
    release();
    expect(await Promise.all(calls)).toEqual(Array(8).fill("valid"));
    expect(most).toBe(1); // still one chain check at a time for that contract
  });
});

describe("callFailure: why an isValidSignature call threw", () => {
  it("a plain revert is the wallet's 'not mine'; out of gas or an RPC refusal is a failure", () => {
    expect(callFailure(new Error("Execution reverted for an unknown reason."))).toBe("rejected");
    expect(callFailure({ message: "call failed", cause: { details: "execution reverted: 0x" } })).toBe(
      "rejected",
    );
    expect(callFailure({ message: "call failed", cause: { details: "EVM error OutOfGas" } })).toBe("failed");
    expect(callFailure(new Error("out of gas"))).toBe("failed");
    expect(callFailure(new Error("HTTP request failed. Status: 503"))).toBe("failed");
  });
});

describe("a smart wallet that is slow at the facilitator (gas-aware: valid under the check's cap, slow beyond it)", () => {
  it("its verify timeouts never count toward the circuit, whatever the threshold", async () => {
    const client = verifyOnly(async () => {
      throw new FacilitatorFault("facilitator_timeout", 1, "verify timed out");
    });
    let now = 0;
    const gateway = walletGateway(
      client,
      async () => ({ kind: "valid" }),
      () => now,
    );
    for (let i = 0; i < 6; i++) {
      const wallet = `0x51000000000000000000000000000000000000${String(10 + i)}`;
      await expect(gateway.verify(proofFrom(wallet), requirements)).rejects.toBeDefined();
      now += 10;
    }
    expect(gateway.position()).toBe("closed");
    expect(gateway.circuit.openedAt).toBeNull();
  });
});
