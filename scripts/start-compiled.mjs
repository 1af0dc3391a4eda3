// `npm start`'s entry point: the platform's TypeScript compiled to JavaScript
// and bundled from scripts/start.ts (compile-sources.mjs: esbuild, into
// node_modules/.cache/bizcard-start/<hash of the sources>/, only when they
// changed), then its scripts/start.js run in this very process (so the pid npm
// start execs is the platform's, and signals reach it).
//
// Why not tsx here: through tsx's loader the same one process held 457-459 MB
// after the bench's OAuth rows, compiled 266-272 MB with the same flags
// (docs/benchmark.md, "The memory rows"): tsx's loader runs in a thread of its own, with
// its own V8 heap, and keeps every module's source map.
//
// Plain JavaScript: it runs before anything is compiled. Stack traces name the
// compiled files; NODE_OPTIONS=--enable-source-maps maps them to the sources
// (each file has its .map beside it).
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { compileSources } from "./compile-sources.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
// Bundled from here; its output keeps the path, as .js (compile-sources.mjs).
const ENTRY = "scripts/start.ts";
const out = await compileSources({
  root: ROOT,
  // The folders tsconfig.build.json compiles (the production image's dist/).
  sources: JSON.parse(readFileSync(path.join(ROOT, "tsconfig.build.json"), "utf8")).include,
  cache: path.join(ROOT, "node_modules", ".cache", "bizcard-start"),
  entry: ENTRY,
});
await import(pathToFileURL(path.join(out, ENTRY.replace(/\.ts$/, ".js"))).href);
