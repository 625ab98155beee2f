// @ts-check
/**
 * `npm start`: runs src/server.ts from one esbuild bundle (dist/start/server.cjs), rebuilt here whenever one of the
 * files it was built from changed, and compiled from V8's code cache of the previous start. Plain JavaScript so that
 * nothing needs compiling before it runs.
 *
 * Why a bundle rather than tsx: the server loads about 1,500 ES modules (typebox alone is ~700 files, viem ~350), and
 * through tsx each one goes through its resolve and load hooks; that alone took ~2 s of the first 402. One bundled
 * file loads in a fraction of that. Why CommonJS and a code cache: Node 20 has no compile cache for modules, but a
 * script compiled through `vm` takes V8's cached code, which spares parsing and compiling the 4.7 MB bundle and the
 * functions the start-up runs (a few hundred ms). The bundle is only for `npm start`: tests run the TypeScript
 * sources, production runs `npm run build`'s dist/src (`npm run start:prod`).
 */
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Script, constants as vmConstants } from "node:vm";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
export const DEFAULT_OUT_DIR = join(ROOT, "dist", "start");
const BUNDLE = "server.cjs";
const CODE_CACHE = "server.cjs.v8cache";
const MANIFEST = "inputs.json";

/**
 * Left to Node at run time: packages that find files beside themselves (a native addon; swagger's package.json and
 * Swagger UI's static files; pino's worker-thread transports), and pg's optional native binding.
 */
export const EXTERNAL = [
  "better-sqlite3",
  "pg-native",
  "@fastify/swagger",
  "@fastify/swagger-ui",
  "pino",
  "secp256k1",
];

/**
 * The files the bundle at `outDir` was built from whose size or modification time differs now (missing ones
 * included); every file, as `["(no manifest)"]`, when there is no readable manifest.
 * @param {string} outDir
 * @param {string} root
 * @returns {string[]}
 */
export function changedInputs(outDir, root = ROOT) {
  /** @type {{ inputs: Record<string, [number, number]> }} */
  let manifest;
  try {
    manifest = JSON.parse(readFileSync(join(outDir, MANIFEST), "utf8"));
    statSync(join(outDir, BUNDLE));
  } catch {
    return ["(no manifest)"];
  }
  const changed = [];
  for (const [file, [mtimeMs, size]] of Object.entries(manifest.inputs)) {
    try {
      const st = statSync(join(root, file));
      if (st.mtimeMs !== mtimeMs || st.size !== size) changed.push(file);
    } catch {
      changed.push(file);
    }
  }
  return changed;
}

/** @param {string} path @param {string | Uint8Array} contents */
function writeAtomically(path, contents) {
  // Renamed into place, so a concurrent `npm start` never reads half a file.
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, contents);
  renameSync(tmp, path);
}

/**
 * Bundles src/server.ts into `outDir`/server.cjs and records what it was built from.
 * @param {string} outDir
 * @returns {Promise<void>}
 */
export async function buildBundle(outDir) {
  const { build } = await import("esbuild");
  const startedAt = Date.now();
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: ["src/server.ts"],
    bundle: true,
    platform: "node",
    format: "cjs",
    target: "node20",
    external: EXTERNAL,
    // CommonJS has no import.meta: the sources' uses (finding the repository root, isMain) get the bundle's URL.
    define: { "import.meta.url": "__p402BundleUrl" },
    banner: { js: 'const __p402BundleUrl = require("node:url").pathToFileURL(__filename).href;' },
    outfile: join(outDir, BUNDLE),
    write: false,
    metafile: true,
    logLevel: "warning",
  });
  mkdirSync(outDir, { recursive: true });
  rmSync(join(outDir, CODE_CACHE), { force: true });
  for (const file of result.outputFiles) writeAtomically(file.path, file.contents);

  /** @type {Record<string, [number, number]>} */
  const inputs = {};
  let editedDuringBuild = false;
  // This launcher too: a change to how the bundle is built must rebuild it.
  const files = [...Object.keys(result.metafile.inputs), relative(ROOT, fileURLToPath(import.meta.url))];
  for (const file of files) {
    const st = statSync(join(ROOT, file));
    inputs[file] = [st.mtimeMs, st.size];
    if (st.mtimeMs >= startedAt) editedDuringBuild = true;
  }
  // A file saved while esbuild read it may not be in the bundle: leave no manifest, so the next start rebuilds.
  if (!editedDuringBuild) writeAtomically(join(outDir, MANIFEST), JSON.stringify({ inputs }));
}

/**
 * The bundle's path, built first when missing or out of date. Where there are no sources to build from (the
 * production image ships the bundle alone, see scripts/image-runtime.mjs), the bundle that is there is the one to run.
 * @param {string} [outDir]
 * @param {string} [root]
 * @returns {Promise<string>}
 */
export async function ensureBundle(outDir = DEFAULT_OUT_DIR, root = ROOT) {
  const bundle = join(outDir, BUNDLE);
  if (!existsSync(join(root, "src", "server.ts")) && existsSync(bundle)) return bundle;
  if (changedInputs(outDir, root).length > 0) await buildBundle(outDir);
  return bundle;
}

/**
 * Runs the bundle as a CommonJS module, compiled from its code cache when there is a usable one (V8 refuses a cache
 * made by another Node version or for other bytes). `saveCodeCache` writes the cache from what has been compiled so
 * far: called once the server is up, it covers the start-up's functions too, not only the top level.
 * @param {string} bundle
 * @returns {{ exports: Record<string, unknown>; cacheUsed: boolean; saveCodeCache(): void }}
 */
export function loadBundle(bundle) {
  const cachePath = join(dirname(bundle), CODE_CACHE);
  let cachedData;
  try {
    cachedData = readFileSync(cachePath);
  } catch {
    cachedData = undefined;
  }
  const source = readFileSync(bundle, "utf8");
  const script = new Script(`(function (exports, require, module, __filename, __dirname) {${source}\n})`, {
    filename: bundle,
    cachedData,
    importModuleDynamically: vmConstants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
  });
  const module = { exports: {} };
  script.runInThisContext()(module.exports, createRequire(bundle), module, bundle, dirname(bundle));
  const cacheUsed = cachedData !== undefined && !script.cachedDataRejected;
  return {
    exports: module.exports,
    cacheUsed,
    saveCodeCache: () => writeAtomically(cachePath, script.createCachedData()),
  };
}

/**
 * `npm ci`'s prepare step: builds the bundle ahead of the first `npm start`. Skipped, without failing the install, where
 * the sources or esbuild are not there (the production image installs before copying src/, or without dev packages).
 * @returns {Promise<void>}
 */
async function prebuild() {
  if (!existsSync(join(ROOT, "src", "server.ts"))) return;
  try {
    await import("esbuild");
  } catch {
    process.stdout.write(
      "pressure402: esbuild is not installed; `npm start` will need it (npm ci without --omit=dev)\n",
    );
    return;
  }
  await ensureBundle();
}

if (
  process.argv[1] &&
  import.meta.url === pathToFileURL(process.argv[1]).href &&
  process.argv[2] === "--build"
) {
  await prebuild();
} else if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  let bundle;
  try {
    bundle = await ensureBundle();
  } catch (err) {
    // esbuild has already printed what it could not compile, with the file and line.
    process.stderr.write(
      `pressure402: could not build the server (${err instanceof Error ? err.message.split("\n")[0] : err})\n`,
    );
    process.exit(1);
  }
  const server = loadBundle(bundle);
  const main = /** @type {() => Promise<boolean>} */ (server.exports.main);
  const started = await main();
  if (started && !server.cacheUsed) {
    // Off the start-up path; a start without a cache only means a slower start, so a failure here is not reported.
    setImmediate(() => {
      try {
        server.saveCodeCache();
      } catch {
        // read-only checkout or full disk
      }
    });
  }
}
