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
import { BUNDLE_EXTERNAL, compileSources } from "../scripts/compile-sources.mjs";

const ROOT = path.resolve(import.meta.dirname, "..");
let root: string;
let cache: string;

beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), "bizcard-compile-"));
  cache = path.join(root, "cache");
  await mkdir(path.join(root, "src", "lib"), { recursive: true });
  await writeFile(path.join(root, "tsconfig.build.json"), JSON.stringify({ compilerOptions: { target: "ES2022", module: "NodeNext" } }));
  await writeFile(path.join(root, "src", "lib", "greeting.ts"), 'export const greeting = (name: string): string => `hello ${name}`;\n');
  await writeFile(path.join(root, "src", "main.ts"), 'import { greeting } from "./lib/greeting.js";\nexport const answer: string = greeting("bizcard");\n');
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

    await writeFile(path.join(root, "src", "lib", "greeting.ts"), 'export const greeting = (name: string): string => `hi ${name}`;\n');
    // Two starts at once: two processes compiling the same sources.
    const inChild = () =>
      new Promise<string>((resolve, reject) =>
        execFile(
          process.execPath,
          ["--input-type=module", "-e", `const { compileSources } = await import(${JSON.stringify(pathToFileURL(path.join(ROOT, "scripts", "compile-sources.mjs")).href)}); console.log(await compileSources(${JSON.stringify({ root, sources: ["src"], cache })}));`],
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
      await writeFile(path.join(root, "src", "lib", "greeting.ts"), `export const greeting = (name: string): string => \`${word} \${name}\`;\n`);
      builds.push(await compile(2));
      // Folders' times are ordered by their mtime: keep them apart on coarse clocks.
      await new Promise((r) => setTimeout(r, 20));
    }
    expect((await readdir(cache)).sort()).toEqual([path.basename(builds[1]!), path.basename(builds[2]!)].sort());
    expect(existsSync(builds[0]!)).toBe(false);
  });

  it("bundles from an entry: its imports in the output, a dynamic import a chunk of its own loaded when called", async () => {
    const bundled = path.join(root, "bundled");
    await mkdir(path.join(bundled, "src", "lib"), { recursive: true });
    await writeFile(path.join(bundled, "tsconfig.build.json"), JSON.stringify({ compilerOptions: { target: "ES2022", module: "NodeNext" } }));
    await writeFile(path.join(bundled, "src", "lib", "greeting.ts"), 'export const greeting = (name: string): string => `hello ${name}`;\n');
    await writeFile(path.join(bundled, "src", "lib", "later.ts"), 'export const later = "loaded when asked";\n');
    await writeFile(
      path.join(bundled, "src", "main.ts"),
      'import { greeting } from "./lib/greeting.js";\nexport const answer: string = greeting("bizcard");\nexport const ask = async (): Promise<string> => (await import("./lib/later.js")).later;\n',
    );
    const out = await compileSources({ root: bundled, sources: ["src"], cache: path.join(bundled, "cache"), entry: "src/main.ts" });
    // One file for the entry at its own path, the dynamic import in a chunk beside it.
    expect((await readdir(path.join(out, "src"))).sort()).toEqual(["main.js", "main.js.map"]);
    const chunks = (await readdir(out)).filter((f) => f.endsWith(".js"));
    expect(chunks).toHaveLength(1);
    expect(await readFile(path.join(out, chunks[0]!), "utf8")).toContain("loaded when asked");
    const main = (await import(pathToFileURL(path.join(out, "src", "main.js")).href)) as { answer: string; ask: () => Promise<string> };
    expect(main.answer).toBe("hello bizcard");
    expect(await main.ask()).toBe("loaded when asked");
    // The same sources file by file are another build; so is the bundle once the packages change.
    expect(await compileSources({ root: bundled, sources: ["src"], cache: path.join(bundled, "cache") })).not.toBe(out);
    await writeFile(path.join(bundled, "package-lock.json"), '{ "lockfileVersion": 3, "packages": {} }\n');
    expect(await compileSources({ root: bundled, sources: ["src"], cache: path.join(bundled, "cache"), entry: "src/main.ts" })).not.toBe(out);
  });

  it("npm start's bundle reads no package's __dirname or __filename: such a package is left external", async () => {
    const out = await compileSources({
      root: ROOT,
      sources: JSON.parse(await readFile(path.join(ROOT, "tsconfig.build.json"), "utf8")).include,
      cache: path.join(root, "start-cache"),
      entry: "scripts/start.ts",
    });
    const files = [path.join(out, "scripts", "start.js"), ...(await readdir(out)).filter((f) => f.endsWith(".js")).map((f) => path.join(out, f))];
    const unguarded: string[] = [];
    for (const file of files) {
      const text = await readFile(file, "utf8");
      // Only a guarded read (typeof __filename !== "undefined", undici's) runs the same bundled.
      for (const line of text.split("\n")) if (/\b__(dirname|filename)\b/.test(line.replace(/typeof __(dirname|filename)[^?]*\?[^:]*:/g, ""))) unguarded.push(`${path.basename(file)}: ${line.trim()}`);
    }
    expect(unguarded, `add their packages to BUNDLE_EXTERNAL (${BUNDLE_EXTERNAL.join(", ")})`).toEqual([]);
  }, 60_000);
});
