// Loaded into the agentcash CLI (node --import): its `--dev` flag sends the hosted balance API to a host fixed in its
// source (http://localhost:3000). This moves exactly those requests to the test's loopback stand-in, on whatever port
// it got, so the test takes no fixed port and cannot collide with a service on 3000. Nothing else is touched.
const DEV_ORIGIN = "http://localhost:3000";
const target = process.env.AGENTCASH_BALANCE_ORIGIN;
const original = globalThis.fetch;

globalThis.fetch = (input, init) => {
  const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
  if (!target || !url.startsWith(`${DEV_ORIGIN}/`)) return original(input, init);
  const moved = target + url.slice(DEV_ORIGIN.length);
  return original(input instanceof Request ? new Request(moved, input) : moved, init);
};
