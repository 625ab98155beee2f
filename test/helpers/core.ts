import pino from "pino";
import type { LedgerPort } from "../../src/ledger/port.js";
import type { PaymentCore } from "../../src/payments/core.js";
import { createPaymentCore } from "../../src/payments/create-core.js";
import { noopObserver } from "../../src/payments/events.js";
import type { FacilitatorGateway } from "../../src/payments/gateway.js";

export const CORE_TERMS = {
  payTo: "0x00000000000000000000000000000000000000aa",
  maxTimeoutSeconds: 300,
} as const;
export const CORE_NOW = new Date("2026-01-15T12:00:00Z");
export const silentLog = pino({ level: "silent" });

/** The payment core alone, as a transport would build it: a fixed clock and incarnation, one-minute windows. */
export function testCore(gateway: FacilitatorGateway, ledger: LedgerPort): PaymentCore {
  return createPaymentCore(
    {
      gateway,
      ledger,
      terms: CORE_TERMS,
      observer: noopObserver,
      clock: () => CORE_NOW,
      incarnation: "test-incarnation",
      idempotencyTtlMs: 60_000,
      lockTtlMs: 60_000,
    },
    silentLog,
  );
}
