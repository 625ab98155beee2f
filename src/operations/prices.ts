import type { PaymentNetwork } from "../chain/networks.js";
import { formatUsdc } from "../chain/usdc.js";
import { bazaarExtension, v1OutputSchema } from "../discovery/bazaar.js";
import { discoverable } from "../discovery/catalog.js";
import type { PaidRoute } from "../payments/http/plugin.js";
import { OPERATIONS, type OperationKey } from "./table.js";

/** The terms the payment core needs of each paid operation (the table of paid operations holds them). */
const BASE_PRICES = Object.fromEntries(
  Object.entries(OPERATIONS).map(([key, op]) => [
    key,
    {
      route: op.route,
      amount: op.amount,
      description: op.description,
      tags: op.tags,
      acceptsV1: op.acceptsV1,
    },
  ]),
) as {
  [K in OperationKey]: Pick<
    (typeof OPERATIONS)[K],
    "route" | "amount" | "description" | "tags" | "acceptsV1"
  >;
};

/** Each price with its discovery metadata: the Bazaar extension (v2 402) and the v1 outputSchema. */
export const PRICES = Object.fromEntries(
  Object.entries(BASE_PRICES).map(([key, price]) => {
    const d = discoverable(price.route);
    return [key, { ...price, extensions: bazaarExtension(d), outputSchema: v1OutputSchema(d) }];
  }),
) as {
  [K in keyof typeof BASE_PRICES]: (typeof BASE_PRICES)[K] &
    Required<Pick<PaidRoute, "extensions" | "outputSchema">>;
};

/**
 * The `x-payment-info` OpenAPI extension of a paid operation, in the shape agent discovery tools read (a fixed USD
 * price as a decimal string, and the protocols it can be paid with), plus the exact x402 terms.
 */
export function paymentInfo(price: PaidRoute, network: PaymentNetwork) {
  return {
    price: { mode: "fixed", currency: "USD", amount: formatUsdc(price.amount) },
    protocols: [
      {
        x402: {
          x402Versions: price.acceptsV1 ? [2, 1] : [2],
          scheme: "exact",
          network: network.caip2,
          asset: network.usdc.address,
          amount: price.amount,
        },
      },
    ],
    protocol: "x402",
    network: network.caip2,
    asset: network.usdc.address,
    amount_atomic: price.amount,
    x402_versions: price.acceptsV1 ? [2, 1] : [2],
  };
}
