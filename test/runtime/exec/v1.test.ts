/**
 * What gc does for a protocol v1 exec script (internal/runtime/exec/v1.ts): the prompt carried
 * inside `command` as POSIX-quoted words — checked by running the result through the real
 * /bin/sh — refusals instead of silent loss, hooks moved into the hook dir, stderr
 * classification and the reversible metadata framing.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { isGcError } from "../../../internal/base/errors.js";
import { shellQuote } from "../../../internal/base/shell-quote.js";
import {
  classifyV1StartFailure,
  diedDuringStartupDetail,
  frameMetaV1,
  unframeMetaV1,
  V1_MAX_COMMAND_BYTES,
  v1Hooks,
  v1PromptCommand,
} from "../../../internal/runtime/exec/v1.js";

const HUNDRED_KB = Array.from({ length: 1000 }, (_, i) => `${i} ${"x'y\"z $(q) `b` é 🦀 ".repeat(4)}`)
  .join("\n")
  .slice(0, 100 * 1024);

/** Hostile texts: each must come out of /bin/sh byte for byte. */
const HOSTILE: readonly (readonly [string, string])[] = [
  ["single quotes", "it's 'quoted' '' ' and '\\''"],
  ["double quotes", 'say "hi" "" "\\"'],
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the literal text is the point
  ["command substitution", "$(touch pwned) $((1+2)) ${HOME} $HOME $1 $@ $* $$ $?"],
  ["backticks", "`touch pwned2` `id`"],
  ["newlines", "line one\nline two\n\n  line four\n"],
  ["tmux formats", "#{session_name} #(touch pwned3) ## #[fg=red] %1"],
  ["shell syntax", "a; b && c || d | e > f < g & h (i) {j} [k] * ? ~ ! # \\"],
  ["unicode", "héllo wörld — 日本語 🦀 e\u0301 \u{1F600} \u{10FFFF}"],
  ["control bytes", "tab\there cr\rhere bell\u0007 esc\u001b[31m del\u007f"],
  ["leading dash", "-rf --help -"],
  ["empty-looking", "   "],
  ["100 KB", HUNDRED_KB],
];

function sh(line: string): string {
  return execFileSync("/bin/sh", ["-c", line], { encoding: "utf8", maxBuffer: 16 * 1024 * 1024 });
}

describe("shellQuote: one POSIX word, byte for byte, whatever the text", () => {
  for (const [label, text] of HOSTILE) {
    it(label, () => {
      expect(sh(`printf '%s' ${shellQuote(text)}`)).toBe(text);
    });
  }
  it("nothing is run by the shell", () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), "gc-quote-")));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    for (const [, text] of HOSTILE) sh(`cd ${shellQuote(dir)} && : ${shellQuote(text)}`);
    expect(execFileSync("ls", ["-A", dir], { encoding: "utf8" })).toBe("");
  });
});

describe("v1PromptCommand: the prompt travels inside command and reaches argv exactly", () => {
  for (const [label, prompt] of HOSTILE) {
    it(`positional: ${label}`, () => {
      // The prompt arguments follow the command's last word, as with every provider.
      const line = v1PromptCommand("s", { command: `f() { printf '%s|%s' "$#" "$1"; }; f`, prompt });
      expect(sh(line)).toBe(`1|${prompt}`);
    });
  }
  it("with prompt_flag: the flag comes first, both are single arguments", () => {
    const prompt = 'do "this"; $(touch pwned)\nnext line #{x}';
    const line = v1PromptCommand("s", {
      command: `f() { printf '%s|%s|%s' "$#" "$1" "$2"; }; f`,
      prompt,
      promptFlag: "--prompt",
    });
    expect(sh(line)).toBe(`2|--prompt|${prompt}`);
  });
  it("the command keeps its own shell meaning (pipes, &&, variables) and the prompt stays last", () => {
    const line = v1PromptCommand("s", {
      command: `f() { printf '%s' "$1" | tr a-z A-Z; }; X=1; test "$X" = 1 && f`,
      prompt: "abc",
    });
    expect(sh(line)).toBe("ABC");
  });
  it("no prompt: the command is unchanged", () => {
    expect(v1PromptCommand("s", { command: "exec sleep 1" })).toBe("exec sleep 1");
    expect(v1PromptCommand("s", { command: "exec sleep 1", prompt: "" })).toBe("exec sleep 1");
  });
  it("refuses, never drops: empty command, NUL, a command line over one argument's limit", () => {
    const cases: [string, Parameters<typeof v1PromptCommand>[1], RegExp][] = [
      ["empty command", { command: "  ", prompt: "task" }, /command is empty/],
      ["NUL in prompt", { command: "cat", prompt: "a\0b" }, /NUL/],
      ["NUL in flag", { command: "cat", prompt: "a", promptFlag: "-\0" }, /NUL/],
      ["too long", { command: "cat", prompt: "x".repeat(V1_MAX_COMMAND_BYTES) }, /over the \d+-byte limit/],
      ["too long after quoting", { command: "cat", prompt: "'".repeat(40_000) }, /over the \d+-byte limit/],
    ];
    for (const [label, cfg, why] of cases) {
      let err: unknown;
      try {
        v1PromptCommand("/x/script", cfg);
      } catch (e) {
        err = e;
      }
      expect(isGcError(err, "GC_UNSUPPORTED"), `${label}: ${String(err)}`).toBe(true);
      expect(String(err), label).toMatch(why);
      expect(String(err), label).toMatch(/protocol v1.*\/x\/script|\/x\/script.*protocol v1/);
    }
  });
});

describe("v1Hooks: hooks run in the hook dir although a v1 script runs them in work_dir", () => {
  it("unchanged when the hook dir is the work dir or unset", () => {
    const cfg = {
      workDir: "/w",
      preStart: ["a"],
      sessionSetup: ["b"],
      sessionSetupScript: "/s.sh",
      sessionLive: ["c"],
    };
    expect(v1Hooks(cfg)).toEqual({
      preStart: ["a"],
      sessionSetup: ["b"],
      sessionSetupScript: "/s.sh",
      sessionLive: ["c"],
    });
    expect(v1Hooks({ ...cfg, hookDir: "/w" }).sessionSetupScript).toBe("/s.sh");
  });
  it("each command runs in the hook dir; the setup script becomes the last setup command", () => {
    const hookDir = realpathSync(mkdtempSync(join(tmpdir(), "gc hook 'dir' ")));
    const workDir = realpathSync(mkdtempSync(join(tmpdir(), "gc-work-")));
    onTestFinished(() => {
      rmSync(hookDir, { recursive: true, force: true });
      rmSync(workDir, { recursive: true, force: true });
    });
    execFileSync("/bin/sh", ["-c", `printf '#!/bin/sh\\npwd > script.out\\n' > s.sh`], { cwd: hookDir });
    const hooks = v1Hooks({
      workDir,
      hookDir,
      preStart: ["pwd > pre.out # a comment"],
      sessionSetup: ["pwd > setup.out"],
      sessionSetupScript: join(hookDir, "s.sh"),
      sessionLive: ["pwd > live.out"],
    });
    expect(hooks.sessionSetupScript).toBeUndefined();
    for (const cmd of [...hooks.preStart!, ...hooks.sessionSetup!, ...hooks.sessionLive!]) {
      execFileSync("/bin/sh", ["-c", cmd], { cwd: workDir });
    }
    for (const f of ["pre.out", "setup.out", "script.out", "live.out"]) {
      expect(readFileSync(join(hookDir, f), "utf8"), f).toBe(`${hookDir}\n`);
    }
  });
});

describe("classifyV1StartFailure: what a v1 start's stderr can say", () => {
  it("classifies exists, died, hooks, and everything else as a plain failure", () => {
    expect(classifyV1StartFailure("session a Already Exists")).toEqual({ kind: "exists" });
    expect(classifyV1StartFailure("x: the program died during startup")).toEqual({ kind: "died" });
    expect(classifyV1StartFailure("exited during startup")).toEqual({ kind: "died" });
    expect(classifyV1StartFailure("pre_start: exit 7")).toEqual({
      kind: "hook",
      hook: "pre_start",
      detail: "exit 7",
    });
    expect(classifyV1StartFailure("warming up\nsession_setup failed: boom")).toEqual({
      kind: "hook",
      hook: "session_setup",
      detail: "boom",
    });
    expect(classifyV1StartFailure("session_setup_script: /x.sh: exit 1")).toMatchObject({
      hook: "session_setup_script",
    });
    expect(classifyV1StartFailure("tmux: no server")).toEqual({ kind: "failed" });
    expect(classifyV1StartFailure("")).toEqual({ kind: "failed" });
  });
  it("the died-during-startup detail shows the last screen lines", () => {
    expect(diedDuringStartupDetail(undefined)).toMatch(/no screen output/);
    expect(diedDuringStartupDetail("boot\nerror: bad flag\n\n")).toMatch(
      /last screen:\nboot\nerror: bad flag$/,
    );
  });
});

describe("frameMetaV1 / unframeMetaV1: byte-exact values through a v1 script", () => {
  it("round-trips values v1 would mangle, also when the script adds a newline", () => {
    for (const v of ["", "\n", "a\n\n", "  trailing  ", "x#gc1", "ü🦀\r\n", "line1\nline2\n"]) {
      const stored = frameMetaV1(v);
      expect(unframeMetaV1(stored), JSON.stringify(v)).toBe(v);
      expect(unframeMetaV1(`${stored}\n`), JSON.stringify(v)).toBe(v);
    }
  });
  it("empty output is unset; a value gc did not frame is returned as printed", () => {
    expect(unframeMetaV1("")).toBeUndefined();
    expect(unframeMetaV1("\n")).toBeUndefined();
    expect(unframeMetaV1("set-by-hand\n")).toBe("set-by-hand");
  });
});
