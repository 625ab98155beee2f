/**
 * `npm run -s sign-payment -- <PAYMENT-REQUIRED header value>`: prints the PAYMENT-SIGNATURE header value that pays it
 * (x402 v2, exact scheme: an EIP-3009 USDC authorization signed by BUYER_PRIVATE_KEY). The signing step of the curl walk-
 * through in the README; it refuses anything above MAX_PRICE_USD (default 0.50) and never sends anything itself.
 */
import { x402HTTPClient } from "@x402/core/client";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { parseUnits } from "viem";
import { buyerClient, DEVNET_BUYER_KEY } from "./buyer.js";

async function main() {
  const header = process.argv[2]?.trim();
  if (!header) {
    process.stderr.write("usage: npm run -s sign-payment -- <PAYMENT-REQUIRED header value>\n");
    process.exit(2);
  }
  const key = (process.env.BUYER_PRIVATE_KEY ?? DEVNET_BUYER_KEY) as `0x${string}`;
  const max = parseUnits(process.env.MAX_PRICE_USD ?? "0.50", 6);
  const http = new x402HTTPClient(buyerClient(key, max));
  const payload = await http.createPaymentPayload(decodePaymentRequiredHeader(header));
  const signature = http.encodePaymentSignatureHeader(payload)["PAYMENT-SIGNATURE"];
  if (!signature) throw new Error("the requirements are not x402 v2");
  process.stdout.write(`${signature}\n`);
}

main().catch((err: unknown) => {
  const cause = err instanceof Error && err.cause instanceof Error ? err.cause : err;
  process.stderr.write(`sign-payment: ${cause instanceof Error ? cause.message : String(cause)}\n`);
  process.exit(1);
});
