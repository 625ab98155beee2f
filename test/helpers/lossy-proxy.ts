import { createServer, type IncomingMessage, request as httpRequest } from "node:http";
import type { AddressInfo, Socket } from "node:net";

/**
 * How the next paid answer is lost between the server and the buyer:
 * - `drop`: the server answers in full (it has settled), the proxy swallows the answer and closes the buyer's connection;
 * - `hangup`: the buyer hangs up as soon as its request is out, and the proxy closes the server's side too, as a
 *   reverse proxy does when its client goes (the server keeps working on a request nobody waits for).
 */
export type LossMode = "drop" | "hangup";

export interface LossyProxy {
  /** Base URL of the proxy on 127.0.0.1. */
  url: string;
  /** Loses the answer of the next paid request (one carrying a payment) in `mode`; passes everything else. */
  loseNext(mode: LossMode): void;
  /** Paid requests whose answer was lost so far. */
  readonly lost: number;
  /** Paid requests forwarded so far (lost or not). */
  readonly paid: number;
  close(): Promise<void>;
}

/** Whether a request carries an x402 payment: the HTTP headers, or a JSON-RPC tools/call with `_meta["x402/payment"]`. */
function carriesPayment(req: IncomingMessage, body: Buffer): boolean {
  if (req.headers["payment-signature"] !== undefined || req.headers["x-payment"] !== undefined) return true;
  return body.includes('"x402/payment"');
}

/**
 * A loopback HTTP proxy in front of `target` that loses one paid answer on demand. `settled` is awaited before a paid
 * request that follows a `hangup` goes on: the test says when the server has finished the request the buyer abandoned
 * (read from the server itself, never a timer), so the retry meets a finished purchase, whatever the machine's speed.
 */
export async function startLossyProxy(
  target: string,
  settled: () => Promise<void> = async () => {},
): Promise<LossyProxy> {
  const upstream = new URL(target);
  const sockets = new Set<Socket>();
  let pending: LossMode | undefined;
  let afterHangup = false;
  let lost = 0;
  let paid = 0;

  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const isPaid = carriesPayment(req, body);
    let mode: LossMode | undefined;
    if (isPaid) {
      paid += 1;
      if (afterHangup) {
        afterHangup = false;
        await settled();
      }
      mode = pending;
      pending = undefined;
    }
    const out = httpRequest(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, host: upstream.host },
      },
      (answer) => {
        if (mode === "drop") {
          // The whole answer arrives (the server is done), and never reaches the buyer.
          answer.resume();
          answer.on("end", () => {
            lost += 1;
            req.socket.destroy();
          });
          return;
        }
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    out.on("error", () => res.destroy());
    out.end(body, () => {
      if (mode !== "hangup") return;
      // The request is out; the buyer hangs up, and the proxy lets go of the server's side as well.
      lost += 1;
      afterHangup = true;
      req.socket.destroy();
      out.destroy();
    });
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    loseNext: (mode) => {
      pending = mode;
    },
    get lost() {
      return lost;
    },
    get paid() {
      return paid;
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}
