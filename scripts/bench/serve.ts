/**
 * One bench server per process (so no two share an event loop): `serve.ts <kind> <facilitatorUrl> <bodyFile>
 * [unlocksSnapshot]`. Prints `READY <url>` once listening. Every seller answers GET /v1/unlocks/upcoming at 0.02 USD
 * (20000 atomic USDC on eip155:8453, to the same payTo) through the same facilitator.
 *  - fastify:     bare Fastify 5, no payment: a 200 with the body in <bodyFile> (pressure402's 402 body, same size).
 *  - fastify-same: bare Fastify 5 replying the very bytes of pressure402's 402: <bodyFile> is a JSON
 *                 `{ status, headers, body }` captured from it (sameBytesReply); Node adds Date and Connection to both.
 *  - express:     @x402/express paymentMiddleware; once paid, the body in <bodyFile> (pressure402's paid body).
 *  - hono:        @x402/hono paymentMiddleware on @hono/node-server; the same paid body.
 *  - pressure402: buildApp with the test configuration and an embedded SQLite ledger in a temp dir.
 */
import { mkdtempSync, readFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { serve } from "@hono/node-server";
import { HTTPFacilitatorClient } from "@x402/core/server";
import { ExactEvmScheme } from "@x402/evm/exact/server";
import { x402ResourceServer as ExpressServer, paymentMiddleware as expressPayment } from "@x402/express";
import { x402ResourceServer as HonoServer, paymentMiddleware as honoPayment } from "@x402/hono";
import express from "express";
import Fastify from "fastify";
import { Hono } from "hono";
import { buildApp } from "../../src/app.js";
import { loadCatalog } from "../../src/benchmark/catalog/snapshot.js";
import { createBenchmarkService } from "../../src/benchmark/service.js";
import { parseConfig } from "../../src/config.js";
import { openLedger } from "../../src/ledger/embedded.js";
import { createFacilitatorClient, createFacilitatorGateway } from "../../src/payments/facilitator/gateway.js";
import { loadUnlockStore } from "../../src/unlocks/data/snapshot.js";
import { createUnlockService } from "../../src/unlocks/service.js";

export const BENCH_PAY_TO = "0x00000000000000000000000000000000000000aa" as const;
export const BENCH_ROUTE = "/v1/unlocks/upcoming";
export type ServerKind = "fastify" | "fastify-same" | "express" | "hono" | "pressure402";

/** A response captured to be replayed byte for byte by `fastify-same`. */
export interface SameBytesReply {
  status: number;
  /** In the order sent, without those Node writes itself (Date, Connection, Keep-Alive, Content-Length). */
  headers: Array<[string, string]>;
  body: string;
}

const NODE_WRITES = new Set(["date", "connection", "keep-alive", "content-length", "transfer-encoding"]);

/** The status, headers and body of a response, for `fastify-same` to send the same bytes. */
export async function captureReply(url: string): Promise<SameBytesReply> {
  // As the load generator asks (no Accept-Encoding): fetch would decode a compressed body but keep its
  // Content-Encoding, and the replayed bytes would then not match their header.
  const res = await fetch(url, { headers: { "accept-encoding": "identity" } });
  const body = await res.text();
  const headers: Array<[string, string]> = [];
  res.headers.forEach((value, name) => {
    if (!NODE_WRITES.has(name)) headers.push([name, value]);
  });
  return { status: res.status, headers, body };
}

const HOST = "127.0.0.1";
const referenceRoutes = {
  [`GET ${BENCH_ROUTE}`]: {
    accepts: { scheme: "exact", price: "$0.02", network: "eip155:8453", payTo: BENCH_PAY_TO },
    description: "Upcoming unlock events with modelled risk",
    mimeType: "application/json",
  },
} as const;

async function fastifyServer(body: string): Promise<string> {
  const app = Fastify({ logger: false });
  app.get(BENCH_ROUTE, async (_request, reply) => reply.type("application/json; charset=utf-8").send(body));
  return app.listen({ host: HOST, port: 0 });
}

async function fastifySameServer(reply: SameBytesReply): Promise<string> {
  const app = Fastify({ logger: false });
  const body = Buffer.from(reply.body);
  app.get(BENCH_ROUTE, async (_request, res) => {
    res.code(reply.status);
    for (const [name, value] of reply.headers) res.header(name, value);
    return res.send(body);
  });
  return app.listen({ host: HOST, port: 0 });
}

async function expressServer(facilitatorUrl: string, body: string): Promise<string> {
  const resourceServer = new ExpressServer(new HTTPFacilitatorClient({ url: facilitatorUrl })).register(
    "eip155:8453",
    new ExactEvmScheme(),
  );
  const app = express();
  app.use(expressPayment(referenceRoutes, resourceServer));
  app.get(BENCH_ROUTE, (_req, res) => {
    res.type("application/json").send(body);
  });
  return new Promise((resolve) => {
    const server = app.listen(0, HOST, () =>
      resolve(`http://${HOST}:${(server.address() as AddressInfo).port}`),
    );
  });
}

async function honoServer(facilitatorUrl: string, body: string): Promise<string> {
  const resourceServer = new HonoServer(new HTTPFacilitatorClient({ url: facilitatorUrl })).register(
    "eip155:8453",
    new ExactEvmScheme(),
  );
  const app = new Hono();
  app.use(honoPayment(referenceRoutes, resourceServer));
  app.get(BENCH_ROUTE, (c) => c.body(body, 200, { "content-type": "application/json" }));
  return new Promise((resolve) => {
    serve({ fetch: app.fetch, hostname: HOST, port: 0 }, (info) => resolve(`http://${HOST}:${info.port}`));
  });
}

async function pressure402Server(
  facilitatorUrl: string,
  snapshot: string | undefined,
  rateLimited: boolean,
): Promise<string> {
  // The test configuration: no rate limit, per-client in-flight cap or load shedding in the way (the plugins still run:
  // the load generator is one client holding 32 connections), logs off. The
  // "pressure402-limited" kind keeps the default rate limit, per client IP as X-Forwarded-For says (the free-path
  // flood bench gives each client its own).
  const config = parseConfig({
    NODE_ENV: "test",
    LOG_LEVEL: "silent",
    ...(rateLimited
      ? { TRUST_PROXY: "true" }
      : { RATE_LIMIT_MAX: "1000000000", CLIENT_MAX_IN_FLIGHT: "1000000" }),
    MAX_EVENT_LOOP_DELAY_MS: "0",
  });
  const ledger = openLedger(join(mkdtempSync(join(tmpdir(), "p402-bench-ledger-")), "ledger.sqlite"));
  const app = await buildApp({
    config,
    unlocks: createUnlockService(loadUnlockStore(snapshot)),
    benchmark: createBenchmarkService(loadCatalog()),
    ledger,
    gateway: createFacilitatorGateway(
      createFacilitatorClient({ url: facilitatorUrl, timeoutMs: 10_000 }),
      config.circuit,
    ),
    payTo: BENCH_PAY_TO,
    facilitatorLabel: "bench",
    logger: false,
  });
  return app.listen({ host: HOST, port: 0 });
}

async function main(): Promise<void> {
  const [kind, facilitatorUrl = "", bodyFile, snapshot] = process.argv.slice(2);
  const body = () => readFileSync(bodyFile as string, "utf8");
  let url: string;
  if (kind === "fastify") url = await fastifyServer(body());
  else if (kind === "fastify-same") url = await fastifySameServer(JSON.parse(body()) as SameBytesReply);
  else if (kind === "express") url = await expressServer(facilitatorUrl, body());
  else if (kind === "hono") url = await honoServer(facilitatorUrl, body());
  else if (kind === "pressure402" || kind === "pressure402-limited")
    url = await pressure402Server(facilitatorUrl, snapshot || undefined, kind === "pressure402-limited");
  else throw new Error(`unknown server kind ${kind}`);
  process.stdout.write(`READY ${url}\n`);
  // A clean exit on SIGTERM, so `NODE_OPTIONS=--cpu-prof` leaves a profile of the run.
  process.once("SIGTERM", () => process.exit(0));
}

if (process.argv[1]?.endsWith("serve.ts")) {
  main().catch((err: unknown) => {
    process.stderr.write(
      `bench server failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    process.exit(1);
  });
}
