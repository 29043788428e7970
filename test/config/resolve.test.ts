import { describe, expect, it } from "vitest";
import { shellQuote } from "../../internal/base/shell-quote.js";
import {
  type DesiredSession,
  daemonSettings,
  formatBeacon,
  poolInstanceName,
  resolveCity,
  resolvePoolInstance,
} from "../../internal/config/resolve.js";
import { fingerprint } from "../../internal/runtime/fingerprint.js";
import { launchArgv } from "../../internal/runtime/launch.js";
import { CITY_DIR, type CityOptions, city, NOW } from "./helpers.js";

const BEACON = "2025-01-02T03:04:05";

function resolve(text: string, opts: CityOptions = {}): DesiredSession[] {
  return resolveCity(city(text, opts), { now: NOW });
}

interface Case {
  readonly name: string;
  readonly yaml: string;
  readonly opts?: CityOptions;
  /** Expected sessions (partial match, in order); the session count must match too. */
  readonly want: readonly unknown[];
}

const CASES: readonly Case[] = [
  {
    name: "builtin python preset: command, readiness, process names, hook dir",
    yaml: "agents:\n  - name: repl\n    provider: python\n",
    want: [
      {
        name: "repl",
        agent: "repl",
        provider: "tmux",
        dependsOn: [],
        suspended: false,
        config: {
          command: "python3 -i -q",
          workDir: CITY_DIR,
          hookDir: CITY_DIR,
          readyPromptPrefix: ">>> ",
          processNames: ["python3"],
        },
      },
    ],
  },
  {
    name: "city preset layers over the builtin whose command it names",
    yaml: "providers:\n  py:\n    command: python3\n    args: [-i]\nagents:\n  - name: repl\n    provider: py\n",
    want: [{ config: { command: "python3 -i", readyPromptPrefix: ">>> ", env: { GC_PROVIDER: "python" } } }],
  },
  {
    name: "city preset named after a builtin keeps the builtin's command and merges env",
    yaml: "providers:\n  claude:\n    env: { A: city }\nagents:\n  - name: c\n    provider: claude\n    env: { B: agent }\n",
    want: [
      {
        config: { command: "claude", env: { A: "city", B: "agent", GC_PROVIDER: "claude" } },
        declaredEnvKeys: ["A", "B"],
      },
    ],
  },
  {
    name: "agent env wins over preset env",
    yaml: "providers:\n  my:\n    command: my-cli\n    env: { MODE: preset, KEEP: k }\nagents:\n  - name: a\n    provider: my\n    env: { MODE: agent }\n",
    want: [{ config: { env: { MODE: "agent", KEEP: "k", GC_PROVIDER: "my" } } }],
  },
  {
    name: "start_command is used verbatim with no preset hints",
    yaml: "agents:\n  - name: w\n    start_command: \"sh -c 'exec sleep 100'\"\n",
    want: [{ config: { command: "sh -c 'exec sleep 100'" } }],
  },
  {
    name: "args are shell-quoted into the command",
    yaml: 'agents:\n  - name: c\n    provider: claude\n    args: [--name, "it\'s here", "$HOME"]\n',
    want: [{ config: { command: "claude --name 'it'\\''s here' '$HOME'" } }],
  },
  {
    name: "prompt_mode argument: beacon + prompt as StartConfig.prompt",
    yaml: "workspace: { name: demo }\nagents:\n  - name: c\n    provider: claude\n    prompt: Do the thing.\n",
    want: [{ config: { prompt: `[demo] c • ${BEACON}\n\nDo the thing.` } }],
  },
  {
    name: "prompt_mode flag: prompt plus promptFlag",
    yaml: "workspace: { name: demo }\nproviders:\n  my:\n    command: my-cli\n    prompt_mode: flag\n    prompt_flag: --prompt\nagents:\n  - name: a\n    provider: my\n    prompt: hi\n",
    want: [{ config: { prompt: `[demo] a • ${BEACON}\n\nhi`, promptFlag: "--prompt" } }],
  },
  {
    name: "prompt_mode nudge: beacon + prompt, then the agent's nudge, delivered as the nudge",
    yaml: "workspace: { name: demo }\nagents:\n  - name: a\n    provider: claude\n    prompt_mode: nudge\n    prompt: hi\n    nudge: go\n",
    want: [{ config: { nudge: `[demo] a • ${BEACON}\n\nhi\n\n---\n\ngo` } }],
  },
  {
    name: "prompt_mode none (shell preset): the nudge alone, no beacon",
    yaml: "agents:\n  - name: s\n    provider: sh\n    nudge: echo hi\n",
    want: [{ config: { command: "sh -i", nudge: "echo hi" } }],
  },
  {
    name: "prompt placeholders expand, including the resolved work dir",
    yaml: 'workspace: { name: demo }\nagents:\n  - name: a\n    provider: claude\n    work_dir: w/{{agent}}\n    prompt: "{{agent}} of {{city}} as {{session}} in {{work_dir}} under {{city_dir}} \\\\{{x}}"\n',
    want: [
      {
        config: {
          workDir: `${CITY_DIR}/w/a`,
          prompt: `[demo] a • ${BEACON}\n\na of demo as a in ${CITY_DIR}/w/a under ${CITY_DIR} {{x}}`,
        },
      },
    ],
  },
  {
    name: "prompt_template content comes from the loader",
    yaml: "workspace: { name: demo }\nagents:\n  - name: a\n    provider: claude\n    prompt_template: p.md\n",
    opts: { promptTemplates: { a: "You are {{agent}}.\n" } },
    want: [{ config: { prompt: `[demo] a • ${BEACON}\n\nYou are a.\n` } }],
  },
  {
    name: "a pool resolves instances 1..min with stable names and pool env",
    yaml: "agents:\n  - name: worker\n    provider: sh\n    min_active_sessions: 2\n    max_active_sessions: 4\n",
    want: [
      {
        name: "worker-1",
        agent: "worker",
        pool: { index: 1, min: 2, max: 4 },
        config: {
          env: { GC_SESSION: "worker-1", GC_AGENT: "worker", GC_TEMPLATE: "worker", GC_POOL_INDEX: "1" },
        },
      },
      { name: "worker-2", pool: { index: 2, min: 2, max: 4 }, config: { env: { GC_SESSION: "worker-2" } } },
    ],
  },
  {
    name: "a pool with only max starts one instance",
    yaml: "agents:\n  - name: w\n    provider: sh\n    max_active_sessions: 3\n",
    want: [{ name: "w-1", pool: { index: 1, min: 1, max: 3 } }],
  },
  {
    name: "a pool with min 0 wants no session",
    yaml: "agents:\n  - name: w\n    provider: sh\n    min_active_sessions: 0\n    max_active_sessions: 3\n",
    want: [],
  },
  {
    name: "work_dir placeholders give each pool instance its own dir; dir is an alias",
    yaml: "agents:\n  - name: w\n    provider: sh\n    dir: ./workers/{{session}}\n    min_active_sessions: 2\n",
    want: [
      { config: { workDir: `${CITY_DIR}/workers/w-1`, env: { GC_DIR: `${CITY_DIR}/workers/w-1` } } },
      { config: { workDir: `${CITY_DIR}/workers/w-2` } },
    ],
  },
  {
    name: "absolute paths stay; relative paths anchor at the city dir",
    yaml: "agents:\n  - name: a\n    provider: sh\n    work_dir: /tmp/abs\n    overlay_dir: overlays/a\n    session_setup_script: scripts/setup.sh\n    copy_files:\n      - notes/readme.md\n      - { src: cfg/settings.json, dst: .gc/settings.json }\n",
    want: [
      {
        config: {
          workDir: "/tmp/abs",
          overlayDir: `${CITY_DIR}/overlays/a`,
          sessionSetupScript: `${CITY_DIR}/scripts/setup.sh`,
          copyFiles: [
            { src: `${CITY_DIR}/notes/readme.md`, relDst: "readme.md" },
            { src: `${CITY_DIR}/cfg/settings.json`, relDst: ".gc/settings.json" },
          ],
        },
      },
    ],
  },
  {
    name: "hooks are passed through in order",
    yaml: "agents:\n  - name: a\n    provider: sh\n    pre_start: [one, two]\n    session_setup: [three]\n    session_live: [four, five]\n",
    want: [{ config: { preStart: ["one", "two"], sessionSetup: ["three"], sessionLive: ["four", "five"] } }],
  },
  {
    name: "GC_* identity env",
    yaml: "workspace: { name: demo }\nagents:\n  - name: a\n    provider: sh\n",
    want: [
      {
        config: {
          env: {
            GC_CITY: "demo",
            GC_CITY_PATH: CITY_DIR,
            GC_AGENT: "a",
            GC_TEMPLATE: "a",
            GC_SESSION: "a",
            GC_SESSION_NAME: "a",
            GC_DIR: CITY_DIR,
            GC_PROVIDER: "sh",
          },
        },
      },
    ],
  },
  {
    name: "agent readiness overrides beat the preset's",
    yaml: 'agents:\n  - name: c\n    provider: claude\n    ready_prompt_prefix: "$ "\n    ready_delay_ms: 50\n    process_names: [x]\n    emits_permission_warning: true\n',
    want: [
      {
        config: {
          readyPromptPrefix: "$ ",
          readyDelayMs: 50,
          processNames: ["x"],
          emitsPermissionWarning: true,
        },
      },
    ],
  },
  {
    name: "suspended agent, dependencies",
    yaml: "agents:\n  - name: a\n    provider: sh\n  - name: b\n    provider: sh\n    depends_on: [a]\n    suspended: true\n",
    want: [
      { name: "a", suspended: false },
      { name: "b", suspended: true, dependsOn: ["a"] },
    ],
  },
  {
    name: "a suspended workspace suspends every session",
    yaml: "workspace: { suspended: true }\nagents:\n  - name: a\n    provider: sh\n",
    want: [{ suspended: true }],
  },
  {
    name: "workspace.provider is the preset of agents that name none",
    yaml: "workspace: { provider: python }\nagents:\n  - name: a\n",
    want: [{ config: { command: "python3 -i -q" } }],
  },
  {
    name: "a per-agent session override picks that backend",
    yaml: "agents:\n  - name: a\n    provider: sh\n  - name: b\n    provider: sh\n    session: subprocess\n",
    want: [{ provider: "tmux" }, { provider: "subprocess" }],
  },
  {
    name: "auto routes agents without an override to auto.default (the detected default)",
    yaml: "session: { provider: auto }\nagents:\n  - name: a\n    provider: sh\n  - name: b\n    provider: sh\n    session: fake\n",
    opts: { defaultProvider: "subprocess" },
    want: [
      { provider: "auto", backend: "subprocess", config: { backend: "subprocess" } },
      { provider: "auto", backend: "fake", placement: "the agent's session provider" },
    ],
  },
  {
    name: "hybrid routes by remote_match on the session name",
    yaml: 'session:\n  provider: hybrid\n  hybrid: { local: tmux, remote: fake, remote_match: "^remote-" }\nagents:\n  - name: local\n    provider: sh\n  - name: remote\n    provider: sh\n    min_active_sessions: 1\n',
    want: [
      { provider: "hybrid", backend: "tmux" },
      { name: "remote-1", provider: "hybrid", backend: "fake", config: { backend: "fake" } },
    ],
  },
  {
    name: "exec script paths anchor at the city dir",
    yaml: 'session: { provider: "exec:./bin/provider.sh" }\nagents:\n  - name: a\n    provider: sh\n',
    want: [{ provider: `exec:${CITY_DIR}/bin/provider.sh` }],
  },
  {
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the city file's own ${VAR} syntax
    name: "${VAR} and ${VAR:-default} interpolate; $$ is a literal $",
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the city file's own ${VAR} syntax
    yaml: 'agents:\n  - name: a\n    start_command: "run --model ${MODEL:-small} --key ${KEY} $$HOME $PATH"\n',
    opts: { env: { KEY: "k1" } },
    want: [{ config: { command: "run --model small --key k1 $HOME $PATH" } }],
  },
  {
    name: "env values keep their YAML spelling",
    yaml: "agents:\n  - name: a\n    provider: sh\n    env: { RATE: 1.50, ON: true, N: 010 }\n",
    want: [{ config: { env: { RATE: "1.50", ON: "true", N: "010" } } }],
  },
  {
    name: "top-level x- keys hold YAML anchors; merge keys reuse them",
    yaml: 'x-base: &base\n  provider: sh\n  env: { SHARED: "1" }\nagents:\n  - <<: *base\n    name: a\n',
    want: [{ name: "a", config: { command: "sh -i", env: { SHARED: "1" } } }],
  },
];

describe("resolveCity", () => {
  it.each(CASES)("resolveCity: $name", ({ yaml, opts, want }) => {
    const got = resolve(yaml, opts ?? {});
    expect(got).toHaveLength(want.length);
    got.forEach((g, i) => {
      expect(g).toMatchObject(want[i] as object);
    });
  });

  it("resolveCity: merge keys apply, explicit keys win", () => {
    const yaml = `agents:
  - &base
    name: a
    provider: sh
    env: { SHARED: "1", WHO: a }
  - <<: *base
    name: b
    env: { WHO: b }
`;
    const [a, b] = resolve(yaml);
    expect(a!.config.env).toMatchObject({ SHARED: "1", WHO: "a" });
    expect(b!.name).toBe("b");
    expect(b!.config.command).toBe("sh -i");
    expect(b!.config.env.WHO).toBe("b");
    expect(b!.config.env.SHARED).toBeUndefined();
  });

  it("resolveCity: leaves out unset fields instead of carrying undefined", () => {
    const [d] = resolve("agents:\n  - name: w\n    start_command: sleep 100\n");
    expect(Object.keys(d!.config).sort()).toEqual([
      "command",
      "env",
      "hookDir",
      "setupTimeoutMs",
      "startupTimeoutMs",
      "workDir",
    ]);
    expect("pool" in d!).toBe(false);
  });

  it("resolveCity: session.startup_timeout and setup_timeout reach every start config, outside the fingerprint", () => {
    const yaml =
      "session:\n  startup_timeout: 7s\n  setup_timeout: 3s\nagents:\n  - name: w\n    start_command: sleep 100\n";
    const [d] = resolve(yaml);
    expect(d!.config.startupTimeoutMs).toBe(7_000);
    expect(d!.config.setupTimeoutMs).toBe(3_000);
    const [dflt] = resolve("agents:\n  - name: w\n    start_command: sleep 100\n");
    expect(fingerprint(d!.config)).toEqual(fingerprint(dflt!.config));
  });

  it("resolveCity: the provider's session-shaping settings are core; where it runs and timeouts are not", () => {
    const docker = (settings: string) =>
      resolve(
        `session:\n  provider: docker\n  docker: { image: img:1${settings} }\nagents:\n  - name: w\n    start_command: sleep 100\n`,
      )[0]!;
    const base = docker("");
    expect(base.config.providerSettings).toEqual({
      image: "img:1",
      network: "none",
      work_dir: "mount",
      mounts: [],
    });
    const fp = (d: DesiredSession) => fingerprint(d.config);
    // A new image or limit remakes the session; the engine it talks to does not.
    expect(fp(docker(", memory: 300m")).core).not.toBe(fp(base).core);
    expect(fp(docker(", host: /run/other.sock")).core).toBe(fp(base).core);
    const changed = fp(docker(", memory: 300m")).breakdown["providerSettings.memory"];
    expect(changed?.value).toBe("300m");
    // k8s: resources and node selector shape the pod; the namespace and timeouts do not.
    const k8s = (settings: string) =>
      resolve(
        `session:\n  provider: k8s\n  k8s: { image: img:1${settings} }\nagents:\n  - name: w\n    start_command: sleep 100\n`,
      )[0]!;
    expect(fp(k8s(", node_selector: { pool: b }")).core).not.toBe(fp(k8s("")).core);
    expect(fp(k8s(", start_timeout: 5m")).core).toBe(fp(k8s("")).core);
    // acp: the MCP servers handed to session/new shape the session.
    const acp = (settings: string) =>
      resolve(
        `session:\n  provider: acp\n  acp: {${settings} }\nagents:\n  - name: w\n    start_command: sleep 100\n`,
      )[0]!;
    const withMcp = acp(" mcp_servers: [{ name: fs, command: mcp-fs, args: [-v], env: { A: b } }]");
    expect(withMcp.config.providerSettings).toEqual({
      mcp_servers: [{ name: "fs", command: "mcp-fs", args: ["-v"], env: { A: "b" } }],
    });
    expect(fp(withMcp).core).not.toBe(fp(acp("")).core);
    expect(Object.keys(fp(withMcp).breakdown)).toContain("providerSettings.mcp_servers");
    // A provider without such settings carries none, so its fingerprints are what they were.
    const [plain] = resolve("agents:\n  - name: w\n    start_command: sleep 100\n");
    expect(plain!.config.providerSettings).toBeUndefined();
    expect(Object.keys(fp(plain!).breakdown).some((k) => k.startsWith("providerSettings"))).toBe(false);
  });

  it("resolveCity: interrupt_keys and busy_markers come from the preset (opencode: Escape twice), an agent overrides them, and they are not fingerprinted", () => {
    const [b, py] = resolve(
      "agents:\n  - name: b\n    provider: opencode\n  - name: py\n    provider: python\n",
    );
    expect(b!.config.interruptKeys).toEqual(["Escape", "Escape"]);
    expect(py!.config.interruptKeys).toBeUndefined();
    const [o] = resolve(
      "providers:\n  q: { command: qwen, busy_markers: ['esc to cancel'], interrupt_keys: [Escape] }\nagents:\n  - name: o\n    provider: q\n    interrupt_keys: [C-g]\n    busy_markers: ['Reticulating']\n",
    );
    const [q] = resolve(
      "providers:\n  q: { command: qwen, busy_markers: ['esc to cancel'], interrupt_keys: [Escape] }\nagents:\n  - name: o\n    provider: q\n",
    );
    expect(q!.config.interruptKeys).toEqual(["Escape"]);
    expect(q!.config.busyMarkers).toEqual(["esc to cancel"]);
    expect(o!.config.interruptKeys).toEqual(["C-g"]);
    expect(o!.config.busyMarkers).toEqual(["Reticulating"]);
    expect(fingerprint(o!.config).core).toBe(fingerprint(q!.config).core);
  });

  it("resolveCity: ready_markers, error_markers, ready_settle_ms and multiline come from the preset (codex: settle 1500), an agent overrides them, and they are not fingerprinted", () => {
    const preset =
      "providers:\n  q: { command: qwen, ready_markers: ['Type your message'], error_markers: ['API Error:'], ready_settle_ms: 800, multiline: lines }\n";
    const [q] = resolve(`${preset}agents:\n  - name: o\n    provider: q\n`);
    const [o] = resolve(
      `${preset}agents:\n  - name: o\n    provider: q\n    ready_markers: ['Ready']\n    error_markers: ['quota']\n    ready_settle_ms: 0\n    multiline: paste\n`,
    );
    expect(q!.config).toMatchObject({
      readyMarkers: ["Type your message"],
      errorMarkers: ["API Error:"],
      readySettleMs: 800,
      multiline: "lines",
    });
    expect(o!.config).toMatchObject({
      readyMarkers: ["Ready"],
      errorMarkers: ["quota"],
      readySettleMs: 0,
      multiline: "paste",
    });
    expect(fingerprint(o!.config).core).toBe(fingerprint(q!.config).core);
    expect(fingerprint(o!.config).live).toBe(fingerprint(q!.config).live);
    const [codex, claude] = resolve(
      "agents:\n  - name: x\n    provider: codex\n  - name: c\n    provider: claude\n",
    );
    expect(codex!.config.readySettleMs).toBe(1_500);
    expect(claude!.config.readySettleMs).toBeUndefined();
  });

  it("resolveCity: turn_end_markers and interrupt_keys come from the preset (opencode: its reply tag, Escape twice; codex: its closing lines), an agent overrides them, and they are not fingerprinted", () => {
    const [oc, cx, n] = resolve(
      "agents:\n  - name: oc\n    provider: opencode\n  - name: cx\n    provider: codex\n  - name: n\n    provider: claude\n",
    );
    expect(oc!.config.turnEndMarkers).toHaveLength(1);
    expect(oc!.config.interruptKeys).toEqual(["Escape", "Escape"]);
    expect(cx!.config.turnEndMarkers).toEqual(["Worked for [^\\n]*", "^■ [^\\n]*"]);
    const [gm] = resolve("agents:\n  - name: gm\n    provider: gemini\n");
    expect(gm!.config.turnEndMarkers).toEqual(["✦ [^\\n]*", "✕ [^\\n]*", "Request cancelled[^\\n]*"]);
    expect(n!.config.turnEndMarkers).toBeUndefined();
    const preset = "providers:\n  q: { command: qwen, turn_end_markers: ['✦ done in \\d+s'] }\n";
    const [q] = resolve(`${preset}agents:\n  - name: o\n    provider: q\n`);
    const [o] = resolve(
      `${preset}agents:\n  - name: o\n    provider: q\n    turn_end_markers: ['Finished']\n`,
    );
    expect(q!.config.turnEndMarkers).toEqual(["✦ done in \\d+s"]);
    expect(o!.config.turnEndMarkers).toEqual(["Finished"]);
    expect(fingerprint(o!.config).core).toBe(fingerprint(q!.config).core);
    expect(fingerprint(o!.config).live).toBe(fingerprint(q!.config).live);
  });

  it("resolveCity: clear_input_keys comes from the preset (claude: C-u), an agent overrides it, and it is not fingerprinted", () => {
    const [c, n] = resolve("agents:\n  - name: c\n    provider: claude\n  - name: n\n    provider: codex\n");
    const [o] = resolve("agents:\n  - name: c\n    provider: claude\n    clear_input_keys: [Escape, C-u]\n");
    expect(c!.config.clearInputKeys).toEqual(["C-u"]);
    expect(n!.config.clearInputKeys).toBeUndefined();
    expect(o!.config.clearInputKeys).toEqual(["Escape", "C-u"]);
    expect(fingerprint(o!.config).core).toBe(fingerprint(c!.config).core);
    // A preset of the city's own sets it too.
    const [p] = resolve(
      "providers:\n  mine: { command: mine, clear_input_keys: [C-u] }\nagents:\n  - name: p\n    provider: mine\n",
    );
    expect(p!.config.clearInputKeys).toEqual(["C-u"]);
  });

  it("resolveCity: is deterministic, and the beacon time never reaches the fingerprint", () => {
    const yaml =
      "agents:\n  - name: c\n    provider: claude\n    prompt: hi\n  - name: n\n    provider: claude\n    prompt_mode: nudge\n    prompt: hi\n";
    const model = city(yaml);
    const a = resolveCity(model, { now: NOW });
    expect(resolveCity(model, { now: NOW })).toEqual(a);
    const later = resolveCity(model, { now: new Date(2030, 5, 6, 7, 8, 9) });
    for (let i = 0; i < a.length; i++) {
      expect(later[i]!.config).not.toEqual(a[i]!.config);
      expect(fingerprint(later[i]!.config)).toEqual(fingerprint(a[i]!.config));
    }
  });

  it("resolveCity: the prompt reaches the program as an argument, never through the shell text", () => {
    const [d] = resolve('agents:\n  - name: c\n    provider: claude\n    prompt: "$(rm -rf /) \' \\" `x`"\n');
    const argv = launchArgv(d!.config);
    expect(argv[2]).toBe('claude "$@"');
    expect(argv.at(-1)).toContain("$(rm -rf /) ' \" `x`");
  });
});

describe("pool helpers", () => {
  const model = city(
    "agents:\n  - name: w\n    provider: sh\n    min_active_sessions: 1\n    max_active_sessions: 3\n  - name: solo\n    provider: sh\n",
  );

  it.each([
    [3, "w-3"],
    [1, "w-1"],
  ])("resolvePoolInstance: instance %i is %s", (n, name) => {
    const d = resolvePoolInstance(model, "w", n, { now: NOW });
    expect(d).toMatchObject({
      name,
      pool: { index: n, min: 1, max: 3 },
      config: { env: { GC_SESSION: name } },
    });
  });

  it.each([
    ["w", 0],
    ["w", 4],
    ["w", 1.5],
    ["solo", 1],
    ["nobody", 1],
  ])("resolvePoolInstance: %s instance %d is undefined", (agent, n) => {
    expect(resolvePoolInstance(model, agent, n, { now: NOW })).toBeUndefined();
  });

  it("resolveCity: agents on different presets each get their own, however the agents interleave", () => {
    const text = [
      "workspace:\n  provider: claude",
      "providers:\n  py:\n    command: python3\n    args: [-i]\n    env: { P: py }",
      "agents:",
      "  - name: a\n    provider: py",
      "  - name: b",
      "  - name: c\n    start_command: run c",
      "  - name: d\n    provider: py\n    env: { P: own }",
      "  - name: e\n    provider: python",
      "  - name: f\n    min_active_sessions: 2",
    ].join("\n");
    const together = resolve(text);
    // Each session as resolved in a city where its agent is alone.
    const alone = together.map((d) => {
      const one = city(text).config;
      const agent = one.agents.find((a) => a.name === d.agent)!;
      return resolveCity({ ...city(text), config: { ...one, agents: [agent] } }, { now: NOW }).find(
        (x) => x.name === d.name,
      );
    });
    expect(together).toEqual(alone);
    expect(together.map((d) => d.config.command)).toEqual([
      "python3 -i",
      "claude",
      "run c",
      "python3 -i",
      "python3 -i -q",
      "claude",
      "claude",
    ]);
    expect(together[3]!.config.env.P).toBe("own");
    expect(together[0]!.config.env.P).toBe("py");
  });

  it("resolvePoolInstance: equals what resolveCity produces for the same instance", () => {
    const [first] = resolveCity(model, { now: NOW });
    expect(resolvePoolInstance(model, "w", 1, { now: NOW })).toEqual(first);
  });

  it("poolInstanceName: <agent>-<n>", () => {
    expect(poolInstanceName("worker", 12)).toBe("worker-12");
  });
});

describe("small helpers", () => {
  it.each([
    ["plain", "plain"],
    ["a/b.c-d_e:f@g%h+i=j,k", "a/b.c-d_e:f@g%h+i=j,k"],
    ["", "''"],
    ["two words", "'two words'"],
    ["it's", "'it'\\''s'"],
    ["$HOME", "'$HOME'"],
    ["a;b", "'a;b'"],
  ])("shellQuote: %j → %s", (input, want) => {
    expect(shellQuote(input)).toBe(want);
  });

  it("formatBeacon: [city] session • local time without offset", () => {
    expect(formatBeacon("demo", "worker-2", new Date(2024, 11, 31, 23, 59, 58))).toBe(
      "[demo] worker-2 • 2024-12-31T23:59:58",
    );
  });

  it("daemonSettings: durations in ms under reconciler names, defaults applied", () => {
    const m = city(
      "daemon:\n  interval: 1m30s\n  backoff: { min: 500ms }\nsession:\n  startup_timeout: 2m\n",
    );
    expect(daemonSettings(m.config)).toEqual({
      intervalMs: 90_000,
      startBudget: 20,
      concurrency: 4,
      backoffMinMs: 500,
      backoffMaxMs: 300_000,
      quarantineThreshold: 5,
      quarantineWindowMs: 300_000,
      drainTimeoutMs: 120_000,
      minHealthyUptimeMs: 10_000,
      massStopPercent: 50,
      startupTimeoutMs: 120_000,
      setupTimeoutMs: 10_000,
      eventMaxAgeMs: 168 * 3_600_000,
      eventMaxCount: 10_000,
    });
  });
});
