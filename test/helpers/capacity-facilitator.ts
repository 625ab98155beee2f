import { createHash } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { parseConfig } from "../../src/config.js";

/**
 * A facilitator with a fixed capacity, as a real one has: at most `capacity` verify/settle requests are worked on at
 * once, and one more is answered 503 at once (saturated). Verifies of the payers in `slow` (lower case) are held until
 * the test opens `release()` — what a smart-wallet proof whose check burns the facilitator's gas does to it, without
 * any timer — and are then answered invalid. Every other verify is valid; every settle transfers once per nonce.
 */
export interface CapacityFacilitator {
  url: string;
  capacity: number;
  /** Payers (lower case) whose verifies are held until release(). */
  slow: Set<string>;
  /** Verifies held now, and the most ever held at once. */
  held: number;
  peakHeld: number;
  /** Requests being worked on now and at most; requests refused because the capacity was full. */
  busy: number;
  peakBusy: number;
  saturated: number;
  /** Verifies answered valid (not held). */
  fastVerifies: number;
  /** nonce → transaction. */
  transfers: Map<string, string>;
  /** Resolves once `held` has reached `n` (a barrier, not a sleep). */
  untilHeld(n: number): Promise<void>;
  /** Opens the barrier: held verifies (and later ones) are answered invalid. */
  release(): void;
  close(): Promise<void>;
}

const NETWORK = "eip155:8453";

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

export async function startCapacityFacilitator(capacity: number): Promise<CapacityFacilitator> {
  let open: () => void = () => {};
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  const waiters: { n: number; go: () => void }[] = [];
  const sockets = new Set<Socket>();
  const f: CapacityFacilitator = {
    url: "",
    capacity,
    slow: new Set(),
    held: 0,
    peakHeld: 0,
    busy: 0,
    peakBusy: 0,
    saturated: 0,
    fastVerifies: 0,
    transfers: new Map(),
    untilHeld: (n) => (f.held >= n ? Promise.resolve() : new Promise((go) => waiters.push({ n, go }))),
    release: () => open(),
    close: async () => undefined,
  };
  const json = (res: ServerResponse, status: number, value: unknown) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(value));
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? "").split("?")[0];
    if (req.method === "GET" && path === "/supported")
      return json(res, 200, {
        kinds: [{ x402Version: 2, scheme: "exact", network: NETWORK }],
        extensions: [],
        signers: {},
      });
    if (req.method !== "POST" || (path !== "/verify" && path !== "/settle"))
      return json(res, 404, { error: "not found" });
    const body = JSON.parse(await readBody(req)) as {
      paymentPayload?: { payload?: { authorization?: { from?: string; nonce?: string } } };
    };
    const auth = body.paymentPayload?.payload?.authorization ?? {};
    const payer = (auth.from ?? "").toLowerCase();
    if (f.busy >= f.capacity) {
      f.saturated += 1;
      res.writeHead(503, { "content-type": "text/plain" }).end("busy");
      return;
    }
    f.busy += 1;
    f.peakBusy = Math.max(f.peakBusy, f.busy);
    try {
      if (path === "/verify") {
        if (f.slow.has(payer)) {
          f.held += 1;
          f.peakHeld = Math.max(f.peakHeld, f.held);
          for (const w of waiters.filter((x) => f.held >= x.n)) {
            waiters.splice(waiters.indexOf(w), 1);
            w.go();
          }
          await gate;
          f.held -= 1;
          return json(res, 200, { isValid: false, invalidReason: "invalid_exact_evm_signature", payer });
        }
        f.fastVerifies += 1;
        return json(res, 200, { isValid: true, payer });
      }
      const nonce = auth.nonce ?? "";
      if (f.transfers.has(nonce))
        return json(res, 200, {
          success: false,
          errorReason: "invalid_exact_evm_nonce_already_used",
          transaction: "",
          network: NETWORK,
          payer,
        });
      const tx = `0x${createHash("sha256").update(`tx:${nonce}`).digest("hex")}`;
      f.transfers.set(nonce, tx);
      return json(res, 200, { success: true, transaction: tx, network: NETWORK, payer });
    } finally {
      f.busy -= 1;
    }
  }

  const server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  f.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  f.close = () =>
    new Promise<void>((resolve) => {
      open();
      server.close(() => resolve());
      for (const s of sockets) s.destroy();
    });
  return f;
}

/** How many answers had each status (or outcome), for a flood's report and its assertions. */
export const tally = (statuses: readonly (number | string)[]): Record<string, number> =>
  statuses.reduce<Record<string, number>>((t, s) => {
    t[s] = (t[s] ?? 0) + 1;
    return t;
  }, {});

/**
 * The shipped defaults of the limits a flood test exercises (the test helpers lift the rate and in-flight limits
 * otherwise), behind a proxy that names each client's address.
 */
export function shippedLimits(): Record<string, string> {
  const shipped = parseConfig({ NODE_ENV: "test" });
  return {
    TRUST_PROXY: "true",
    RATE_LIMIT_MAX: String(shipped.rateLimit.max),
    RATE_LIMIT_WINDOW_MS: String(shipped.rateLimit.windowMs),
    CLIENT_MAX_IN_FLIGHT: String(shipped.clientMaxInFlight),
  };
}
