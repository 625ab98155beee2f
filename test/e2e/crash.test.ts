import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from "@x402/core/http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buyerClient } from "../../scripts/buyer.js";
import { type Devnet, startDevnet } from "../../src/devnet/index.js";
import { freePort } from "../../src/devnet/ports.js";
import { openLedger } from "../../src/ledger/embedded.js";
import { type LoopbackProxy, startLoopbackProxy } from "../helpers/loopback-proxy.js";
import { b64 } from "../helpers/proofs.js";

/*
 * kill -9 mid-settlement. 12 payers pay at once; the facilitator (the devnet's, behind a proxy the test controls)
 * settles every one on chain, and the proxy holds the 12 replies. With all 12 charged and none answered, the server
 * process is SIGKILLed. Restarted on the same ledger (same chain, same facilitator), each buyer retries once with the
 * same proof and the Idempotency-Key they first sent (half of them), or with a fresh proof (the other half, who sent no
 * key: the proof alone is public on chain once settled, so only a new signature of the payer proves it is the payer) —
 * and must get its response on that first retry, with no second settlement; the ledger must hold exactly one settled
 * receipt per on-chain transfer.
 */
const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const PAYERS = 12;
let devnet: Devnet;
let proxy: LoopbackProxy | undefined;
let proxyUrl: string;
let holdSettles = true;
let settleCalls = 0;
const held: ServerResponse[] = [];
let allHeld: () => void = () => {};
const twelveHeld = new Promise<void>((r) => (allHeld = r));
const txByNonce = new Map<string, string>();
const children: ReturnType<typeof spawn>[] = [];
const dir = mkdtempSync(join(tmpdir(), "crash-"));
const ledgerPath = join(dir, "ledger.sqlite");

async function forward(req: IncomingMessage, res: ServerResponse) {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const body = Buffer.concat(chunks);
  const upstream = await fetch(`${devnet.facilitatorUrl}${req.url}`, {
    method: req.method,
    headers: { "content-type": "application/json" },
    ...(req.method === "POST" ? { body } : {}),
  });
  const text = await upstream.text();
  if (req.url === "/settle") {
    settleCalls += 1;
    const nonce = JSON.parse(body.toString()).paymentPayload.payload.authorization.nonce as string;
    const tx = (JSON.parse(text) as { transaction?: string }).transaction;
    if (tx) txByNonce.set(nonce.toLowerCase(), tx);
    if (holdSettles) {
      held.push(res); // settled on chain; the answer waits for a process that will never read it
      if (held.length === PAYERS) allHeld();
      return;
    }
  }
  res.writeHead(upstream.status, { "content-type": "application/json" }).end(text);
}

async function startChild(env: Record<string, string>) {
  const port = await freePort();
  const child = spawn(process.execPath, ["--import", "tsx", "test/helpers/server-child.ts"], {
    cwd: ROOT,
    env: {
      ...process.env,
      NODE_ENV: "test",
      HOST: "127.0.0.1",
      PORT: String(port),
      LOG_LEVEL: "warn",
      LEDGER_PATH: ledgerPath,
      REFRESH_INTERVAL_SECONDS: "0", // loopback only: the shipped data, never refreshed
      FACILITATOR_URL: proxyUrl,
      PAY_TO: devnet.payTo,
      CHAIN_RPC_URL: devnet.rpcUrl,
      RATE_LIMIT_MAX: "100000",
      CLIENT_MAX_IN_FLIGHT: "100000",
      MAX_EVENT_LOOP_DELAY_MS: "0", // no load shedding: this test is about crashes, not overload
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let out = "";
  const exited = new Promise<string>((r) => child.once("exit", (code, signal) => r(String(signal ?? code))));
  const url = await new Promise<string>((resolve, reject) => {
    const onData = (c: Buffer) => {
      out += c.toString();
      const m = /pressure402 is listening on (http:\/\/\S+)/.exec(out);
      if (m?.[1]) resolve(m[1]);
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    void exited.then((how) => reject(new Error(`server exited (${how}):\n${out.slice(-2000)}`)));
  });
  return { url, child, exited, output: () => out };
}

beforeAll(async () => {
  devnet = await startDevnet();
  proxy = await startLoopbackProxy(forward);
  proxyUrl = proxy.url;
}, 300_000); // the devnet compiles and boots slowly on a loaded machine

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  await proxy?.close();
  await devnet?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("crash safety: kill -9 mid-settlement", () => {
  it("every charged buyer gets its response on its first retry after a restart; one settled receipt per transfer", {
    timeout: 180_000,
  }, async () => {
    const first = await startChild({ FACILITATOR_TIMEOUT_MS: "120000" }); // the kill comes before any timeout
    const payers = await Promise.all(
      Array.from({ length: PAYERS }, async (_, i) => {
        const path = `/v1/unlocks/upcoming?days=${10 + i}`;
        const challenge = await fetch(`${first.url}${path}`);
        expect(challenge.status).toBe(402);
        const required = decodePaymentRequiredHeader(challenge.headers.get("payment-required") as string);
        const buyer = devnet.buyers[i % devnet.buyers.length] as Devnet["buyers"][number];
        const payload = await buyerClient(buyer.privateKey, 1_000_000n).createPaymentPayload(required);
        const nonce = (
          payload.payload as { authorization: { nonce: string } }
        ).authorization.nonce.toLowerCase();
        const headers: Record<string, string> = { "PAYMENT-SIGNATURE": b64(payload) };
        if (i % 2 === 0) headers["Idempotency-Key"] = `crash-order-${i}`;
        // Without a key, the buyer's client signs a fresh proof for its next try, as x402 clients do.
        const retryHeaders =
          i % 2 === 0
            ? headers
            : {
                "PAYMENT-SIGNATURE": b64(
                  await buyerClient(buyer.privateKey, 1_000_000n).createPaymentPayload(required),
                ),
              };
        return { path, headers, retryHeaders, nonce, days: 10 + i };
      }),
    );
    const before = await devnet.balanceOf(devnet.payTo);

    const firstTries = payers.map((p) =>
      fetch(`${first.url}${p.path}`, { headers: p.headers }).then(
        (r) => r.status,
        () => "no answer" as const,
      ),
    );
    await twelveHeld; // all 12 settled on chain, none answered
    first.child.kill("SIGKILL");
    expect(await first.exited).toBe("SIGKILL");
    expect(await Promise.all(firstTries)).toEqual(Array(PAYERS).fill("no answer"));
    expect((await devnet.balanceOf(devnet.payTo)) - before).toBe(20_000n * BigInt(PAYERS)); // all were charged
    for (const res of held.splice(0)) res.destroy();

    holdSettles = false;
    const settlesBeforeRestart = settleCalls;
    const second = await startChild({});
    const retries = await Promise.all(
      payers.map(async (p) => {
        const r = await fetch(`${second.url}${p.path}`, { headers: p.retryHeaders });
        const header = r.headers.get("payment-response");
        const body = r.status === 200 ? ((await r.json()) as { days: number }) : await r.text();
        return {
          status: r.status,
          tx: header ? decodePaymentResponseHeader(header).transaction : null,
          body,
          p,
        };
      }),
    );
    for (const r of retries) {
      expect(r.status, `retry of ${r.p.path} ${JSON.stringify(r.body)}`).toBe(200);
      expect(r.tx).toBe(txByNonce.get(r.p.nonce));
      expect((r.body as { days: number }).days).toBe(r.p.days);
    }
    expect(settleCalls).toBe(settlesBeforeRestart); // nothing settled twice
    expect((await devnet.balanceOf(devnet.payTo)) - before).toBe(20_000n * BigInt(PAYERS));

    second.child.kill("SIGTERM");
    await second.exited;
    const ledger = openLedger(ledgerPath);
    const receipts = await ledger.receipts();
    await ledger.close();
    const settled = receipts.filter((r) => r.status === "settled");
    expect(settled).toHaveLength(PAYERS);
    expect(receipts).toHaveLength(PAYERS);
    expect(new Set(settled.map((r) => r.transaction))).toEqual(new Set(txByNonce.values()));
    expect(settled.every((r) => r.response?.statusCode === 200)).toBe(true);
    process.stdout.write(
      `crash test: ${PAYERS} payers charged and unanswered at SIGKILL; after restart ${retries.filter((r) => r.status === 200).length}/${PAYERS} first retries 200, ` +
        `${settleCalls - settlesBeforeRestart} extra settlements, ${settled.length} settled receipts for ${txByNonce.size} transfers\n`,
    );
  });
});
