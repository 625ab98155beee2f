import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join, sep } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { Abi, Hex } from "viem";
import { repoRoot } from "../files/paths.js";

export interface CompiledContract {
  abi: Abi;
  /** Creation code (constructor + runtime), for a normal deployment. */
  bytecode: Hex;
  /** Runtime code, what anvil_setCode places at an address. */
  deployedBytecode: Hex;
}

export interface DevnetContracts {
  TestUSDC: CompiledContract;
  DevMulticall3: CompiledContract;
}

export type DevnetContractName = keyof DevnetContracts;
export const DEVNET_CONTRACTS: readonly DevnetContractName[] = ["TestUSDC", "DevMulticall3"];

/**
 * What `npm run devnet:compile` writes beside each .sol file: enough to deploy without a compiler at start-up, and
 * enough to tell whether the artifact still matches its source (the hash) and how to reproduce it (compiler + settings).
 */
export interface ContractArtifact extends CompiledContract {
  contractName: DevnetContractName;
  sourceFile: string;
  /** sha256 (hex) of the .sol file's bytes the artifact was compiled from. */
  sourceSha256: string;
  compiler: { name: "solc-js"; version: string; settings: Record<string, unknown> };
}

/** The solc settings every artifact is compiled with (one place, so the script and the check agree). */
export const SOLC_SETTINGS = {
  optimizer: { enabled: true, runs: 200 },
  // Conservative target: anvil runs newer forks too, and an older EVM keeps the code portable.
  evmVersion: "cancun",
  outputSelection: { "*": { "*": ["abi", "evm.bytecode.object", "evm.deployedBytecode.object"] } },
} as const;

/**
 * Found from the repository root rather than beside this module: neither `tsc` (dist/src/) nor the `npm start` bundle
 * (dist/start/) copies the .sol/.json files, so every build reads them from src/.
 */
export function contractsDir(): URL {
  const dir = pathToFileURL(join(repoRoot(), "src", "devnet", "contracts") + sep);
  if (existsSync(fileURLToPath(new URL("TestUSDC.sol", dir)))) return dir;
  throw new Error("devnet: cannot find src/devnet/contracts/TestUSDC.sol");
}

export const sourceFileOf = (name: DevnetContractName): string => `${name}.sol`;
export const artifactFileOf = (name: DevnetContractName): string => `${name}.json`;
export const sha256Hex = (bytes: Buffer | string): string => createHash("sha256").update(bytes).digest("hex");

/** Reads one committed artifact and refuses it if its source changed since it was compiled. */
export function readArtifact(name: DevnetContractName, dir: URL = contractsDir()): ContractArtifact {
  const artifact = JSON.parse(readFileSync(new URL(artifactFileOf(name), dir), "utf8")) as ContractArtifact;
  const source = readFileSync(new URL(sourceFileOf(name), dir));
  if (artifact.contractName !== name || artifact.sourceSha256 !== sha256Hex(source)) {
    throw new Error(
      `devnet: ${artifactFileOf(name)} does not match ${sourceFileOf(name)}; run \`npm run devnet:compile\``,
    );
  }
  return artifact;
}

let cached: DevnetContracts | undefined;

/** The precompiled devnet contracts (read once per process): start-up needs no Solidity compiler. */
export function getDevnetContracts(): DevnetContracts {
  if (!cached) {
    const pick = (name: DevnetContractName): CompiledContract => {
      const { abi, bytecode, deployedBytecode } = readArtifact(name);
      return { abi, bytecode, deployedBytecode };
    };
    cached = { TestUSDC: pick("TestUSDC"), DevMulticall3: pick("DevMulticall3") };
  }
  return cached;
}
