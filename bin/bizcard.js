#!/usr/bin/env node
// The `bizcard` administration command. Runs the TypeScript source through tsx.
import { register } from "tsx/esm/api";

register();
await import("./bizcard-cli.ts");
