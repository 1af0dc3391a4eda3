// Fails when gen/ is not exactly what `buf generate` makes from proto/ now.
// Generates into a temporary folder (offline: the plugin is the local
// protoc-gen-es) and compares every file both ways.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

const root = path.resolve(import.meta.dirname, "..");
const out = mkdtempSync(path.join(tmpdir(), "bizcard-gen-"));
const bin = path.join(root, "node_modules", ".bin");
try {
  execFileSync(path.join(bin, "buf"), ["generate", "--output", out], {
    cwd: root,
    stdio: "inherit",
    env: { ...process.env, PATH: `${bin}${path.delimiter}${process.env.PATH}` },
  });
  const list = (dir, base = dir) =>
    readdirSync(dir).flatMap((name) => {
      const p = path.join(dir, name);
      return statSync(p).isDirectory() ? list(p, base) : [path.relative(base, p)];
    });
  const expected = list(path.join(out, "gen")).sort();
  const actual = list(path.join(root, "gen")).sort();
  const problems = [
    ...expected.filter((f) => !actual.includes(f)).map((f) => `missing: gen/${f}`),
    ...actual.filter((f) => !expected.includes(f)).map((f) => `not generated from proto/: gen/${f}`),
    ...expected
      .filter((f) => actual.includes(f))
      .filter((f) => readFileSync(path.join(out, "gen", f), "utf8") !== readFileSync(path.join(root, "gen", f), "utf8"))
      .map((f) => `out of date: gen/${f}`),
  ];
  if (problems.length > 0) {
    console.error(`generated code is out of sync with proto/ (run npm run generate):\n  ${problems.join("\n  ")}`);
    process.exit(1);
  }
  console.log(`generated code in sync with proto/ (${actual.length} files)`);
} finally {
  rmSync(out, { recursive: true, force: true });
}
