import { type AnvilInstance, startAnvil } from "./anvil.js";
import { getDevnetContracts } from "./artifacts.js";
import {
  BUYER_ACCOUNT_INDEXES,
  BUYER_FUNDING_ATOMIC,
  DEVNET_CHAIN_ID,
  type DevnetKey,
  devnetKey,
  FACILITATOR_ACCOUNT_INDEX,
  PAY_TO_ACCOUNT_INDEX,
} from "./constants.js";
import { deployTestUsdc, devnetPublicClient, readUsdcBalance } from "./deploy.js";
import { createDevnetFacilitator, type FacilitatorServer, startFacilitatorServer } from "./facilitator.js";

export {
  BASE_USDC_ADDRESS,
  BUYER_FUNDING_ATOMIC,
  DEVNET_CHAIN_ID,
  DEVNET_NETWORK_V1,
  DEVNET_NETWORK_V2,
  USDC_DECIMALS,
  USDC_EIP712_NAME,
  USDC_EIP712_VERSION,
} from "./constants.js";

export interface Devnet {
  rpcUrl: string;
  chainId: 8453;
  /** Base USDC address, where the test token's code lives. */
  usdc: `0x${string}`;
  facilitatorUrl: string;
  /** Receives payments; mnemonic index 10, so not one of anvil's accounts 0..9. Starts at 0 USDC. */
  payTo: `0x${string}`;
  /** anvil accounts 1..9, in order, each funded with 1,000 USDC (1_000_000_000 atomic). */
  buyers: { address: `0x${string}`; privateKey: `0x${string}` }[];
  balanceOf(address: `0x${string}`): Promise<bigint>;
  /** Closes the facilitator and kills anvil. Safe to call more than once. */
  stop(): Promise<void>;
}

export interface StartDevnetOptions {
  host?: string;
  anvilPort?: number;
  facilitatorPort?: number;
  log?: (msg: string) => void;
}

/**
 * Starts the embedded development chain: anvil (chain id 8453), the EIP-3009 test USDC at the Base
 * USDC address with accounts 1..9 funded, and the local x402 facilitator over HTTP (gas paid by
 * anvil account 0). Development and tests only.
 */
export async function startDevnet(opts: StartDevnetOptions = {}): Promise<Devnet> {
  const host = opts.host ?? "127.0.0.1";
  const log = opts.log ?? (() => {});
  let anvil: AnvilInstance | undefined;
  let server: FacilitatorServer | undefined;
  const stopAll = async (): Promise<void> => {
    await server?.close();
    await anvil?.stop();
  };
  try {
    anvil = await startAnvil({ host, port: opts.anvilPort, chainId: DEVNET_CHAIN_ID, log });
    // Precompiled (src/devnet/contracts/*.json): no Solidity compiler on the start-up path.
    const contracts = getDevnetContracts();
    const facilitatorKey = devnetKey(FACILITATOR_ACCOUNT_INDEX);
    const buyers: DevnetKey[] = BUYER_ACCOUNT_INDEXES.map(devnetKey);
    const payTo = devnetKey(PAY_TO_ACCOUNT_INDEX).address;
    const usdc = await deployTestUsdc({
      rpcUrl: anvil.rpcUrl,
      contracts,
      deployerKey: facilitatorKey.privateKey,
      fund: buyers.map((b) => b.address),
      amount: BUYER_FUNDING_ATOMIC,
      log,
    });
    server = await startFacilitatorServer(createDevnetFacilitator(anvil.rpcUrl, facilitatorKey.privateKey), {
      host,
      port: opts.facilitatorPort,
      log,
    });
    const publicClient = devnetPublicClient(anvil.rpcUrl);
    let stopped: Promise<void> | undefined;
    return {
      rpcUrl: anvil.rpcUrl,
      chainId: DEVNET_CHAIN_ID,
      usdc,
      facilitatorUrl: server.url,
      payTo,
      buyers,
      balanceOf: (address) => readUsdcBalance(publicClient, address),
      stop: () => {
        stopped ??= stopAll();
        return stopped;
      },
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}
