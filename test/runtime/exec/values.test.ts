/**
 * User values reach exec scripts only through stdin: hostile nudge text, metadata values,
 * env values and prompts round-trip byte for byte, and the argv every call receives (recorded
 * by the script) holds nothing but the operation, session names, metadata keys, line counts,
 * prefixes, key names and copy paths. Also: parallel operations on distinct sessions. Runs
 * against the mock script, and against the reference tmux script when tmux and jq exist.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { run } from "../../../internal/proc/run.js";
import { EXEC_OPERATIONS } from "../../../internal/runtime/exec/index.js";
import type { StartConfig } from "../../../internal/runtime/provider.js";
import { onPath } from "../../support/path.js";
import { mockFile, RECORD_SCRIPT, recordedArgv, TMUX_SCRIPT, testProvider } from "./mock.js";

const HOSTILE: readonly string[] = [
  "semi; colon && rm -rf / | cat",
  `quotes ' " \` mixed`,
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the literal text is the point
  "subst $(touch /tmp/gc-pwned) `id` ${HOME} $HOME",
  "new\nlines\n\nand trailing\n",
  "ünïcödé — 日本語 🦀 e\u0301",
  "#{session_name} #(touch pwned) %1 \\; ends with;",
  "-leading-dash --option=value",
];

const OPS = new Set(EXEC_OPERATIONS.map((o) => o.op as string));

/** Asserts every argv is `<op> <allowed>…` and no element contains any hostile text. */
function checkArgv(calls: readonly string[][], allowed: ReadonlySet<string>): void {
  expect(calls.length).toBeGreaterThan(0);
  for (const argv of calls) {
    const [op, ...rest] = argv;
    expect(OPS.has(op ?? ""), `operation ${op}`).toBe(true);
    for (const a of rest) {
      expect(allowed.has(a) || /^-?\d+$/.test(a), `argv ${JSON.stringify(argv)}: ${JSON.stringify(a)}`).toBe(
        true,
      );
      for (const h of HOSTILE)
        expect(a.includes(h), `argv carries user text: ${JSON.stringify(argv)}`).toBe(false);
    }
  }
}

describe("exec provider: values travel on stdin (mock script)", () => {
  it("nudge, setMeta, env and prompt: hostile values round-trip exactly; argv carries none of them", async () => {
    const t = await testProvider();
    onTestFinished(t.cleanup);
    const p = t.provider;
    const name = "hostile.1_x";
    const cfg: StartConfig = {
      command: "agent",
      workDir: "/w",
      env: Object.fromEntries(HOSTILE.map((v, i) => [`V${i}`, v])),
      prompt: HOSTILE.join("|"),
      nudge: HOSTILE[3],
    };
    await p.start(name, cfg);
    const doc = JSON.parse((await mockFile(t.execDir, name, "start.json")) ?? "null");
    expect(doc.prompt).toBe(cfg.prompt);
    HOSTILE.forEach((v, i) => {
      expect(doc.env[`V${i}`]).toBe(v);
    });
    for (const [i, v] of HOSTILE.entries()) {
      await p.nudge(name, v);
      expect(await mockFile(t.execDir, name, "nudge")).toBe(v);
      await p.setMeta(name, `key.${i}`, v);
      expect(await p.getMeta(name, `key.${i}`)).toBe(v);
    }
    expect(await p.processAlive(name, ["sleep", "a b;c"])).toBe(false);
    expect(await mockFile(t.execDir, name, "process-names")).toBe("sleep\na b;c");
    await p.sendKeys(name, ["C-c", "Enter"]);
    await p.copyTo(name, "/etc/hostname", "sub/dir");
    await p.peek(name, 7);
    await p.listRunning("hostile");
    await p.runLive(name, { ...cfg, sessionLive: HOSTILE });
    await p.stop(name);
    const keys = HOSTILE.map((_, i) => `key.${i}`);
    checkArgv(
      await recordedArgv(join(t.execDir, "argv")),
      new Set([name, "hostile", "", ...keys, "C-c", "Enter", "/etc/hostname", "sub/dir"]),
    );
  });

  it("parallel operations on distinct sessions all succeed and stay separate", async () => {
    const t = await testProvider();
    onTestFinished(t.cleanup);
    const p = t.provider;
    const names = Array.from({ length: 8 }, (_, i) => `par-${i}`);
    await Promise.all(names.map((n) => p.start(n, { command: "x", workDir: "/w", env: {} })));
    await Promise.all(names.map((n) => p.setMeta(n, "who", `value of ${n}`)));
    const [values, running, listed] = await Promise.all([
      Promise.all(names.map((n) => p.getMeta(n, "who"))),
      Promise.all(names.map((n) => p.isRunning(n))),
      p.listRunning("par-"),
    ]);
    expect(values).toEqual(names.map((n) => `value of ${n}`));
    expect(running).toEqual(names.map(() => true));
    expect(listed.sort()).toEqual([...names].sort());
    await Promise.all(names.map((n) => p.stop(n)));
    expect(await p.listRunning("par-")).toEqual([]);
  });

  it("invalid names, keys, key names and paths are rejected before the script runs", async () => {
    const t = await testProvider();
    onTestFinished(t.cleanup);
    const p = t.provider;
    await p.start("ok", { command: "x", workDir: "/w", env: {} });
    const before = (await recordedArgv(join(t.execDir, "argv"))).length;
    const bad: Promise<unknown>[] = [
      p.isRunning("$(x)"),
      p.getMeta("ok", "a;b"),
      p.sendKeys("ok", ["hello world"]),
      p.sendKeys("ok", ["-t"]),
      p.copyTo("ok", "relative/src", "x"),
      p.copyTo("ok", "/etc/hostname", "../escape"),
      p.copyTo("ok", "/etc/hostname", "/abs"),
      p.processAlive("ok", ["two\nlines"]),
    ];
    for (const b of bad) await expect(b).rejects.toMatchObject({ code: "GC_INVALID_NAME" });
    expect(await p.listRunning("bad prefix;")).toEqual([]);
    expect((await recordedArgv(join(t.execDir, "argv"))).length).toBe(before);
  });
});

describe.skipIf(!onPath("tmux") || !onPath("jq"))(
  "exec provider: values travel on stdin (reference tmux script)",
  () => {
    it("hostile env, prompt, nudge and metadata round-trip through gc-session-tmux; argv carries none of them", async () => {
      const argvDir = await mkdtemp(join(tmpdir(), "gcxa-"));
      const work = await mkdtemp(join(tmpdir(), "gcxw-"));
      const t = await testProvider({
        script: RECORD_SCRIPT,
        env: { GC_TEST_ARGV_DIR: argvDir, GC_TEST_REAL_SCRIPT: TMUX_SCRIPT },
      });
      const name = "hostile-tmux";
      onTestFinished(async () => {
        await t.provider.stop(name).catch(() => undefined);
        const args = t.provider.probe.backend?.tmux_args;
        if (Array.isArray(args))
          await run(["tmux", ...(args as string[]), "kill-server"]).catch(() => undefined);
        await t.cleanup();
        await rm(argvDir, { recursive: true, force: true });
        await rm(work, { recursive: true, force: true });
      });
      const prompt = HOSTILE.join("|");
      await mkdir(work, { recursive: true });
      await writeFile(
        join(work, "session.sh"),
        [
          `printf '%s\\0' ${HOSTILE.map((_, i) => `"$V${i}"`).join(" ")} > env.out`,
          "printf '%s' \"$1\" > prompt.out",
          "exec cat > nudge.out",
          "",
        ].join("\n"),
      );
      await t.provider.start(name, {
        command: "sh session.sh",
        workDir: work,
        env: Object.fromEntries(HOSTILE.map((v, i) => [`V${i}`, v])),
        prompt,
      });
      const nudge = HOSTILE.filter((v) => !v.endsWith("\n")).join(" ~ ");
      await t.provider.nudge(name, nudge);
      for (const [i, v] of HOSTILE.entries()) {
        await t.provider.setMeta(name, `key.${i}`, v);
        expect(await t.provider.getMeta(name, `key.${i}`)).toBe(v);
      }
      const read = (f: string) => readFile(join(work, f), "utf8").catch(() => undefined);
      await expect.poll(() => read("nudge.out"), { timeout: 10_000 }).toBe(`${nudge}\n`);
      expect(await read("prompt.out")).toBe(prompt);
      expect(await read("env.out")).toBe(HOSTILE.map((v) => `${v}\0`).join(""));
      expect(await read("pwned")).toBeUndefined();
      await t.provider.stop(name);
      checkArgv(await recordedArgv(argvDir), new Set([name, "", ...HOSTILE.map((_, i) => `key.${i}`)]));
    });
  },
);
