/** What the payment core reports to the outside (metrics, logs) without knowing who listens. */
export type PaymentOutcome =
  | "settled"
  | "pending"
  | "replayed"
  | "invalid"
  | "settle_failed"
  | "unknown"
  | "facilitator_error"
  | "refused";

export interface PaymentObserver {
  paymentOutcome(e: { route: string; x402Version: 1 | 2; outcome: PaymentOutcome; amount: string }): void;
  facilitatorCall(e: { operation: "verify" | "settle" | "supported"; seconds: number; ok: boolean }): void;
  circuitState(state: "closed" | "open" | "half_open"): void;
  reconcilerBacklog(count: number): void;
}

export const noopObserver: PaymentObserver = {
  paymentOutcome() {},
  facilitatorCall() {},
  circuitState() {},
  reconcilerBacklog() {},
};
