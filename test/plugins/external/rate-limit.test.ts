import { connect, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { PRICES } from "../../../src/operations/prices.js";
import { requirementsV2 } from "../../../src/payments/terms/requirements.js";
import { TEST_PAY_TO, type TestApp, testApp } from "../../helpers/app.js";
import type { FakeGateway } from "../../helpers/fake-gateway.js";
import { b64, TEST_NETWORK, v2Proof } from "../../helpers/proofs.js";

/*
 * The per-client in-flight limit: paid calls are held at the (fake) facilitator until the test opens its gate, so
 * "in flight" is a fact the test controls, not a race.
 */
let t: TestApp | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

const UPCOMING = "/v1/unlocks/upcoming?days=30";
const accepted = requirementsV2(PRICES.upcoming, {
  payTo: TEST_PAY_TO,
  maxTimeoutSeconds: 300,
  network: TEST_NETWORK,
});
const proof = () => b64(v2Proof(accepted));

/** Holds every verify until `open()`; `untilVerifies(n)` resolves once n verifies have started. */
function holdVerifies(gateway: FakeGateway) {
  let open: () => void = () => {};
  const gate = new Promise<void>((r) => {
    open = r;
  });
  let started = 0;
  const waiters: { n: number; go: () => void }[] = [];
  const inner = gateway.verifyResult;
  gateway.verifyResult = async (p, r) => {
    started += 1;
    for (const w of waiters.filter((x) => started >= x.n)) {
      waiters.splice(waiters.indexOf(w), 1);
      w.go();
    }
    await gate;
    return inner(p, r);
  };
  return {
    open: () => open(),
    untilVerifies: (n: number) =>
      started >= n ? Promise.resolve() : new Promise<void>((go) => waiters.push({ n, go })),
  };
}

describe("CLIENT_MAX_IN_FLIGHT", () => {
  it("a client's requests past its in-flight share get 429 at once; other clients are not held by it", async () => {
    t = await testApp({ CLIENT_MAX_IN_FLIGHT: "2", TRUST_PROXY: "true" });
    const app = t.app;
    const held = holdVerifies(t.gateway);
    const get = (ip: string, paid: boolean) =>
      app.inject({
        method: "GET",
        url: UPCOMING,
        headers: { "x-forwarded-for": ip, ...(paid ? { "payment-signature": proof() } : {}) },
      });
    const first = [get("203.0.113.1", true), get("203.0.113.1", true)];
    await held.untilVerifies(2);
    const third = await get("203.0.113.1", false);
    expect(third.statusCode).toBe(429);
    expect(third.headers["content-type"]).toMatch(/^application\/problem\+json/);
    expect(third.headers["retry-after"]).toBe("1");
    expect(third.json()).toMatchObject({ status: 429, type: expect.stringMatching(/concurrency-limited$/) });
    // Another address is answered as usual (the 402 challenge), the held ones do not count against it.
    expect((await get("203.0.113.2", false)).statusCode).toBe(402);
    held.open();
    expect((await Promise.all(first)).map((r) => r.statusCode)).toEqual([200, 200]);
    // Its share is back once they are answered.
    expect((await get("203.0.113.1", false)).statusCode).toBe(402);
  });

  it("a request whose client hung up gives its share back", async () => {
    t = await testApp({ CLIENT_MAX_IN_FLIGHT: "1" });
    const held = holdVerifies(t.gateway);
    const address = await t.app.listen({ host: "127.0.0.1", port: 0 });
    const { port } = new URL(address);
    // A raw request the client abandons while the server holds it at the facilitator.
    const serverSide = new Promise<Socket>((resolve) => t?.app.server.once("connection", resolve));
    const socket = connect(Number(port), "127.0.0.1");
    await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
    socket.write(`GET ${UPCOMING} HTTP/1.1\r\nHost: 127.0.0.1\r\nPayment-Signature: ${proof()}\r\n\r\n`);
    await held.untilVerifies(1);
    expect((await fetch(`${address}${UPCOMING}`)).status).toBe(429);
    const gone = new Promise<void>((resolve) => serverSide.then((s) => s.once("close", () => resolve())));
    socket.destroy();
    // Once the server has seen the hang-up (its socket closed, the close events delivered), the address is admitted.
    await gone;
    await new Promise<void>((resolve) => setImmediate(resolve));
    expect((await fetch(`${address}${UPCOMING}`)).status).toBe(402);
    held.open();
  });
});
