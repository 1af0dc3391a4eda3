#!/usr/bin/env node
// The `bizcard` administration command. Runs the compiled CLI when there is a
// build (dist/, as in the production image, where tsx is not installed), and
// otherwise the TypeScript source through tsx (a development checkout).
import { existsSync } from "node:fs";

const compiled = new URL("../dist/bin/bizcard-cli.js", import.meta.url);
if (existsSync(compiled)) {
  await import(compiled.href);
} else {
  const { register } = await import("tsx/esm/api");
  register();
  await import("./bizcard-cli.ts");
}
