// npm's postinstall: the embedded default's first start needs a PostgreSQL
// cluster for each service, and initdb (PGlite's, in WebAssembly) takes about
// 5 s and peaks at about 700 MB. Made once here, at install, into
// node_modules/.cache/bizcard-pglite/<PGlite version>/, the first `npm start`
// copies it for each service instead (scripts/embedded/embedded-postgres.ts),
// as later starts open their folders; then pglite-migrated-template.ts
// applies the services' migrations to a copy of it, in a process of its own,
// compiled as every command runs the TypeScript (run-compiled.mjs: the
// checkout's one build, compiled first when the cache lacks it; the
// postinstall's next step then finds it there). Plain JavaScript: it runs
// before anything is built. Never fails the install: without a template, the
// first start runs initdb as before; without the migrated one, it migrates
// the services' schemas. Skipped for production installs (npm ci
// --omit=dev: the containers use PostgreSQL) and with
// BIZCARD_PGLITE_TEMPLATE=off.
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { chmod, mkdir, readdir, rename, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";

/** initdb's settings: what embedded-postgres.ts expects in the template's marker (INITDB_PARAMS). */
const INITDB_PARAMS = ["--set", "shared_buffers=8MB"];
const START_PARAMS_EXTRA = ["-c", "shared_buffers=8MB"];

/** Folders 0700, files 0600, as every data folder's (scripts/private-folder.ts): the copies keep these modes. */
async function ownerOnly(dir) {
  await chmod(dir, 0o700);
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const child = path.join(dir, entry.name);
    if (entry.isDirectory()) await ownerOnly(child);
    else if (entry.isFile()) await chmod(child, 0o600);
  }
}

const omitted = (process.env.npm_config_omit ?? "").split(/[\s,]+/);
if (process.env.BIZCARD_PGLITE_TEMPLATE === "off" || omitted.includes("dev")) process.exit(0);

try {
  const entry = createRequire(import.meta.url).resolve("@electric-sql/pglite");
  const nodeModules = entry.slice(0, entry.lastIndexOf(`${path.sep}@electric-sql${path.sep}pglite${path.sep}`));
  const version = JSON.parse(
    readFileSync(path.join(nodeModules, "@electric-sql", "pglite", "package.json"), "utf8"),
  ).version;
  const dir = process.env.BIZCARD_PGLITE_TEMPLATE_DIR ?? path.join(nodeModules, ".cache", "bizcard-pglite", version);
  if (!existsSync(path.join(dir, "template.json"))) {
    const started = Date.now();
    const partial = `${dir}.partial`;
    await rm(partial, { recursive: true, force: true });
    await mkdir(partial, { recursive: true });
    const { PGlite } = await import("@electric-sql/pglite");
    const db = await PGlite.create({
      dataDir: partial,
      startParams: [...PGlite.defaultStartParams, ...START_PARAMS_EXTRA],
      initDbStartParams: INITDB_PARAMS,
    });
    // Only the database PGlite opens ("postgres") is kept: template0 and
    // template1 serve CREATE DATABASE, which nothing here runs, and they were
    // two thirds of the cluster's 999 files. A first start copies the
    // template once per service, and on this project's machine creating a
    // file costs about 0.75 ms: the copies took 2.9-3.3 s, about half the
    // cold start.
    for (const sql of [
      "ALTER DATABASE template1 IS_TEMPLATE false",
      "DROP DATABASE template1",
      "ALTER DATABASE template0 IS_TEMPLATE false",
      "DROP DATABASE template0",
      "CHECKPOINT",
    ]) {
      await db.exec(sql);
    }
    await db.close();
    await writeFile(
      path.join(partial, "template.json"),
      `${JSON.stringify({ pglite: version, initdb: INITDB_PARAMS })}\n`,
    );
    await ownerOnly(partial);
    await rm(dir, { recursive: true, force: true });
    await rename(partial, dir);
    console.log(
      `bizcard: made the embedded PostgreSQL template in ${dir} (${((Date.now() - started) / 1000).toFixed(1)} s)`,
    );
  }
  // A copy of it with the services' schemas migrated (pglite-migrated-template.ts), from the compiled build.
  const runCompiled = path.join(import.meta.dirname, "run-compiled.mjs");
  const step = spawnSync(process.execPath, [runCompiled, "scripts/pglite-migrated-template.ts"], {
    stdio: "inherit",
    env: { ...process.env, BIZCARD_PGLITE_TEMPLATE_DIR: dir },
  });
  if (step.status !== 0)
    console.warn("bizcard: no migrated database template; the first npm start migrates the services' schemas");
} catch (err) {
  console.warn(
    `bizcard: no embedded PostgreSQL template (${err instanceof Error ? err.message : err}); the first npm start runs initdb instead`,
  );
}
