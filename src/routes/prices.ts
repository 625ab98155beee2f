import type { PaidRoute } from "../payments/plugin.js";
import { formatUsdc, NETWORK, USDC_BASE } from "../payments/requirements.js";

/** Per-call prices in USDC atomic units (6 decimals), as the contract lists them. */
export const PRICES = {
  upcoming: {
    route: "GET /v1/unlocks/upcoming",
    amount: "20000",
    description: "Upcoming token unlock events with modelled sell-pressure risk",
    acceptsV1: true,
  },
  unlockRisk: {
    route: "POST /v1/unlock-risk",
    amount: "100000",
    description: "Risk score of one unlock event with its evidence",
    acceptsV1: true,
  },
  riskSummary: {
    route: "POST /v1/token/risk-summary",
    amount: "250000",
    description: "Token-level unlock risk summary over a window",
    acceptsV1: true,
  },
  backtest: {
    route: "POST /v1/unlock/backtest",
    amount: "500000",
    description: "Historical post-unlock market reactions for one unlock event",
    acceptsV1: true,
  },
  benchmark: {
    route: "POST /v1/benchmark/endpoint",
    amount: "50000",
    description: "x402 market price benchmark for an endpoint URL",
    acceptsV1: false,
  },
} as const satisfies Record<string, PaidRoute>;

/** The `x-payment-info` OpenAPI extension of a paid operation. */
export function paymentInfo(price: PaidRoute) {
  return {
    protocol: "x402",
    network: NETWORK,
    asset: USDC_BASE,
    price: { amount: formatUsdc(price.amount), currency: "USD" },
    amount_atomic: price.amount,
    x402_versions: price.acceptsV1 ? [2, 1] : [2],
  };
}
