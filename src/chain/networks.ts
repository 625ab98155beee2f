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

export const BASE_MAINNET: PaymentNetwork = {
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
};

export const BASE_SEPOLIA: PaymentNetwork = {
  caip2: "eip155:84532",
  chainId: 84532,
  v1Name: "base-sepolia",
  label: "Base Sepolia",
  testnet: true,
  usdc: { address: "0x036CbD53842c5426634e7929541eC2318f3dCF7e", name: "USDC", version: "2", decimals: 6 },
  explorerTx: "https://sepolia.basescan.org/tx/",
};

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
