// Module resolution hooks for a process that must run as the production image
// does: compiled JavaScript on production dependencies only. Any import that
// resolves to TypeScript source, or into a package that `npm ci --omit=dev`
// would not install (package-lock.json marks it "dev": true), throws.
// Registered with module.register(); see test/platform/production-build.test.ts.
import path from "node:path";
import { fileURLToPath } from "node:url";

let root = "";
let devOnly = [];

export async function initialize(data) {
  root = data.root;
  devOnly = data.devOnly;
}

export async function resolve(specifier, context, nextResolve) {
  const resolved = await nextResolve(specifier, context);
  if (!resolved.url.startsWith("file:")) return resolved;
  const file = fileURLToPath(resolved.url);
  if (/\.[cm]?ts$/.test(file)) throw new Error(`production run imports TypeScript: ${specifier} -> ${file}`);
  const rel = path.relative(root, file).split(path.sep).join("/");
  const dev = devOnly.find((p) => rel === p || rel.startsWith(`${p}/`));
  if (dev) throw new Error(`production run imports a dev dependency: ${specifier} -> ${dev}`);
  return resolved;
}
