import { lookup } from "node:dns/promises";
import { accessSync, constants, statfsSync, statSync } from "node:fs";
import { createServer } from "node:net";
import { dirname, resolve } from "node:path";
import type { Config } from "./config.js";
import { dataPath } from "./files/paths.js";

/**
 * Start-up checks that need the file system or the network, run before anything slow (the devnet takes seconds) so
 * a wrong path, host or port is reported at once. Each problem is one line: the variable, what is wrong, what to set.
 */
export async function preflight(config: Config): Promise<string[]> {
  const problems = [
    readableFile("UNLOCKS_SNAPSHOT", config.unlocksSnapshot, "unlocks.snapshot.json", "npm run snapshot"),
    readableFile(
      "CATALOG_SNAPSHOT",
      config.catalogSnapshot,
      "catalog.snapshot.json",
      "npm run build:catalog",
    ),
    writableLedger(config.ledgerPath),
  ];
  if (config.facilitator.kind === "devnet") problems.push(await anvilBinary(config.anvilBin));
  const address = await hostAndPort(config.host, config.port);
  problems.push(address);
  if (config.facilitator.kind === "devnet" && config.devnetAnvilPort !== 0)
    problems.push(
      await portFree(
        "127.0.0.1",
        config.devnetAnvilPort,
        "DEVNET_ANVIL_PORT",
        "set another port or 0 for any",
      ),
    );
  if (config.facilitator.kind === "devnet" && config.devnetFacilitatorPort !== 0)
    problems.push(
      await portFree(
        "127.0.0.1",
        config.devnetFacilitatorPort,
        "DEVNET_FACILITATOR_PORT",
        "set another port or 0 for any",
      ),
    );
  return problems.filter((p): p is string => p !== undefined);
}

const errno = (err: unknown) => (err as NodeJS.ErrnoException).code ?? "error";

function readableFile(
  name: string,
  configured: string | undefined,
  defaultFile: string,
  rebuild: string,
): string | undefined {
  const file = resolve(configured ?? dataPath(defaultFile));
  const which = configured ? `${name}=${configured}` : `${name} (default ${file})`;
  try {
    if (!statSync(file).isFile()) return `${which}: ${file} is not a file; set ${name} to the snapshot file`;
    accessSync(file, constants.R_OK);
    return undefined;
  } catch (err) {
    const code = errno(err);
    return code === "ENOENT"
      ? `${which}: ${file} does not exist; set ${name} to the snapshot file (\`${rebuild}\` builds one)`
      : `${which}: cannot read ${file} (${code}); fix its permissions or set ${name} to a readable file`;
  }
}

/**
 * Linux pseudo-filesystems (statfs f_type) that look writable to root but hold no files: SQLite cannot create its
 * database there, and Node's recursive mkdir loops forever under /proc instead of failing.
 */
const PSEUDO_FILESYSTEMS: ReadonlyMap<number, string> = new Map([
  [0x9fa0, "proc"],
  [0x62656572, "sysfs"],
  [0x27e0eb, "cgroup"],
  [0x63677270, "cgroup2"],
  [0x64626720, "debugfs"],
  [0x74726163, "tracefs"],
  [0x73636673, "securityfs"],
  [0x1cd1, "devpts"],
  [0xcafe4a11, "bpf"],
  [0x6165676c, "pstore"],
  [0x62656570, "configfs"],
  [0xf97cff8c, "selinuxfs"],
  [0xde5e81e4, "efivarfs"],
  [0x65735543, "fusectl"],
]);

/** The pseudo-filesystem `dir` is on, if it is on one. */
function pseudoFilesystem(dir: string): string | undefined {
  try {
    return PSEUDO_FILESYSTEMS.get(statfsSync(dir).type);
  } catch {
    return undefined; // statfs unsupported or refused: the access checks decide
  }
}

/** The ledger file must be writable, or creatable in its directory (or the nearest existing ancestor of it). */
function writableLedger(path: string): string | undefined {
  if (path === ":memory:") return undefined;
  const file = resolve(path);
  const fix = "set LEDGER_PATH to a file in a writable directory";
  const onPseudoFs = (dir: string) => {
    const fs = pseudoFilesystem(dir);
    return (
      fs &&
      `LEDGER_PATH=${path}: ${dir} is on the kernel's ${fs} filesystem, which cannot hold a database; ${fix}`
    );
  };
  try {
    const stat = statSync(file);
    if (!stat.isFile()) return `LEDGER_PATH=${path}: ${file} is not a file; ${fix}`;
    const pseudo = onPseudoFs(dirname(file));
    if (pseudo) return pseudo;
    accessSync(file, constants.R_OK | constants.W_OK);
    accessSync(dirname(file), constants.W_OK); // SQLite's WAL and journal files live beside it
    return undefined;
  } catch (err) {
    // ENOENT/ENOTDIR: no file yet, or a path component is not a directory; the walk below says which.
    if (errno(err) !== "ENOENT" && errno(err) !== "ENOTDIR")
      return `LEDGER_PATH=${path}: cannot write ${file} (${errno(err)}); ${fix}`;
  }
  let dir = dirname(file);
  for (;;) {
    try {
      if (!statSync(dir).isDirectory()) return `LEDGER_PATH=${path}: ${dir} is not a directory; ${fix}`;
      const pseudo = onPseudoFs(dir);
      if (pseudo) return pseudo;
      accessSync(dir, constants.W_OK | constants.X_OK);
      return undefined;
    } catch (err) {
      if (errno(err) === "ENOTDIR") return `LEDGER_PATH=${path}: ${dir} is not a directory; ${fix}`;
      if (errno(err) !== "ENOENT")
        return `LEDGER_PATH=${path}: cannot create files in ${dir} (${errno(err)}); ${fix}`;
    }
    const parent = dirname(dir);
    if (parent === dir) return `LEDGER_PATH=${path}: no existing directory above ${file}; ${fix}`;
    dir = parent;
  }
}

async function anvilBinary(configured: string | undefined): Promise<string | undefined> {
  if (!configured) {
    try {
      // Imported lazily, as the devnet is: production images do not ship it.
      const { resolveAnvilBinary } = await import("./devnet/anvil.js");
      resolveAnvilBinary();
      return undefined;
    } catch (err) {
      return `ANVIL_BIN: ${(err as Error).message.replace(/^devnet: /, "")}`;
    }
  }
  try {
    if (!statSync(configured).isFile()) throw Object.assign(new Error(), { code: "EISDIR" });
    accessSync(configured, constants.X_OK);
    return undefined;
  } catch (err) {
    return `ANVIL_BIN=${configured}: not an executable file (${errno(err)}); set ANVIL_BIN to anvil's path, or unset it to use the npm package's binary`;
  }
}

async function hostAndPort(host: string, port: number): Promise<string | undefined> {
  try {
    await lookup(host);
  } catch (err) {
    return `HOST=${host}: does not resolve (${errno(err)}); set HOST to an address or name of this machine (127.0.0.1, 0.0.0.0, ::)`;
  }
  return portFree(host, port, "PORT", "stop the other process or set PORT to a free port (0 picks one)");
}

/** Binds host:port once and lets go: the cheapest true answer to "can we listen there?". */
export function portFree(
  host: string,
  port: number,
  name: string,
  fixInUse: string,
): Promise<string | undefined> {
  return new Promise((done) => {
    const probe = createServer();
    probe.once("error", (err) => done(listenProblem(err, host, port, name, fixInUse)));
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => done(undefined)));
  });
}

/** One line for a failed listen (also used when the real listen fails after the probe, in a race). */
export function listenProblem(
  err: unknown,
  host: string,
  port: number,
  name = "PORT",
  fixInUse = "stop the other process or set PORT to a free port (0 picks one)",
): string {
  switch (errno(err)) {
    case "EADDRINUSE":
      return `${name}=${port}: already in use on ${host}; ${fixInUse}`;
    case "EACCES":
      return `${name}=${port}: not permitted on ${host} (ports below 1024 need privileges); set ${name} above 1023`;
    case "EADDRNOTAVAIL":
      return `HOST=${host}: not an address of this machine; set HOST to one (127.0.0.1, 0.0.0.0, ::)`;
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return `HOST=${host}: does not resolve; set HOST to an address or name of this machine`;
    default:
      return `HOST=${host} PORT=${port}: cannot listen (${errno(err)}); check HOST and PORT`;
  }
}
