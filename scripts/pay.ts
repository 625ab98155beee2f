/**
 * Buyer CLI: `npm run pay -- <METHOD> <path> [json-body]` pays one call with x402 and prints what happened.
 * Env: BASE_URL (default http://127.0.0.1:3000), BUYER_PRIVATE_KEY (default: anvil test account 1, devnet only),
 * MAX_PRICE_USD (default 0.50; calls priced above it are refused), X402_VERSION=1 to pay with X-PAYMENT (v1).
 */
import { parseUnits } from "viem";
import {
  DEVNET_BUYER_KEY,
  decodeSettlement,
  fetchPayingV1,
  PriceTooHighError,
  payingFetch,
} from "./buyer.js";

function usage(): never {
  process.stderr.write("usage: npm run pay -- <GET|POST> <path> [json-body]\n");
  process.exit(2);
}

async function main() {
  const [methodArg, path, body] = process.argv.slice(2);
  if (!methodArg || !path) usage();
  const method = methodArg.toUpperCase();
  if (method !== "GET" && method !== "POST") usage();
  if (body !== undefined) {
    try {
      JSON.parse(body);
    } catch {
      process.stderr.write("pay: the body is not valid JSON\n");
      process.exit(2);
    }
  }
  const base = (process.env.BASE_URL ?? "http://127.0.0.1:3000").replace(/\/+$/, "");
  const key = (process.env.BUYER_PRIVATE_KEY ?? DEVNET_BUYER_KEY) as `0x${string}`;
  if (!/^0x[0-9a-fA-F]{64}$/.test(key))
    throw new Error("BUYER_PRIVATE_KEY must be a 0x-prefixed 32-byte hex key");
  const maxAtomic = parseUnits(process.env.MAX_PRICE_USD ?? "0.50", 6);
  const url = `${base}${path.startsWith("/") ? path : `/${path}`}`;
  const init: RequestInit = {
    method,
    headers: body !== undefined ? { "content-type": "application/json" } : {},
    ...(body !== undefined ? { body } : {}),
  };

  const response =
    process.env.X402_VERSION === "1"
      ? (await fetchPayingV1(url, init, key, maxAtomic)).response
      : await payingFetch(key, maxAtomic)(url, init);
  const text = await response.text();
  let shown: unknown = text;
  try {
    shown = JSON.parse(text);
  } catch {}
  process.stdout.write(`status: ${response.status}\n`);
  process.stdout.write(`body: ${JSON.stringify(shown, null, 2)}\n`);
  const settlement = decodeSettlement(response);
  process.stdout.write(`settlement: ${settlement ? JSON.stringify(settlement, null, 2) : "(none)"}\n`);
  if (!response.ok) process.exitCode = 1;
}

main().catch((err: unknown) => {
  const cause = err instanceof Error && err.cause instanceof PriceTooHighError ? err.cause : err;
  process.stderr.write(`pay: ${cause instanceof Error ? cause.message : String(cause)}\n`);
  process.exit(1);
});
