import { type AbiFunction, toFunctionSignature } from "viem";
import { describe, expect, it } from "vitest";
import { getDevnetContracts } from "../../src/devnet/compile.js";

function signatures(abi: readonly { type: string }[]): string[] {
  return abi
    .filter((item): item is AbiFunction => item.type === "function")
    .map((fn) => toFunctionSignature(fn));
}

describe("devnet contracts compile with solc-js", () => {
  it("TestUSDC has the ERC-20, EIP-3009, EIP-712 and devnet functions the x402 facilitator needs", async () => {
    const { TestUSDC } = await getDevnetContracts();
    expect(TestUSDC.bytecode).toMatch(/^0x[0-9a-f]{200,}$/);
    expect(TestUSDC.deployedBytecode).toMatch(/^0x[0-9a-f]{200,}$/);
    const fns = signatures(TestUSDC.abi);
    for (const expected of [
      "name()",
      "symbol()",
      "version()",
      "decimals()",
      "totalSupply()",
      "balanceOf(address)",
      "allowance(address,address)",
      "transfer(address,uint256)",
      "approve(address,uint256)",
      "transferFrom(address,address,uint256)",
      "mint(address,uint256)",
      "DOMAIN_SEPARATOR()",
      "eip712Domain()",
      "authorizationState(address,bytes32)",
      // Both forms: the facilitator sends (v,r,s) for 65-byte ECDSA signatures, bytes otherwise.
      "transferWithAuthorization(address,address,uint256,uint256,uint256,bytes32,uint8,bytes32,bytes32)",
      "transferWithAuthorization(address,address,uint256,uint256,uint256,bytes32,bytes)",
      "receiveWithAuthorization(address,address,uint256,uint256,uint256,bytes32,uint8,bytes32,bytes32)",
      "receiveWithAuthorization(address,address,uint256,uint256,uint256,bytes32,bytes)",
      "cancelAuthorization(address,bytes32,uint8,bytes32,bytes32)",
      "cancelAuthorization(address,bytes32,bytes)",
    ]) {
      expect(fns).toContain(expected);
    }
    const events = TestUSDC.abi.filter((i) => i.type === "event").map((e) => ("name" in e ? e.name : ""));
    expect(events).toEqual(expect.arrayContaining(["Transfer", "Approval", "AuthorizationUsed"]));
  });

  it("has no constructor state to lose when the runtime code is copied with anvil_setCode", async () => {
    const { TestUSDC } = await getDevnetContracts();
    expect(TestUSDC.abi.some((i) => i.type === "constructor")).toBe(false);
  });

  it("the Multicall3 stand-in exposes tryAggregate and aggregate3", async () => {
    const { DevMulticall3 } = await getDevnetContracts();
    const fns = signatures(DevMulticall3.abi);
    expect(fns).toContain("tryAggregate(bool,(address,bytes)[])");
    expect(fns).toContain("aggregate3((address,bool,bytes)[])");
  });

  it("caches the compilation per process", async () => {
    const first = getDevnetContracts();
    expect(getDevnetContracts()).toBe(first);
    await first;
  });
});
