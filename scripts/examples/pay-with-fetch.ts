// Pay a pressure402 route with @x402/fetch (x402 v2). Env: BASE_URL, BUYER_PRIVATE_KEY.
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { decodePaymentResponseHeader, wrapFetchWithPayment, x402Client } from "@x402/fetch";
import { privateKeyToAccount } from "viem/accounts";

const baseUrl = process.env.BASE_URL ?? "http://127.0.0.1:3000";
const signer = privateKeyToAccount(process.env.BUYER_PRIVATE_KEY as `0x${string}`);

const client = new x402Client();
registerExactEvmScheme(client, { signer });
// Never sign for more than 0.50 USDC (500000 atomic units) per call.
client.registerPolicy((_version, accepts) => accepts.filter((r) => BigInt(r.amount) <= 500_000n));
const fetchWithPayment = wrapFetchWithPayment(fetch, client);

async function main() {
  const res = await fetchWithPayment(`${baseUrl}/v1/token/risk-summary`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ token: "ARB" }),
  });
  const summary = (await res.json()) as { token: string; eventCount: number; sizeBand?: string };
  console.log(res.status, summary.token, summary.eventCount, summary.sizeBand);
  const receipt = res.headers.get("PAYMENT-RESPONSE");
  if (receipt) console.log(decodePaymentResponseHeader(receipt)); // { success, transaction, network, payer }
}

// No top-level await: the file runs as CommonJS (a fresh `npm init -y` project) and as an ES module alike.
main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
