import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CDP_FACILITATOR_URL, EnvSchema, parseConfig } from "../src/config.js";

const root = new URL("../", import.meta.url);
const schemaVars = Object.keys(EnvSchema.properties).sort();

describe("parseConfig", () => {
  it("defaults to the embedded devnet on 127.0.0.1:3000", () => {
    const c = parseConfig({});
    expect(c).toMatchObject({
      host: "127.0.0.1",
      port: 3000,
      env: "development",
      facilitator: { kind: "devnet" },
    });
    expect(c.benchmark).toEqual({
      phase: "provisional",
      provisionalCap: 500,
      liveProbe: false,
      probeAllowHosts: [],
    });
  });

  it.each([
    [{ PORT: "abc" }, /PORT: must be a whole number/],
    [{ PORT: "70000" }, /PORT/],
    [{ LOG_LEVEL: "loud" }, /LOG_LEVEL/],
    [{ PAY_TO: "0x123" }, /PAY_TO/],
    [{ FACILITATOR_URL: "not a url" }, /FACILITATOR_URL/],
    [{ BENCHMARK_PHASE: "beta" }, /BENCHMARK_PHASE/],
    [{ BENCHMARK_LIVE_PROBE: "maybe" }, /BENCHMARK_LIVE_PROBE/],
    [{ CDP_API_KEY_ID: "k" }, /CDP_API_KEY_ID and CDP_API_KEY_SECRET/],
  ])("names the bad variable: %j", (env, message) => {
    expect(() => parseConfig(env)).toThrow(message);
  });

  it("reads TRUST_PROXY as a flag, a hop count or a list of proxies", () => {
    expect(parseConfig({}).trustProxy).toBe(false);
    expect(parseConfig({ TRUST_PROXY: "true" }).trustProxy).toBe(true);
    expect(parseConfig({ TRUST_PROXY: "2" }).trustProxy).toBe(2);
    expect(parseConfig({ TRUST_PROXY: "10.0.0.0/8, 127.0.0.1" }).trustProxy).toEqual([
      "10.0.0.0/8",
      "127.0.0.1",
    ]);
    expect(() => parseConfig({ TRUST_PROXY: "yes please" })).toThrow(/TRUST_PROXY/);
  });

  it("production refuses to start without a facilitator and payTo, saying which is missing", () => {
    expect(() => parseConfig({ NODE_ENV: "production" })).toThrow(/FACILITATOR_URL.*PAY_TO/);
    expect(() => parseConfig({ NODE_ENV: "production", FACILITATOR_URL: "https://f.example" })).toThrow(
      /without: PAY_TO$/,
    );
    expect(() => parseConfig({ NODE_ENV: "production", PAY_TO: `0x${"a".repeat(40)}` })).toThrow(
      /FACILITATOR_URL/,
    );
    const ok = parseConfig({
      NODE_ENV: "production",
      FACILITATOR_URL: "https://f.example",
      PAY_TO: `0x${"a".repeat(40)}`,
    });
    expect(ok.facilitator).toEqual({ kind: "url", url: "https://f.example", timeoutMs: 10_000 });
  });

  it("takes the CDP secret from a file, defaulting to the CDP facilitator URL", () => {
    const dir = mkdtempSync(join(tmpdir(), "cfg-"));
    try {
      writeFileSync(join(dir, "secret"), "  s3cret\n");
      const c = parseConfig({ CDP_API_KEY_ID: "id", CDP_API_KEY_SECRET_FILE: join(dir, "secret") });
      expect(c.facilitator).toMatchObject({
        kind: "cdp",
        url: CDP_FACILITATOR_URL,
        apiKeyId: "id",
        apiKeySecret: "s3cret",
      });
      expect(() =>
        parseConfig({ CDP_API_KEY_ID: "id", CDP_API_KEY_SECRET: "a", CDP_API_KEY_SECRET_FILE: "b" }),
      ).toThrow(/only one/);
      expect(() =>
        parseConfig({ CDP_API_KEY_ID: "id", CDP_API_KEY_SECRET_FILE: join(dir, "missing") }),
      ).toThrow(/cannot read/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("documentation stays true to the config", () => {
  it(".env.example lists exactly the variables the schema reads", () => {
    const text = readFileSync(new URL(".env.example", root), "utf8");
    const vars = [...text.matchAll(/^([A-Z0-9_]+)=/gm)].map((m) => m[1]).sort();
    expect(vars).toEqual(schemaVars);
  });

  it("the README configuration table lists every variable", () => {
    const text = readFileSync(new URL("README.md", root), "utf8");
    const table = text.slice(text.indexOf("## Configuration"));
    const vars = [...table.matchAll(/^\| `([A-Z0-9_]+)` \|/gm)].map((m) => m[1]).sort();
    expect(vars).toEqual(schemaVars);
  });
});
