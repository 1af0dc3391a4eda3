#!/usr/bin/env node
// The `bizcard` administration command, compiled: in a checkout, the build
// every command runs (scripts/run-compiled.mjs, made again only after the
// sources changed); in the image, which holds no sources, dist/ (npm run build).
import { existsSync } from "node:fs";

const checkout = new URL("../scripts/run-compiled.mjs", import.meta.url);
if (existsSync(checkout)) {
  const { compiledEntry } = await import(checkout.href);
  await import(await compiledEntry("bin/bizcard-cli.ts"));
} else {
  await import(new URL("../dist/bin/bizcard-cli.js", import.meta.url).href);
}
