import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // expect.poll waits for a condition on real processes; its 1 s default is too short on a
    // loaded CI machine (a poll that succeeds returns at once, so this costs passing tests nothing).
    expect: { poll: { timeout: 20_000 } },
    // Real tmux servers, ptys and SQLite files: keep the 2-core machine from thrashing.
    maxWorkers: 2,
    globalSetup: ["test/global-setup.ts"],
    // fingerprint() hashes synchronously once xxhash-wasm is ready (internal/runtime/xxh.ts).
    setupFiles: ["test/setup-xxh.ts"],
  },
});
