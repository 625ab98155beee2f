import type { x402Facilitator } from "@x402/core/facilitator";
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
import { createDevnetFacilitator, startFacilitatorServer } from "./facilitator.js";

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
  /** More anvil flags (see AnvilOptions.extraArgs). */
  anvilArgs?: string[];
}

/** A devnet on its way up: what a resource server needs to be built is known before the chain is ready. */
export interface DevnetLaunch {
  /** Listening already; it holds /verify and /settle until the chain is ready (GET /supported says 503 until then). */
  facilitatorUrl: string;
  /** Known before the chain is up: a fixed account of anvil's mnemonic. */
  payTo: `0x${string}`;
  /**
   * The running devnet, once anvil answers, the token is in place and the buyers are funded. Rejects if any of that
   * fails, after closing what it opened.
   */
  ready: Promise<Devnet>;
  /** Stops whatever has started so far (anvil, if it is still starting, as soon as it is up). Safe to call more than once. */
  stop(): Promise<void>;
}

/**
 * Starts the embedded development chain: anvil (chain id 8453), the EIP-3009 test USDC at the Base
 * USDC address with accounts 1..9 funded, and the local x402 facilitator over HTTP (gas paid by
 * anvil account 0). Development and tests only.
 */
export async function startDevnet(opts: StartDevnetOptions = {}): Promise<Devnet> {
  return (await launchDevnet(opts)).ready;
}

/**
 * `startDevnet` without waiting for the chain: returns as soon as the facilitator's HTTP server listens, with the rest
 * under way in `ready`. A server can so be built and answer unpaid requests while anvil starts and the token deploys.
 */
export async function launchDevnet(opts: StartDevnetOptions = {}): Promise<DevnetLaunch> {
  const host = opts.host ?? "127.0.0.1";
  const log = opts.log ?? (() => {});
  const facilitatorKey = devnetKey(FACILITATOR_ACCOUNT_INDEX);
  const buyers: DevnetKey[] = BUYER_ACCOUNT_INDEXES.map(devnetKey);
  const payTo = devnetKey(PAY_TO_ACCOUNT_INDEX).address;

  let chainUp!: (facilitator: x402Facilitator) => void;
  let chainFailed!: (err: unknown) => void;
  const facilitator = new Promise<x402Facilitator>((resolve, reject) => {
    chainUp = resolve;
    chainFailed = reject;
  });
  const server = await startFacilitatorServer(facilitator, { host, port: opts.facilitatorPort, log });

  let stopping = false;
  let anvilStarting: Promise<AnvilInstance> | undefined;
  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping = true;
    stopped ??= (async () => {
      await server.close();
      const anvil = await anvilStarting?.catch(() => undefined);
      await anvil?.stop();
    })();
    return stopped;
  };
  const stoppedWhileStarting = () => new Error("devnet: stopped while starting");

  const bringUp = async (): Promise<Devnet> => {
    anvilStarting = startAnvil({
      host,
      port: opts.anvilPort,
      chainId: DEVNET_CHAIN_ID,
      log,
      ...(opts.anvilArgs ? { extraArgs: opts.anvilArgs } : {}),
    });
    const anvil = await anvilStarting;
    if (stopping) throw stoppedWhileStarting();
    // Precompiled (src/devnet/contracts/*.json): no Solidity compiler on the start-up path.
    const usdc = await deployTestUsdc({
      rpcUrl: anvil.rpcUrl,
      contracts: getDevnetContracts(),
      deployer: facilitatorKey.address,
      fund: buyers.map((b) => b.address),
      amount: BUYER_FUNDING_ATOMIC,
      log,
    });
    if (stopping) throw stoppedWhileStarting();
    chainUp(createDevnetFacilitator(anvil.rpcUrl, facilitatorKey.privateKey));
    const publicClient = devnetPublicClient(anvil.rpcUrl);
    return {
      rpcUrl: anvil.rpcUrl,
      chainId: DEVNET_CHAIN_ID,
      usdc,
      facilitatorUrl: server.url,
      payTo,
      buyers,
      balanceOf: (address) => readUsdcBalance(publicClient, address),
      stop,
    };
  };
  const ready = bringUp().catch(async (err: unknown) => {
    chainFailed(err);
    await stop();
    throw err;
  });
  // Whoever holds `ready` sees the failure; a launch stopped before anyone awaited it must not crash the process.
  ready.catch(() => {});
  return { facilitatorUrl: server.url, payTo, ready, stop };
}
