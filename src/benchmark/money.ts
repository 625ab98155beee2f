/**
 * Money and network facts shared by the catalog build, the Bazaar ingest and the live probe.
 * Amounts are atomic decimal strings; USD numbers exist only for statistics.
 */

export const BASE_MAINNET = "eip155:8453";
export const BASE_USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";

/** USDC contracts (6 decimals) by CAIP-2 network; EVM addresses compared lower-case. */
const USDC_BY_NETWORK: Readonly<Record<string, string>> = {
  "eip155:8453": BASE_USDC.toLowerCase(),
  "eip155:84532": "0x036cbd53842c5426634e7929541ec2318f3dcf7e",
  "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp": "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
};

/** Testnets seen in x402 listings; their prices are not market prices. */
export const TESTNET_NETWORKS: ReadonlySet<string> = new Set([
  "eip155:84532",
  "eip155:11155111",
  "eip155:43113",
  "eip155:80002",
  "eip155:1328",
  "eip155:11124",
  "eip155:2201",
  "eip155:324705682",
  "eip155:10143",
  "stellar:testnet",
  "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1",
  "solana:4uhcVJyU9pJkvQyS88uRDiswHXSCkY3z",
]);

/** x402 v1 network names → CAIP-2 (EVM chain ids as in @x402/evm's v1 table, plus Solana). */
const V1_NETWORKS: Readonly<Record<string, string>> = {
  base: "eip155:8453",
  "base-sepolia": "eip155:84532",
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

/** CAIP-2 id for a network written either way; unknown v1 names stay null rather than guessed. */
export function toCaip2(network: unknown): string | null {
  if (typeof network !== "string" || network.length === 0) return null;
  if (network.includes(":")) return network;
  return V1_NETWORKS[network.toLowerCase()] ?? null;
}

export function isTestnet(network: string | null): boolean {
  return network !== null && TESTNET_NETWORKS.has(network);
}

/** Decimals of the asset when it is a known USDC contract on that network, else null. */
export function usdcDecimals(network: string | null, asset: string | null): number | null {
  if (network === null || asset === null) return null;
  const usdc = USDC_BY_NETWORK[network];
  if (usdc === undefined) return null;
  const same = network.startsWith("eip155:") ? asset.toLowerCase() === usdc : asset === usdc;
  return same ? 6 : null;
}

/** Plain decimal digits of a finite non-negative JS number (expands exponent notation). */
export function numberToDecimalString(value: number): string {
  if (!Number.isFinite(value) || value < 0)
    throw new RangeError(`not a non-negative finite number: ${value}`);
  const text = String(value);
  const m = /^(\d+)(?:\.(\d+))?(?:e([+-]\d+))?$/.exec(text);
  if (m === null) throw new RangeError(`unexpected number format: ${text}`);
  const intPart = m[1] ?? "0";
  const fracPart = m[2] ?? "";
  const exp = Number(m[3] ?? "0");
  const digits = intPart + fracPart;
  const point = intPart.length + exp;
  let out: string;
  if (point <= 0) out = `0.${"0".repeat(-point)}${digits}`;
  else if (point >= digits.length) out = digits + "0".repeat(point - digits.length);
  else out = `${digits.slice(0, point)}.${digits.slice(point)}`;
  out = out.replace(/^0+(?=\d)/, "");
  return out.includes(".") ? out.replace(/0+$/, "").replace(/\.$/, "") : out;
}

/**
 * Exact atomic amount for a USD price in a 1-USD-pegged token with `decimals` decimals, or null
 * when the price has more fractional digits than the token can carry (never rounds money).
 */
export function usdToAtomic(usd: number, decimals: number): string | null {
  const text = numberToDecimalString(usd);
  const [intPart = "0", frac = ""] = text.split(".");
  if (frac.length > decimals) return null;
  return (BigInt(intPart) * 10n ** BigInt(decimals) + BigInt(frac.padEnd(decimals, "0") || "0")).toString();
}

/** USD value of an atomic amount, for statistics only. */
export function atomicToUsd(atomic: string, decimals: number): number {
  const padded = atomic.padStart(decimals + 1, "0");
  return Number(`${padded.slice(0, padded.length - decimals)}.${padded.slice(padded.length - decimals)}`);
}

/** Nearest atomic amount for an analytical USD figure (a suggestion, never a charged amount). */
export function usdToAtomicRounded(usd: number, decimals: number): string {
  const exact = usdToAtomic(Number(usd.toFixed(decimals)), decimals);
  return exact ?? "0";
}
