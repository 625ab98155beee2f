import dns from "node:dns";
import net from "node:net";
import { describe, expect, it } from "vitest";
import { isLoopback, takeReached } from "./loopback-only.js";

describe("the loopback-only guard", () => {
  it("knows loopback from the rest", () => {
    for (const h of [
      "localhost",
      "127.0.0.1",
      "127.3.2.1",
      "::1",
      "[::1]",
      "api.localhost",
      "host.invalid",
      "192.0.2.1",
    ])
      expect(isLoopback(h)).toBe(true);
    for (const h of [
      "fapi.binance.com",
      "10.0.0.1",
      "8.8.8.8",
      "::2",
      "localhost.example.com",
      "invalid.com",
      "192.0.3.1",
    ])
      expect(isLoopback(h)).toBe(false);
  });

  it("records a lookup and a connection beyond loopback, and none to loopback", async () => {
    takeReached();
    await dns.promises.lookup("localhost").catch(() => undefined);
    await new Promise<void>((resolve) => {
      dns.lookup("pressure402-guard-check.example", () => resolve());
    });
    // A reserved name (RFC 2606): noted as the socket asks for it, destroyed before any answer could come.
    const socket = net.connect({ host: "connect-check.example", port: 9 });
    socket.on("error", () => {});
    socket.destroy();
    // Taken here, so the guard's own end-of-file check sees none of it.
    expect(takeReached().sort()).toEqual(["connect-check.example", "pressure402-guard-check.example"]);
  });
});
