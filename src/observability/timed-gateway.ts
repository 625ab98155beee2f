import type { PaymentObserver } from "../payments/events.js";
import type { FacilitatorGateway } from "../payments/facilitator.js";

const seconds = () => performance.now() / 1000;

/**
 * Reports each verify/settle call's latency to the observer. `ok` is false only when the call threw (a facilitator
 * fault); a refusal (invalid proof, failed settlement) is an answer and counts as ok.
 */
export function timedGateway(
  gateway: FacilitatorGateway,
  observer: PaymentObserver,
  now: () => number = seconds,
): FacilitatorGateway {
  const timed =
    <A extends unknown[], R>(operation: "verify" | "settle", call: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      const started = now();
      try {
        const result = await call(...args);
        observer.facilitatorCall({ operation, seconds: now() - started, ok: true });
        return result;
      } catch (error) {
        observer.facilitatorCall({ operation, seconds: now() - started, ok: false });
        throw error;
      }
    };
  return {
    get circuit() {
      return gateway.circuit;
    },
    verify: timed("verify", (p, r) => gateway.verify(p, r)),
    settle: timed("settle", (p, r) => gateway.settle(p, r)),
  };
}
