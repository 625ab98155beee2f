import { type Hex, toHex } from "viem";
import { mnemonicToAccount } from "viem/accounts";

/** Base mainnet USDC. The devnet places its test token here so clients see the real address. */
export const BASE_USDC_ADDRESS = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913" as const;
/** Canonical Multicall3 address, used by the x402 EVM facilitator for failure diagnostics. */
export const MULTICALL3_ADDRESS = "0xcA11bde05977b3631167028862bE2a173976CA11" as const;

export const DEVNET_CHAIN_ID = 8453 as const;
/** CAIP-2 network id used by x402 v2 requirements. */
export const DEVNET_NETWORK_V2 = "eip155:8453" as const;
/** x402 v1 network name for chain 8453 (see EVM_NETWORK_CHAIN_ID_MAP in @x402/evm). */
export const DEVNET_NETWORK_V1 = "base" as const;

/** EIP-712 domain of the test token; must equal requirements.extra {name, version}. */
export const USDC_EIP712_NAME = "USD Coin" as const;
export const USDC_EIP712_VERSION = "2" as const;
export const USDC_DECIMALS = 6 as const;

/** 1,000 USDC in atomic units, minted to each of anvil's test accounts 1..9. */
export const BUYER_FUNDING_ATOMIC = 1_000_000_000n;

/** anvil's default mnemonic: its well-known test accounts are derived from it. */
export const ANVIL_MNEMONIC = "test test test test test test test test test test test junk" as const;
/** Account 0 deploys the token and pays gas as the facilitator. */
export const FACILITATOR_ACCOUNT_INDEX = 0;
export const BUYER_ACCOUNT_INDEXES = [1, 2, 3, 4, 5, 6, 7, 8, 9] as const;
/** Beyond anvil's 10 funded accounts, so payTo never doubles as a buyer or the facilitator. */
export const PAY_TO_ACCOUNT_INDEX = 10;

export interface DevnetKey {
  address: `0x${string}`;
  privateKey: `0x${string}`;
}

/** Derives account `index` of anvil's default mnemonic (m/44'/60'/0'/0/index). */
export function devnetKey(index: number): DevnetKey {
  const account = mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: index });
  const privateKey = account.getHdKey().privateKey;
  if (!privateKey) throw new Error(`devnet: no private key for mnemonic index ${index}`);
  return { address: account.address, privateKey: toHex(privateKey) as Hex };
}
