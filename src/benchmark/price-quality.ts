import { BASE_MAINNET } from "../chain/networks.js";
import type { CatalogEntry } from "./catalog/schema.js";
import { words } from "./categories.js";
import { isTestnet } from "./money.js";

/** Tags the compiled catalog uses for prices that are not exact advertised per-call amounts. */
export const APPROXIMATION_TAGS: ReadonlySet<string> = new Set([
  "estimated",
  "default-price",
  "dynamic",
  "example-challenge-amount",
  "min-charge",
  "example-catalog-entry",
]);

/** Tags marking purchases that are not one API call (bundles, prepaid credit, top-ups). */
export const NOT_PER_CALL_TAGS: ReadonlySet<string> = new Set([
  "bundle",
  "full-bundle",
  "prepaid",
  "topup",
  "credits",
]);

/** Path words that mark the same kind of purchase when the tags do not. */
export const NOT_PER_CALL_PATH_WORDS: ReadonlySet<string> = new Set([
  "topup",
  "credits",
  "bundles",
  "buy",
  "subscribe",
  "subscription",
  "checkout",
  "purchase",
  "mint",
  "donate",
  "donation",
  "payment",
  "credit",
]);

export const TESTNET_TAGS: ReadonlySet<string> = new Set(["testnet", "devnet", "devnet-data"]);

export interface PriceQuality {
  priced: boolean;
  per_call: boolean;
  approximate: boolean;
  testnet: boolean;
  base_mainnet: boolean;
  /** Why the entry is or is not a market comparable, in words. */
  flags: string[];
}

function pathWords(url: string): string[] {
  try {
    return words(new URL(url).pathname);
  } catch {
    return [];
  }
}

export function priceQuality(entry: CatalogEntry): PriceQuality {
  const flags: string[] = [];
  const priced = entry.price_usd !== null && entry.price_usd > 0;
  if (!priced) flags.push("no USD price");
  const approxTags = entry.tags.filter((t) => APPROXIMATION_TAGS.has(t));
  if (approxTags.length > 0) flags.push(`approximate price (${approxTags.join(", ")})`);
  const pw = pathWords(entry.url);
  const npcTags = entry.tags.filter((t) => NOT_PER_CALL_TAGS.has(t));
  const npcWords = pw.filter((w) => NOT_PER_CALL_PATH_WORDS.has(w));
  if (/top[-_]up/i.test(entry.url)) npcWords.push("top-up");
  // An inbox is bought once and then used; the catalog lists its purchase like an endpoint.
  const inboxPurchase = entry.tags.includes("inbox") && pw.includes("create");
  const perCall = npcTags.length === 0 && npcWords.length === 0 && !inboxPurchase;
  if (!perCall)
    flags.push(
      `not a per-call price (${[...npcTags, ...npcWords, ...(inboxPurchase ? ["inbox purchase"] : [])].join(", ")})`,
    );
  const testnet =
    isTestnet(entry.network) ||
    entry.tags.some((t) => TESTNET_TAGS.has(t)) ||
    pw.includes("devnet") ||
    pw.includes("testnet");
  if (testnet) flags.push("testnet");
  const baseMainnet = entry.network === BASE_MAINNET.caip2 && !testnet;
  if (!baseMainnet && !testnet)
    flags.push(entry.network === null ? "network unknown" : `not Base mainnet (${entry.network})`);
  return {
    priced,
    per_call: perCall,
    approximate: approxTags.length > 0,
    testnet,
    base_mainnet: baseMainnet,
    flags,
  };
}

/** Market comparables: priced, exact, per-call, Base-mainnet entries. */
export function isComparable(q: PriceQuality): boolean {
  return q.priced && q.per_call && !q.approximate && q.base_mainnet;
}
