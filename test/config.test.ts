import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CDP_FACILITATOR_URL, ConfigError, EnvSchema, loadDotEnv, parseConfig } from "../src/config.js";
import { preflight } from "../src/preflight.js";

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
    [{ PORT: "abc" }, 'PORT: invalid value (got "abc"); set a whole number from 0 to 65535'],
    [{ PORT: "70000" }, 'PORT: invalid value (got "70000"); set a whole number from 0 to 65535'],
    [
      { LOG_LEVEL: "loud" },
      'LOG_LEVEL: invalid value (got "loud"); set one of: fatal, error, warn, info, debug, trace, silent',
    ],
    [{ NODE_ENV: "prod" }, 'NODE_ENV: invalid value (got "prod"); set one of: development, production, test'],
    [{ PAY_TO: "0x123" }, 'PAY_TO: invalid value (got "0x123"); set a 0x-prefixed address of 40 hex digits'],
    [
      { FACILITATOR_URL: "not a url" },
      /^FACILITATOR_URL: invalid value \(got "not a url"\); set an http\(s\) URL/,
    ],
    [
      { BENCHMARK_PHASE: "beta" },
      'BENCHMARK_PHASE: invalid value (got "beta"); set one of: provisional, full',
    ],
    [
      { BENCHMARK_LIVE_PROBE: "maybe" },
      'BENCHMARK_LIVE_PROBE: invalid value (got "maybe"); set true or false',
    ],
    [{ RATE_LIMIT_MAX: "0" }, 'RATE_LIMIT_MAX: invalid value (got "0"); set a whole number of at least 1'],
    [{ CDP_API_KEY_ID: "k" }, /^CDP_API_KEY_SECRET: missing; CDP_API_KEY_ID and CDP_API_KEY_SECRET/],
    [
      { LEDGER_URL: "mysql://app:s3cret@db.internal:3306/ledger" },
      'LEDGER_URL: invalid value (got "mysql://app:***@db.internal:3306/ledger"); set a postgres:// or postgresql:// URL (PostgreSQL is the only shared ledger), or unset it for the SQLite file at LEDGER_PATH',
    ],
  ])("names the bad variable and the fix, on one line: %j", (env, message) => {
    let error: unknown;
    try {
      parseConfig(env);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems;
    expect(problems).toHaveLength(1);
    if (typeof message === "string") expect(problems[0]).toBe(message);
    else expect(problems[0]).toMatch(message);
  });

  it("reports every bad variable, one line each", () => {
    expect(() => parseConfig({ PORT: "x", LOG_LEVEL: "loud", BENCHMARK_PHASE: "beta" })).toThrow(ConfigError);
    try {
      parseConfig({ LOG_LEVEL: "loud", BENCHMARK_PHASE: "beta" });
    } catch (err) {
      expect((err as ConfigError).problems.map((p) => p.split(":")[0])).toEqual([
        "LOG_LEVEL",
        "BENCHMARK_PHASE",
      ]);
    }
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

  it("production refuses to start without a facilitator, payTo and public origin, saying which is missing", () => {
    const origin = { PUBLIC_BASE_URL: "https://api.example.com" };
    expect(() => parseConfig({ NODE_ENV: "production" })).toThrow(
      /^FACILITATOR_URL: required.*\nPAY_TO: required.*\nPUBLIC_BASE_URL: required/,
    );
    expect(() =>
      parseConfig({ NODE_ENV: "production", FACILITATOR_URL: "https://f.example", ...origin }),
    ).toThrow(/^PAY_TO: required when NODE_ENV=production; set the Base address that receives USDC$/);
    expect(() => parseConfig({ NODE_ENV: "production", PAY_TO: `0x${"a".repeat(40)}`, ...origin })).toThrow(
      /^FACILITATOR_URL: required/,
    );
    expect(() =>
      parseConfig({
        NODE_ENV: "production",
        FACILITATOR_URL: "https://f.example",
        PAY_TO: `0x${"a".repeat(40)}`,
      }),
    ).toThrow(
      /^PUBLIC_BASE_URL: required when NODE_ENV=production \(the 402 resource URL never comes from the Host header\); set the public origin buyers call, such as https:\/\/api\.example\.com$/,
    );
    const ok = parseConfig({
      NODE_ENV: "production",
      FACILITATOR_URL: "https://f.example",
      PAY_TO: `0x${"a".repeat(40)}`,
      ...origin,
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

describe(".env", () => {
  it("fills variables the environment does not set; the environment wins", () => {
    const dir = mkdtempSync(join(tmpdir(), "cfg-env-"));
    try {
      writeFileSync(join(dir, ".env"), "P402_TEST_FROM_FILE=file\nP402_TEST_BOTH=file\n");
      process.env.P402_TEST_BOTH = "environment";
      expect(loadDotEnv(join(dir, ".env"))).toBe(join(dir, ".env"));
      expect(process.env.P402_TEST_FROM_FILE).toBe("file");
      expect(process.env.P402_TEST_BOTH).toBe("environment");
      expect(loadDotEnv(join(dir, "absent.env"))).toBeUndefined();
    } finally {
      delete process.env.P402_TEST_FROM_FILE;
      delete process.env.P402_TEST_BOTH;
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("pre-flight checks (before the devnet starts)", () => {
  const cfg = (env: Record<string, string>) =>
    parseConfig({ FACILITATOR_URL: "http://127.0.0.1:9", PAY_TO: `0x${"a".repeat(40)}`, PORT: "0", ...env });

  it("pass on the defaults with a writable ledger", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cfg-pf-"));
    try {
      expect(await preflight(cfg({ LEDGER_PATH: join(dir, "new", "deeper", "ledger.sqlite") }))).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("name missing snapshots, an unwritable ledger and a bad anvil binary, one line each", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cfg-pf-"));
    try {
      writeFileSync(join(dir, "file"), "");
      const problems = await preflight(
        parseConfig({
          PORT: "0",
          UNLOCKS_SNAPSHOT: join(dir, "missing.json"),
          CATALOG_SNAPSHOT: dir,
          LEDGER_PATH: join(dir, "file", "ledger.sqlite"),
          ANVIL_BIN: join(dir, "no-anvil"),
        }),
      );
      expect(problems).toEqual([
        `UNLOCKS_SNAPSHOT=${join(dir, "missing.json")}: ${join(dir, "missing.json")} does not exist; set UNLOCKS_SNAPSHOT to the snapshot file (\`npm run snapshot\` builds one)`,
        `CATALOG_SNAPSHOT=${dir}: ${dir} is not a file; set CATALOG_SNAPSHOT to the snapshot file`,
        `LEDGER_PATH=${join(dir, "file", "ledger.sqlite")}: ${join(dir, "file")} is not a directory; set LEDGER_PATH to a file in a writable directory`,
        `ANVIL_BIN=${join(dir, "no-anvil")}: not an executable file (ENOENT); set ANVIL_BIN to anvil's path, or unset it to use the npm package's binary`,
      ]);
      for (const p of problems) expect(p).not.toContain("\n");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.skipIf(process.platform !== "linux")(
    "name a LEDGER_PATH under /proc or /sys (which no database can live in) instead of spinning at start",
    async () => {
      const fix = "cannot hold a database; set LEDGER_PATH to a file in a writable directory";
      for (const [path, dir, fs] of [
        ["/proc/ledger.sqlite", "/proc", "proc"],
        ["/proc/p402/var/ledger.sqlite", "/proc", "proc"],
        ["/proc/uptime", "/proc", "proc"],
        ["/sys/p402/ledger.sqlite", "/sys", "sysfs"],
      ] as const) {
        expect(await preflight(cfg({ LEDGER_PATH: path }))).toEqual([
          `LEDGER_PATH=${path}: ${dir} is on the kernel's ${fs} filesystem, which ${fix}`,
        ]);
      }
    },
  );

  it("names PORT when the port is taken, and HOST when it does not resolve or is not local", async () => {
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, "127.0.0.1", r));
    const port = (taken.address() as { port: number }).port;
    try {
      expect(await preflight(cfg({ PORT: String(port) }))).toEqual([
        `PORT=${port}: already in use on 127.0.0.1; stop the other process or set PORT to a free port (0 picks one)`,
      ]);
    } finally {
      await new Promise((r) => taken.close(r));
    }
    expect(await preflight(cfg({ HOST: "nonexistent-host.invalid" }))).toEqual([
      expect.stringMatching(/^HOST=nonexistent-host\.invalid: does not resolve \(ENOTFOUND\); set HOST to/),
    ]);
    expect(await preflight(cfg({ HOST: "192.0.2.1" }))).toEqual([
      "HOST=192.0.2.1: not an address of this machine; set HOST to one (127.0.0.1, 0.0.0.0, ::)",
    ]);
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

describe("URL shapes the patterns cannot check", () => {
  const base = { NODE_ENV: "test" };
  it("refuses a FACILITATOR_URL that does not parse, naming the variable", () => {
    expect(() => parseConfig({ ...base, FACILITATOR_URL: "http://[bad" })).toThrow(
      /^FACILITATOR_URL: not a valid URL/,
    );
  });
  it("refuses a PUBLIC_BASE_URL with a path, a query or an invalid port", () => {
    expect(() => parseConfig({ ...base, PUBLIC_BASE_URL: "https://api.example.com/v1" })).toThrow(
      /PUBLIC_BASE_URL: must be an origin without a path.*https:\/\/api\.example\.com$/,
    );
    expect(() => parseConfig({ ...base, PUBLIC_BASE_URL: "https://api.example.com?x=1" })).toThrow(/origin/);
    expect(() => parseConfig({ ...base, PUBLIC_BASE_URL: "https://api.example.com:99999" })).toThrow(
      /PUBLIC_BASE_URL: not a valid URL/,
    );
  });
  it("takes an origin, with a port or a trailing slash", () => {
    expect(parseConfig({ ...base, PUBLIC_BASE_URL: "https://api.example.com:8443/" }).publicBaseUrl).toBe(
      "https://api.example.com:8443",
    );
  });
});
