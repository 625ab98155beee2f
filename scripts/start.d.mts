// Types of scripts/start.mjs (plain JavaScript so that `npm start` needs no compiler), for the tests.
export declare const DEFAULT_OUT_DIR: string;
export declare const EXTERNAL: readonly string[];
export declare function changedInputs(outDir: string, root?: string): string[];
export declare function buildBundle(outDir: string): Promise<void>;
export declare function ensureBundle(outDir?: string, root?: string): Promise<string>;
export declare function loadBundle(bundle: string): {
  exports: Record<string, unknown>;
  cacheUsed: boolean;
  saveCodeCache(): void;
};
