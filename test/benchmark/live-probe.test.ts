import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { encodePaymentRequiredHeader } from "@x402/core/http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { probeEndpoint, type Resolver } from "../../src/benchmark/live-probe.js";

const USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
const requests: { url: string; host: string | undefined; method: string | undefined }[] = [];

function handler(req: IncomingMessage, res: ServerResponse): void {
  requests.push({ url: req.url ?? "", host: req.headers.host, method: req.method });
  switch (req.url) {
    case "/v2": {
      const header = encodePaymentRequiredHeader({
        x402Version: 2,
        error: "payment required",
        resource: { url: "http://127.0.0.1/v2", description: "probe fixture", mimeType: "application/json" },
        accepts: [
          {
            scheme: "exact",
            network: "eip155:8453",
            asset: USDC,
            amount: "12500",
            payTo: "0x5555555555555555555555555555555555555555",
            maxTimeoutSeconds: 60,
            extra: {},
          },
        ],
      });
      res.writeHead(402, { "PAYMENT-REQUIRED": header, "content-type": "application/json" }).end("{}");
      return;
    }
    case "/v1": {
      res.writeHead(402, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          x402Version: 1,
          error: "X-PAYMENT header is required",
          accepts: [
            {
              scheme: "exact",
              network: "base",
              maxAmountRequired: "30000",
              resource: "http://127.0.0.1/v1",
              description: "",
              mimeType: "",
              payTo: "0x6666666666666666666666666666666666666666",
              maxTimeoutSeconds: 60,
              asset: USDC,
              outputSchema: {},
              extra: {},
            },
          ],
        }),
      );
      return;
    }
    case "/redirect":
      res.writeHead(302, { location: "http://169.254.169.254/latest/meta-data/" }).end();
      return;
    case "/free":
      res.writeHead(200, { "content-type": "application/json" }).end('{"ok":true}');
      return;
    case "/huge":
      res.writeHead(402, { "content-type": "application/json" });
      res.end(`{"x402Version":1,"accepts":[],"pad":"${"x".repeat(70 * 1024)}"}`);
      return;
    case "/garbage":
      res.writeHead(402, { "PAYMENT-REQUIRED": "%%%not base64%%%" }).end("not json");
      return;
    case "/slow":
      // Never answers; the probe's deadline must end it.
      return;
    default:
      res.writeHead(404).end();
  }
}

let server: Server;
let base: string;
let port: number;
beforeAll(async () => {
  server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  port = (server.address() as AddressInfo).port;
  base = `http://127.0.0.1:${port}`;
});
afterAll(() => {
  server.closeAllConnections();
  server.close();
});

const allow = { allowHosts: ["127.0.0.1"] };

describe("live probe against local servers (explicit allow-list)", () => {
  it("reads the v2 PAYMENT-REQUIRED header", async () => {
    const r = await probeEndpoint(`${base}/v2`, { ...allow, clock: () => new Date("2026-11-23T00:00:00Z") });
    expect(r).toMatchObject({
      ok: true,
      observation: {
        x402_version: 2,
        amount_atomic: "12500",
        usd: 0.0125,
        network: "eip155:8453",
        asset: USDC,
        observed_at: "2026-11-23T00:00:00.000Z",
      },
    });
  });

  it("reads the v1 body accepts[].maxAmountRequired and maps the network name", async () => {
    const r = await probeEndpoint(`${base}/v1`, allow);
    expect(r).toMatchObject({
      ok: true,
      observation: { x402_version: 1, amount_atomic: "30000", usd: 0.03, network: "eip155:8453" },
    });
  });

  it("does not follow redirects", async () => {
    const before = requests.length;
    const r = await probeEndpoint(`${base}/redirect`, allow);
    expect(r).toMatchObject({ ok: false, reason: "redirect_not_followed" });
    expect(requests.length - before).toBe(1);
  });

  it("reports non-402 answers, unreadable 402s and oversized bodies", async () => {
    expect(await probeEndpoint(`${base}/free`, allow)).toMatchObject({ ok: false, reason: "not_402" });
    expect(await probeEndpoint(`${base}/garbage`, allow)).toMatchObject({
      ok: false,
      reason: "no_price_in_402",
    });
    expect(await probeEndpoint(`${base}/huge`, allow)).toMatchObject({ ok: false, reason: "too_large" });
    expect(await probeEndpoint(`${base}/v1`, { ...allow, maxBytes: 100 })).toMatchObject({
      ok: false,
      reason: "too_large",
    });
  });

  it("gives up at the deadline", async () => {
    const t0 = Date.now();
    const r = await probeEndpoint(`${base}/slow`, { ...allow, timeoutMs: 300 });
    expect(r).toMatchObject({ ok: false, reason: "timeout" });
    expect(Date.now() - t0).toBeLessThan(2000);
  });

  it("connects to the address it checked, sending the original Host (no second lookup)", async () => {
    let lookups = 0;
    const resolve: Resolver = async () => {
      lookups++;
      return [{ address: "127.0.0.1", family: 4 }];
    };
    const r = await probeEndpoint(`http://seller.fixture.test:${port}/v2`, {
      allowHosts: ["seller.fixture.test"],
      resolve,
    });
    expect(r.ok).toBe(true);
    expect(lookups).toBe(1);
    expect(requests.at(-1)?.host).toBe(`seller.fixture.test:${port}`);
    expect(requests.at(-1)?.method).toBe("GET");
  });

  it("skips URLs that still hold placeholders", async () => {
    expect(await probeEndpoint(`${base}/matches/:id`, allow)).toMatchObject({
      ok: false,
      reason: "template_url",
    });
    expect(await probeEndpoint(`${base}/vaults/{address}`, allow)).toMatchObject({
      ok: false,
      reason: "template_url",
    });
  });
});

describe("live probe refusals (nothing is connected)", () => {
  it("refuses the local server when it is not allow-listed", async () => {
    const before = requests.length;
    const r = await probeEndpoint(`${base}/v2`);
    expect(r).toMatchObject({ ok: false, reason: "refused_address" });
    expect(requests.length).toBe(before);
  });

  it.each([
    "http://10.0.0.5/",
    "http://172.20.1.1/",
    "http://192.168.0.10/",
    "http://100.64.1.1/",
    "http://169.254.169.254/latest/meta-data/",
    "http://169.254.10.10/",
    "http://0.0.0.0/",
    "http://[::1]/",
    "http://[::]/",
    "http://[fd00:ec2::254]/latest/meta-data/",
    "http://[fe80::1]/",
    "http://[fc00::1]/",
    "http://[::ffff:127.0.0.1]/",
    "http://[::ffff:169.254.169.254]/",
    "http://2130706433/",
    "http://0x7f.1/",
  ])("refuses %s", async (url) => {
    const t0 = Date.now();
    const r = await probeEndpoint(url, { timeoutMs: 3000 });
    expect(r).toMatchObject({ ok: false, reason: "refused_address" });
    expect(Date.now() - t0).toBeLessThan(200);
  });

  it("refuses a name that resolves to a private address, or to any private address among public ones", async () => {
    const onlyPrivate: Resolver = async () => [{ address: "10.1.2.3", family: 4 }];
    const mixed: Resolver = async () => [
      { address: "93.184.215.14", family: 4 },
      { address: "fd00:ec2::254", family: 6 },
    ];
    expect(
      await probeEndpoint("https://internal.fixture.test/price", { resolve: onlyPrivate }),
    ).toMatchObject({
      ok: false,
      reason: "refused_address",
    });
    const r = await probeEndpoint("https://rebind.fixture.test/price", { resolve: mixed });
    expect(r).toMatchObject({ ok: false, reason: "refused_address" });
    if (!r.ok) expect(r.detail).toContain("fd00:ec2::254 is metadata");
  });

  it("reports names that do not resolve", async () => {
    const none: Resolver = async () => {
      throw new Error("ENOTFOUND");
    };
    expect(await probeEndpoint("https://nowhere.fixture.test/", { resolve: none })).toMatchObject({
      ok: false,
      reason: "unresolvable",
    });
  });
});
