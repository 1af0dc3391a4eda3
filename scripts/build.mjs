// `npm run build`: the image's dist/ (Dockerfile), the same build a checkout
// runs from its cache (run-compiled.mjs): every folder tsconfig.build.json
// includes, compiled file by file by esbuild. `--outDir <folder>` builds
// elsewhere. The type check is `npm run typecheck`.
//
// Plain JavaScript: it runs before anything is compiled.
import path from "node:path";
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import { buildSources, compileInto } from "./compile-sources.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const { values } = parseArgs({ options: { outDir: { type: "string", default: "dist" } } });
await compileInto({
  root: ROOT,
  sources: buildSources(ROOT),
  out: path.resolve(ROOT, values.outDir),
});
