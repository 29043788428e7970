/**
 * Vitest setup file (every test file): waits for the xxhash-wasm instance (internal/runtime/xxh.ts),
 * so tests may call the synchronous `fingerprint()` without first awaiting a function that
 * hashes files, as production code does (see internal/runtime/fingerprint.ts).
 */
import { xxhReady } from "../internal/runtime/xxh.js";

await xxhReady;
