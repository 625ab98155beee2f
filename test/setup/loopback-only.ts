import dns from "node:dns";
import net from "node:net";
import { afterAll } from "vitest";

/*
 * Tests talk to 127.0.0.1 only. Every name looked up and every socket opened in a test process is checked here; a
 * file that reached for anything else fails at its end, naming the hosts (the lookup itself proceeds, and fails on an
 * offline machine as before). Child processes (CLIs, browsers, nginx) are not covered: their tests point them at
 * loopback stand-ins themselves.
 */
const reached = new Set<string>();

/** Names and addresses reserved so that they never reach anyone (RFC 6761 `.invalid`, RFC 5737 TEST-NET-1..3). */
const NEVER_ROUTED = /^(192\.0\.2|198\.51\.100|203\.0\.113)\./;

export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "").toLowerCase();
  if (h === "localhost" || h.endsWith(".localhost") || h === "::1" || h === "::ffff:127.0.0.1") return true;
  if (h.endsWith(".invalid")) return true;
  if (net.isIPv4(h)) return h.startsWith("127.") || h === "0.0.0.0" || NEVER_ROUTED.test(h);
  return false;
}

/** The non-loopback hosts reached so far in this file; emptied, so a test of this guard leaves none behind. */
export function takeReached(): string[] {
  const hosts = [...reached];
  reached.clear();
  return hosts;
}

const note = (host: unknown): void => {
  if (typeof host === "string" && host !== "" && !isLoopback(host)) reached.add(host);
};

const lookup = dns.lookup;
dns.lookup = ((hostname: string, ...rest: unknown[]) => {
  note(hostname);
  return (lookup as (...a: unknown[]) => unknown)(hostname, ...rest);
}) as typeof dns.lookup;

const promisedLookup = dns.promises.lookup;
dns.promises.lookup = ((hostname: string, ...rest: unknown[]) => {
  note(hostname);
  return (promisedLookup as (...a: unknown[]) => unknown)(hostname, ...rest);
}) as typeof dns.promises.lookup;

const connect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function (this: net.Socket, ...args: unknown[]) {
  // net.connect passes its normalized arguments as one array: [options, listener].
  const first = Array.isArray(args[0]) ? args[0][0] : args[0];
  if (first && typeof first === "object") {
    const o = first as { host?: unknown; path?: unknown };
    if (o.path === undefined) note(o.host ?? "localhost");
  } else if (typeof first === "number" || (typeof first === "string" && /^\d+$/.test(first))) {
    note(typeof args[1] === "string" ? args[1] : "localhost");
  }
  return (connect as (...a: unknown[]) => net.Socket).apply(this, args);
} as typeof net.Socket.prototype.connect;

afterAll(() => {
  const hosts = takeReached();
  if (hosts.length > 0) throw new Error(`this test file reached beyond loopback: ${hosts.join(", ")}`);
});
