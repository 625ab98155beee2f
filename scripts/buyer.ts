import { x402Client, x402HTTPClient } from "@x402/core/client";
import type { PaymentRequirements } from "@x402/core/types";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { wrapFetchWithPayment } from "@x402/fetch";
import { privateKeyToAccount } from "viem/accounts";

/** anvil's well-known test account 1 (funded with test USDC on the devnet). Public knowledge; devnet only. */
export const DEVNET_BUYER_KEY = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d" as const;

const amountOf = (r: PaymentRequirements | { maxAmountRequired?: string }): bigint =>
  BigInt((r as PaymentRequirements).amount ?? (r as { maxAmountRequired?: string }).maxAmountRequired ?? "0");

export class PriceTooHighError extends Error {}

/** An x402 client that signs EIP-3009 authorisations with `privateKey` and refuses anything above `maxAtomic`. */
export function buyerClient(privateKey: `0x${string}`, maxAtomic: bigint): x402Client {
  const client = new x402Client();
  registerExactEvmScheme(client, { signer: privateKeyToAccount(privateKey) });
  client.registerPolicy((_version, requirements) => {
    const affordable = requirements.filter((r) => amountOf(r) <= maxAtomic);
    if (affordable.length === 0)
      throw new PriceTooHighError(
        `refusing to pay: the cheapest option costs ${requirements.map(amountOf).sort()[0]} atomic units, above the maximum ${maxAtomic}`,
      );
    return affordable;
  });
  return client;
}

/** fetch that pays 402s with x402 v2 (PAYMENT-SIGNATURE), as an agent wallet would. */
export function payingFetch(privateKey: `0x${string}`, maxAtomic: bigint): typeof fetch {
  return wrapFetchWithPayment(fetch, buyerClient(privateKey, maxAtomic)) as typeof fetch;
}

/**
 * Pays in x402 v1: reads the v1 body of the 402 (ignoring the v2 header, as a v1-only client does), signs with the
 * v1 exact scheme and retries with X-PAYMENT.
 */
export async function fetchPayingV1(
  url: string,
  init: RequestInit,
  privateKey: `0x${string}`,
  maxAtomic: bigint,
): Promise<{ response: Response; paymentHeader: Record<string, string> | undefined }> {
  const first = await fetch(url, init);
  if (first.status !== 402) return { response: first, paymentHeader: undefined };
  const body = (await first.json()) as { x402Version?: number };
  if (body.x402Version !== 1) throw new Error("the 402 body is not an x402 v1 PaymentRequired");
  const http = new x402HTTPClient(buyerClient(privateKey, maxAtomic));
  const required = http.getPaymentRequiredResponse(() => null, body);
  const payload = await http.createPaymentPayload(required);
  const paymentHeader = http.encodePaymentSignatureHeader(payload);
  const response = await fetch(url, {
    ...init,
    headers: { ...(init.headers as Record<string, string>), ...paymentHeader },
  });
  return { response, paymentHeader };
}

export function decodeSettlement(response: Response): unknown {
  const header = response.headers.get("PAYMENT-RESPONSE") ?? response.headers.get("X-PAYMENT-RESPONSE");
  return header ? JSON.parse(Buffer.from(header, "base64").toString("utf8")) : undefined;
}
