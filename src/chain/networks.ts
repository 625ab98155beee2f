/**
 * The chains the service can be paid on, and the money facts of each: the CAIP-2 id (x402 v2), the plain name of x402
 * v1, and the USDC contract with the EIP-712 domain its EIP-3009 authorizations are signed against. The domain must be
 * the token's own (a wrong name or version makes every signature invalid): Base mainnet USDC is "USD Coin" version 2,
 * Base Sepolia's test USDC is "USDC" version 2 (as @x402/evm's default asset table has them).
 */
export interface PaymentNetwork {
  /** CAIP-2, as x402 v2 names the network. */
  caip2: `eip155:${number}`;
  chainId: number;
  /** The network's name in x402 v1 (`network` of v1 requirements and X-PAYMENT-RESPONSE). */
  v1Name: string;
  /** For people: logs, the README, llms.txt. */
  label: string;
  /** A test network: no real money moves (the paywall says so). */
  testnet: boolean;
  usdc: { address: `0x${string}`; name: string; version: string; decimals: number };
  /** Block explorer prefix of a transaction. */
  explorerTx: string;
}

export const BASE_MAINNET = {
  caip2: "eip155:8453",
  chainId: 8453,
  v1Name: "base",
  label: "Base",
  testnet: false,
  usdc: {
    address: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
    name: "USD Coin",
    version: "2",
    decimals: 6,
  },
  explorerTx: "https://basescan.org/tx/",
} as const satisfies PaymentNetwork;

export const BASE_SEPOLIA = {
  caip2: "eip155:84532",
  chainId: 84532,
  v1Name: "base-sepolia",
  label: "Base Sepolia",
  testnet: true,
  usdc: { address: "0x036CbD53842c5426634e7929541eC2318f3dCF7e", name: "USDC", version: "2", decimals: 6 },
  explorerTx: "https://sepolia.basescan.org/tx/",
} as const satisfies PaymentNetwork;

/** Every network NETWORK may name, by CAIP-2 id. */
export const PAYMENT_NETWORKS: Readonly<Record<string, PaymentNetwork>> = {
  [BASE_MAINNET.caip2]: BASE_MAINNET,
  [BASE_SEPOLIA.caip2]: BASE_SEPOLIA,
};

/** The network of a CAIP-2 id or an x402 v1 name; undefined when the service cannot be paid on it. */
export function paymentNetwork(id: string): PaymentNetwork | undefined {
  return PAYMENT_NETWORKS[id] ?? Object.values(PAYMENT_NETWORKS).find((n) => n.v1Name === id);
}

/** The x402 v1 name of a network given as CAIP-2 (or already as its v1 name); the id itself when unknown. */
export function v1NameOf(id: string): string {
  return paymentNetwork(id)?.v1Name ?? id;
}

/**
 * x402 v1 network names → CAIP-2: the EVM names of @x402/evm's v1 table (`EVM_NETWORK_CHAIN_ID_MAP`), X Layer as
 * listings spell it, and Solana's two. Keys are lower-case; a name not here has no known CAIP-2 id.
 */
const V1_NETWORK_IDS: Readonly<Record<string, string>> = {
  [BASE_MAINNET.v1Name]: BASE_MAINNET.caip2,
  [BASE_SEPOLIA.v1Name]: BASE_SEPOLIA.caip2,
  ethereum: "eip155:1",
  sepolia: "eip155:11155111",
  polygon: "eip155:137",
  "polygon-amoy": "eip155:80002",
  avalanche: "eip155:43114",
  "avalanche-fuji": "eip155:43113",
  sei: "eip155:1329",
  "sei-testnet": "eip155:1328",
  iotex: "eip155:4689",
  abstract: "eip155:2741",
  "abstract-testnet": "eip155:11124",
  peaq: "eip155:3338",
  story: "eip155:1514",
  educhain: "eip155:41923",
  "skale-base-sepolia": "eip155:324705682",
  megaeth: "eip155:4326",
  monad: "eip155:143",
  stable: "eip155:988",
  "stable-testnet": "eip155:2201",
  celo: "eip155:42220",
  flare: "eip155:14",
  xlayer: "eip155:196",
  "x-layer": "eip155:196",
  solana: "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp",
  "solana-devnet": "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1",
};

/** The CAIP-2 id of an x402 v1 network name, as written (callers decide on case); undefined when unknown. */
export function caip2OfV1(name: string): string | undefined {
  return Object.hasOwn(V1_NETWORK_IDS, name) ? V1_NETWORK_IDS[name] : undefined;
}
