// `npm start`'s entry point: the platform's TypeScript compiled to JavaScript
// file by file (compile-sources.mjs: esbuild, into
// node_modules/.cache/bizcard-start/<hash of the sources>/, only when they
// changed), then its scripts/start.js run in this very process (so the pid npm
// start execs is the platform's, and signals reach it).
//
// Why not tsx here: tsx's loader runs in a thread of its own, with its own V8
// heap, and keeps every module's source map; compiled, the platform holds far
// less memory (docs/benchmark.md, "The memory rows").
//
// Plain JavaScript: it runs before anything is compiled. Stack traces name the
// compiled files; NODE_OPTIONS=--enable-source-maps maps them to the sources
// (each file has its .map beside it).
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { compileSources } from "./compile-sources.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const ENTRY = "scripts/start.ts";
const out = await compileSources({
  root: ROOT,
  // The folders tsconfig.build.json compiles (the production image's dist/).
  sources: JSON.parse(readFileSync(path.join(ROOT, "tsconfig.build.json"), "utf8")).include,
  cache: path.join(ROOT, "node_modules", ".cache", "bizcard-start"),
});
await import(pathToFileURL(path.join(out, ENTRY.replace(/\.ts$/, ".js"))).href);
