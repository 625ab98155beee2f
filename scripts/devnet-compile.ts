/**
 * Compiles the devnet contracts with solc-js (a development dependency) and writes the artifacts the devnet deploys
 * from: `npm run devnet:compile` after editing src/devnet/contracts/*.sol. `--check` writes nothing and exits 1 when a
 * committed artifact differs from a fresh compilation.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { isDeepStrictEqual, parseArgs } from "node:util";
import type { Abi } from "viem";
import {
  artifactFileOf,
  type ContractArtifact,
  contractsDir,
  DEVNET_CONTRACTS,
  type DevnetContractName,
  SOLC_SETTINGS,
  sha256Hex,
  sourceFileOf,
} from "../src/devnet/artifacts.js";

interface SolcError {
  severity: "error" | "warning" | "info";
  formattedMessage?: string;
  message: string;
}

interface SolcOutput {
  errors?: SolcError[];
  contracts?: Record<
    string,
    Record<string, { abi: Abi; evm: { bytecode: { object: string }; deployedBytecode: { object: string } } }>
  >;
}

/** Compiles every devnet contract from its source in `dir` into the artifact that should be committed. */
export async function compileArtifacts(dir: URL = contractsDir()): Promise<ContractArtifact[]> {
  const solc = (await import("solc")).default;
  const sources = Object.fromEntries(
    DEVNET_CONTRACTS.map((name) => [
      sourceFileOf(name),
      { content: readFileSync(new URL(sourceFileOf(name), dir), "utf8") },
    ]),
  );
  const input = { language: "Solidity", sources, settings: SOLC_SETTINGS };
  const output = JSON.parse(solc.compile(JSON.stringify(input))) as SolcOutput;
  const errors = (output.errors ?? []).filter((e) => e.severity === "error");
  if (errors.length > 0)
    throw new Error(`solc failed:\n${errors.map((e) => e.formattedMessage ?? e.message).join("\n")}`);
  const version: string = solc.version();
  return DEVNET_CONTRACTS.map((name: DevnetContractName): ContractArtifact => {
    const file = sourceFileOf(name);
    const contract = output.contracts?.[file]?.[name];
    if (!contract) throw new Error(`solc produced no output for ${file}:${name}`);
    return {
      contractName: name,
      sourceFile: file,
      sourceSha256: sha256Hex(readFileSync(new URL(file, dir))),
      compiler: { name: "solc-js", version, settings: SOLC_SETTINGS },
      abi: contract.abi,
      bytecode: `0x${contract.evm.bytecode.object}`,
      deployedBytecode: `0x${contract.evm.deployedBytecode.object}`,
    };
  });
}

export const serializeArtifact = (a: ContractArtifact): string => `${JSON.stringify(a, null, 2)}\n`;

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { check: { type: "boolean", default: false } } });
  const dir = contractsDir();
  let stale = 0;
  for (const artifact of await compileArtifacts(dir)) {
    const url = new URL(artifactFileOf(artifact.contractName), dir);
    // Compared as data, not text: `npm run format` may re-wrap the committed JSON.
    let current: unknown;
    try {
      current = JSON.parse(readFileSync(url, "utf8"));
    } catch {
      // missing or unreadable: written below, or reported as stale with --check
    }
    if (isDeepStrictEqual(current, JSON.parse(JSON.stringify(artifact)))) {
      process.stdout.write(`${fileURLToPath(url)}: up to date\n`);
      continue;
    }
    stale++;
    if (values.check) process.stdout.write(`${fileURLToPath(url)}: STALE\n`);
    else {
      writeFileSync(url, serializeArtifact(artifact));
      process.stdout.write(`${fileURLToPath(url)}: written (${artifact.compiler.version})\n`);
    }
  }
  if (values.check && stale > 0) process.exit(1);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((err: unknown) => {
    process.stderr.write(`devnet:compile failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
