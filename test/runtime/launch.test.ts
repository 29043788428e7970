import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import {
  commandViaEnv,
  DEFAULT_INHERITED_ENV,
  envAllowed,
  inheritedEnv,
  launchArgv,
  sessionEnv,
  withoutOwnerTag,
} from "../../internal/runtime/launch.js";

describe("session environment", () => {
  const gcEnv = {
    PATH: "/usr/bin",
    HOME: "/home/op",
    LANG: "C.UTF-8",
    LC_ALL: "C",
    TERM: "xterm",
    AWS_SECRET_ACCESS_KEY: "aws-hidden",
    GITHUB_TOKEN: "gh-hidden",
    MY_TOOL_HOME: "/opt/tool",
    MY_TOOL_DEBUG: "1",
    TMUX: "/tmp/tmux-0/default,1,0",
  };
  it("inheritedEnv: only the documented allow-list of gc's own variables, never the rest", () => {
    expect(inheritedEnv(gcEnv)).toEqual({
      PATH: "/usr/bin",
      HOME: "/home/op",
      LANG: "C.UTF-8",
      LC_ALL: "C",
    });
    // gc's own TERM is a terminal variable (NOT_INHERITED): each provider sets its own.
    expect(DEFAULT_INHERITED_ENV).toContain("PATH");
  });
  it("inheritedEnv: session.inherit_env adds names and PREFIX_* patterns; gc's terminal stays out", () => {
    const env = inheritedEnv(gcEnv, ["MY_TOOL_*", "TMUX"]);
    expect(env.MY_TOOL_HOME).toBe("/opt/tool");
    expect(env.MY_TOOL_DEBUG).toBe("1");
    expect(env.TMUX).toBeUndefined();
    expect(env.GITHUB_TOKEN).toBeUndefined();
    expect(envAllowed("LC_TIME", ["LC_*"])).toBe(true);
    expect(envAllowed("LCX", ["LC_*"])).toBe(false);
  });
  it("sessionEnv: allow-listed base, then declared env, then identity", () => {
    const env = sessionEnv(gcEnv, "s1", { env: { GITHUB_TOKEN: "declared" }, workDir: "/w" }, "c");
    expect(env).toMatchObject({
      PATH: "/usr/bin",
      GITHUB_TOKEN: "declared",
      GC_SESSION: "s1",
      GC_CITY: "c",
      GC_DIR: "/w",
    });
    expect(env.AWS_SECRET_ACCESS_KEY).toBeUndefined();
  });

  it("sessionEnv: a local city tags the session with its owner key; a name alone (docker/k8s/exec) does not", () => {
    const local = sessionEnv(gcEnv, "s1", { env: {}, workDir: "/w" }, { name: "c", owner: "c-0123456789" });
    expect(local).toMatchObject({ GC_CITY: "c", GC_OWNER: "c-0123456789", GC_SESSION: "s1" });
    // A declared GC_OWNER never claims another city's ownership.
    const declared = { env: { GC_OWNER: "other-1" }, workDir: "/w" };
    expect(sessionEnv(gcEnv, "s1", declared, { name: "c", owner: "c-1" }).GC_OWNER).toBe("c-1");
    expect(sessionEnv(gcEnv, "s1", declared, "c").GC_OWNER).toBeUndefined();
    expect(
      sessionEnv({ ...gcEnv, GC_OWNER: "x" }, "s1", { env: {}, workDir: "/w" }, "c").GC_OWNER,
    ).toBeUndefined();
  });

  it("withoutOwnerTag: gc's own processes started inside a session drop its owner tag only", () => {
    expect(withoutOwnerTag({ GC_OWNER: "c-1", GC_SESSION: "s", PATH: "/bin" })).toEqual({
      GC_SESSION: "s",
      PATH: "/bin",
    });
  });
});

describe("commandViaEnv", () => {
  it("the command text leaves argv for the environment; the shell runs it with the same arguments", () => {
    const secret = "hunter2-$(not run)-'q'";
    const argv = launchArgv({
      command: `printf '%s|' "$GC_TOKEN_ECHO" "$0" "$@"; echo`,
      prompt: "a b",
      promptFlag: "-p",
    });
    const moved = commandViaEnv(argv);
    expect(moved.argv.join(" ")).not.toContain("printf");
    expect(moved.env).toEqual({ GC_START_COMMAND: argv[2] });
    const r = spawnSync(moved.argv[0]!, moved.argv.slice(1), {
      encoding: "utf8",
      env: { PATH: process.env.PATH, GC_TOKEN_ECHO: secret, ...moved.env },
    });
    // Exactly what the original argv prints (same text, same $0 and arguments).
    const direct = spawnSync(argv[0]!, argv.slice(1), {
      encoding: "utf8",
      env: { PATH: process.env.PATH, GC_TOKEN_ECHO: secret },
    });
    expect(r.stdout).toBe(direct.stdout);
    expect(r.stdout).toBe(`${secret}|gc-session|-p|a b|-p a b\n`);
    // The program does not inherit the carrier variable.
    const env = commandViaEnv(launchArgv({ command: "env" }));
    const out = spawnSync(env.argv[0]!, env.argv.slice(1), {
      encoding: "utf8",
      env: { PATH: process.env.PATH, ...env.env },
    });
    expect(out.stdout).not.toContain("GC_START_COMMAND");
    expect(commandViaEnv(["/bin/sh"])).toEqual({ argv: ["/bin/sh"], env: {} });
  });

  it("a simple command replaces the shell (exec); builtins, exec and compound commands keep their meaning", () => {
    const run = (command: string) => {
      const m = commandViaEnv(launchArgv({ command }));
      return spawnSync(m.argv[0]!, m.argv.slice(1), {
        encoding: "utf8",
        env: { PATH: process.env.PATH, ...m.env },
      });
    };
    // The program's parent is whoever spawned the shell: the shell itself is gone.
    const stat = run("cat /proc/self/stat").stdout.split(" ");
    expect(Number(stat[3])).toBe(process.pid);
    expect(run("exit 3").status).toBe(3);
    expect(run("exec sh -c 'exit 4'").status).toBe(4);
    expect(run("true; exit 5").status).toBe(5);
    expect(run("echo hi").stdout).toBe("hi\n");
  });
});
