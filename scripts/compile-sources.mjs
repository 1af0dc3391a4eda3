// What every command of the project runs is compiled here first (scripts/run-compiled.mjs;
// the image's dist/ by scripts/build.mjs, with the same options):
// the TypeScript under `sources` compiled by esbuild without a type check (as
// tsx compiles it for the tests), into <cache>/<hash of the sources>/, file by
// file: each module keeps its imports as written, so the dependencies load
// from node_modules exactly as their authors ship them. Only when the sources
// changed: the hash covers every file's path and text, esbuild's version, the
// build's options and the tsconfig. A
// build is written under another name and renamed into place, so two starts
// at once never run a half-written one; the last `keep` builds are kept (a
// platform still running may import lazily from its own), and a partial
// folder a dead start left behind goes after an hour.
//
// Plain JavaScript: it runs before anything is compiled.
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";

const ESBUILD_VERSION = JSON.parse(
  readFileSync(createRequire(import.meta.url).resolve("esbuild/package.json"), "utf8"),
).version;

async function typeScriptFiles(dir) {
  const files = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) files.push(...(await typeScriptFiles(file)));
    else if (entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts")) files.push(file);
  }
  return files;
}

/** Drops builds beyond the newest `keep`, and partial folders older than an hour. */
async function prune(cache, keep) {
  // Another start may rename or remove a folder meanwhile: what is gone is skipped.
  const listed = await Promise.all(
    (await readdir(cache)).map(async (name) => ({
      name,
      dir: path.join(cache, name),
      at: (await stat(path.join(cache, name)).catch(() => undefined))?.mtimeMs,
    })),
  );
  const entries = listed.filter((e) => e.at !== undefined);
  const builds = entries.filter((e) => !e.name.includes(".partial-")).sort((a, b) => b.at - a.at);
  const abandoned = entries.filter((e) => e.name.includes(".partial-") && e.at < Date.now() - 3_600_000);
  for (const { dir } of [...builds.slice(keep), ...abandoned]) await rm(dir, { recursive: true, force: true });
}

/** The folders `root`/tsconfig.build.json compiles: every command's build's sources. */
export const buildSources = (root) => JSON.parse(readFileSync(path.join(root, "tsconfig.build.json"), "utf8")).include;

/** Builds running in this process, by folder: a second call for one waits for the first. */
const building = new Map();

/** The esbuild options of every build: one ES module per TypeScript file, its imports as written. */
const buildOptions = (root) => ({
  outbase: root,
  format: "esm",
  platform: "node",
  target: "node20",
  sourcemap: "linked",
  tsconfig: path.join(root, "tsconfig.build.json"),
  logLevel: "error",
});

const filesOf = async (root, sources) =>
  (await Promise.all(sources.map((dir) => typeScriptFiles(path.join(root, dir))))).flat().sort();

/**
 * Compiles `sources` (folders under `root`) with `root`/tsconfig.build.json
 * into a folder of `cache`, unless it is there already; resolves to that
 * folder.
 */
export async function compileSources({ root, sources, cache, keep = 3 }) {
  const options = buildOptions(root);
  const files = await filesOf(root, sources);
  const hashed = { ...options, outbase: "", tsconfig: readFileSync(options.tsconfig, "utf8") };
  const hash = createHash("sha256").update(`${ESBUILD_VERSION}\0${JSON.stringify(hashed)}\0`);
  for (const [file, text] of await Promise.all(files.map(async (f) => [f, await readFile(f)]))) {
    hash
      .update(`${path.relative(root, file)}\0`)
      .update(text)
      .update("\0");
  }
  const out = path.join(cache, hash.digest("hex").slice(0, 20));
  if (existsSync(out)) return out;
  if (!building.has(out))
    building.set(
      out,
      build(files, options, out).finally(() => building.delete(out)),
    );
  await building.get(out);
  await prune(cache, keep);
  return out;
}

/** The same build into `out` (the image's dist/), replacing what is there. */
export async function compileInto({ root, sources, out }) {
  const files = await filesOf(root, sources);
  await rm(out, { recursive: true, force: true });
  await build(files, buildOptions(root), out);
  return out;
}

async function build(files, options, out) {
  const esbuild = await import("esbuild");
  const partial = `${out}.partial-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  try {
    await esbuild.build({ entryPoints: files, ...options, outdir: partial });
    // Its .js files are ES modules: node_modules/package.json ends Node's search for a package scope.
    await writeFile(path.join(partial, "package.json"), '{ "type": "module" }\n');
    await rename(partial, out).catch((err) => {
      // Another start renamed the same build into place first.
      if (!existsSync(out)) throw err;
    });
  } finally {
    await rm(partial, { recursive: true, force: true });
    // esbuild's service process is shared by the builds of this process: stopped after the last.
    if (building.size <= 1) await esbuild.stop();
  }
  return out;
}
