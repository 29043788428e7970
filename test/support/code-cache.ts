/**
 * Whether V8 accepts a code cache for a CommonJS bundle, asked of a fresh Node process (the
 * one the loaders of scripts/bundle-cli.mjs run in). Resolves its stdout ("false" when the
 * cache is accepted) and stderr.
 */
import { spawnSync } from "node:child_process";

const CHECK = `
const { readFileSync } = require("node:fs");
const { Module } = require("node:module");
const { Script } = require("node:vm");
const s = new Script(Module.wrap(readFileSync(process.argv[1], "utf8")), {
  filename: process.argv[1],
  cachedData: readFileSync(process.argv[2]),
});
process.stdout.write(String(s.cachedDataRejected));`;

/** `cachedDataRejected` of `cache` for `bundle`, as a fresh process prints it. */
export function cacheRejected(bundle: string, cache: string): { stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, ["-e", CHECK, bundle, cache], { encoding: "utf8" });
  return { stdout: r.stdout, stderr: r.stderr };
}
