import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root: the nearest ancestor of this module holding package.json (works from src/ and dist/src/). */
export function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, "package.json"))) return dir;
    const parent = dirname(dir);
    if (parent === dir) throw new Error("repository root (package.json) not found above src/files");
    dir = parent;
  }
}

/** A file of the shipped data/ folder. */
export const dataPath = (file: string): string => join(repoRoot(), "data", file);
