import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config.js";
import { start } from "../../src/server.js";

/*
 * The README's integration paths, run as written against the real server on the embedded devnet: the curl walk-through
 * and the @x402/fetch and @x402/axios snippets must each move exactly the route's price on chain. The snippets are
 * taken from the README itself and run in a fresh `npm init -y` project (CommonJS, no tsconfig), as a newcomer would
 * paste them; its node_modules is this repository's (the packages the README says to install), so nothing is fetched.
 */
const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const README = readFileSync(join(ROOT, "README.md"), "utf8");
let server: Awaited<ReturnType<typeof start>>;
let dir: string;
let fresh: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "p402-integrators-"));
  server = await start(
    parseConfig({
      NODE_ENV: "test",
      PORT: "0",
      LOG_LEVEL: "silent",
      LEDGER_PATH: join(dir, "ledger.sqlite"),
      REFRESH_INTERVAL_SECONDS: "0", // loopback only: the shipped data, never refreshed
    }),
  );
  fresh = join(dir, "fresh-project");
  mkdirSync(fresh);
  const init = await exec("npm", ["init", "-y"], {}, fresh);
  if (init.code !== 0) throw new Error(`npm init -y failed: ${init.stderr}`);
  symlinkSync(join(ROOT, "node_modules"), join(fresh, "node_modules"), "dir");
}, 120_000);

afterAll(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
  rmSync(join(ROOT, "headers.txt"), { force: true });
});

const devnet = () => {
  if (!server.devnet) throw new Error("expected the embedded devnet");
  return server.devnet;
};

const exec = (file: string, args: string[], env: Record<string, string>, cwd = ROOT) =>
  new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(file, args, { cwd, env: { ...process.env, ...env }, timeout: 90_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });

/** Runs `fn` and returns what payTo received meanwhile, in atomic USDC. */
async function received(fn: () => Promise<void>): Promise<bigint> {
  const before = await devnet().balanceOf(devnet().payTo);
  await fn();
  return (await devnet().balanceOf(devnet().payTo)) - before;
}

/** The README's TypeScript snippet shown for `file`. */
function readmeSnippet(file: string): string {
  const code = README.match(new RegExp(`<!-- snippet:${file} -->\\n\`\`\`ts\\n([\\s\\S]*?)\\n\`\`\``))?.[1];
  if (!code) throw new Error(`no snippet of ${file} in README.md`);
  return code;
}

/** Pastes a README snippet into the fresh project and runs it there with tsx, as `npx tsx snippet.ts` would. */
async function runInFreshProject(file: string, env: Record<string, string>) {
  const name = basename(file);
  writeFileSync(join(fresh, name), readmeSnippet(file));
  return exec(join(fresh, "node_modules", ".bin", "tsx"), [name], env, fresh);
}

describe("README: integrators' path", () => {
  it("runs the snippets in a project as `npm init -y` makes it: CommonJS, no tsconfig", () => {
    const pkg = JSON.parse(readFileSync(join(fresh, "package.json"), "utf8")) as { type?: string };
    expect(pkg.type ?? "commonjs").toBe("commonjs");
  });

  for (const file of [
    "scripts/examples/pay-with-fetch.ts",
    "scripts/examples/pay-with-axios.ts",
    "scripts/examples/pay-with-mcp.ts",
  ]) {
    it(`shows ${file} verbatim`, () => {
      const code = readFileSync(join(ROOT, file), "utf8").trimEnd();
      expect(README).toContain(`<!-- snippet:${file} -->\n\`\`\`ts\n${code}\n\`\`\``);
    });
  }

  it("the @x402/fetch snippet pays POST /v1/token/risk-summary (0.25 USDC) and prints the settlement", async () => {
    const buyer = devnet().buyers[2]!;
    let out = { code: 0, stdout: "", stderr: "" };
    const paid = await received(async () => {
      out = await runInFreshProject("scripts/examples/pay-with-fetch.ts", {
        BASE_URL: server.address,
        BUYER_PRIVATE_KEY: buyer.privateKey,
      });
    });
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toMatch(/^200 ARB \d+/);
    expect(out.stdout).toMatch(/transaction: '0x[0-9a-f]{64}'/);
    expect(paid).toBe(250000n);
  }, 120_000);

  it("the @x402/axios snippet pays GET /v1/unlocks/upcoming (0.02 USDC) with the defaults applied", async () => {
    const buyer = devnet().buyers[3]!;
    let out = { code: 0, stdout: "", stderr: "" };
    const paid = await received(async () => {
      out = await runInFreshProject("scripts/examples/pay-with-axios.ts", {
        BASE_URL: server.address,
        BUYER_PRIVATE_KEY: buyer.privateKey,
      });
    });
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toMatch(/^200 30 \d+/);
    expect(out.stdout).toMatch(/transaction: '0x[0-9a-f]{64}'/);
    expect(paid).toBe(20000n);
  }, 120_000);

  it("the MCP snippet pays the unlock_risk tool (0.10 USDC) and prints the settlement from _meta", async () => {
    const buyer = devnet().buyers[6]!;
    let out = { code: 0, stdout: "", stderr: "" };
    const paid = await received(async () => {
      out = await runInFreshProject("scripts/examples/pay-with-mcp.ts", {
        BASE_URL: server.address,
        BUYER_PRIVATE_KEY: buyer.privateKey,
      });
    });
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toMatch(/^ok ARB \d+(\.\d+)? \w+/);
    expect(out.stdout).toMatch(/transaction: '0x[0-9a-f]{64}'/);
    expect(paid).toBe(100000n);
  }, 120_000);

  it("the curl walk-through pays as written: 402, decode, sign, retry, settlement", async () => {
    const block = README.match(
      /<!-- curl-dance:start -->\n```sh\n([\s\S]*?)```\n<!-- curl-dance:end -->/,
    )?.[1];
    expect(block).toBeDefined();
    const buyer = devnet().buyers[5]!;
    let out = { code: 0, stdout: "", stderr: "" };
    const paid = await received(async () => {
      out = await exec("bash", ["-euo", "pipefail", "-c", block as string], {
        BASE_URL: server.address,
        BUYER_PRIVATE_KEY: buyer.privateKey,
      });
    });
    expect(out.code, out.stderr).toBe(0);
    const lines = out.stdout.trim().split("\n");
    expect(JSON.parse(lines[0]!)).toEqual({
      amount: "250000",
      payTo: devnet().payTo,
      network: "eip155:8453",
      asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
    });
    expect(JSON.parse(lines[1]!)).toMatchObject({ token: "ARB" });
    expect(JSON.parse(lines[2]!)).toMatchObject({
      success: true,
      transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/),
    });
    expect(paid).toBe(250000n);
  }, 120_000);
});
