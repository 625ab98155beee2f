import { createHash } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import type { FastifyInstance } from "fastify";
import { generatePrivateKey } from "viem/accounts";
import type { buildApp } from "../../src/app.js";
import type { Config } from "../../src/config.js";
import { type Ledger, openLedger } from "../../src/ledger/embedded.js";
import { PRICES } from "../../src/operations/prices.js";
import {
  createFacilitatorClient,
  createFacilitatorGateway,
  type FacilitatorGateway,
  facilitatorTarget,
} from "../../src/payments/facilitator/gateway.js";
import type { SmartWalletCheck } from "../../src/payments/facilitator/smart-wallet.js";
import type { ChainReader } from "../../src/payments/recovery/chain-reader.js";
import { requirementsV2 } from "../../src/payments/terms/requirements.js";
import { appWith, TEST_PAY_TO, testConfig } from "./app.js";
import { b64, signedV2Proof, v2Proof } from "./proofs.js";

/**
 * How the fake facilitator answers one endpoint. It models a chain faithfully enough for billing checks: a settled
 * EIP-3009 nonce is a transfer, a nonce can be transferred only once, and verify refuses a nonce already used.
 */
export type Behaviour =
  | "ok" // verify: valid (unless the nonce is used); settle: transfer and succeed
  | "invalid" // verify: {isValid:false}; settle: {success:false}
  | "hang" // never answers (the client must time out)
  | "transfer-then-hang" // settle only: the transfer happens, then no answer (an indeterminate settlement)
  | "reset" // the socket is destroyed without an answer
  | "http500" // 500 with a text body
  | "http503" // 503 with a text body
  | "malformed" // 200 with a body that is not JSON
  | "wrong-shape" // 200 with JSON that is not a Verify/SettleResponse
  | "pending" // settle only: transfer broadcast, {success:false, errorReason:"settlement_pending", transaction}
  | "fail-then-transfer" // settle only: {success:false, transaction_failed, no hash}, the transfer lands later (landAfterMs)
  | "chain-down" // verify only: what @x402/evm answers when its RPC is down: {isValid:false, invalid signature}
  | "http400"; // 400 with a text body (the facilitator refusing the request, not failing)

export interface FaultFacilitator {
  url: string;
  verify: Behaviour;
  settle: Behaviour;
  /** Added before every answer (and before hanging), so concurrent requests overlap. */
  verifyDelayMs: number;
  settleDelayMs: number;
  /** When set, each call waits for it after being counted (a barrier the test opens); settle transfers first. */
  verifyGate: Promise<void> | undefined;
  settleGate: Promise<void> | undefined;
  /**
   * "fail-then-transfer": the transfer lands this long after the failed answer and after `landGate` opens (when set),
   * as @x402/evm's broadcast that threw although the node took the transaction.
   */
  landAfterMs: number;
  landGate: Promise<void> | undefined;
  /** Resolves once the "chain" holds a transfer of `nonce` (a barrier, not a sleep). */
  untilTransferred(nonce: string): Promise<void>;
  /** Per payer (lower case): its verify calls wait for this gate (a payer whose proofs are slow to check). */
  verifyGateFor: Map<string, Promise<void>>;
  /** Verify calls per payer (lower case). */
  verifiesBy: Map<string, number>;
  /** Resolves once `calls[kind]` has reached `n` (a barrier, not a sleep). */
  untilCalls(kind: "verify" | "settle", n: number): Promise<void>;
  /** The "chain" behind it, as the payment core reads it (authorizationState + the transfer's transaction). */
  chain: ChainReader;
  calls: { verify: number; settle: number; supported: number };
  /** TCP connections accepted since start (or the last resetCounters). */
  connections: number;
  /** nonce → transaction: every transfer the "chain" made. One entry per nonce by construction. */
  transfers: Map<string, string>;
  /** Authorization headers the facilitator received (CDP JWTs), to check they never reach a log. */
  authorizations: string[];
  /** Transfers per payer address (lower case): what each buyer was billed, in transfers. */
  billedBy(payer: string): number;
  resetCounters(): void;
  /** Stops listening and destroys open sockets (hanging requests included); afterwards the port refuses. */
  close(): Promise<void>;
}

const NETWORK = "eip155:8453";

interface Authorization {
  from?: string;
  nonce?: string;
}

function authorizationOf(body: unknown): Authorization {
  const p = (body as { paymentPayload?: { payload?: { authorization?: Authorization } } })?.paymentPayload;
  return p?.payload?.authorization ?? {};
}

const txFor = (nonce: string): string => `0x${createHash("sha256").update(`tx:${nonce}`).digest("hex")}`;

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

/** Listens on 127.0.0.1:`port` (0 = any free port; a fixed port lets a test "restart" a refused facilitator). */
export async function startFaultFacilitator(port = 0): Promise<FaultFacilitator> {
  const sockets = new Set<Socket>();
  const payers = new Map<string, string>(); // nonce → payer
  const waiters: { kind: "verify" | "settle"; n: number; resolve: () => void }[] = [];
  const landed: { nonce: string; resolve: () => void }[] = [];
  const landing = new Set<string>(); // nonces whose transfer is broadcast and not yet on the "chain"
  const counted = (kind: "verify" | "settle") => {
    f.calls[kind] += 1;
    for (const w of waiters.filter((x) => x.kind === kind && f.calls[kind] >= x.n)) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve();
    }
  };
  const f: FaultFacilitator = {
    url: "",
    verify: "ok",
    settle: "ok",
    verifyDelayMs: 0,
    settleDelayMs: 0,
    verifyGate: undefined,
    settleGate: undefined,
    landAfterMs: 300,
    landGate: undefined,
    untilTransferred: (nonce) =>
      f.transfers.has(nonce.toLowerCase())
        ? Promise.resolve()
        : new Promise((resolve) => landed.push({ nonce: nonce.toLowerCase(), resolve })),
    verifyGateFor: new Map(),
    verifiesBy: new Map(),
    untilCalls: (kind, n) =>
      f.calls[kind] >= n ? Promise.resolve() : new Promise((resolve) => waiters.push({ kind, n, resolve })),
    chain: {
      async lookup(q) {
        const tx = f.transfers.get(q.nonce.toLowerCase()) ?? f.transfers.get(q.nonce);
        if (!tx)
          return {
            kind: "unused",
            // Past its validBefore an unused authorization can never be used: what the real reader answers.
            expired: q.validBefore != null && Math.floor(q.now.getTime() / 1000) >= Number(q.validBefore),
          };
        const payer = payers.get(q.nonce.toLowerCase()) ?? payers.get(q.nonce);
        if (payer !== q.payer.toLowerCase()) return { kind: "used_elsewhere" };
        return { kind: "settled", transaction: tx as `0x${string}` };
      },
    },
    calls: { verify: 0, settle: 0, supported: 0 },
    connections: 0,
    transfers: new Map(),
    authorizations: [],
    billedBy: (payer) =>
      [...payers.entries()].filter(([n, p]) => p === payer.toLowerCase() && f.transfers.has(n)).length,
    resetCounters: () => {
      f.calls = { verify: 0, settle: 0, supported: 0 };
      f.connections = 0;
    },
    close: async () => undefined,
  };

  const json = (res: ServerResponse, status: number, value: unknown) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(value));
  };

  const transfer = (auth: Authorization): string => {
    const nonce = auth.nonce ?? "";
    const existing = f.transfers.get(nonce);
    if (existing) return existing;
    const tx = txFor(nonce);
    f.transfers.set(nonce, tx);
    payers.set(nonce, (auth.from ?? "").toLowerCase());
    for (const w of landed.filter((x) => x.nonce === nonce.toLowerCase())) {
      landed.splice(landed.indexOf(w), 1);
      w.resolve();
    }
    return tx;
  };

  /** A broadcast whose answer was lost: the transfer lands later, once (the chain refuses a second use). */
  const landLater = (auth: Authorization) => {
    const nonce = auth.nonce ?? "";
    if (landing.has(nonce) || f.transfers.has(nonce)) return;
    landing.add(nonce);
    const gate = f.landGate ?? Promise.resolve();
    const delay = f.landAfterMs;
    void gate.then(() =>
      setTimeout(() => {
        landing.delete(nonce);
        transfer(auth);
      }, delay),
    );
  };

  /** Faults shared by both endpoints; true when the request was answered (or deliberately left hanging). */
  function fault(behaviour: Behaviour, res: ServerResponse, req: IncomingMessage): boolean {
    switch (behaviour) {
      case "hang":
        return true;
      case "reset":
        req.socket.destroy();
        return true;
      case "http500":
        res.writeHead(500, { "content-type": "text/plain" }).end("internal error");
        return true;
      case "http400":
        res.writeHead(400, { "content-type": "text/plain" }).end("bad request");
        return true;
      case "http503":
        res.writeHead(503, { "content-type": "text/plain" }).end("service unavailable");
        return true;
      case "malformed":
        res.writeHead(200, { "content-type": "application/json" }).end("<html>this is not json");
        return true;
      case "wrong-shape":
        json(res, 200, { hello: "world", valid: "yes" });
        return true;
      default:
        return false;
    }
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? "").split("?")[0];
    if (req.headers.authorization) f.authorizations.push(req.headers.authorization);
    if (req.method === "GET" && path === "/supported") {
      f.calls.supported += 1;
      return json(res, 200, {
        kinds: [
          { x402Version: 2, scheme: "exact", network: NETWORK },
          { x402Version: 1, scheme: "exact", network: "base" },
        ],
        extensions: [],
        signers: {},
      });
    }
    if (req.method !== "POST" || (path !== "/verify" && path !== "/settle"))
      return json(res, 404, { error: "not found" });
    const text = await readBody(req);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return json(res, 400, { error: "invalid json" });
    }
    const auth = authorizationOf(body);
    const payer = auth.from;
    const nonce = auth.nonce ?? "";

    if (path === "/verify") {
      counted("verify");
      const who = (payer ?? "").toLowerCase();
      f.verifiesBy.set(who, (f.verifiesBy.get(who) ?? 0) + 1);
      const gate = f.verifyGateFor.get(who);
      if (gate) await gate;
      const behaviour = f.verify;
      if (f.verifyDelayMs > 0) await new Promise((r) => setTimeout(r, f.verifyDelayMs));
      if (f.verifyGate) await f.verifyGate;
      if (fault(behaviour, res, req)) return;
      if (behaviour === "chain-down")
        return json(res, 200, { isValid: false, invalidReason: "invalid_exact_evm_signature", payer });
      if (behaviour === "invalid")
        return json(res, 200, {
          isValid: false,
          invalidReason: "invalid_exact_evm_payload_signature",
          payer,
        });
      if (f.transfers.has(nonce))
        return json(res, 200, {
          isValid: false,
          invalidReason: "invalid_exact_evm_nonce_already_used",
          payer,
        });
      return json(res, 200, { isValid: true, payer });
    }

    counted("settle");
    const behaviour = f.settle;
    if (f.settleDelayMs > 0) await new Promise((r) => setTimeout(r, f.settleDelayMs));
    if (f.settleGate) {
      if (behaviour === "ok" && !f.transfers.has(nonce)) {
        // The transfer happens, then the answer waits for the gate (a reply in flight when something breaks).
        const tx = transfer(auth);
        await f.settleGate;
        return json(res, 200, { success: true, transaction: tx, network: NETWORK, payer });
      }
      await f.settleGate;
    }
    if (behaviour === "fail-then-transfer" && !f.transfers.has(nonce)) {
      landLater(auth);
      return json(res, 200, {
        success: false,
        errorReason: "invalid_exact_evm_transaction_failed",
        transaction: "",
        network: NETWORK,
        payer,
      });
    }
    if (behaviour === "transfer-then-hang") {
      transfer(auth);
      return;
    }
    if (fault(behaviour, res, req)) return;
    if (behaviour === "invalid")
      return json(res, 200, {
        success: false,
        errorReason: "insufficient_funds",
        transaction: "",
        network: NETWORK,
        payer,
      });
    if (behaviour === "pending")
      return json(res, 200, {
        success: false,
        errorReason: "settlement_pending",
        transaction: transfer(auth),
        network: NETWORK,
        payer,
      });
    if (f.transfers.has(nonce))
      return json(res, 200, {
        success: false,
        errorReason: "invalid_exact_evm_nonce_already_used",
        transaction: "",
        network: NETWORK,
        payer,
      });
    return json(res, 200, { success: true, transaction: transfer(auth), network: NETWORK, payer });
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  server.on("connection", (socket: Socket) => {
    f.connections += 1;
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  f.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  let closed: Promise<void> | undefined;
  f.close = () => {
    closed ??= new Promise<void>((resolve) => {
      server.close(() => resolve());
      for (const s of sockets) s.destroy();
    });
    return closed;
  };
  return f;
}

export interface HttpApp {
  app: FastifyInstance;
  /** http://127.0.0.1:port of the listening app. */
  url: string;
  ledger: Ledger;
  gateway: FacilitatorGateway;
  config: Config;
  close(): Promise<void>;
}

/**
 * The real app with the real HTTP facilitator client and gateway (timeouts, error mapping, circuit breaker), pointed at
 * `facilitatorUrl`, listening on 127.0.0.1 with a random port. `env` overrides the configuration (strings, as in the
 * environment).
 */
export async function startHttpApp(
  facilitatorUrl: string,
  env: Record<string, string> = {},
  opts: {
    ledgerPath?: string;
    /** An open ledger to use instead (closed with the app), shared by other instances when `ledgerShared`. */
    ledger?: Ledger;
    ledgerShared?: boolean;
    logger?: Parameters<typeof buildApp>[0]["logger"];
    chain?: ChainReader;
    /** The payment core's clock (retention, key TTLs) and the circuit breaker's, for tests that move time. */
    paymentsClock?: () => Date;
    paymentObserver?: Parameters<typeof buildApp>[0]["paymentObserver"];
    /** The smart-wallet chain check the gateway runs before the facilitator (as the server wires CHAIN_RPC_URL). */
    smartWallet?: SmartWalletCheck;
  } = {},
): Promise<HttpApp> {
  const config = testConfig({
    // No load shedding unless a test is about it: a busy machine must not turn payment answers into 503 overloaded.
    MAX_EVENT_LOOP_DELAY_MS: "0",
    FACILITATOR_URL: facilitatorUrl,
    PAY_TO: TEST_PAY_TO,
    // These tests buy the same request again and again as one payer (upcomingProof), each time a purchase of its own;
    // a payer's fresh proof re-reading what it bought has its own tests, which turn it on here.
    PAID_REREAD_SECONDS: "0",
    ...env,
  });
  const client = createFacilitatorClient(facilitatorTarget(config.facilitator, facilitatorUrl));
  const gateway = createFacilitatorGateway(
    client,
    { ...config.circuit, ...(opts.smartWallet ? { smartWallet: opts.smartWallet } : {}) },
    opts.paymentsClock ? () => (opts.paymentsClock as () => Date)().getTime() : undefined,
  );
  const ledger = opts.ledger ?? openLedger(opts.ledgerPath ?? ":memory:");
  const app = await appWith({
    config,
    gateway,
    ledger,
    logger: opts.logger,
    facilitatorLabel: facilitatorUrl,
    ...(opts.ledgerShared ? { ledgerShared: true } : {}),
    supported: () => client.getSupported(),
    ...(opts.chain ? { chain: opts.chain } : {}),
    ...(opts.paymentObserver ? { paymentObserver: opts.paymentObserver } : {}),
    ...(opts.paymentsClock ? { paymentsClock: opts.paymentsClock } : {}),
  });
  const url = await app.listen({ host: "127.0.0.1", port: 0 });
  return {
    app,
    url,
    ledger,
    gateway,
    config,
    close: async () => {
      await app.close();
      await ledger.close();
    },
  };
}

/** The cheapest paid route, used by the reliability tests: GET /v1/unlocks/upcoming (0.02 USD, v1 and v2). */
export const UPCOMING_PATH = "/v1/unlocks/upcoming?days=30";

/**
 * A v2 proof for the upcoming route signed by a fresh random key (a distinct payer each time, whose signature
 * recovers to its `from`): what an honest EOA buyer sends. The fake facilitator does not check balances.
 */
export async function signedUpcomingProof(config: Config): Promise<string> {
  const accepted = requirementsV2(PRICES.upcoming, {
    payTo: TEST_PAY_TO,
    maxTimeoutSeconds: config.paymentTimeoutSeconds,
    network: config.network,
  });
  return b64(await signedV2Proof(accepted, undefined, generatePrivateKey()));
}

/** A fresh, well-formed v2 proof (new nonce) for the upcoming route, base64 as it goes in PAYMENT-SIGNATURE. */
export function upcomingProof(config: Config, nonce?: string): string {
  const accepted = requirementsV2(PRICES.upcoming, {
    payTo: TEST_PAY_TO,
    maxTimeoutSeconds: config.paymentTimeoutSeconds,
    network: config.network,
  });
  return b64(nonce ? v2Proof(accepted, nonce) : v2Proof(accepted));
}
