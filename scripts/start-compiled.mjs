// `npm start`'s entry point: the platform's TypeScript compiled to JavaScript
// by esbuild, file by file and without a type check (as tsx compiles it for
// the tests and start:distributed), into
// node_modules/.cache/bizcard-start/<hash of the sources>/, then its
// scripts/start.js run in this very process (so the pid npm start execs is the
// platform's, and signals reach it).
//
// Why not tsx here: through tsx's loader the same one process held 457-459 MB
// after the bench's OAuth rows, compiled 266-272 MB with the same flags
// (README, "The memory rows"): tsx's loader runs in a thread of its own, with
// its own V8 heap, and keeps every module's source map. A start compiles only
// when the sources changed (about 0.3 s for the ~300 files); the folders are
// written under another name and renamed into place, so two starts at once
// never run a half-written build, and the last KEEP builds are kept.
//
// Plain JavaScript: it runs before anything is compiled. Stack traces name the
// compiled files; NODE_OPTIONS=--enable-source-maps maps them to the sources
// (each file has its .map beside it).
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
/** What tsconfig.build.json compiles (the production image's dist/). */
const SOURCES = ["gen", "services", "gateway", "bin", "scripts"];
const CACHE = path.join(ROOT, "node_modules", ".cache", "bizcard-start");
/** Builds kept: this one and the two before it (a platform still running may import lazily from its own). */
const KEEP = 3;

async function typeScriptFiles(dir) {
  const files = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) files.push(...(await typeScriptFiles(file)));
    else if (entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts")) files.push(file);
  }
  return files;
}

const esbuildVersion = JSON.parse(readFileSync(path.join(ROOT, "node_modules", "esbuild", "package.json"), "utf8")).version;
const options = {
  outbase: ROOT,
  format: "esm",
  platform: "node",
  target: "node20",
  sourcemap: "linked",
  tsconfig: path.join(ROOT, "tsconfig.build.json"),
  logLevel: "error",
};

const files = (await Promise.all(SOURCES.map((dir) => typeScriptFiles(path.join(ROOT, dir))))).flat().sort();
const hash = createHash("sha256").update(`${esbuildVersion}\0${JSON.stringify({ ...options, outbase: "", tsconfig: readFileSync(options.tsconfig, "utf8") })}\0`);
for (const [file, text] of await Promise.all(files.map(async (f) => [f, await readFile(f)]))) {
  hash.update(`${path.relative(ROOT, file)}\0`).update(text).update("\0");
}
const out = path.join(CACHE, hash.digest("hex").slice(0, 20));

if (!existsSync(out)) {
  const esbuild = await import("esbuild");
  const partial = `${out}.partial-${process.pid}`;
  try {
    await esbuild.build({ ...options, entryPoints: files, outdir: partial });
    // Its .js files are ES modules: node_modules/package.json ends Node's search for a package scope.
    await writeFile(path.join(partial, "package.json"), '{ "type": "module" }\n');
    await rename(partial, out).catch((err) => {
      // Another start renamed the same build into place first.
      if (!existsSync(out)) throw err;
    });
  } finally {
    await rm(partial, { recursive: true, force: true });
    await esbuild.stop();
  }
  // Another start may rename or remove a folder meanwhile: what is gone is skipped.
  const listed = await Promise.all((await readdir(CACHE)).map(async (name) => ({ name, dir: path.join(CACHE, name), at: (await stat(path.join(CACHE, name)).catch(() => undefined))?.mtimeMs })));
  const entries = listed.filter((e) => e.at !== undefined);
  const builds = entries.filter((e) => !e.name.includes(".partial-")).sort((a, b) => b.at - a.at);
  // A start that died while compiling left its partial folder: gone after an hour.
  const abandoned = entries.filter((e) => e.name.includes(".partial-") && e.at < Date.now() - 3_600_000);
  for (const { dir } of [...builds.slice(KEEP), ...abandoned]) await rm(dir, { recursive: true, force: true });
}

await import(pathToFileURL(path.join(out, "scripts", "start.js")).href);
