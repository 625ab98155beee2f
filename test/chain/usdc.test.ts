import { describe, expect, it } from "vitest";
import { BASE_MAINNET, BASE_SEPOLIA, caip2OfV1, PAYMENT_NETWORKS } from "../../src/chain/networks.js";
import { atomicToUsd, formatUsdc, KNOWN_USDC, USDC_DECIMALS, usdcFixed } from "../../src/chain/usdc.js";

describe("atomic USDC as USD", () => {
  it("for people: trailing zeros dropped", () => {
    expect(formatUsdc("20000")).toBe("0.02");
    expect(formatUsdc(100000n)).toBe("0.1");
    expect(formatUsdc("1000000")).toBe("1");
    expect(formatUsdc("12345678")).toBe("12.345678");
    expect(formatUsdc("0")).toBe("0");
    expect(formatUsdc("1")).toBe("0.000001");
  });

  it("for accounting: all six places, sign kept", () => {
    expect(usdcFixed(20000n)).toBe("0.020000");
    expect(usdcFixed(0n)).toBe("0.000000");
    expect(usdcFixed(1234567890n)).toBe("1234.567890");
    expect(usdcFixed(-20000n)).toBe("-0.020000");
  });

  it("for statistics: a number, at any token's decimals", () => {
    expect(atomicToUsd("20000", 6)).toBe(0.02);
    expect(atomicToUsd("1500000000000000000", 18)).toBe(1.5);
    expect(atomicToUsd("7", 0)).toBe(7);
  });
});

describe("chain facts", () => {
  it("USDC decimals and contracts come from the networks the service is paid on", () => {
    expect(USDC_DECIMALS).toBe(6);
    for (const n of Object.values(PAYMENT_NETWORKS)) {
      expect(n.usdc.decimals).toBe(USDC_DECIMALS);
      expect(KNOWN_USDC[n.caip2]).toBe(n.usdc.address.toLowerCase());
    }
  });

  it("x402 v1 names: the paid networks' own, others by @x402/evm's table, nothing guessed", () => {
    expect(caip2OfV1(BASE_MAINNET.v1Name)).toBe(BASE_MAINNET.caip2);
    expect(caip2OfV1(BASE_SEPOLIA.v1Name)).toBe(BASE_SEPOLIA.caip2);
    expect(caip2OfV1("sepolia")).toBe("eip155:11155111");
    expect(caip2OfV1("polygon-amoy")).toBe("eip155:80002");
    expect(caip2OfV1("Base")).toBeUndefined();
    expect(caip2OfV1("constructor")).toBeUndefined();
    expect(caip2OfV1("unknown-chain")).toBeUndefined();
  });
});
