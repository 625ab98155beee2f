import dns from "node:dns";
import net from "node:net";
import { describe, expect, it } from "vitest";
import { isLoopback, takeReached } from "./loopback-only.js";

describe("the loopback-only guard", () => {
  it("knows loopback from the rest", () => {
    for (const h of ["localhost", "127.0.0.1", "127.3.2.1", "::1", "[::1]", "api.localhost"])
      expect(isLoopback(h)).toBe(true);
    for (const h of ["fapi.binance.com", "10.0.0.1", "8.8.8.8", "::2", "localhost.example.com"])
      expect(isLoopback(h)).toBe(false);
  });

  it("records a lookup and a connection beyond loopback, and none to loopback", async () => {
    takeReached();
    await dns.promises.lookup("localhost").catch(() => undefined);
    await new Promise<void>((resolve) => {
      dns.lookup("pressure402-guard-check.invalid", () => resolve());
    });
    const socket = net.connect({ host: "192.0.2.1", port: 9 }); // TEST-NET-1: never routed
    socket.on("error", () => {});
    socket.destroy();
    // Taken here, so the guard's own end-of-file check sees none of it.
    expect(takeReached().sort()).toEqual(["192.0.2.1", "pressure402-guard-check.invalid"]);
  });
});
