import type { Challenge } from "../payments/http/http-answers.js";
import type { PaymentTerms, RoutePrice } from "../payments/terms/requirements.js";
import { toolChallenge } from "./results.js";
import type { PaidTool } from "./tools.js";

/** Tool and base-URL pairs kept; past it the least recently used goes (a Host walk costs memory for this many). */
const MAX = 256;

/** Per app's terms and per operation's price (tests run several apps in one process), by tool and base URL. */
const byTerms = new WeakMap<PaymentTerms, WeakMap<RoutePrice, Map<string, ReturnType<Challenge>>>>();

function cacheOf(terms: PaymentTerms, price: RoutePrice): Map<string, ReturnType<Challenge>> {
  let prices = byTerms.get(terms);
  if (!prices) {
    prices = new WeakMap();
    byTerms.set(terms, prices);
  }
  let built = prices.get(price);
  if (!built) {
    built = new Map();
    prices.set(price, built);
  }
  return built;
}

/**
 * The PaymentRequired of a tool call that carried no payment, built once per tool and base URL: its PaymentRequired never changes
 * for them (the price, terms, Bazaar extension and "payment required" reason are fixed), so an unpaid call costs what
 * an HTTP route's cached challenge costs, not a fresh PaymentRequired each time.
 */
export function unpaidChallenge(
  tool: PaidTool,
  price: RoutePrice,
  terms: PaymentTerms,
  baseUrl: string,
): Challenge {
  const built = cacheOf(terms, price);
  const key = `${tool.name}\n${baseUrl}`;
  let hit = built.get(key);
  if (hit) built.delete(key);
  else hit = toolChallenge(tool, price, terms, baseUrl, false)("");
  built.set(key, hit);
  if (built.size > MAX) built.delete(built.keys().next().value as string);
  const challenge = hit;
  return () => challenge;
}
