import { BASE_MAINNET, PAYMENT_NETWORKS } from "./networks.js";

/** Decimals of USDC, the same on every network the service is paid on (the atomic unit is 10^-6 USD). */
export const USDC_DECIMALS: number = BASE_MAINNET.usdc.decimals;

/**
 * USDC contracts by CAIP-2 network, as x402 listings name them: the networks the service is paid on, plus Solana's
 * USDC mint. EVM addresses lower-case (compare lower-cased); Solana's as written (base58 is case-sensitive).
 */
export const KNOWN_USDC: Readonly<Record<string, string>> = {
  ...Object.fromEntries(Object.values(PAYMENT_NETWORKS).map((n) => [n.caip2, n.usdc.address.toLowerCase()])),
  "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp": "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
};

/** Digits of a non-negative atomic amount split at the token's decimal point: ("20000", 6) → ["0", "020000"]. */
function splitAtomic(digits: string, decimals: number): [whole: string, fraction: string] {
  const padded = digits.padStart(decimals + 1, "0");
  return [padded.slice(0, padded.length - decimals), padded.slice(padded.length - decimals)];
}

/** Atomic USDC → USD with its trailing zeros dropped ("20000" → "0.02"): for people and logs only. */
export function formatUsdc(amount: string | bigint): string {
  const v = BigInt(amount);
  const [whole, fraction] = splitAtomic((v < 0n ? -v : v).toString(), USDC_DECIMALS);
  const trimmed = fraction.replace(/0+$/, "");
  return `${v < 0n ? "-" : ""}${trimmed ? `${whole}.${trimmed}` : whole}`;
}

/** Atomic USDC → a USD decimal string with all six places ("20000" → "0.020000"), as accounting exports print it. */
export function usdcFixed(atomic: bigint): string {
  const [whole, fraction] = splitAtomic((atomic < 0n ? -atomic : atomic).toString(), USDC_DECIMALS);
  return `${atomic < 0n ? "-" : ""}${whole}.${fraction}`;
}

/** USD value of an atomic amount of a USD-pegged token with `decimals` decimals, for statistics only. */
export function atomicToUsd(atomic: string, decimals: number): number {
  const [whole, fraction] = splitAtomic(atomic, decimals);
  return Number(`${whole}.${fraction}`);
}
