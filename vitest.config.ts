import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Real tmux servers, ptys and SQLite files: keep the 2-core machine from thrashing.
    maxWorkers: 2,
    globalSetup: ["test/global-setup.ts"],
  },
});
