// Pay a pressure402 route with @x402/axios (x402 v2). Env: BASE_URL, BUYER_PRIVATE_KEY.
import { decodePaymentResponseHeader, wrapAxiosWithPaymentFromConfig } from "@x402/axios";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import axios from "axios";
import { privateKeyToAccount } from "viem/accounts";

const baseUrl = process.env.BASE_URL ?? "http://127.0.0.1:3000";
const signer = privateKeyToAccount(process.env.BUYER_PRIVATE_KEY as `0x${string}`);

const api = wrapAxiosWithPaymentFromConfig(axios.create({ baseURL: baseUrl }), {
  schemes: [{ network: "eip155:8453", client: new ExactEvmScheme(signer) }],
});

async function main() {
  // Defaults apply: days=30 (minRisk given).
  const { status, data, headers } = await api.get("/v1/unlocks/upcoming", { params: { minRisk: 50 } });
  console.log(status, data.days, data.unlocks.length);
  console.log(decodePaymentResponseHeader(headers["payment-response"])); // { success, transaction, network, payer }
}

// No top-level await: the file runs as CommonJS (a fresh `npm init -y` project) and as an ES module alike.
main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
