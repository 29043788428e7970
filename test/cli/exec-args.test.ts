/**
 * `gc exec SESSION [--raw] [--timeout DUR] [--json] -- CMD`: flags written after SESSION (as
 * the usage line puts them) are gc's; a command's own `--` stays its argument.
 */
import { describe, expect, it } from "vitest";
import { splitExecArgs } from "../../cmd/gc/commands/exec.js";

describe("gc exec: flags after SESSION", () => {
  const none = {};
  it.each([
    [["--", "pwd"], { argv: ["pwd"], raw: false, timeout: undefined, json: false }],
    [["pwd"], { argv: ["pwd"], raw: false, timeout: undefined, json: false }],
    [
      ["git", "diff", "--", "a"],
      { argv: ["git", "diff", "--", "a"], raw: false, timeout: undefined, json: false },
    ],
    [
      ["--timeout", "1s", "--", "sleep", "5"],
      { argv: ["sleep", "5"], raw: false, timeout: "1s", json: false },
    ],
    [
      ["--timeout=2s", "--raw", "--json", "--", "x", "--raw"],
      { argv: ["x", "--raw"], raw: true, timeout: "2s", json: true },
    ],
  ])("%j", (rest, want) => {
    expect(splitExecArgs(rest, none)).toEqual(want);
  });

  it("global flags between SESSION and `--` are gc's (--city, --config, also as --flag=value)", () => {
    expect(splitExecArgs(["--city", "/c", "--config=/c/x.yaml", "--raw", "--", "pwd"], none)).toEqual({
      argv: ["pwd"],
      raw: true,
      timeout: undefined,
      json: false,
      city: "/c",
      config: "/c/x.yaml",
    });
  });

  it("flags given before SESSION still count", () => {
    expect(splitExecArgs(["pwd"], { raw: true, timeout: "3s" })).toMatchObject({ raw: true, timeout: "3s" });
  });

  it("refuses what it cannot read as its flags, and flags with no `--` after them", () => {
    expect(() => splitExecArgs(["--verbose", "--", "pwd"], none)).toThrow(
      /unexpected "--verbose" before `--`/,
    );
    expect(() => splitExecArgs(["--timeout", "1s", "sleep", "5"], none)).toThrow(/put `--` between/);
  });
});
