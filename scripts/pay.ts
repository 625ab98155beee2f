/**
 * Buyer CLI: `npm run pay -- <METHOD> <path> [json-body]` pays one call with x402 and prints what happened.
 * It shows the price and the payee before it signs anything, and refuses what costs more than MAX_PRICE_USD.
 */
import { x402HTTPClient } from "@x402/core/client";
import type { PaymentRequired, PaymentRequirements } from "@x402/core/types";
import { parseUnits } from "viem";
import { paymentNetwork } from "../src/chain/networks.js";
import { formatUsdc } from "../src/chain/usdc.js";
import { buyerClient, DEVNET_BUYER_KEY, decodeSettlement } from "./buyer.js";

const HELP = `Pay one call of a pressure402 (x402) API and print the answer.

usage: npm run pay -- <GET|POST> <path> [json-body]
       npm run pay -- --help

examples:
  npm run pay -- GET '/v1/unlocks/upcoming?days=30&minRisk=50'
  npm run pay -- POST /v1/token/risk-summary '{"token":"ARB"}'
  X402_VERSION=1 npm run pay -- POST /v1/token/risk-summary '{"token":"ARB"}'

It sends the request unpaid, shows the price (USD and atomic units), the asset, network and payee from the 402,
refuses anything above MAX_PRICE_USD, then signs an EIP-3009 USDC authorization and repeats the request with it.

environment:
  BASE_URL           server to call (default http://127.0.0.1:3000, where \`npm start\` listens)
  BUYER_PRIVATE_KEY  0x-prefixed 32-byte hex key that signs the payment (default: anvil test account 1, which the
                     embedded devnet funds with test USDC; never use that key with real money)
  MAX_PRICE_USD      most you agree to pay for this one call, in USD (default 0.50); above it nothing is signed
  X402_VERSION       2 (default: PAYMENT-SIGNATURE, read from the PAYMENT-REQUIRED header) or 1 (X-PAYMENT, read
                     from the 402 body; the unlock routes only)

exit codes: 0 paid and answered 2xx; 1 refused, failed or not 2xx; 2 bad usage.
`;

class CliError extends Error {}

function usage(message: string): never {
  process.stderr.write(`pay: ${message}\n\n${HELP}`);
  process.exit(2);
}

/** fetch with a message a newcomer can act on when the server is not there. */
async function reach(base: string, url: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    const why = cause?.code ?? cause?.message ?? (err instanceof Error ? err.message : String(err));
    throw new CliError(
      `cannot reach the server at ${base} (${why}). Is it running? Start it with \`npm start\`, or set BASE_URL to where it listens.`,
    );
  }
}

function show(label: string, value: unknown) {
  process.stdout.write(`${label}: ${typeof value === "string" ? value : JSON.stringify(value, null, 2)}\n`);
}

async function printAnswer(response: Response) {
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {}
  show("status", String(response.status));
  show("body", body);
  const settlement = decodeSettlement(response);
  show("settlement", settlement ?? "(none)");
}

const amountOf = (r: PaymentRequirements | { maxAmountRequired?: string }) =>
  BigInt((r as PaymentRequirements).amount ?? (r as { maxAmountRequired?: string }).maxAmountRequired ?? "0");

/** The payment requirements of a 402, read the way a client of that x402 version reads them. */
async function requirementsOf(first: Response, version: 1 | 2): Promise<PaymentRequired> {
  const body = (await first.json().catch(() => undefined)) as
    | { x402Version?: number; error?: string; accepts?: unknown[] }
    | undefined;
  if (version === 1) {
    if (body?.x402Version !== 1) throw new CliError("the 402 body is not an x402 v1 PaymentRequired");
    // Only the exact scheme is payable; a v2-only route offers none (its one entry's scheme is the refusal).
    const accepts = (body.accepts ?? []).filter((a) => (a as { scheme?: string }).scheme === "exact");
    if (accepts.length === 0)
      throw new CliError(`the server offers nothing to pay with x402 v1: ${body.error ?? "no accepts"}`);
    return { ...body, accepts } as unknown as PaymentRequired;
  }
  const header = first.headers.get("PAYMENT-REQUIRED");
  if (!header) throw new CliError("the server answered 402 without a PAYMENT-REQUIRED header (not x402 v2)");
  return new x402HTTPClient(buyerClient(DEVNET_BUYER_KEY, 0n)).getPaymentRequiredResponse((n) =>
    first.headers.get(n),
  );
}

async function main() {
  const args = process.argv.slice(2);
  if (args.includes("--help") || args.includes("-h")) {
    process.stdout.write(HELP);
    return;
  }
  const [methodArg, path, body] = args;
  if (!methodArg || !path) usage("a method and a path are required");
  const method = methodArg.toUpperCase();
  if (method !== "GET" && method !== "POST") usage(`unknown method ${methodArg}: use GET or POST`);
  if (body !== undefined) {
    try {
      JSON.parse(body);
    } catch {
      usage("the body is not valid JSON");
    }
  }
  const base = (process.env.BASE_URL ?? "http://127.0.0.1:3000").replace(/\/+$/, "");
  const key = (process.env.BUYER_PRIVATE_KEY ?? DEVNET_BUYER_KEY) as `0x${string}`;
  if (!/^0x[0-9a-fA-F]{64}$/.test(key)) usage("BUYER_PRIVATE_KEY must be a 0x-prefixed 32-byte hex key");
  const maxUsd = process.env.MAX_PRICE_USD ?? "0.50";
  if (!/^\d+(\.\d{1,6})?$/.test(maxUsd))
    usage(`MAX_PRICE_USD must be a decimal amount of USD, got ${maxUsd}`);
  const maxAtomic = parseUnits(maxUsd, 6);
  const versionArg = process.env.X402_VERSION ?? "2";
  if (versionArg !== "1" && versionArg !== "2") usage(`X402_VERSION must be 1 or 2, got ${versionArg}`);
  const version = versionArg === "1" ? 1 : 2;
  const url = `${base}${path.startsWith("/") ? path : `/${path}`}`;
  const init: RequestInit = {
    method,
    headers: body !== undefined ? { "content-type": "application/json" } : {},
    ...(body !== undefined ? { body } : {}),
  };

  const first = await reach(base, url, init);
  if (first.status !== 402) {
    process.stdout.write("not paid: the server answered without asking for payment\n");
    await printAnswer(first);
    if (!first.ok) process.exitCode = 1;
    return;
  }
  const required = await requirementsOf(first, version);
  const offer = [...required.accepts].sort((a, b) => (amountOf(a) < amountOf(b) ? -1 : 1))[0];
  if (!offer) throw new CliError("the 402 offers no way to pay");
  const atomic = amountOf(offer);
  const isUsdc = offer.asset.toLowerCase() === paymentNetwork(offer.network)?.usdc.address.toLowerCase();
  const usd = isUsdc ? `${formatUsdc(atomic)} USD` : "unknown USD";
  show(
    "price",
    `${usd} (${atomic} atomic units of ${isUsdc ? "USDC" : "asset"} ${offer.asset} on ${offer.network})`,
  );
  show("payee", offer.payTo);
  if (!isUsdc || atomic > maxAtomic)
    throw new CliError(
      `refusing to pay ${usd} for ${method} ${path}: above MAX_PRICE_USD=${maxUsd}. Nothing was signed; raise MAX_PRICE_USD to allow it.`,
    );

  const http = new x402HTTPClient(buyerClient(key, maxAtomic));
  const payload = await http.createPaymentPayload(required);
  const paid = await reach(base, url, {
    ...init,
    headers: { ...(init.headers as Record<string, string>), ...http.encodePaymentSignatureHeader(payload) },
  });
  await printAnswer(paid);
  if (!paid.ok) process.exitCode = 1;
}

main().catch((err: unknown) => {
  const cause = err instanceof Error && err.cause instanceof Error ? err.cause : err;
  process.stderr.write(`pay: ${cause instanceof Error ? cause.message : String(cause)}\n`);
  process.exit(1);
});
