/**
 * scripts/compile-sources.mjs: compiles `sources` (folders under `root`) file by file into a folder of `cache` named by their hash, unless it is there; resolves to it.
 */
export function compileSources(options: {
  root: string;
  sources: string[];
  cache: string;
  keep?: number;
}): Promise<string>;
/** The folders `root`/tsconfig.build.json compiles. */
export function buildSources(root: string): string[];
/** The same build into `out`, replacing what is there; resolves to `out`. */
export function compileInto(options: { root: string; sources: string[]; out: string }): Promise<string>;
