import { type Hex, toHex } from "viem";
import { mnemonicToAccount } from "viem/accounts";
import { BASE_MAINNET } from "../chain/networks.js";

/** Base mainnet USDC. The devnet places its test token here so clients see the real address. */
export const BASE_USDC_ADDRESS = BASE_MAINNET.usdc.address;
/** Canonical Multicall3 address, used by the x402 EVM facilitator for failure diagnostics. */
export const MULTICALL3_ADDRESS = "0xcA11bde05977b3631167028862bE2a173976CA11" as const;

export const DEVNET_CHAIN_ID = BASE_MAINNET.chainId;
/** CAIP-2 network id used by x402 v2 requirements. */
export const DEVNET_NETWORK_V2 = BASE_MAINNET.caip2;
/** x402 v1 network name for chain 8453 (see EVM_NETWORK_CHAIN_ID_MAP in @x402/evm). */
export const DEVNET_NETWORK_V1 = BASE_MAINNET.v1Name;

/** EIP-712 domain of the test token; must equal requirements.extra {name, version}. */
export const USDC_EIP712_NAME = BASE_MAINNET.usdc.name;
export const USDC_EIP712_VERSION = BASE_MAINNET.usdc.version;
export const USDC_DECIMALS = BASE_MAINNET.usdc.decimals;

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

/**
 * Accounts 0..10 of anvil's default mnemonic, as `deriveDevnetKey` computes them (test/devnet checks that they still
 * agree). Written out because deriving runs BIP-39's 2,048 rounds of PBKDF2 in JavaScript for every account: eleven of
 * them cost a third of a second of every devnet start.
 */
const ANVIL_KEYS: readonly DevnetKey[] = [
  {
    address: "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266",
    privateKey: "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
  },
  {
    address: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
    privateKey: "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
  },
  {
    address: "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC",
    privateKey: "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a",
  },
  {
    address: "0x90F79bf6EB2c4f870365E785982E1f101E93b906",
    privateKey: "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6",
  },
  {
    address: "0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65",
    privateKey: "0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a",
  },
  {
    address: "0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc",
    privateKey: "0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba",
  },
  {
    address: "0x976EA74026E726554dB657fA54763abd0C3a0aa9",
    privateKey: "0x92db14e403b83dfe3df233f83dfa3a0d7096f21ca9b0d6d6b8d88b2b4ec1564e",
  },
  {
    address: "0x14dC79964da2C08b23698B3D3cc7Ca32193d9955",
    privateKey: "0x4bbbf85ce3377467afe5d46f804f221813b2bb87f24d81f60f1fcdbf7cbf4356",
  },
  {
    address: "0x23618e81E3f5cdF7f54C3d65f7FBc0aBf5B21E8f",
    privateKey: "0xdbda1821b80551c9d65939329250298aa3472ba22feea921c0cf5d620ea67b97",
  },
  {
    address: "0xa0Ee7A142d267C1f36714E4a8F75612F20a79720",
    privateKey: "0x2a871d0798f97d79848a013d4936a73bf4cc922c825d33c1cf7073dff6d409c6",
  },
  {
    address: "0xBcd4042DE499D14e55001CcbB24a551F3b954096",
    privateKey: "0xf214f2b2cd398c806f84e317254e0f0b801d0643303237d97a22a48e01628897",
  },
];

/** Account `index` of anvil's default mnemonic (m/44'/60'/0'/0/index): from the table above when it has it. */
export function devnetKey(index: number): DevnetKey {
  return ANVIL_KEYS[index] ?? deriveDevnetKey(index);
}

/** Derives account `index` of anvil's default mnemonic (m/44'/60'/0'/0/index). */
export function deriveDevnetKey(index: number): DevnetKey {
  const account = mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: index });
  const privateKey = account.getHdKey().privateKey;
  if (!privateKey) throw new Error(`devnet: no private key for mnemonic index ${index}`);
  return { address: account.address, privateKey: toHex(privateKey) as Hex };
}
