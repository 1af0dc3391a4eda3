/**
 * scripts/compile-sources.mjs: compiles `sources` (folders under `root`) into a folder of `cache` named by their hash, unless it is there; resolves to it.
 * `entry` (a path under `root`): bundled from that entry, its output at the same path (.js), instead of file by file.
 */
export function compileSources(options: { root: string; sources: string[]; cache: string; keep?: number; entry?: string }): Promise<string>;
/** The packages a bundle leaves to Node's loader (esbuild `external` patterns). */
export const BUNDLE_EXTERNAL: string[];
