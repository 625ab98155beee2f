import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { type AbiFunction, toFunctionSignature } from "viem";
import { afterAll, describe, expect, it } from "vitest";
import { compileArtifacts } from "../../scripts/devnet-compile.js";
import {
  artifactFileOf,
  contractsDir,
  DEVNET_CONTRACTS,
  getDevnetContracts,
  readArtifact,
  sourceFileOf,
} from "../../src/devnet/artifacts.js";

function signatures(abi: readonly { type: string }[]): string[] {
  return abi
    .filter((item): item is AbiFunction => item.type === "function")
    .map((fn) => toFunctionSignature(fn));
}

describe("precompiled devnet contracts", () => {
  it("TestUSDC has the ERC-20, EIP-3009, EIP-712 and devnet functions the x402 facilitator needs", () => {
    const { TestUSDC } = getDevnetContracts();
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

  it("has no constructor state to lose when the runtime code is copied with anvil_setCode", () => {
    const { TestUSDC } = getDevnetContracts();
    expect(TestUSDC.abi.some((i) => i.type === "constructor")).toBe(false);
  });

  it("the Multicall3 stand-in exposes tryAggregate and aggregate3", () => {
    const { DevMulticall3 } = getDevnetContracts();
    const fns = signatures(DevMulticall3.abi);
    expect(fns).toContain("tryAggregate(bool,(address,bytes)[])");
    expect(fns).toContain("aggregate3((address,bool,bytes)[])");
  });

  it("are read once per process", () => {
    expect(getDevnetContracts()).toBe(getDevnetContracts());
  });
});

describe("committed artifacts match their Solidity sources", () => {
  const tmp = mkdtempSync(join(tmpdir(), "p402-artifacts-"));
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  // solc-js is a development dependency: recompiling here is what keeps the committed JSON honest.
  it("a fresh solc-js compilation reproduces every committed artifact exactly", async () => {
    const fresh = await compileArtifacts();
    expect(fresh.map((a) => a.contractName)).toEqual([...DEVNET_CONTRACTS]);
    for (const artifact of fresh) {
      const committed = JSON.parse(
        readFileSync(new URL(artifactFileOf(artifact.contractName), contractsDir()), "utf8"),
      );
      expect(committed).toEqual(JSON.parse(JSON.stringify(artifact)));
    }
  }, 60_000);

  it("an artifact whose source changed is refused with the command that fixes it", () => {
    const dir = pathToFileURL(`${tmp}/`);
    for (const name of DEVNET_CONTRACTS) {
      copyFileSync(new URL(sourceFileOf(name), contractsDir()), new URL(sourceFileOf(name), dir));
      copyFileSync(new URL(artifactFileOf(name), contractsDir()), new URL(artifactFileOf(name), dir));
    }
    expect(readArtifact("TestUSDC", dir).contractName).toBe("TestUSDC");
    const source = new URL(sourceFileOf("TestUSDC"), dir);
    writeFileSync(source, `${readFileSync(source, "utf8")}\n// edited\n`);
    expect(() => readArtifact("TestUSDC", dir)).toThrow(/npm run devnet:compile/);
  });
});
