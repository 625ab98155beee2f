// @ts-check
/**
 * `npm start`: runs src/server.ts from one esbuild bundle (dist/start/server.mjs), rebuilt here whenever one of the
 * files it was built from changed. Plain JavaScript so that nothing needs compiling before it runs.
 *
 * Why a bundle rather than tsx: the server loads about 1,500 ES modules (typebox alone is ~700 files, viem ~350), and
 * through tsx each one goes through its resolve and load hooks; that alone took ~2 s of the first 402. One bundled
 * file loads in a fraction of that. The bundle is only for `npm start`: tests run the TypeScript sources, production
 * runs `npm run build`'s dist/src (`npm run start:prod`).
 */
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
export const DEFAULT_OUT_DIR = join(ROOT, "dist", "start");
const BUNDLE = "server.mjs";
const MANIFEST = "inputs.json";

/**
 * Left to Node at run time: packages that find files beside themselves (a native addon; swagger's package.json and
 * Swagger UI's static files; pino's worker-thread transports), and pg's optional native binding. An external is
 * imported at the bundle's top, so one only the PostgreSQL ledger needs (pg) is bundled: its code then runs only when
 * LEDGER_URL asks for it.
 */
export const EXTERNAL = ["better-sqlite3", "pg-native", "@fastify/swagger", "@fastify/swagger-ui", "pino"];

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

/**
 * Bundles src/server.ts into `outDir`/server.mjs and records what it was built from. Written under temporary names
 * and renamed, so a concurrent `npm start` never loads half a file.
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
    format: "esm",
    target: "node20",
    external: EXTERNAL,
    // Bundled CommonJS packages call require() for Node built-ins; an ES module has none of its own.
    banner: {
      js: 'import { createRequire as __p402CreateRequire } from "node:module"; const require = __p402CreateRequire(import.meta.url);',
    },
    // For `node --enable-source-maps`; Node reads no map unless asked to.
    sourcemap: "linked",
    sourcesContent: false,
    outfile: join(outDir, BUNDLE),
    write: false,
    metafile: true,
    logLevel: "warning",
  });
  mkdirSync(outDir, { recursive: true });
  const tmp = `.${process.pid}.tmp`;
  for (const file of result.outputFiles) writeFileSync(file.path + tmp, file.contents);
  for (const file of result.outputFiles) renameSync(file.path + tmp, file.path);

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
  if (editedDuringBuild) return;
  writeFileSync(join(outDir, MANIFEST + tmp), JSON.stringify({ inputs }));
  renameSync(join(outDir, MANIFEST + tmp), join(outDir, MANIFEST));
}

/**
 * The bundle's path, built first when missing or out of date.
 * @param {string} [outDir]
 * @returns {Promise<string>}
 */
export async function ensureBundle(outDir = DEFAULT_OUT_DIR) {
  if (changedInputs(outDir).length > 0) await buildBundle(outDir);
  return join(outDir, BUNDLE);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
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
  const server = await import(pathToFileURL(bundle).href);
  server.main();
}
