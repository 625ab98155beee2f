import { BASE_SEPOLIA, caip2OfV1 } from "../chain/networks.js";
import { KNOWN_USDC, USDC_DECIMALS } from "../chain/usdc.js";

/**
 * Money and network facts shared by the catalog build, the Bazaar ingest and the live probe.
 * Amounts are atomic decimal strings; USD numbers exist only for statistics.
 */

/** Testnets seen in x402 listings; their prices are not market prices. */
export const TESTNET_NETWORKS: ReadonlySet<string> = new Set([
  BASE_SEPOLIA.caip2,
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

/** CAIP-2 id for a network written either way; unknown v1 names stay null rather than guessed. */
export function toCaip2(network: unknown): string | null {
  if (typeof network !== "string" || network.length === 0) return null;
  if (network.includes(":")) return network;
  return caip2OfV1(network.toLowerCase()) ?? null;
}

export function isTestnet(network: string | null): boolean {
  return network !== null && TESTNET_NETWORKS.has(network);
}

/** Decimals of the asset when it is a known USDC contract on that network, else null. */
export function usdcDecimals(network: string | null, asset: string | null): number | null {
  if (network === null || asset === null) return null;
  const usdc = KNOWN_USDC[network];
  if (usdc === undefined) return null;
  const same = network.startsWith("eip155:") ? asset.toLowerCase() === usdc : asset === usdc;
  return same ? USDC_DECIMALS : null;
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

/** Nearest atomic amount for an analytical USD figure (a suggestion, never a charged amount). */
export function usdToAtomicRounded(usd: number, decimals: number): string {
  const exact = usdToAtomic(Number(usd.toFixed(decimals)), decimals);
  return exact ?? "0";
}
