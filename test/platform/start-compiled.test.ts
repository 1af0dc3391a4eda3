// What `npm start` compiles before it runs (scripts/compile-sources.mjs): a
// build per version of the sources, reused while they do not change, never
// half-written when two starts compile at once, and the oldest dropped. On a
// small TypeScript project of its own, in a temporary folder; every test that
// runs `npm start` runs the real one.
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { compileSources } from "../../scripts/compile-sources.mjs";
import { waitFor } from "../support/processes.js";

const ROOT = path.resolve(import.meta.dirname, "../..");
let root: string;
let cache: string;

beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), "bizcard-compile-"));
  cache = path.join(root, "cache");
  await mkdir(path.join(root, "src", "lib"), { recursive: true });
  await writeFile(
    path.join(root, "tsconfig.build.json"),
    JSON.stringify({ compilerOptions: { target: "ES2022", module: "NodeNext" } }),
  );
  await writeFile(
    path.join(root, "src", "lib", "greeting.ts"),
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the source of a TypeScript file, its template literal included
    "export const greeting = (name: string): string => `hello ${name}`;\n",
  );
  await writeFile(
    path.join(root, "src", "main.ts"),
    'import { greeting } from "./lib/greeting.js";\nexport const answer: string = greeting("bizcard");\n',
  );
  await writeFile(path.join(root, "src", "types.d.ts"), "export type Unused = string;\n");
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

const compile = (keep?: number) => compileSources({ root, sources: ["src"], cache, ...(keep ? { keep } : {}) });

describe("npm start's compile step", () => {
  it("compiles every .ts file (not .d.ts) into ES modules that run, with their source maps", async () => {
    const out = await compile();
    expect(path.dirname(out)).toBe(cache);
    expect(JSON.parse(await readFile(path.join(out, "package.json"), "utf8"))).toEqual({ type: "module" });
    expect((await readdir(path.join(out, "src"))).sort()).toEqual(["lib", "main.js", "main.js.map"]);
    const { answer } = (await import(pathToFileURL(path.join(out, "src", "main.js")).href)) as { answer: string };
    expect(answer).toBe("hello bizcard");
  });

  it("reuses the build while the sources are unchanged, and two compiles at once give one complete build", async () => {
    const first = await compile();
    const before = (await stat(first)).mtimeMs;
    expect(await compile()).toBe(first);
    expect((await stat(first)).mtimeMs).toBe(before);

    await writeFile(
      path.join(root, "src", "lib", "greeting.ts"),
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the source of a TypeScript file, its template literal included
      "export const greeting = (name: string): string => `hi ${name}`;\n",
    );
    // Two starts at once: two processes compiling the same sources.
    const inChild = () =>
      new Promise<string>((resolve, reject) =>
        execFile(
          process.execPath,
          [
            "--input-type=module",
            "-e",
            `const { compileSources } = await import(${JSON.stringify(pathToFileURL(path.join(ROOT, "scripts", "compile-sources.mjs")).href)}); console.log(await compileSources(${JSON.stringify({ root, sources: ["src"], cache })}));`,
          ],
          (err, stdout) => (err ? reject(err) : resolve(stdout.trim())),
        ),
      );
    const [a, b] = await Promise.all([inChild(), inChild()]);
    expect(a).toBe(b);
    expect(a).not.toBe(first);
    // And two calls at once in one process share one build.
    const [c, d] = await Promise.all([compile(), compile()]);
    expect([c, d]).toEqual([a, a]);
    const { answer } = (await import(pathToFileURL(path.join(a, "src", "main.js")).href)) as { answer: string };
    expect(answer).toBe("hi bizcard");
    expect((await readdir(cache)).filter((n) => n.includes(".partial-"))).toEqual([]);
  });

  it("keeps only the newest builds", async () => {
    const builds = [];
    for (const word of ["one", "two", "three"]) {
      await writeFile(
        path.join(root, "src", "lib", "greeting.ts"),
        `export const greeting = (name: string): string => \`${word} \${name}\`;\n`,
      );
      const build = await compile(2);
      builds.push(build);
      // Builds are ordered by their folders' mtimes: the next is made once the file system's clock has moved past
      // this one's (it ticks coarsely), seen on a file written outside the cache.
      const made = (await stat(build)).mtimeMs;
      const probe = path.join(root, "clock-probe");
      await waitFor(
        async () => {
          await writeFile(probe, "tick");
          return (await stat(probe)).mtimeMs > made ? true : undefined;
        },
        10_000,
        "the file system's clock to move past the build",
      );
    }
    expect((await readdir(cache)).sort()).toEqual([path.basename(builds[1]!), path.basename(builds[2]!)].sort());
    expect(existsSync(builds[0]!)).toBe(false);
  });
});
