import { connect } from "node:net";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decodeSettlement, payingFetch } from "../../scripts/buyer.js";
import { DISCOVERABLE } from "../../src/discovery/catalog.js";
import { PRICES } from "../../src/operations/prices.js";
import { jsonInit, useDevnetServer } from "../helpers/devnet-server.js";
import { type LoopbackProxy, startLoopbackProxy } from "../helpers/loopback-proxy.js";
import { freePort, type Nginx, startNginx } from "../helpers/nginx.js";

/*
 * The real server on its devnet behind Debian's nginx with nothing but `listen` and `proxy_pass`: every buffer is
 * nginx's default, so the upstream's status line and headers must fit one 4 KiB page (proxy_buffer_size) or the
 * client gets 502 "upstream sent too big header". Unpaid 402s pass intact and every route is paid through it with a
 * real x402 client. A control upstream with a 5 kB header shows this nginx really refuses what does not fit.
 */
const MAX = 1_000_000n;
const HEADERS_MAX = 3584;
let proxyPort = 0;
let controlPort = 0;
let nginx: Nginx;
let control: LoopbackProxy;

beforeAll(async () => {
  proxyPort = await freePort();
  controlPort = await freePort();
});
// The 402's resource is the public URL (nginx's), never the Host nginx sends upstream; client IPs from nginx's hop.
const srv = useDevnetServer("p402-e2e-nginx-", () => ({
  MAX_EVENT_LOOP_DELAY_MS: "0",
  PUBLIC_BASE_URL: `http://127.0.0.1:${proxyPort}`,
  TRUST_PROXY: "127.0.0.1",
}));
beforeAll(async () => {
  control = await startLoopbackProxy(async (_req, res) => {
    res.writeHead(402, { "content-type": "application/json", "payment-required": "A".repeat(5000) });
    res.end("{}");
  });
  nginx = await startNginx([srv.server.address, control.url], [proxyPort, controlPort]);
}, 30_000);
afterAll(async () => {
  await nginx?.stop();
  await control?.close();
});

const viaNginx = (path: string) => `${nginx.urls[0]}${path}`;
const requestOf = (d: (typeof DISCOVERABLE)[number]) =>
  d.method === "GET"
    ? { path: `${d.path}?${new URLSearchParams(d.inputExample as Record<string, string>)}`, init: {} }
    : { path: d.path, init: jsonInit(d.inputExample) };

/** The bytes of a response's status line and headers, as its server wrote them (what nginx must buffer). */
function headBytes(base: string, method: string, path: string, body?: string): Promise<number> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => {
      const lines = [`${method} ${path} HTTP/1.1`, `host: ${hostname}:${port}`, "connection: close"];
      if (body !== undefined)
        lines.push("content-type: application/json", `content-length: ${Buffer.byteLength(body)}`);
      socket.end(`${lines.join("\r\n")}\r\n\r\n${body ?? ""}`);
    });
    let got = Buffer.alloc(0);
    socket.on("data", (chunk: Buffer) => {
      got = Buffer.concat([got, chunk]);
      const end = got.indexOf("\r\n\r\n");
      if (end >= 0) {
        socket.destroy();
        resolve(end + 4);
      }
    });
    socket.on("error", reject);
    socket.on("close", () => reject(new Error("closed before the end of the headers")));
  });
}

describe("behind a stock nginx (listen + proxy_pass only)", () => {
  it("the control: an upstream whose headers exceed 4 KiB gets the client a 502", async () => {
    const res = await fetch(`${nginx.urls[1]}/anything`);
    expect(res.status).toBe(502);
    expect(nginx.errorLog()).toContain("upstream sent too big header");
  });

  it("every unpaid 402 passes intact, its headers well inside the buffer", async () => {
    for (const d of DISCOVERABLE) {
      const { path, init } = requestOf(d);
      const direct = await fetch(`${srv.server.address}${path}`, init);
      const proxied = await fetch(viaNginx(path), init);
      expect(proxied.status, d.route).toBe(402);
      const header = proxied.headers.get("payment-required") ?? "";
      expect(header).toBe(direct.headers.get("payment-required"));
      expect(decodePaymentRequiredHeader(header).resource.url).toBe(viaNginx(path));
      const body = d.method === "POST" ? JSON.stringify(d.inputExample) : undefined;
      expect(await headBytes(srv.server.address, d.method, path, body)).toBeLessThanOrEqual(HEADERS_MAX);
    }
  });

  it("pays every route through nginx with @x402/fetch: each moves exactly its price on chain", async () => {
    const d = srv.devnet();
    const buyer = d.buyers[4]!;
    const logBefore = nginx.errorLog().length;
    const pay = payingFetch(buyer.privateKey, MAX);
    const first = await pay(viaNginx("/v1/unlocks/upcoming?days=120"));
    expect(first.status).toBe(200);
    const { token, unlock_event_id } = ((await first.json()) as { unlocks: Record<string, string>[] })
      .unlocks[0] as { token: string; unlock_event_id: string };
    const calls: [string, string, RequestInit][] = [
      ["/v1/unlocks/upcoming?days=30&pp_ref=nginx.test", PRICES.upcoming.amount, {}],
      ["/v1/unlock-risk", PRICES.unlockRisk.amount, jsonInit({ token, unlock_event_id })],
      ["/v1/token/risk-summary", PRICES.riskSummary.amount, jsonInit({ token })],
      ["/v1/unlock/backtest", PRICES.backtest.amount, jsonInit({ token, unlock_event_id })],
      [
        "/v1/benchmark/endpoint",
        PRICES.benchmark.amount,
        jsonInit({ endpoint_url: "https://2s.io/api/crypto/token-price" }),
      ],
    ];
    for (const [path, price, init] of calls) {
      const before = await Promise.all([d.balanceOf(d.payTo), d.balanceOf(buyer.address)]);
      const res = await pay(viaNginx(path), init);
      const text = await res.text();
      expect(res.status, `${path}: ${text}`).toBe(200);
      const settlement = decodeSettlement(res) as { success: boolean; payer: string };
      expect(settlement.success).toBe(true);
      expect(settlement.payer.toLowerCase()).toBe(buyer.address.toLowerCase());
      const after = await Promise.all([d.balanceOf(d.payTo), d.balanceOf(buyer.address)]);
      expect([after[0] - before[0], before[1] - after[1]], path).toEqual([BigInt(price), BigInt(price)]);
    }
    expect(nginx.errorLog().slice(logBefore)).not.toContain("upstream");
  });
});
