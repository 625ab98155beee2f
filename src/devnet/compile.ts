import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { Abi, Hex } from "viem";

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

const CONTRACT_FILES = ["TestUSDC.sol", "DevMulticall3.sol"] as const;

// `tsc` does not copy .sol files into dist/, so a compiled build looks back into src/.
const CONTRACT_DIR_CANDIDATES = ["./contracts/", "../../../src/devnet/contracts/"] as const;

function contractsDir(): URL {
  for (const candidate of CONTRACT_DIR_CANDIDATES) {
    const dir = new URL(candidate, import.meta.url);
    if (existsSync(fileURLToPath(new URL("TestUSDC.sol", dir)))) return dir;
  }
  throw new Error("devnet: cannot find src/devnet/contracts/TestUSDC.sol");
}

export function readContractSources(): Record<string, { content: string }> {
  const dir = contractsDir();
  return Object.fromEntries(
    CONTRACT_FILES.map((file) => [file, { content: readFileSync(new URL(file, dir), "utf8") }]),
  );
}

interface SolcError {
  severity: "error" | "warning" | "info";
  formattedMessage?: string;
  message: string;
}

interface SolcContractOutput {
  abi: Abi;
  evm: { bytecode: { object: string }; deployedBytecode: { object: string } };
}

interface SolcOutput {
  errors?: SolcError[];
  contracts?: Record<string, Record<string, SolcContractOutput>>;
}

function pickContract(output: SolcOutput, file: string, name: string): CompiledContract {
  const contract = output.contracts?.[file]?.[name];
  if (!contract) throw new Error(`devnet: solc produced no output for ${file}:${name}`);
  return {
    abi: contract.abi,
    bytecode: `0x${contract.evm.bytecode.object}`,
    deployedBytecode: `0x${contract.evm.deployedBytecode.object}`,
  };
}

/** Compiles the devnet contracts with solc-js (offline, bundled compiler). */
export async function compileDevnetContracts(): Promise<DevnetContracts> {
  // Loaded lazily: soljson is several megabytes of wasm that only the devnet needs.
  const solc = (await import("solc")).default;
  const input = {
    language: "Solidity",
    sources: readContractSources(),
    settings: {
      optimizer: { enabled: true, runs: 200 },
      // Conservative target: anvil runs newer forks too, and an older EVM keeps the code portable.
      evmVersion: "cancun",
      outputSelection: { "*": { "*": ["abi", "evm.bytecode.object", "evm.deployedBytecode.object"] } },
    },
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input))) as SolcOutput;
  const errors = (output.errors ?? []).filter((e) => e.severity === "error");
  if (errors.length > 0) {
    throw new Error(`devnet: solc failed:\n${errors.map((e) => e.formattedMessage ?? e.message).join("\n")}`);
  }
  return {
    TestUSDC: pickContract(output, "TestUSDC.sol", "TestUSDC"),
    DevMulticall3: pickContract(output, "DevMulticall3.sol", "DevMulticall3"),
  };
}

let cached: Promise<DevnetContracts> | undefined;

/** Compiles once per process; later devnets (e.g. several test files in one worker) reuse the result. */
export function getDevnetContracts(): Promise<DevnetContracts> {
  if (!cached) {
    cached = compileDevnetContracts();
    // A failed compile must not poison the cache for a retry.
    cached.catch(() => {
      cached = undefined;
    });
  }
  return cached;
}
