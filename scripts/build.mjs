// `npm run build`: the image's dist/ (Dockerfile), the same build a checkout
// runs from its cache (run-compiled.mjs): every folder tsconfig.build.json
// includes, compiled file by file by esbuild. `--outDir <folder>` builds
// elsewhere. The type check is `npm run typecheck`.
//
// Plain JavaScript: it runs before anything is compiled.
import { readFileSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import { compileInto } from "./compile-sources.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const { values } = parseArgs({ options: { outDir: { type: "string", default: "dist" } } });
await compileInto({
  root: ROOT,
  sources: JSON.parse(readFileSync(path.join(ROOT, "tsconfig.build.json"), "utf8")).include,
  out: path.resolve(ROOT, values.outDir),
});
