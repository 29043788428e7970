/* biome-ignore-all lint/suspicious/noTemplateCurlyInString: these tests are about the city file's ${VAR} syntax */
import { describe, expect, it } from "vitest";
import { formatDuration, parseDuration } from "../../internal/base/duration.js";
import { interpolate } from "../../internal/base/interpolate.js";
import { closest, didYouMean, editDistance } from "../../internal/base/suggest.js";
import { expandPlaceholders, placeholderProblems } from "../../internal/config/placeholders.js";
import {
  isSecretKey,
  REDACTED,
  redactDeep,
  redactEnv,
  redactText,
  secretValues,
} from "../../internal/config/redact.js";
import { city, issues } from "./helpers.js";

describe("durations", () => {
  it.each([
    ["0", 0],
    ["1500ms", 1500],
    ["30s", 30_000],
    ["5m", 300_000],
    ["1h", 3_600_000],
    ["1h30m", 5_400_000],
    ["1m30s500ms", 90_500],
    ["1.5s", 1500],
    ["0.0005s", 1],
  ])("parseDuration: %s → %i ms", (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each(["", "30", "s", "5 m", "-1s", "1d", "1.s", "1m ", " 1m", "1S", "ms"])(
    "parseDuration: %j is not a duration",
    (text) => {
      expect(parseDuration(text)).toBeUndefined();
    },
  );

  it.each([
    [0, "0"],
    [1500, "1s500ms"],
    [90_000, "1m30s"],
    [3_600_000, "1h"],
    [7, "7ms"],
  ])("formatDuration: %i → %s, and parses back", (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
    expect(parseDuration(text)).toBe(ms);
  });
});

describe("interpolate", () => {
  const env = { A: "alpha", EMPTY: "", UNDEF: undefined };
  it.each([
    ["plain", "plain"],
    ["${A}", "alpha"],
    ["x${A}y${A}", "xalphayalpha"],
    ["${MISSING:-dflt}", "dflt"],
    ["${EMPTY:-dflt}", "dflt"],
    ["${EMPTY-dflt}", ""],
    ["${MISSING-dflt}", "dflt"],
    ["${UNDEF:-d}", "d"],
    ["${A:-unused}", "alpha"],
    ["${MISSING:-}", ""],
    ["${MISSING:-a:-b}", "a:-b"],
    ["$$", "$"],
    ["$${A}", "${A}"],
    ["$HOME and $1", "$HOME and $1"],
    ["cost: 5$", "cost: 5$"],
  ])("interpolate: %j → %j", (text, want) => {
    expect(interpolate(text, env)).toMatchObject({ ok: true, value: want });
  });

  it.each([
    ["${MISSING}", "environment variable MISSING is not set"],
    ["${A", 'unterminated "${"'],
    ["${}", 'invalid variable name ""'],
    ["${1X}", 'invalid variable name "1X"'],
    ["${A B}", 'invalid variable name "A B"'],
  ])("interpolate: %j fails with %j", (text, message) => {
    const r = interpolate(text, env);
    expect(r.ok).toBe(false);
    expect(r.ok ? "" : r.error).toContain(message);
  });

  it("interpolate: records the variables it substituted (not defaults)", () => {
    const r = interpolate("${A} ${MISSING:-x}", env);
    expect(r.ok && r.used).toEqual([{ name: "A", value: "alpha" }]);
  });
});

describe("placeholders", () => {
  it("expandPlaceholders: known names, spaces inside braces, escapes, unknown kept", () => {
    expect(expandPlaceholders("{{agent}}/{{ city }} \\{{agent}} {{other}}", { agent: "a", city: "c" })).toBe(
      "a/c {{agent}} {{other}}",
    );
  });

  it("placeholderProblems: reports unknown names with offsets, skipping escapes", () => {
    const p = placeholderProblems("ok {{agent}} \\{{nope}} {{agnt}}", ["agent"]);
    expect(p).toHaveLength(1);
    expect(p[0]!.offset).toBe(23);
    expect(p[0]!.message).toContain('unknown placeholder {{agnt}} (did you mean "agent"?)');
  });
});

describe("suggestions", () => {
  it.each([
    ["kitten", "sitting", 3],
    ["", "abc", 3],
    ["same", "same", 0],
    ["nmae", "name", 1],
  ])("editDistance: %s / %s = %i", (a, b, d) => {
    expect(editDistance(a, b)).toBe(d);
  });

  it.each([
    ["work-dir", ["work_dir", "dir"], "work_dir"],
    ["WORK_DIR", ["work_dir"], "work_dir"],
    ["agent", ["agents", "daemon"], "agents"],
    ["arg", ["argument", "flag"], "argument"],
    ["zzz", ["agents", "daemon"], undefined],
  ])("closest: %s among %j → %s", (input, candidates, want) => {
    expect(closest(input, candidates)).toBe(want);
  });

  it("didYouMean: formats the hint or nothing", () => {
    expect(didYouMean("nmae", ["name"])).toBe(' (did you mean "name"?)');
    expect(didYouMean("xyz", ["name"])).toBe("");
  });
});

describe("redaction", () => {
  it.each([
    ["API_TOKEN", true],
    ["github_token", true],
    ["DB_PASSWORD", true],
    ["AWS_SECRET_ACCESS_KEY", true],
    ["OPENAI_API_KEY", true],
    ["GOOGLE_APPLICATION_CREDENTIALS", true],
    ["AUTH_HEADER", true],
    ["LOG_LEVEL", false],
    ["GC_SESSION", false],
    ["PATH", false],
  ])("isSecretKey: %s → %s", (key, secret) => {
    expect(isSecretKey(key)).toBe(secret);
  });

  it("redactEnv: masks secret values only", () => {
    expect(redactEnv({ API_TOKEN: "t", LOG_LEVEL: "info" })).toEqual({
      API_TOKEN: REDACTED,
      LOG_LEVEL: "info",
    });
  });

  it("secretValues/redactText: values of every interpolated variable are masked anywhere, longest first", () => {
    const secrets = secretValues([
      { name: "MY_TOKEN", value: "abcd" },
      { name: "MY_TOKEN_LONG", value: "abcdef" },
      { name: "SHORT_KEY", value: "ab" },
      { name: "USER", value: "alice" },
    ]);
    expect(secrets).toEqual(["abcdef", "alice", "abcd"]);
    expect(redactText("x abcdef abcd alice", secrets)).toBe(`x ${REDACTED} ${REDACTED} ${REDACTED}`);
  });

  it("redactDeep: env maps by key, strings by secret value, other values untouched", () => {
    const v = { a: { env: { TOKEN: "z", X: "y" }, cmd: "run s3cr3t", n: 3, list: ["s3cr3t"] } };
    expect(redactDeep(v, ["s3cr3t"])).toEqual({
      a: { env: { TOKEN: REDACTED, X: "y" }, cmd: `run ${REDACTED}`, n: 3, list: [REDACTED] },
    });
  });
});

describe("decoding", () => {
  it("decode: an empty (or comment-only) file is a config error, never a city with no agents", () => {
    for (const text of ["", "# nothing yet\n", "\n\n"])
      expect(() => city(text)).toThrow(/city file is empty/);
  });

  it("decode: a file with one empty section is an empty city with every default", () => {
    const c = city("agents: []\n");
    expect(c.config.agents).toEqual([]);
    expect(c.config.daemon.interval).toBe(30_000);
    expect(c.config.session.exec).toEqual({ timeout: 30_000, start_timeout: 120_000 });
    expect(c.config.workspace.name).toBe("city");
  });

  it("decode: aliases resolve to their anchors", () => {
    const c = city(
      "agents:\n  - name: a\n    provider: sh\n    pre_start: &cmds [one, two]\n  - name: b\n    provider: sh\n    pre_start: *cmds\n",
    );
    expect(c.config.agents[1]!.pre_start).toEqual(["one", "two"]);
  });

  it("decode: a bad value does not hide problems elsewhere in the same agent", () => {
    expect(
      issues(
        "agents:\n  - name: a\n    provider: sh\n    ready_delay_ms: soon\n    min_active_sessions: 3\n    max_active_sessions: 1\n",
      ),
    ).toEqual([
      '4:21: agents[0].ready_delay_ms: expected an integer, got a string "soon"',
      "5:26: agents[0].min_active_sessions: min_active_sessions (3) is greater than max_active_sessions (1)",
    ]);
  });

  it("decode: a required key with a bad value is reported once (not also as missing); an absent one as missing", () => {
    expect(issues("agents:\n  - name: 5\n    provider: sh\n  - provider: sh\n")).toEqual([
      '2:11: agents[0].name: expected a string, got a number (5) (quote it: "5")',
      '4:5: agents[1]: missing required key "name"',
    ]);
  });

  it("decode: merge keys fill only what a map does not set, in every agent of a list", () => {
    const c = city(
      "x-base: &base\n  provider: sh\n  suspended: true\nagents:\n  - <<: *base\n    name: a\n  - name: b\n    <<: *base\n    suspended: false\n  - name: c\n    provider: sh\n",
    );
    expect(c.config.agents.map((a) => [a.name, a.provider, a.suspended])).toEqual([
      ["a", "sh", true],
      ["b", "sh", false],
      ["c", "sh", false],
    ]);
  });

  it("decode: an agent whose provider is bad gets no follow-on 'no provider' error", () => {
    expect(issues("agents:\n  - name: a\n    provider: 5\n")).toEqual([
      '3:15: agents[0].provider: expected a string, got a number (5) (quote it: "5")',
    ]);
  });

  it("decode: multiple documents are rejected", () => {
    expect(issues("agents: []\n---\nagents: []\n")[0]).toMatch(/^2:1: Source contains multiple documents/);
  });

  it("decode: null values are type errors, not silently absent", () => {
    expect(issues("workspace:\n  name:\n")).toEqual(["2:8: workspace.name: expected a string, got nothing"]);
  });

  it("decode: `yes` and `on` are strings in YAML 1.2", () => {
    expect(issues("workspace:\n  suspended: on\n")).toEqual([
      '2:14: workspace.suspended: expected true or false, got a string "on"',
    ]);
  });

  it("decode: unknown keys anywhere get a did-you-mean", () => {
    expect(issues("daemon:\n  backof: { min: 1s }\nsession:\n  tmux: { sockt: x }\n")).toEqual([
      '2:3: daemon.backof: unknown key "backof" (did you mean "backoff"?)',
      '4:11: session.tmux.sockt: unknown key "sockt" (did you mean "socket"?)',
    ]);
  });

  it("decode: GC_SESSION replaces session.provider", () => {
    const c = city("session: { provider: tmux }\n", { providerOverride: "fake" });
    expect(c.config.session.provider).toBe("fake");
  });

  it("decode: a backend this build lacks is refused, listing the built ones (no test doubles)", () => {
    expect(issues("session: { provider: tmux }\n")).toEqual([]);
    expect(issues("agents:\n  - name: a\n    provider: sh\n    session: podman\n")).toEqual([
      '4:14: agents[0].session: unknown session provider "podman"; this build has tmux, subprocess, exec:<script>, k8s, docker, acp',
    ]);
  });

  it("decode: the docker image is required only when docker is used", () => {
    expect(issues("session: { provider: tmux, docker: { network: none } }\n")).toEqual([]);
    expect(issues("agents:\n  - name: a\n    provider: sh\n    session: docker\n")).toEqual([
      "1:1: session.docker.image: required when the docker session provider is used (by agents[0].session)",
    ]);
  });
});
