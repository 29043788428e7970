/**
 * gc's loader launches the background controller of a plain `gc start` before it compiles the
 * CLI bundle (cmd/gc/early.ts, cmd/gc/launch.ts); `gc start` takes that launch only when it was
 * made for exactly its own flags. The end-to-end behaviour of early launches (nothing left
 * behind by a refused start, one controller) is start-early.e2e.test.ts, which runs the bin.
 */
import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { commandArgs } from "../../cmd/gc/early.js";
import { launchEarlyFromLoader, takeEarlyLaunch } from "../../cmd/gc/launch.js";

describe("commandArgs(start): which invocations the loader launches for", () => {
  const env = {};
  it.each([
    [["start"], { city: undefined }],
    [["start", "--json"], { city: undefined }],
    [["--city", "/c", "start"], { city: "/c" }],
    [["start", "--city=/c"], { city: "/c" }],
  ])("%j → %j", (argv, want) => {
    expect(commandArgs("start", argv, env)).toEqual(want);
  });

  it.each([
    [["start", "--foreground"]],
    [["start", "--once"]],
    [["start", "--dry-run"]],
    [["start", "--config", "f.yaml"]],
    [["start", "-h"]],
    [["help", "start"]],
    [["start", "extra"]],
    [["status"]],
  ])("%j is not", (argv) => {
    expect(commandArgs("start", argv, env)).toBeNull();
  });

  it("takes GC_CITY when no --city is given, as the CLI does", () => {
    expect(commandArgs("start", ["start"], { GC_CITY: "/from/env" })).toEqual({ city: "/from/env" });
  });
});

describe("takeEarlyLaunch", () => {
  /** A directory without a city file: the early launch launches nothing (no process). */
  const noCity = () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), "gc-early-start-")));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    return dir;
  };

  it("without an early launch: undefined (start launches itself)", async () => {
    expect(await takeEarlyLaunch({ cwd: "/", cityFlag: "/x", configFlag: undefined })).toBeUndefined();
  });

  it("the launch made for exactly these flags, once; for other flags: none", async () => {
    const dir = noCity();
    const flags = { cwd: dir, cityFlag: dir, configFlag: undefined };
    launchEarlyFromLoader(flags, dir);
    expect(await takeEarlyLaunch(flags)).toEqual({ launched: undefined });
    expect(await takeEarlyLaunch(flags)).toBeUndefined();
    launchEarlyFromLoader(flags, dir);
    expect(await takeEarlyLaunch({ ...flags, configFlag: join(dir, "city.yaml") })).toBeUndefined();
    expect(await takeEarlyLaunch(flags)).toBeUndefined();
  });
});
