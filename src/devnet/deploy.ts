import {
  type Chain,
  createPublicClient,
  createTestClient,
  createWalletClient,
  defineChain,
  http,
  type PublicClient,
} from "viem";
import type { DevnetContracts } from "./artifacts.js";
import { BASE_USDC_ADDRESS, DEVNET_CHAIN_ID, MULTICALL3_ADDRESS } from "./constants.js";

/**
 * Chain id 8453 at the local anvil. Defined here rather than spread from viem's `base`: importing `viem/chains` loads
 * every chain viem knows (about a second of start-up), and anvil never produces the OP-stack deposit transactions
 * whose formatters `base` adds.
 */
export function devnetChain(rpcUrl: string): Chain {
  return defineChain({
    id: DEVNET_CHAIN_ID,
    name: "Base (local devnet)",
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
    contracts: { multicall3: { address: MULTICALL3_ADDRESS } },
  });
}

/** anvil mines each transaction as it arrives: poll for receipts often instead of at a public chain's block time. */
export const DEVNET_POLLING_INTERVAL_MS = 50;

export function devnetPublicClient(rpcUrl: string): PublicClient {
  return createPublicClient({
    chain: devnetChain(rpcUrl),
    transport: http(rpcUrl),
    pollingInterval: DEVNET_POLLING_INTERVAL_MS,
  });
}

export interface DeployOptions {
  rpcUrl: string;
  contracts: DevnetContracts;
  /**
   * Pays for the deployment and the mints: one of anvil's own accounts (account 0), which anvil signs for. Signing in
   * this process instead (secp256k1 and Keccak in JavaScript, cold at start-up) cost about a quarter of a second of
   * CPU at every devnet start, on the thread that is meanwhile building the server.
   */
  deployer: `0x${string}`;
  /** Each receives `amount` atomic USDC. */
  fund: readonly `0x${string}`[];
  amount: bigint;
  log?: (msg: string) => void;
}

/**
 * Deploys TestUSDC, copies its runtime code to the Base USDC address and mints test balances
 * there. Also places a stateless Multicall3 stand-in if the chain has none.
 */
export async function deployTestUsdc(opts: DeployOptions): Promise<`0x${string}`> {
  const log = opts.log ?? (() => {});
  const chain = devnetChain(opts.rpcUrl);
  const transport = http(opts.rpcUrl);
  const account = opts.deployer;
  const publicClient = createPublicClient({ chain, transport, pollingInterval: DEVNET_POLLING_INTERVAL_MS });
  const wallet = createWalletClient({
    account,
    chain,
    transport,
    pollingInterval: DEVNET_POLLING_INTERVAL_MS,
  });
  const testClient = createTestClient({ mode: "anvil", chain, transport });
  const { abi, bytecode } = opts.contracts.TestUSDC;

  // A normal deployment first: it proves the creation code runs, and the runtime code we copy is
  // exactly what the chain produced.
  const deployHash = await wallet.deployContract({ abi, bytecode });
  const deployReceipt = await publicClient.waitForTransactionReceipt({ hash: deployHash });
  if (deployReceipt.status !== "success" || !deployReceipt.contractAddress) {
    throw new Error(`devnet: TestUSDC deployment failed (tx ${deployHash})`);
  }
  const runtime = await publicClient.getCode({ address: deployReceipt.contractAddress });
  if (!runtime || runtime === "0x") throw new Error("devnet: TestUSDC deployment left no code");
  await testClient.setCode({ address: BASE_USDC_ADDRESS, bytecode: runtime });
  log(`TestUSDC deployed at ${deployReceipt.contractAddress}, runtime code placed at ${BASE_USDC_ADDRESS}`);

  const multicallCode = await publicClient.getCode({ address: MULTICALL3_ADDRESS });
  if (!multicallCode || multicallCode === "0x") {
    await testClient.setCode({
      address: MULTICALL3_ADDRESS,
      bytecode: opts.contracts.DevMulticall3.deployedBytecode,
    });
  }

  // Sequential on purpose: one sender, and anvil mines each transaction as it arrives.
  for (const to of opts.fund) {
    const hash = await wallet.writeContract({
      address: BASE_USDC_ADDRESS,
      abi,
      functionName: "mint",
      args: [to, opts.amount],
    });
    const receipt = await publicClient.waitForTransactionReceipt({ hash });
    if (receipt.status !== "success") throw new Error(`devnet: mint to ${to} failed (tx ${hash})`);
  }
  return BASE_USDC_ADDRESS;
}

const BALANCE_OF_ABI = [
  {
    type: "function",
    name: "balanceOf",
    stateMutability: "view",
    inputs: [{ name: "account", type: "address" }],
    outputs: [{ name: "", type: "uint256" }],
  },
] as const;

export function readUsdcBalance(client: PublicClient, address: `0x${string}`): Promise<bigint> {
  return client.readContract({
    address: BASE_USDC_ADDRESS,
    abi: BALANCE_OF_ABI,
    functionName: "balanceOf",
    args: [address],
  });
}
