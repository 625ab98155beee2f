import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config.js";

/*
 * The README's `docker run` lines, as written: each one's environment (the image's ENV plus its `-e` flags, the
 * placeholders filled in) must pass the production configuration check the container runs first, so none exits 1
 * for a variable it forgot. Running the lines themselves needs a Docker daemon and the built image (scripts/image.sh
 * and test/e2e/image.test.ts do that where one answers).
 */
const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const readme = readFileSync(join(ROOT, "README.md"), "utf8");
const dockerfile = readFileSync(join(ROOT, "Dockerfile"), "utf8");
const scratch = mkdtempSync(join(tmpdir(), "p402-readme-deploy-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Every `docker run` command of the README's shell blocks, continuation lines joined. */
function dockerRuns(): string[] {
  const blocks = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1] as string);
  return blocks
    .flatMap((b) => b.replace(/\\\n\s*/g, " ").split("\n"))
    .filter((l) => l.trim().startsWith("docker run"));
}

/** The runtime stage's ENV (the last FROM onwards). */
function imageEnv(): Record<string, string> {
  const runtime = dockerfile.slice(dockerfile.lastIndexOf("\nFROM "));
  const env: Record<string, string> = {};
  for (const line of runtime.split("\n").filter((l) => l.startsWith("ENV ")))
    for (const [, k, v] of line.slice(4).matchAll(/(\w+)=(\S+)/g)) env[k as string] = v as string;
  return env;
}

const secretFile = join(scratch, "cdp");
writeFileSync(secretFile, "c2VjcmV0LWZvci10ZXN0cw==\n");
/** The README's placeholders, as an operator fills them in. */
const fill = (value: string) =>
  value
    .replace("0xYourBaseAddress", "0x00000000000000000000000000000000000000aa")
    .replace("/run/secrets/cdp", secretFile)
    .replace(/^\.\.\.$/, "operator-value");

describe("the README's docker run lines", () => {
  const runs = dockerRuns();

  it("are there: a Base Sepolia rehearsal and a mainnet setup", () => {
    expect(runs.length).toBeGreaterThanOrEqual(2);
    expect(runs.some((r) => r.includes("NETWORK=eip155:84532"))).toBe(true);
    expect(runs.some((r) => r.includes("CDP_API_KEY_ID"))).toBe(true);
  });

  for (const run of dockerRuns()) {
    it(`passes the production start-up check: ${run.slice(0, 90)}…`, () => {
      expect(run).not.toContain(" ... ");
      const env: Record<string, string> = { ...imageEnv() };
      for (const [, k, v] of run.matchAll(/-e (\w+)=(\S+)/g)) env[k as string] = fill(v as string);
      expect(env.NODE_ENV).toBe("production");
      const config = parseConfig(env);
      expect(config.facilitator.kind).not.toBe("devnet");
      // The public testnet facilitator settles testnets only: it is never paired with Base mainnet.
      if (env.FACILITATOR_URL?.includes("x402.org")) expect(config.network.testnet).toBe(true);
    });
  }

  // Running the image is test/e2e/image.test.ts's (it skips, saying why, where no daemon answers).
  if (spawnSync("docker", ["info"], { stdio: "ignore" }).status !== 0)
    process.stdout.write(
      "readme-deploy: no Docker daemon answers `docker info`; the image itself is not run here\n",
    );
});
