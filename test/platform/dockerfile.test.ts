// The Dockerfile, checked without a Docker engine: a build stage that
// compiles, a runtime stage that runs the compiled JavaScript on production
// dependencies only, as node; what is copied into each, what .dockerignore
// keeps out, and every package the copied code imports at run time among the
// production dependencies.
import { readFileSync, readdirSync, statSync } from "node:fs";
import { builtinModules } from "node:module";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { GATEWAY_NODE_FLAGS } from "../../scripts/platform-processes.js";
import { ROOT } from "../support/processes.js";

const dockerfile = readFileSync(path.join(ROOT, "Dockerfile"), "utf8");
const dockerignore = readFileSync(path.join(ROOT, ".dockerignore"), "utf8");
const pkg = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};

describe("Dockerfile", () => {
  const instructions = dockerfile
    .split("\n")
    .filter((l) => l.trim() && !l.trim().startsWith("#"))
    .join("\n")
    .replace(/\\\n\s*/g, " ")
    .split("\n");
  const of = (op: string) =>
    instructions.filter((l) => l.toUpperCase().startsWith(`${op} `)).map((l) => l.slice(op.length + 1).trim());

  // The stages: instructions from each FROM to the next.
  const stages: string[][] = [];
  for (const l of instructions) {
    if (/^FROM /i.test(l)) stages.push([]);
    stages.at(-1)?.push(l);
  }
  const inStage = (stage: string[], op: string) =>
    stage.filter((l) => l.toUpperCase().startsWith(`${op} `)).map((l) => l.slice(op.length + 1).trim());
  const runtime = stages.at(-1)!;

  it("compiles in a build stage and runs compiled JavaScript on production dependencies only, as node", () => {
    expect(of("FROM")).toEqual(["node:22-bookworm-slim AS build", "node:22-bookworm-slim"]);
    const [build] = stages;
    // Build stage: every dependency (the compiler is a dev one), then the build into dist/.
    const buildRuns = inStage(build!, "RUN");
    expect(buildRuns).toContain("npm ci");
    expect(buildRuns).toContain("npm run build");
    expect(JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")).scripts.build).toBe(
      "node scripts/build.mjs",
    );
    // Runtime stage: production dependencies, dist/ from the build stage, no TypeScript loader.
    expect(inStage(runtime, "RUN").join(" ")).toMatch(/^npm ci --omit=dev\b/);
    expect(inStage(runtime, "ENV").join(" ")).toMatch(/NODE_ENV=production/);
    expect(inStage(runtime, "USER")).toEqual(["node"]);
    expect(of("HEALTHCHECK")).toEqual([]);
    expect(JSON.parse(of("CMD")[0]!)).toEqual(["node", ...GATEWAY_NODE_FLAGS, "dist/gateway/main.js"]);
    expect(runtime.join("\n")).not.toMatch(/tsx|--import|\.ts\b/);
    // package-lock.json is copied before `npm ci`, the code after it, in both stages.
    for (const stage of stages) {
      const copyLock = stage.findIndex((l) => /^COPY .*package-lock\.json/.test(l));
      const npmCi = stage.findIndex((l) => /^RUN npm ci/.test(l));
      expect(copyLock).toBeGreaterThan(-1);
      expect(copyLock).toBeLessThan(npmCi);
      expect(stage.findIndex((l) => /^COPY .*(dist|services)/.test(l))).toBeGreaterThan(npmCi);
    }
  });

  it("compiles every folder the commands run from, ships only dist/ and the bizcard launcher, and .dockerignore keeps out what must not go in", () => {
    const [build] = stages;
    const copied = inStage(build!, "COPY").flatMap((c) => c.split(/\s+/).slice(0, -1));
    for (const needed of [
      "gen",
      "services",
      "gateway",
      "bin",
      "scripts",
      "tsconfig.json",
      "tsconfig.build.json",
      "package.json",
      "package-lock.json",
    ]) {
      expect(copied, needed).toContain(needed);
    }
    expect(inStage(runtime, "COPY")).toEqual([
      "package.json package-lock.json ./",
      "--from=build /app/dist ./dist",
      "bin/bizcard.js ./bin/bizcard.js",
    ]);
    const ignored = dockerignore
      .split("\n")
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith("#"));
    for (const entry of ["node_modules", ".git", "data", "dist", ".env"]) expect(ignored).toContain(entry);
    for (const needed of [
      "gen",
      "services",
      "gateway",
      "bin",
      "scripts",
      "package.json",
      "package-lock.json",
      "tsconfig.json",
      "tsconfig.build.json",
    ]) {
      expect(ignored, `.dockerignore must not exclude ${needed}`).not.toContain(needed);
    }
  });

  it("has every package the copied code imports among the production dependencies", () => {
    expect(pkg.dependencies.tsx, "tsx is a development tool: the image runs compiled JavaScript").toBeUndefined();
    expect(pkg.devDependencies.tsx, "the tests run TypeScript through tsx").toBeDefined();
    expect(pkg.devDependencies.esbuild, "every command's build is esbuild's").toBeDefined();
    // The compile step (scripts/compile-sources.mjs) runs in a checkout and in the image's build
    // stage; the image's runtime stage runs dist/.
    const devOnly: Record<string, string[]> = { "scripts/compile-sources.mjs": ["esbuild"] };
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const entry of readdirSync(dir)) {
        const p = path.join(dir, entry);
        if (statSync(p).isDirectory()) walk(p);
        else if (/\.(ts|js|mjs)$/.test(entry)) files.push(p);
      }
    };
    for (const dir of ["gen", "services", "gateway", "bin", "scripts"]) walk(path.join(ROOT, dir));
    expect(files.length).toBeGreaterThan(10);
    const builtins = new Set(builtinModules);
    const missing = new Set<string>();
    for (const file of files) {
      const src = readFileSync(file, "utf8");
      // Runtime imports only: `import type` vanishes when tsc compiles.
      for (const m of src.matchAll(
        /^\s*(?:import(?!\s+type\s)(?:[^;]*?\sfrom)?|export(?!\s+type\s)\s*(?:\{[^}]*\}|\*(?:\s+as\s+\w+)?)\s*from)\s*["']([^"'.][^"']*)["']|(?:import|require)\(\s*["']([^"'.][^"']*)["']\s*\)/gm,
      )) {
        const spec = (m[1] ?? m[2])!;
        if (spec.startsWith("node:") || builtins.has(spec.split("/")[0]!)) continue;
        const name = spec.startsWith("@") ? spec.split("/").slice(0, 2).join("/") : spec.split("/")[0]!;
        if (devOnly[path.relative(ROOT, file)]?.includes(name)) continue;
        if (!pkg.dependencies[name]) missing.add(`${name} (${path.relative(ROOT, file)})`);
      }
    }
    expect([...missing], "imported at run time but not a production dependency").toEqual([]);
  });
});
