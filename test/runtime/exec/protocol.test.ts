/**
 * How the exec provider reads a script's answers: exit codes (v2 codes 3–7 only from scripts
 * that declare protocol 2; the reference's "already exists" rule), exit 2 (a no-op for
 * commands, unsupported for queries, reflected in capabilities), garbage output (a clear
 * error, never a guess), the probe report, and the start JSON document.
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { isGcError } from "../../../internal/base/errors.js";
import { probeExecScript } from "../../../internal/runtime/exec/index.js";
import type { StartConfig } from "../../../internal/runtime/provider.js";
import { MOCK_SCRIPT, mockFile, recordedArgv, type TestProvider, testProvider } from "./mock.js";

const CFG: StartConfig = { command: "sleep 300", workDir: "/tmp", env: {} };

async function rejection(p: Promise<unknown>): Promise<Error & { code?: string }> {
  try {
    await p;
  } catch (e) {
    return e as Error & { code?: string };
  }
  throw new Error("expected a rejection, but it resolved");
}

async function scoped(opts: Parameters<typeof testProvider>[0]): Promise<TestProvider> {
  const t = await testProvider(opts);
  onTestFinished(t.cleanup);
  return t;
}

describe("exec provider: protocol v2 exit codes", () => {
  let t: TestProvider;
  beforeAll(async () => {
    t = await testProvider();
  });
  afterAll(() => t.cleanup());

  it("start: a duplicate is SessionExistsError (exit 4) and the first session is not stopped", async () => {
    await t.provider.start("dup", CFG);
    const err = await rejection(t.provider.start("dup", CFG));
    expect(isGcError(err, "GC_SESSION_EXISTS"), String(err)).toBe(true);
    expect(await t.provider.isRunning("dup")).toBe(true);
    const calls = await recordedArgv(join(t.execDir, "argv"));
    expect(calls).not.toContainEqual(["stop", "dup"]);
  });

  it("getMeta: exit 7 is unset, an empty value is the empty string, values are exact", async () => {
    await t.provider.start("meta", CFG);
    expect(await t.provider.getMeta("meta", "k")).toBeUndefined();
    await t.provider.setMeta("meta", "k", "");
    expect(await t.provider.getMeta("meta", "k")).toBe("");
    await t.provider.setMeta("meta", "k", "two\nlines\n\n");
    expect(await t.provider.getMeta("meta", "k")).toBe("two\nlines\n\n");
    await t.provider.removeMeta("meta", "k");
    expect(await t.provider.getMeta("meta", "k")).toBeUndefined();
  });

  it("exit 3: queries reject with SessionNotFoundError, commands resolve, is-running is false", async () => {
    // Call one at a time: a rejected promise nobody awaits yet is an unhandled rejection.
    for (const call of [
      () => t.provider.getMeta("gone", "k"),
      () => t.provider.setMeta("gone", "k", "v"),
      () => t.provider.removeMeta("gone", "k"),
      () => t.provider.peek("gone", 5),
    ]) {
      const err = await rejection(call());
      expect(isGcError(err, "GC_SESSION_NOT_FOUND"), String(err)).toBe(true);
    }
    await t.provider.nudge("gone", "hello");
    await t.provider.interrupt("gone");
    await t.provider.sendKeys("gone", ["Enter"]);
    await t.provider.clearScrollback("gone");
    await t.provider.stop("gone");
    await t.provider.runLive("gone", CFG);
    expect(await t.provider.isRunning("gone")).toBe(false);
    expect(await t.provider.processAlive("gone", ["x"])).toBe(false);
    expect(await t.provider.getLastActivity("gone")).toBeUndefined();
  });

  it("getLastActivity: parses RFC 3339", async () => {
    await t.provider.start("act", CFG);
    expect(await t.provider.getLastActivity("act")).toEqual(new Date("2026-01-02T03:04:05Z"));
  });

  it("peek: passes the line count and trims trailing newlines", async () => {
    await t.provider.start("pk", CFG);
    expect(await t.provider.peek("pk", -3)).toBe("screen of pk (-3 lines)");
  });

  it("capabilities: follow the declared operations", () => {
    const caps = t.provider.capabilities();
    expect(caps).toMatchObject({
      executes: true,
      attach: false,
      attachDetect: false,
      activity: true,
      processNames: true,
    });
    expect(caps.copyTo && caps.runLive).toBe(true);
  });
});

describe("exec provider: failures of start", () => {
  it("exit 5 is SessionDiedDuringStartupError, exit 6 HookFailedError naming the hook", async () => {
    const died = await scoped({ env: { MOCK_FAIL: "start", MOCK_CODE: "5", MOCK_TEXT: "program exited 3" } });
    const e1 = await rejection(died.provider.start("s", CFG));
    expect(isGcError(e1, "GC_DIED_DURING_STARTUP"), String(e1)).toBe(true);
    expect(e1.message).toContain("program exited 3");
    const hook = await scoped({
      env: { MOCK_FAIL: "start", MOCK_CODE: "6", MOCK_TEXT: "pre_start: 'exit 7': exit 7" },
    });
    const e2 = await rejection(hook.provider.start("s", CFG));
    expect(isGcError(e2, "GC_HOOK_FAILED"), String(e2)).toBe(true);
    expect((e2 as Error & { hook?: string }).hook).toBe("pre_start");
  });

  it("exit 1: ProviderError `exec: <script> start <name>: <stderr>`, then stop cleans up", async () => {
    const t = await scoped({ env: { MOCK_FAIL: "start", MOCK_TEXT: "backend exploded\n" } });
    const err = await rejection(t.provider.start("s1", CFG));
    expect(isGcError(err, "GC_PROVIDER"), String(err)).toBe(true);
    expect(err.message).toBe(`exec: ${MOCK_SCRIPT} start s1: backend exploded`);
    expect(await recordedArgv(join(t.execDir, "argv"))).toContainEqual(["stop", "s1"]);
  });

  it("a v1 script: `already exists` on stderr is SessionExistsError; exit 3 is a plain failure", async () => {
    const t = await scoped({ env: { MOCK_V1: "1" } });
    await t.provider.start("v1", CFG);
    const err = await rejection(t.provider.start("v1", CFG));
    expect(isGcError(err, "GC_SESSION_EXISTS"), String(err)).toBe(true);
    const v1fail = await scoped({ env: { MOCK_V1: "1", MOCK_FAIL: "is-running", MOCK_CODE: "3" } });
    const e2 = await rejection(v1fail.provider.isRunning("v1"));
    expect(isGcError(e2, "GC_PROVIDER"), String(e2)).toBe(true);
  });

  it("a v1 script: values round-trip framed, empty get-meta is unset; a missing session is SessionNotFoundError", async () => {
    const t = await scoped({ env: { MOCK_V1: "1" } });
    await t.provider.start("v1m", CFG);
    await t.provider.setMeta("v1m", "k", "value\n");
    expect(await t.provider.getMeta("v1m", "k")).toBe("value\n");
    await t.provider.setMeta("v1m", "empty", "");
    expect(await t.provider.getMeta("v1m", "empty")).toBe("");
    expect(await t.provider.getMeta("v1m", "unset")).toBeUndefined();
    const err = await rejection(t.provider.getMeta("missing", "k"));
    expect(isGcError(err, "GC_SESSION_NOT_FOUND"), String(err)).toBe(true);
    expect(t.provider.capabilities().activity).toBe(false);
    expect(t.provider.capabilities().runLive).toBe(false);
  });
});

describe("exec provider: exit 2 (unknown operation)", () => {
  const ONLY = "start stop is-running list-running";

  it("declared by capabilities: commands are no-ops, queries unsupported, capabilities reflect it", async () => {
    const t = await scoped({ env: { MOCK_ONLY: ONLY } });
    await t.provider.start("u", CFG);
    expect(t.provider.capabilities()).toMatchObject({
      processNames: false,
      activity: false,
      runLive: false,
      copyTo: false,
    });
    await t.provider.nudge("u", "hello");
    await t.provider.setMeta("u", "k", "v");
    await t.provider.runLive("u", CFG);
    expect(await t.provider.processAlive("u", ["sleep"])).toBe(true); // falls back to is-running
    expect(await t.provider.getLastActivity("u")).toBeUndefined();
    for (const p of [t.provider.peek("u", 1), t.provider.getMeta("u", "k")]) {
      const err = await rejection(p);
      expect(isGcError(err, "GC_UNSUPPORTED"), String(err)).toBe(true);
    }
    const calls = (await recordedArgv(join(t.execDir, "argv"))).map((c) => c[0]);
    expect(calls).not.toContain("nudge"); // undeclared operations are never sent
  });

  it("a v1 script: exit 2 from a command resolves; a query the probe found missing is unsupported", async () => {
    const t = await scoped({ env: { MOCK_V1: "1", MOCK_ONLY: ONLY } });
    await t.provider.start("u1", CFG);
    await t.provider.nudge("u1", "hello"); // not probeable: sent, exit 2, success
    await t.provider.stop("u1");
    expect((await recordedArgv(join(t.execDir, "argv"))).map((c) => c[0])).toContain("nudge");
    const err = await rejection(t.provider.peek("u1", 1));
    expect(isGcError(err, "GC_UNSUPPORTED"), String(err)).toBe(true);
  });

  it("probeExecScript: reports per-operation support of a v1 script without side effects", async () => {
    const p = await probeExecScript(MOCK_SCRIPT, { env: { ...process.env, MOCK_V1: "1", MOCK_ONLY: ONLY } });
    expect(p.protocol).toBe(1);
    expect(p.source).toBe("exit-codes");
    const status = Object.fromEntries(p.operations.map((o) => [o.op, o.status]));
    expect(status).toMatchObject({
      capabilities: "missing",
      "is-running": "implemented",
      "list-running": "implemented",
      peek: "missing",
      "get-meta": "missing",
      "process-alive": "missing",
      start: "not-probed",
      nudge: "not-probed",
    });
    expect(p.missingRequired).toEqual(expect.arrayContaining(["peek", "get-meta", "process-alive"]));
    expect(p.missingRequired).not.toContain("start");
  });

  it("probeExecScript: a v2 script declares its operations; mismatches are reported", async () => {
    const p = await probeExecScript(MOCK_SCRIPT, {
      env: { ...process.env, MOCK_FAIL: "peek", MOCK_CODE: "2" },
    });
    expect(p.protocol).toBe(2);
    expect(p.source).toBe("capabilities");
    expect(p.backend).toEqual({ type: "mock" });
    const peek = p.operations.find((o) => o.op === "peek");
    expect(peek?.status).toBe("implemented");
    expect(peek?.detail).toMatch(/exited 2/);
    expect(p.operations.find((o) => o.op === "attach")?.status).toBe("missing");
    expect(p.missingRequired).toEqual([]);
  });
});

describe("exec provider: garbage on stdout is an error, never a guess", () => {
  const cases: [string, string, (t: TestProvider) => Promise<unknown>][] = [
    ["is-running", "maybe", (t) => t.provider.isRunning("g")],
    ["process-alive", "yes", (t) => t.provider.processAlive("g", ["sleep"])],
    ["get-last-activity", "yesterday", (t) => t.provider.getLastActivity("g")],
    ["list-running", "ok\nnot a name!\n", (t) => t.provider.listRunning("")],
  ];
  for (const [op, text, call] of cases) {
    it(`${op}: ${JSON.stringify(text)} rejects with a ProviderError quoting it`, async () => {
      const t = await scoped({ env: { MOCK_GARBAGE: op, MOCK_TEXT: text } });
      const err = await rejection(call(t));
      expect(isGcError(err, "GC_PROVIDER"), String(err)).toBe(true);
      expect(err.message).toContain(op);
      expect(err.message).toContain(
        JSON.stringify(text.split("\n").find((l) => l.includes(" ")) ?? text).slice(1, -1),
      );
    });
  }

  it("capabilities: malformed JSON makes createProvider fail clearly", async () => {
    const err = await rejection(
      testProvider({ env: { MOCK_GARBAGE: "capabilities", MOCK_TEXT: "{protocol: two" } }),
    );
    expect(isGcError(err, "GC_PROVIDER"), String(err)).toBe(true);
    expect(err.message).toMatch(/capabilities: output is not JSON/);
  });
});

describe("exec provider: the start JSON", () => {
  it("start: reference fields plus prompt, prompt_flag, hook_dir; GC_SESSION/GC_CITY/GC_DIR in env; empty keys omitted", async () => {
    const t = await scoped({});
    // Copy sources and the overlay are checked before the script runs: they must exist.
    const city = await mkdtemp(join(tmpdir(), "gc-exec-city-"));
    onTestFinished(() => rm(city, { recursive: true, force: true }));
    await mkdir(join(city, "overlay"));
    for (const f of ["a", "b", "setup.sh"]) await writeFile(join(city, f), f);
    await t.provider.start("doc", {
      command: "agent --fast",
      workDir: "/w/doc",
      hookDir: city,
      env: { A: "1" },
      processNames: ["agent"],
      nudge: "go",
      prompt: "the task",
      promptFlag: "--prompt",
      preStart: ["mkdir -p x"],
      sessionSetup: ["echo s"],
      sessionSetupScript: join(city, "setup.sh"),
      sessionLive: ["echo l"],
      overlayDir: join(city, "overlay"),
      copyFiles: [
        { src: join(city, "a"), relDst: "" },
        { src: join(city, "b"), relDst: "sub/b" },
      ],
      emitsPermissionWarning: true,
      fingerprintExtra: { pool: "x" },
    });
    const doc = JSON.parse((await mockFile(t.execDir, "doc", "start.json")) ?? "null");
    expect(doc).toEqual({
      work_dir: "/w/doc",
      command: "agent --fast",
      env: { A: "1", GC_SESSION: "doc", GC_CITY: "unit", GC_DIR: "/w/doc" },
      process_names: ["agent"],
      nudge: "go",
      pre_start: ["mkdir -p x"],
      session_setup: ["echo s"],
      session_setup_script: join(city, "setup.sh"),
      session_live: ["echo l"],
      overlay_dir: join(city, "overlay"),
      copy_files: [{ src: join(city, "a") }, { src: join(city, "b"), rel_dst: "sub/b" }],
      prompt: "the task",
      prompt_flag: "--prompt",
      hook_dir: city,
    });
    await t.provider.start("bare", { command: "", workDir: "", env: {} });
    expect(JSON.parse((await mockFile(t.execDir, "bare", "start.json")) ?? "null")).toEqual({
      env: { GC_SESSION: "bare", GC_CITY: "unit" },
    });
  });

  it("createProvider: a missing script or a bad timeout setting is a clear error", async () => {
    const e1 = await rejection(testProvider({ script: "./no-such-script.sh" }));
    expect(e1.message).toMatch(/not an executable file/);
    const e2 = await rejection(testProvider({ script: "gc-no-such-script-on-path" }));
    expect(e2.message).toMatch(/not found on PATH/);
    const e3 = await rejection(testProvider({ settings: { timeout: "soon" } }));
    expect(e3.message).toMatch(/session\.exec\.timeout/);
  });
});
