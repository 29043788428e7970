import { describe, expect, it } from "vitest";
import {
  DEFAULT_INHERITED_ENV,
  envAllowed,
  inheritedEnv,
  sessionEnv,
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
});
