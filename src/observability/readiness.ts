import type { SupportedResponse } from "@x402/core/types";
import type { PaymentObserver } from "../payments/core/events.js";
import type { CircuitLabel } from "../payments/facilitator/circuit.js";

/**
 * Readiness: can this instance take a paid call right now? Liveness (/health) only says the process answers; a load
 * balancer should stop sending buyers here while the facilitator is gone, because every paid call would then fail
 * after the buyer signed an authorization.
 */

export interface ReadinessDeps {
  /** The facilitator's GET /supported (with the client's own timeout). */
  supported(): Promise<SupportedResponse>;
  scheme: string;
  network: string;
  /** Rejects when the ledger cannot take a write. */
  probeLedger(): Promise<void>;
  circuit(): CircuitLabel;
  observer: PaymentObserver;
  /** Told whether each background probe reached the facilitator: its health, which the circuit breaker counts. */
  onFacilitatorProbe?: (reachable: boolean) => void;
  /** Monotonic seconds, for the latency metric. */
  now?: () => number;
}

export interface CheckResult {
  ok: boolean;
  detail: string;
}

export interface ReadinessReport {
  ready: boolean;
  checks: { facilitator: CheckResult; ledger: CheckResult; circuit: CheckResult; metrics?: CheckResult };
}

/**
 * The metrics listener's state beside the checks: informational (an instance without metrics still serves paid calls,
 * so it stays ready), but visible, since Prometheus then gets nothing from it and its alerts go blind.
 */
export function withMetricsListener(
  report: ReadinessReport,
  listener: CheckResult | undefined,
): ReadinessReport {
  return listener ? { ...report, checks: { ...report.checks, metrics: listener } } : report;
}

/** Does the facilitator's /supported list our scheme on our network (any x402 version)? Pure. */
export function supportsKind(supported: SupportedResponse, scheme: string, network: string): boolean {
  return supported.kinds.some((k) => k.scheme === scheme && k.network === network);
}

const seconds = () => performance.now() / 1000;

export function createReadiness(deps: ReadinessDeps): () => Promise<ReadinessReport> {
  const now = deps.now ?? seconds;

  async function facilitator(): Promise<CheckResult> {
    const started = now();
    try {
      const supported = await deps.supported();
      deps.observer.facilitatorCall({ operation: "supported", seconds: now() - started, ok: true });
      deps.onFacilitatorProbe?.(true);
      return supportsKind(supported, deps.scheme, deps.network)
        ? { ok: true, detail: `supports ${deps.scheme} on ${deps.network}` }
        : { ok: false, detail: `does not support ${deps.scheme} on ${deps.network}` };
    } catch {
      // The cause (URL, socket error) goes to the log at the route; the report is public.
      deps.observer.facilitatorCall({ operation: "supported", seconds: now() - started, ok: false });
      deps.onFacilitatorProbe?.(false);
      return { ok: false, detail: "unreachable or answered with an error" };
    }
  }

  async function ledger(): Promise<CheckResult> {
    try {
      await deps.probeLedger();
      return { ok: true, detail: "writable" };
    } catch {
      return { ok: false, detail: "not writable" };
    }
  }

  return async () => {
    const position = deps.circuit();
    const checks = {
      facilitator: await facilitator(),
      ledger: await ledger(),
      // Half-open counts as ready: the next paid call is the breaker's trial, and an instance taken out of rotation
      // would get no call to close its circuit with.
      circuit: { ok: position !== "open", detail: position },
    };
    return { ready: checks.facilitator.ok && checks.ledger.ok && checks.circuit.ok, checks };
  };
}

/**
 * A real write through the ledger's own port: this process's incarnation heartbeat (a row it owns), so the probe works
 * for any backend and leaves nothing behind.
 */
export function ledgerWriteProbe(
  ledger: { heartbeat(id: string, now: Date): Promise<void> },
  incarnation: string,
): () => Promise<void> {
  return () => ledger.heartbeat(incarnation, new Date());
}

export interface HealthMonitor {
  /** The last report, with the circuit's position read now (no I/O); the first call waits for the first refresh. */
  report(): Promise<ReadinessReport>;
  /** Runs the checks now (one at a time: callers during a refresh share it). */
  refresh(): Promise<ReadinessReport>;
  /** Refreshes every `everyMs` in the background until stop(). */
  start(everyMs: number): void;
  stop(): void;
}

/**
 * Readiness served from a cached health state: the facilitator probe and the ledger write run in the background (one
 * of each per period, whatever the traffic), so a flood of /ready costs neither a facilitator call nor a ledger write.
 */
export function createHealthMonitor(
  check: () => Promise<ReadinessReport>,
  circuit: () => CircuitLabel,
): HealthMonitor {
  let last: ReadinessReport | undefined;
  let running: Promise<ReadinessReport> | undefined;
  let timer: NodeJS.Timeout | undefined;

  const refresh = () => {
    running ??= check()
      .then((r) => {
        last = r;
        return r;
      })
      .finally(() => {
        running = undefined;
      });
    return running;
  };
  const withLiveCircuit = (r: ReadinessReport): ReadinessReport => {
    const position = circuit();
    const checks = { ...r.checks, circuit: { ok: position !== "open", detail: position } };
    return { ready: checks.facilitator.ok && checks.ledger.ok && checks.circuit.ok, checks };
  };
  return {
    report: async () => withLiveCircuit(last ?? (await refresh())),
    refresh,
    start(everyMs) {
      if (timer) return;
      void refresh().catch(() => {});
      timer = setInterval(() => void refresh().catch(() => {}), everyMs);
      timer.unref();
    },
    stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
    },
  };
}
