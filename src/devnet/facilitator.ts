import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { x402Facilitator } from "@x402/core/facilitator";
import { parsePaymentPayload, parsePaymentRequirements } from "@x402/core/schemas";
import type { Network, PaymentPayload, PaymentRequirements } from "@x402/core/types";
import { type FacilitatorEvmSigner, toFacilitatorEvmSigner } from "@x402/evm";
import { ExactEvmScheme } from "@x402/evm/exact/facilitator";
import { ExactEvmSchemeV1 } from "@x402/evm/exact/v1/facilitator";
import { createWalletClient, http, isAddress, isHex, publicActions } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { DEVNET_NETWORK_V1, DEVNET_NETWORK_V2 } from "./constants.js";
import { devnetChain } from "./deploy.js";

/** Receipt polling on a local automining chain: a transaction is mined as soon as it arrives. */
const POLLING_INTERVAL_MS = 50;

/**
 * Runs `task`s one after another. The facilitator has one account: two settlements racing for the
 * same nonce would make one of them fail, so broadcasts are serialised until each has a hash.
 */
function serialQueue(): <T>(task: () => Promise<T>) => Promise<T> {
  let tail: Promise<unknown> = Promise.resolve();
  return <T>(task: () => Promise<T>): Promise<T> => {
    const run = tail.then(task, task);
    tail = run.catch(() => undefined);
    return run;
  };
}

/** A FacilitatorEvmSigner backed by viem on the devnet, paying gas from `privateKey`. */
export function createDevnetSigner(rpcUrl: string, privateKey: `0x${string}`): FacilitatorEvmSigner {
  const account = privateKeyToAccount(privateKey);
  const chain = devnetChain(rpcUrl);
  const client = createWalletClient({
    account,
    chain,
    transport: http(rpcUrl),
    pollingInterval: POLLING_INTERVAL_MS,
  }).extend(publicActions);
  const serial = serialQueue();
  // The x402 signer interface is deliberately loose (abi: unknown[]); viem's generics are strict.
  type Loose = Parameters<typeof client.readContract>[0];
  return toFacilitatorEvmSigner(
    {
      address: account.address,
      readContract: (args) => client.readContract(args as Loose),
      verifyTypedData: (args) =>
        client.verifyTypedData(args as unknown as Parameters<typeof client.verifyTypedData>[0]),
      writeContract: (args) =>
        serial(() =>
          client.writeContract({ ...args, account, chain } as unknown as Parameters<
            typeof client.writeContract
          >[0]),
        ),
      sendTransaction: (args) => serial(() => client.sendTransaction({ ...args, account, chain })),
      waitForTransactionReceipt: (args) => client.waitForTransactionReceipt(args),
      getCode: (args) => client.getCode(args),
    },
    { confirmationTimeoutMs: 30_000 },
  );
}

/**
 * The local facilitator: the @x402/evm `exact` scheme for x402 v2 and v1 on the devnet's network (Base mainnet's ids,
 * see constants.ts), settling with the given key (anvil account 0 on the devnet).
 */
export function createDevnetFacilitator(rpcUrl: string, privateKey: `0x${string}`): x402Facilitator {
  const signer = createDevnetSigner(rpcUrl, privateKey);
  return new x402Facilitator()
    .register(DEVNET_NETWORK_V2, new ExactEvmScheme(signer))
    .registerV1(DEVNET_NETWORK_V1 as Network, new ExactEvmSchemeV1(signer));
}

// ------------------------------------------------------------------ HTTP

export interface FacilitatorServer {
  url: string;
  close(): Promise<void>;
}

export interface FacilitatorServerOptions {
  host?: string;
  /** 0 or undefined: any free port. */
  port?: number;
  log?: (msg: string) => void;
}

const MAX_BODY_BYTES = 256 * 1024;

class RequestError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function readJsonBody(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new RequestError(413, "request body too large"));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString("utf8")));
      } catch {
        reject(new RequestError(400, "request body is not valid JSON"));
      }
    });
    req.on("error", reject);
  });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const DECIMAL = /^\d{1,78}$/;

/**
 * Checks the EIP-3009 payload fields the exact scheme dereferences, so a malformed payload is a 400
 * instead of a TypeError deep inside the scheme (which would look like a facilitator fault).
 */
function exactEvmPayloadProblem(payload: Record<string, unknown>): string | undefined {
  const authorization = payload.authorization;
  if (!isRecord(authorization)) return "payload.authorization must be an object";
  if (typeof payload.signature !== "string" || !isHex(payload.signature)) {
    return "payload.signature must be a hex string";
  }
  for (const field of ["from", "to"] as const) {
    const value = authorization[field];
    if (typeof value !== "string" || !isAddress(value, { strict: false })) {
      return `payload.authorization.${field} must be an address`;
    }
  }
  for (const field of ["value", "validAfter", "validBefore"] as const) {
    const value = authorization[field];
    if (typeof value !== "string" || !DECIMAL.test(value)) {
      return `payload.authorization.${field} must be a decimal string`;
    }
  }
  const nonce = authorization.nonce;
  if (typeof nonce !== "string" || !isHex(nonce) || nonce.length !== 66) {
    return "payload.authorization.nonce must be a 32-byte hex string";
  }
  return undefined;
}

interface ParsedRequest {
  paymentPayload: PaymentPayload;
  paymentRequirements: PaymentRequirements;
}

function parseFacilitatorRequest(body: unknown): ParsedRequest {
  if (!isRecord(body)) throw new RequestError(400, "request body must be a JSON object");
  const payloadCheck = parsePaymentPayload(body.paymentPayload);
  if (!payloadCheck.success) {
    throw new RequestError(400, `invalid paymentPayload: ${payloadCheck.error.issues[0]?.message ?? "?"}`);
  }
  const requirementsCheck = parsePaymentRequirements(body.paymentRequirements);
  if (!requirementsCheck.success) {
    throw new RequestError(
      400,
      `invalid paymentRequirements: ${requirementsCheck.error.issues[0]?.message ?? "?"}`,
    );
  }
  // The original objects go to the facilitator: the schemas strip fields they do not know.
  const paymentPayload = body.paymentPayload as PaymentPayload;
  const paymentRequirements = body.paymentRequirements as PaymentRequirements;
  if (body.x402Version !== undefined && body.x402Version !== paymentPayload.x402Version) {
    throw new RequestError(400, "x402Version does not match paymentPayload.x402Version");
  }
  if (paymentRequirements.scheme === "exact" && isRecord(paymentPayload.payload)) {
    const problem = exactEvmPayloadProblem(paymentPayload.payload);
    if (problem) throw new RequestError(400, problem);
  }
  return { paymentPayload, paymentRequirements };
}

function isUnsupported(err: unknown): boolean {
  return err instanceof Error && /^No facilitator registered for/.test(err.message);
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(text),
    "cache-control": "no-store",
  });
  res.end(text);
}

/** The facilitator never became available (the devnet failed to start). */
class FacilitatorUnavailable extends Error {}

function errorStatus(err: unknown): number {
  if (err instanceof RequestError) return err.status;
  if (err instanceof FacilitatorUnavailable) return 503;
  return isUnsupported(err) ? 400 : 500;
}

function errorReason(err: unknown, status: number): string {
  if (isUnsupported(err)) return "unsupported_scheme";
  if (err instanceof FacilitatorUnavailable) return "unavailable";
  return status < 500 ? "invalid_request" : "unexpected_facilitator_error";
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function networkOf(body: unknown): string {
  if (isRecord(body) && isRecord(body.paymentRequirements)) {
    const network = body.paymentRequirements.network;
    if (typeof network === "string") return network;
  }
  return "";
}

/**
 * Serves `facilitator` with the endpoints HTTPFacilitatorClient (@x402/core/http) calls:
 * POST /verify and POST /settle with {x402Version, paymentPayload, paymentRequirements}, and
 * GET /supported.
 *
 * Status codes: 200 carries every scheme-level outcome, including isValid:false and success:false
 * (the usual facilitator convention). A malformed or unsupported request is 400 with a
 * VerifyResponse / SettleResponse body, so HTTPFacilitatorClient throws a typed VerifyError /
 * SettleError (the payment is bad). An internal fault is 500 with `{error, message}` and no
 * isValid/success field, so the client throws a plain Error: the facilitator failed, not the
 * payment, and a resource server should answer 503 rather than 402.
 *
 * `facilitator` may still be on its way (the devnet's chain starting): the server listens at once, so its URL is known
 * early. Until it arrives GET /supported answers 503 `{error: "starting"}` (a resource server's readiness check then
 * says not ready) while POST /verify and /settle wait for it; if it never comes, they answer 503 with the reason.
 */
export function startFacilitatorServer(
  facilitator: x402Facilitator | Promise<x402Facilitator>,
  opts: FacilitatorServerOptions = {},
): Promise<FacilitatorServer> {
  const host = opts.host ?? "127.0.0.1";
  const log = opts.log ?? (() => {});
  let current: x402Facilitator | undefined;
  let failure: unknown;
  const pending = Promise.resolve(facilitator).then(
    (ready) => {
      current = ready;
      return ready;
    },
    (err: unknown) => {
      failure = err;
      throw new FacilitatorUnavailable(errorMessage(err));
    },
  );
  pending.catch(() => {}); // answered per request; never an unhandled rejection

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = new URL(req.url ?? "/", "http://facilitator.invalid").pathname.replace(/\/+$/, "");
    if (path === "/supported" || path === "/health") {
      if (req.method !== "GET" && req.method !== "HEAD") return sendJson(res, 405, { error: "use GET" });
      if (path === "/health") return sendJson(res, 200, { ok: true });
      if (current) return sendJson(res, 200, current.getSupported());
      return failure === undefined
        ? sendJson(res, 503, { error: "starting", message: "the chain is still starting" })
        : sendJson(res, 503, { error: "unavailable", message: errorMessage(failure) });
    }
    if (path !== "/verify" && path !== "/settle") return sendJson(res, 404, { error: "not found" });
    if (req.method !== "POST") return sendJson(res, 405, { error: "use POST" });

    let body: unknown;
    try {
      body = await readJsonBody(req);
      const { paymentPayload, paymentRequirements } = parseFacilitatorRequest(body);
      const facilitator = current ?? (await pending);
      if (path === "/verify") {
        const result = await facilitator.verify(paymentPayload, paymentRequirements);
        log(`verify ${paymentRequirements.network}: ${result.isValid ? "valid" : result.invalidReason}`);
        return sendJson(res, 200, result);
      }
      const result = await facilitator.settle(paymentPayload, paymentRequirements);
      log(
        `settle ${paymentRequirements.network}: ${result.success ? result.transaction : result.errorReason}`,
      );
      return sendJson(res, 200, result);
    } catch (err) {
      const status = errorStatus(err);
      const reason = errorReason(err, status);
      log(`${path.slice(1)} failed (${status}): ${errorMessage(err)}`);
      if (status >= 500) return sendJson(res, status, { error: reason, message: errorMessage(err) });
      if (path === "/verify") {
        return sendJson(res, status, {
          isValid: false,
          invalidReason: reason,
          invalidMessage: errorMessage(err),
        });
      }
      return sendJson(res, status, {
        success: false,
        errorReason: reason,
        errorMessage: errorMessage(err),
        transaction: "",
        network: networkOf(body),
      });
    }
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { error: errorMessage(err) });
      else res.destroy();
    });
  });
  // Keep-alive sockets from fetch() would otherwise hold close() open for the idle timeout.
  server.keepAliveTimeout = 1_000;

  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port ?? 0, host, () => {
      server.off("error", reject);
      const { port } = server.address() as AddressInfo;
      const url = `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
      log(`facilitator listening on ${url}`);
      let closed: Promise<void> | undefined;
      resolve({
        url,
        close: () => {
          closed ??= new Promise<void>((done) => {
            server.close(() => done());
            server.closeAllConnections();
          });
          return closed;
        },
      });
    });
  });
}
