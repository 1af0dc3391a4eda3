// How a checkout runs the project's TypeScript: compiled to JavaScript file by
// file (compile-sources.mjs: esbuild, into
// node_modules/.cache/bizcard-start/<hash of the sources>/, again only after
// the sources changed), the same build for every command: `npm start`,
// `npm run start:distributed` and its children, and `bizcard`. The image runs
// the same build from dist/ (scripts/build.mjs).
//
//   node scripts/run-compiled.mjs <entry.ts> [args…]   runs the entry in this process
//   node scripts/run-compiled.mjs                      compiles only (npm's postinstall)
//
// In this very process, so that the pid npm execs is the platform's and
// signals reach it. Not through tsx: its loader runs in a thread of its own,
// with its own V8 heap, and keeps every module's source map
// (docs/benchmark.md, "The memory rows").
//
// Plain JavaScript: it runs before anything is compiled. Stack traces name the
// compiled files; NODE_OPTIONS=--enable-source-maps maps them to the sources
// (each file has its .map beside it).
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { buildSources, compileSources } from "./compile-sources.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** The build of this checkout's sources; resolves to its folder. */
export function compiledBuild() {
  return compileSources({
    root: ROOT,
    sources: buildSources(ROOT),
    cache: path.join(ROOT, "node_modules", ".cache", "bizcard-start"),
  });
}

/** The compiled module of `entry` (a .ts path under the checkout), as a URL to import. */
export async function compiledEntry(entry) {
  return pathToFileURL(path.join(await compiledBuild(), entry.replace(/\.ts$/, ".js"))).href;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const entry = process.argv[2];
  if (!entry) {
    // npm's postinstall: nothing to compile where only the install's files are (the image's first stage).
    if (existsSync(path.join(ROOT, "tsconfig.build.json"))) await compiledBuild();
  } else {
    // The entry reads its own arguments from process.argv[2] on, as if run directly.
    process.argv.splice(2, 1);
    await import(await compiledEntry(entry));
  }
}
