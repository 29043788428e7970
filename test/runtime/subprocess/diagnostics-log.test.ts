import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { DIAGNOSTICS_LOG_MAX_BYTES, rotateIfLarge } from "../../../internal/runtime/subprocess/layout.js";
import { makeCity, until } from "./helpers.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe("holder diagnostics logs stay bounded", () => {
  it("rotateIfLarge moves a log that reached the bound to .1 (replacing it) and leaves smaller or missing ones alone", () => {
    const dir = mkdtempSync(join(tmpdir(), "gc-diaglog-"));
    dirs.push(dir);
    const log = join(dir, "a.holder.log");
    rotateIfLarge(log, 10); // missing: nothing happens
    expect(readdirSync(dir)).toEqual([]);
    writeFileSync(log, "123456789");
    rotateIfLarge(log, 10);
    expect(readdirSync(dir)).toEqual(["a.holder.log"]);
    writeFileSync(log, "1234567890");
    rotateIfLarge(log, 10);
    expect(readdirSync(dir)).toEqual(["a.holder.log.1"]);
    writeFileSync(log, "second generation!");
    rotateIfLarge(log, 10);
    expect(readdirSync(dir).sort()).toEqual(["a.holder.log.1"]);
    expect(readFileSync(`${log}.1`, "utf8")).toBe("second generation!");
    // Appending a line per restart: the two files never hold much more than twice the bound.
    for (let i = 0; i < 500; i++) {
      rotateIfLarge(log, 1000);
      writeFileSync(log, `${"x".repeat(199)}\n`, { flag: "a" });
    }
    const total = readdirSync(dir).reduce((n, f) => n + readFileSync(join(dir, f)).length, 0);
    expect(total).toBeLessThanOrEqual(2 * 1000 + 200);
  });

  it("a real session start rotates its oversized diagnostics log and the holder's own", async () => {
    const t = await makeCity();
    try {
      const logs = join(t.provider.root, "logs");
      const big = "y".repeat(DIAGNOSTICS_LOG_MAX_BYTES);
      mkdirSync(logs, { recursive: true, mode: 0o700 });
      writeFileSync(join(logs, "a.holder.log"), big);
      writeFileSync(join(logs, "holder.log"), big);
      await t.provider.start("a", await t.config("sleep 1000"));
      // Notes are written after the reply (the rotated log may not exist yet).
      await until(
        "serving noted",
        () =>
          existsSync(join(logs, "a.holder.log")) &&
          readFileSync(join(logs, "a.holder.log"), "utf8").includes("serving"),
      );
      expect(readFileSync(join(logs, "a.holder.log.1"), "utf8")).toBe(big);
      expect(readFileSync(join(logs, "a.holder.log")).length).toBeLessThan(4096);
      expect(readFileSync(join(logs, "holder.log.1"), "utf8")).toBe(big);
      expect(readFileSync(join(logs, "holder.log")).length).toBeLessThan(4096);
    } finally {
      await t.cleanup();
    }
  });

  it("a start after logs/ and locks/ were removed (the provider made sure of them once) makes them again", async () => {
    const t = await makeCity();
    try {
      const { root } = t.provider;
      await t.provider.start("a", await t.config("printf 'one> '; exec cat", { readyPromptPrefix: "one> " }));
      rmSync(join(root, "logs"), { recursive: true, force: true });
      rmSync(join(root, "locks"), { recursive: true, force: true });
      await t.provider.start("b", await t.config("printf 'two> '; exec cat", { readyPromptPrefix: "two> " }));
      await until("b's output logged", () => {
        try {
          return readFileSync(join(root, "logs", "b.log"), "utf8").includes("two> ");
        } catch {
          return false;
        }
      });
      await until("b's start noted", () => {
        try {
          return readFileSync(join(root, "logs", "b.holder.log"), "utf8").includes("serving");
        } catch {
          return false;
        }
      });
      expect(await t.provider.listRunning("")).toEqual(["a", "b"]);
    } finally {
      await t.cleanup();
    }
  });
});
