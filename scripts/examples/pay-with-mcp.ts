// Pay a pressure402 MCP tool with the official MCP SDK and @x402/core (x402 MCP transport). Env: BASE_URL, BUYER_PRIVATE_KEY.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { x402Client } from "@x402/core/client";
import type { PaymentRequired } from "@x402/core/types";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { privateKeyToAccount } from "viem/accounts";

const baseUrl = process.env.BASE_URL ?? "http://127.0.0.1:3000";
const x402 = new x402Client();
registerExactEvmScheme(x402, { signer: privateKeyToAccount(process.env.BUYER_PRIVATE_KEY as `0x${string}`) });

/** Calls a paid tool: unpaid first; on an x402 PaymentRequired, signs a payment and repeats the call with it. */
async function callPaidTool(
  mcp: Client,
  x402: x402Client,
  name: string,
  args: Record<string, unknown>,
  maxAtomic: bigint,
) {
  const first = await mcp.callTool({ name, arguments: args });
  const required = first.structuredContent as PaymentRequired | undefined;
  if (!first.isError || required?.x402Version !== 2) return first; // a result, or a refusal (problem fields)
  if (required.accepts.every((r) => BigInt(r.amount) > maxAtomic)) throw new Error(`${name} costs too much`);
  const payment = await x402.createPaymentPayload(required);
  return mcp.callTool({ name, arguments: args, _meta: { "x402/payment": payment } });
}

async function main() {
  const mcp = new Client({ name: "my-agent", version: "1.0.0" });
  await mcp.connect(new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp`)));
  try {
    const args = { token: "ARB", unlock_event_id: "unlock_arb_2026_12_16" };
    const risk = await callPaidTool(mcp, x402, "unlock_risk", args, 100_000n); // at most 0.10 USDC
    const item = risk.structuredContent as
      | { token?: string; risk_score?: number; date?: string }
      | undefined;
    console.log(risk.isError ? "error" : "ok", item?.token, item?.risk_score, item?.date);
    console.log(risk._meta?.["x402/payment-response"]); // { success, transaction, network, payer }
  } finally {
    await mcp.close();
  }
}

// No top-level await: the file runs as CommonJS (a fresh `npm init -y` project) and as an ES module alike.
main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
