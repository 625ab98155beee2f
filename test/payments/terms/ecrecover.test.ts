import { randomBytes } from "node:crypto";
import { type Hex, keccak256, recoverAddress } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { describe, expect, it } from "vitest";
import { recoverSigner } from "../../../src/payments/terms/ecrecover.js";

describe("recoverSigner (libsecp256k1)", () => {
  it("recovers the same address as viem for real signatures, v = 27/28 and 0/1 alike", async () => {
    for (let i = 0; i < 25; i++) {
      const account = privateKeyToAccount(generatePrivateKey());
      const hash = keccak256(randomBytes(32));
      const signature = await account.sign({ hash });
      expect(recoverSigner(hash, signature)).toBe(account.address);
      expect(recoverSigner(hash, signature)).toBe(await recoverAddress({ hash, signature }));
      const v = Number.parseInt(signature.slice(-2), 16);
      const compact = `${signature.slice(0, -2)}${(v - 27).toString(16).padStart(2, "0")}` as Hex;
      expect(recoverSigner(hash, compact)).toBe(account.address);
    }
  });

  it("another hash recovers another address; malformed signatures throw", async () => {
    const account = privateKeyToAccount(generatePrivateKey());
    const hash = keccak256(randomBytes(32));
    const signature = await account.sign({ hash });
    expect(recoverSigner(keccak256(randomBytes(32)), signature)).not.toBe(account.address);
    expect(() => recoverSigner(hash, signature.slice(0, -2) as Hex)).toThrow(/65 bytes/);
    expect(() => recoverSigner(hash, `${signature.slice(0, -2)}1f` as Hex)).toThrow(/recovery byte/);
    expect(() => recoverSigner(hash, `0x${"00".repeat(65)}`)).toThrow();
  });
});
