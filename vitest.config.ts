import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/global-setup.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Two cores: files run two at a time; each file has its own database and stream.
    pool: "forks",
    maxWorkers: 2,
    reporters: ["default"],
  },
});
