import { randomUUID } from "node:crypto";
import type { FastifyBaseLogger } from "fastify";
import type { LedgerPort } from "../../ledger/port.js";
import type { FacilitatorGateway } from "../facilitator/gateway.js";
import type { ChainReader } from "../recovery/chain-reader.js";
import type { PaymentTerms } from "../terms/requirements.js";
import type { AnswerKeeping, PaymentCore } from "./core.js";
import { noopObserver, type PaymentObserver } from "./events.js";

/** What the payment core is built from; every field left out takes its default in createPaymentCore. */
export interface CoreOptions {
  /** The transport layer's judgement and kept form of an answer. */
  answers: AnswerKeeping;
  gateway: FacilitatorGateway;
  ledger: LedgerPort;
  terms: PaymentTerms;
  idempotencyTtlMs: number;
  /** How long a delivered response is kept for a retry of the same proof and request (default: idempotencyTtlMs). */
  responseRetentionMs?: number;
  /** How long a claim stays locked if its request never finishes (a hung client); settling never expires. */
  lockTtlMs?: number;
  /** Reads the chain to settle lost settlement outcomes; without it they are answered unconfirmed until resolved. */
  chain?: ChainReader | undefined;
  observer?: PaymentObserver;
  clock?: () => Date;
  /** This process's incarnation id (default: a fresh UUID). */
  incarnation?: string;
  /** One process per ledger (SQLite): every other unfinished incarnation is dead at start. */
  singleInstance?: boolean;
  /** With several instances: an incarnation whose heartbeat is older than this is dead. */
  staleIncarnationMs?: number;
  /**
   * How long the payer's fresh proof for a request it already bought gets that answer again, unsettled (default:
   * one hour, never past the response retention; 0: never).
   */
  rereadWindowMs?: number;
  /** How long such a proof waits for the earlier purchase still in flight (default 30 s). */
  inFlightWaitMs?: number;
  /** How often that wait asks the ledger for another instance's purchase (default 250 ms). */
  inFlightPollMs?: number;
  /** The data generation a request (HTTP or MCP) is answered from, pinned on arrival. */
  dataGeneration?: ((request: object) => string | undefined) | undefined;
}

export const DEFAULT_REREAD_WINDOW_MS = 3_600_000;

/** The payments plugin's options: the core's, and where its PaymentRequired resources point and how often maintenance runs. */
export interface PaymentsOptions extends Omit<CoreOptions, "answers"> {
  publicBaseUrl: string | undefined;
  /** Production: the PaymentRequired `resource` must come from PUBLIC_BASE_URL, never from the request's Host. */
  requirePublicBaseUrl?: boolean;
  /** Background reconciler/heartbeat/purge period; 0 runs it only at start (tests call reconcileNow). */
  maintenanceMs?: number;
}

/** The payment core of these options, each default applied here and only here. */
export function createPaymentCore(opts: CoreOptions, log: FastifyBaseLogger): PaymentCore {
  return {
    answers: opts.answers,
    gateway: opts.gateway,
    ledger: opts.ledger,
    terms: opts.terms,
    chain: opts.chain,
    observer: opts.observer ?? noopObserver,
    clock: opts.clock ?? (() => new Date()),
    incarnation: opts.incarnation ?? randomUUID(),
    idempotencyTtlMs: opts.idempotencyTtlMs,
    retentionMs: opts.responseRetentionMs ?? opts.idempotencyTtlMs,
    lockTtlMs: opts.lockTtlMs ?? 5 * 60_000,
    singleInstance: opts.singleInstance ?? true,
    staleIncarnationMs: opts.staleIncarnationMs ?? 60_000,
    log,
    unwritten: new Map(),
    rereadWindowMs: Math.min(
      opts.rereadWindowMs ?? DEFAULT_REREAD_WINDOW_MS,
      opts.responseRetentionMs ?? opts.idempotencyTtlMs,
    ),
    inFlightWaitMs: opts.inFlightWaitMs ?? 30_000,
    inFlightPollMs: opts.inFlightPollMs ?? 250,
    waiters: new Map(),
    verifying: new Set(),
    dataGeneration: opts.dataGeneration ?? (() => undefined),
  };
}
