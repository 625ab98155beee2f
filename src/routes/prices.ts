import { bazaarExtension, v1OutputSchema } from "../discovery/bazaar.js";
import { discoverable } from "../discovery/catalog.js";
import type { PaidRoute } from "../payments/plugin.js";
import { BASE_MAINNET, type PaymentNetwork } from "../chain/networks.js";
import { formatUsdc } from "../payments/requirements.js";

/** Per-call prices in USDC atomic units (6 decimals), as the contract lists them. */
const BASE_PRICES = {
  upcoming: {
    route: "GET /v1/unlocks/upcoming",
    amount: "20000",
    description: "Upcoming token unlock events with modelled sell-pressure risk",
    tags: ["unlocks", "token-risk", "crypto"],
    acceptsV1: true,
  },
  unlockRisk: {
    route: "POST /v1/unlock-risk",
    amount: "100000",
    description: "Risk score of one unlock event with its evidence",
    tags: ["unlocks", "token-risk", "crypto"],
    acceptsV1: true,
  },
  riskSummary: {
    route: "POST /v1/token/risk-summary",
    amount: "250000",
    description: "Token-level unlock risk summary over a window",
    tags: ["unlocks", "token-risk", "crypto"],
    acceptsV1: true,
  },
  backtest: {
    route: "POST /v1/unlock/backtest",
    amount: "500000",
    description: "Historical post-unlock market reactions for one unlock event",
    tags: ["unlocks", "backtest", "crypto"],
    acceptsV1: true,
  },
  benchmark: {
    route: "POST /v1/benchmark/endpoint",
    amount: "50000",
    description: "x402 market price benchmark for an endpoint URL",
    tags: ["x402", "pricing", "benchmark"],
    acceptsV1: false,
  },
} as const satisfies Record<string, PaidRoute>;

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
export function paymentInfo(price: PaidRoute, network: PaymentNetwork = BASE_MAINNET) {
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
