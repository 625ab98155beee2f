// @ts-check
/**
 * `node scripts/image-runtime.mjs <dir>`: assembles what the production image runs, in `dir` (the Dockerfile's build
 * stage, and `scripts/image.sh --rehearse`), from a checkout where `npm ci` has run:
 *
 *   package.json, scripts/start.mjs   the `npm start` launcher (it runs the bundle as it is where there are no sources)
 *   dist/start/server.cjs + .v8cache  the `npm start` bundle, and V8's code cache of its top level
 *   dist/receipts.mjs                 `npm run receipts` as one file (the accounting export, `docker exec`)
 *   dist/ledger.mjs                   `npm run ledger` as one file (backup, verify, reconcile; `docker exec`)
 *   node_modules/                     only the packages the bundles leave to Node (start.mjs's EXTERNAL) and theirs
 *   data/*.snapshot.json              the two snapshots the server loads (the raw data they are built from stays out),
 *   data/circulating-reported/*.csv   the reported circulating supply the unlock store anchors on,
 *   data/coingecko-ids.json           the token → coin id map the refresh matches reported supply by,
 *   data/x402-catalog, data/bazaar    and the market's inputs the Bazaar refresh rebuilds the catalog from
 *
 * Why not `npm prune --omit=dev`: the bundles already hold every other production package, so a pruned node_modules
 * (over 100 MB) would ship them twice. Why not a file tracer (@vercel/nft): the externals are six packages named in
 * start.mjs; their dependency closure is a short walk of package.json files, and a missing one fails the image check.
 */
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { EXTERNAL, ensureBundle, loadBundle } from "./start.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

/** Dependencies only an install runs (better-sqlite3 downloads prebuilt binaries with it; the image compiles one). */
const INSTALL_ONLY = new Set(["prebuild-install"]);

/** What a package needs at run time, per package; everything else of it stays out (sources, build leftovers). */
const KEEP = {
  // Its addon (build/Release/better_sqlite3.node) and the JavaScript that loads it; not SQLite's sources (deps/, src/)
  // nor the compiler's objects.
  "better-sqlite3": (/** @type {string} */ rel) =>
    rel === "" ||
    rel === "package.json" ||
    rel.startsWith("lib") ||
    /^build(\/Release(\/better_sqlite3\.node)?)?$/.test(rel),
};

/** Files Node never loads from a package: TypeScript sources and declarations, source maps (~7 MB of the 28). */
const NOT_LOADED = /\.(?:[cm]?ts|map)$/;

/** The installed copy of `name` that a module in `fromDir` gets (Node's node_modules lookup, upwards to the root). */
function locate(name, fromDir, root) {
  for (let dir = fromDir; ; dir = dirname(dir)) {
    const candidate = join(dir, "node_modules", name);
    if (existsSync(join(candidate, "package.json"))) return candidate;
    if (dir === root || dirname(dir) === dir) return undefined;
  }
}

/**
 * The installed package directories the `names` need: themselves and, transitively, their dependencies (optional and
 * peer ones when installed). A missing required dependency is an error: the image would fail when it is loaded.
 * @param {readonly string[]} names
 * @param {string} root
 * @returns {string[]} directories relative to `root`, sorted
 */
export function runtimePackages(names, root = ROOT) {
  const found = new Set();
  /** @type {[string, string, boolean][]} */
  const queue = names.map((n) => [n, root, true]);
  // pg's optional native binding is left external but is not installed: pg falls back to JavaScript.
  queue.forEach((entry) => {
    if (!locate(entry[0], root, root)) entry[2] = false;
  });
  while (queue.length > 0) {
    const [name, from, required] = /** @type {[string, string, boolean]} */ (queue.shift());
    const dir = locate(name, from, root);
    if (!dir) {
      if (required)
        throw new Error(`${name} (needed by ${relative(root, from) || "the bundle"}) is not installed`);
      continue;
    }
    if (found.has(dir)) continue;
    found.add(dir);
    const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
    for (const dep of Object.keys(pkg.dependencies ?? {}))
      if (!INSTALL_ONLY.has(dep)) queue.push([dep, dir, !(dep in (pkg.optionalDependencies ?? {}))]);
    for (const dep of Object.keys({ ...pkg.optionalDependencies, ...pkg.peerDependencies }))
      queue.push([dep, dir, false]);
  }
  return [...found].map((d) => relative(root, d)).sort();
}

/** Copies one package without its nested node_modules (the closure copies the nested packages it needs itself). */
function copyPackage(root, rel, out) {
  const name = rel.split(`node_modules${sep}`).at(-1) ?? rel;
  const keep = KEEP[/** @type {keyof typeof KEEP} */ (name)];
  const from = join(root, rel);
  cpSync(from, join(out, rel), {
    recursive: true,
    filter: (src) => {
      const inner = relative(from, src).split(sep).join("/");
      if (inner === "node_modules" || inner.startsWith("node_modules/")) return false;
      if (NOT_LOADED.test(inner)) return false;
      return keep ? keep(inner) : true;
    },
  });
}

/** The receipts export and the ledger command as ES modules (they await at top level, which CommonJS cannot). */
async function buildReceipts(out) {
  await buildTool(out, "receipts");
  await buildTool(out, "ledger");
}

async function buildTool(out, name) {
  const { build } = await import("esbuild");
  await build({
    absWorkingDir: ROOT,
    entryPoints: [`scripts/${name}.ts`],
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    external: [...EXTERNAL],
    // Bundled CommonJS packages call require(); an ES module has none, so give it Node's.
    banner: {
      js: 'import { createRequire as __p402Require } from "node:module"; const require = __p402Require(import.meta.url);',
    },
    outfile: join(out, "dist", `${name}.mjs`),
    logLevel: "warning",
  });
}

/**
 * Fills `out` (emptied first) with the runtime tree.
 * @param {string} out
 * @param {string} [root]
 */
export async function assembleRuntime(out, root = ROOT) {
  rmSync(out, { recursive: true, force: true });
  mkdirSync(join(out, "scripts"), { recursive: true });
  const bundle = await ensureBundle();
  cpSync(bundle, join(out, "dist", "start", "server.cjs"));
  cpSync(join(root, "package.json"), join(out, "package.json"));
  cpSync(join(root, "scripts", "start.mjs"), join(out, "scripts", "start.mjs"));
  // The snapshots, the reported circulating supply the unlock store anchors on, the coin id map and the market's inputs.
  for (const file of [
    "unlocks.snapshot.json",
    "catalog.snapshot.json",
    "circulating-reported/coinmarketcap-monthly.csv",
    "coingecko-ids.json",
    "x402-catalog/catalog.json",
  ])
    cpSync(join(root, "data", file), join(out, "data", file));
  // The market's inputs: the live Bazaar refresh rebuilds the catalog from them plus the listing it fetched.
  cpSync(join(root, "data", "bazaar"), join(out, "data", "bazaar"), { recursive: true });
  for (const rel of runtimePackages(EXTERNAL, root)) copyPackage(root, rel, out);
  await buildReceipts(out);
  // The code cache of the bundle's top level (every module's initialisation), made with the Node that will run it;
  // the image's root file system is read-only, so `npm start` could not write one there.
  const placed = loadBundle(join(out, "dist", "start", "server.cjs"));
  placed.saveCodeCache();
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const out = process.argv[2];
  if (!out) {
    process.stderr.write("usage: node scripts/image-runtime.mjs <output-dir>\n");
    process.exit(2);
  }
  await assembleRuntime(resolve(out));
  process.stdout.write(`image-runtime: assembled ${resolve(out)}\n`);
}
