/**
 * End-to-end: `gc nudge` neutralises terminal control in the text by default (a bracketed-
 * paste end marker arrives as characters, in one submission) and `--raw` types it unchanged;
 * `--raw` with `--queue` is a usage error. The built `gc`, on subprocess and tmux, against a
 * program with a bracketed-paste input line (test/fixtures/input-programs.py codex).
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { makeCity } from "../support/city.js";

const PROGRAMS = fileURLToPath(new URL("../fixtures/input-programs.py", import.meta.url));
const hasTmux = spawnSync("tmux", ["-V"]).status === 0;

describe.each([
  ["subprocess", true],
  ["tmux", hasTmux],
])("gc nudge: terminal control in the text (%s)", (provider, available) => {
  it.skipIf(!available)(
    "neutralised by default, unchanged with --raw, --raw refused with --queue",
    async () => {
      const city = makeCity(`workspace:
  name: @NAME@
session:
  provider: ${provider}
daemon:
  interval: 1h
agents:
  - name: a
    start_command: exec python3 ${PROGRAMS} codex
`);
      const r = await city.gc(["start", "--once"]);
      expect(r.code, r.stderr).toBe(0);
      const read = (f: string) => {
        try {
          return readFileSync(join(city.dir, f), "utf8");
        } catch {
          return undefined;
        }
      };
      await expect.poll(() => read("started.out"), { timeout: 15_000 }).toBe("started\n");
      const plain = await city.gc(["nudge", "a", "--now", "a\x1b[201~b\x03c"]);
      expect(plain.code, plain.stderr).toBe(0);
      expect(read("submitted.out")).toBe("a\u241b[201~b\u2403c\n");
      const raw = await city.gc(["nudge", "a", "--now", "--raw", "x\x1b[201~y"]);
      expect(raw.code, raw.stderr).toBe(0);
      expect(read("submitted.out")).toBe("a\u241b[201~b\u2403c\nxy\n");
      const queued = await city.gc(["nudge", "a", "--queue", "--raw", "z"]);
      expect(queued.code).toBe(2);
      expect(queued.stderr).toMatch(/--raw does not apply to --queue/);
      await city.gc(["stop"]);
    },
  );
});
