/**
 * The bench's shared facilitator: answers POST /verify, POST /settle and GET /supported at once, accepting every
 * payload it can read, so each seller's figures are its own cost. A bare node:http server (no schema parsing): under
 * load the facilitator must never be what limits a seller. Bench only: it checks no signature and moves no money.
 */
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

const SUPPORTED = JSON.stringify({
  kinds: [
    { x402Version: 2, scheme: "exact", network: "eip155:8453" },
    { x402Version: 1, scheme: "exact", network: "base" },
  ],
  extensions: [],
  signers: { "eip155:*": ["0x0000000000000000000000000000000000000fac"] },
});

interface FacilitatorRequest {
  paymentPayload?: { payload?: { authorization?: { from?: string } } };
  paymentRequirements?: { network?: string };
}

function send(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
  res.end(body);
}

function answer(path: string, raw: string, res: ServerResponse): void {
  let req: FacilitatorRequest;
  try {
    req = JSON.parse(raw) as FacilitatorRequest;
  } catch {
    send(res, 400, JSON.stringify({ error: "invalid JSON" }));
    return;
  }
  const payer =
    req.paymentPayload?.payload?.authorization?.from ?? "0x0000000000000000000000000000000000000000";
  if (path === "/verify") {
    send(res, 200, JSON.stringify({ isValid: true, payer }));
    return;
  }
  send(
    res,
    200,
    JSON.stringify({
      success: true,
      transaction: `0x${randomBytes(32).toString("hex")}`,
      network: req.paymentRequirements?.network ?? "eip155:8453",
      payer,
    }),
  );
}

export function startInstantFacilitator(): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? "/").split("?")[0]?.replace(/\/+$/, "") ?? "";
    if (req.method === "GET" && path === "/supported") return send(res, 200, SUPPORTED);
    if (req.method !== "POST" || (path !== "/verify" && path !== "/settle"))
      return send(res, 404, JSON.stringify({ error: "not found" }));
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => answer(path, Buffer.concat(chunks).toString("utf8"), res));
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      resolve({
        url: `http://127.0.0.1:${port}`,
        close: () => new Promise((done) => server.close(() => done())),
      });
    });
  });
}

// Run as its own process by the bench, so it never competes with a seller for an event loop.
if (process.argv[1]?.endsWith("instant-facilitator.ts")) {
  const { url } = await startInstantFacilitator();
  process.stdout.write(`READY ${url}\n`);
}
