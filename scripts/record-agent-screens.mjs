#!/usr/bin/env node
/**
 * Re-records test/fixtures/screens/ from the pinned agent CLIs (scripts/agent-clis.mjs):
 * every first-run state (trust, API-key confirmation, auth and sign-in choices, the
 * bypass-permissions warning, the idle input and a busy turn) at 80×24 and 120×40, with
 * `tmux capture-pane -e`, each CLI in a private HOME and a fresh work directory, offline
 * dummy keys only. Usage: node scripts/record-agent-screens.mjs [cli...]
 */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { AGENT_CLIS, installAgentCli, seedAgentHome } from "./agent-clis.mjs";

const OUT = fileURLToPath(new URL("../test/fixtures/screens/", import.meta.url));
const SIZES = [
  [80, 24],
  [120, 40],
];

/**
 * Scenarios: the CLI, its args and env, and steps — wait until the screen matches `wait`,
 * save it as `save` when given, then send `keys` (tmux key names) or type `text`.
 */
const SCENARIOS = [
  {
    name: "claude",
    cli: "claude",
    env: { ANTHROPIC_API_KEY: "sk-ant-dummy-key" },
    steps: [
      { wait: /Is this a project you created/, save: "trust", keys: ["Down", "Enter"] },
      { wait: /Do you want to use this API key\?/, save: "api-key", keys: ["Up", "Enter"] },
      { wait: /shift\+tab to cycle/, quiet: true, save: "idle", text: "hello" },
      { wait: /esc to interrupt/, save: "busy" },
    ],
  },
  {
    name: "claude-bypass",
    cli: "claude",
    args: ["--dangerously-skip-permissions"],
    // Claude Code refuses the flag as root unless it is told it runs in a sandbox.
    env: { ANTHROPIC_API_KEY: "sk-ant-dummy-key", IS_SANDBOX: "1" },
    steps: [
      { wait: /Is this a project you created/, keys: ["Down", "Enter"] },
      { wait: /Do you want to use this API key\?/, keys: ["Up", "Enter"] },
      { wait: /Bypass Permissions mode/, save: "bypass" },
    ],
  },
  {
    name: "codex",
    cli: "codex",
    env: { OPENAI_API_KEY: "sk-dummy-key" },
    steps: [{ wait: /Choose how you want to use Codex/, save: "sign-in" }],
  },
  {
    // Signed out, no key in the environment: "Sign in another way" (option 3), then its
    // "Use an OpenAI API key" (option 1), the way an operator reaches the key field with
    // `gc session respond codex 3` and `1`. Nothing is typed into the field.
    name: "codex-api-key",
    cli: "codex",
    env: {},
    steps: [
      { wait: /Choose how you want to use Codex/, keys: ["Down", "Down", "Enter"] },
      { wait: /Use an OpenAI API key/, quiet: true, save: "sign-in-other", keys: ["Enter"] },
      { wait: /Press enter to save/, quiet: true, save: "api-key-field" },
    ],
  },
  {
    name: "codex",
    cli: "codex",
    login: true,
    env: {},
    steps: [
      { wait: /Ask Codex to do anything|for shortcuts/, quiet: true, save: "idle", text: "hello" },
      // Offline, the turn retries its connection ("Reconnecting… (Ns • esc to interrupt)").
      { wait: /esc to interrupt/, save: "busy" },
    ],
  },
  {
    name: "gemini",
    cli: "gemini",
    env: { GEMINI_API_KEY: "dummy-gemini-key" },
    steps: [
      { wait: /Do you trust the files in this folder\?/, save: "trust", keys: ["Enter"] },
      { wait: /How would you like to authenticate/, save: "auth-api-key", keys: ["Enter"] },
      { wait: /Enter Gemini API Key/, save: "api-key-field", keys: ["Enter"] },
      { wait: /Type your message/, quiet: true, save: "idle", text: "hello" },
      { wait: /esc to cancel/i, save: "busy" },
    ],
  },
  {
    // Offline and signed out: trust, then its input with "Please use /login" (no turn runs).
    name: "copilot",
    cli: "copilot",
    env: {},
    steps: [
      { wait: /Do you trust the files in this folder\?/, save: "trust", keys: ["Enter"] },
      { wait: /Please use \/login/, quiet: true, save: "login" },
    ],
  },
  {
    // Offline: its input, then a turn that spins on the unreachable provider.
    name: "opencode",
    cli: "opencode",
    env: {},
    steps: [
      { wait: /Ask anything/, quiet: true, save: "idle", text: "hello" },
      { wait: /esc interrupt/, save: "busy" },
    ],
  },
  {
    name: "gemini-nokey",
    cli: "gemini",
    env: {},
    steps: [
      { wait: /Do you trust the files in this folder\?/, keys: ["Enter"] },
      { wait: /How would you like to authenticate/, quiet: true, save: "auth" },
    ],
  },
];

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Types `text` into the input and presses Enter once the text shows on screen: a CLI that is
 * still initialising (Codex before its app server answers) queues keys and draws them late.
 */
async function typeLine(tmux, text) {
  tmux("send-keys", "-t", "rec", "-l", text);
  const deadline = Date.now() + 180_000;
  while (!tmux("capture-pane", "-p", "-t", "rec").includes(text)) {
    if (Date.now() > deadline) throw new Error(`typed text never showed: ${text}`);
    await sleep(300);
  }
  tmux("send-keys", "-t", "rec", "Enter");
}

/** Kills the processes an agent left running outside its pane (Codex's app-server daemon). */
function killUnder(dir) {
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(dir)) process.kill(Number(pid), "SIGKILL");
    } catch {
      // gone already
    }
  }
}

async function record(sc, bins, [w, h]) {
  const root = mkdtempSync(join(tmpdir(), "gc-rec-"));
  const home = join(root, "home");
  const work = join(root, "work");
  mkdirSync(work, { recursive: true });
  seedAgentHome(home);
  const socket = `gc-rec-${process.pid}-${SCENARIOS.indexOf(sc)}-${w}`;
  const env = { HOME: home, TERM: "xterm-256color", PATH: process.env.PATH, ...sc.env };
  const tmux = (...a) => execFileSync("tmux", ["-L", socket, ...a], { encoding: "utf8" });
  try {
    if (sc.login) {
      execFileSync(bins[sc.cli], ["login", "--with-api-key"], {
        env,
        input: "sk-dummy-key\n",
        stdio: ["pipe", "ignore", "ignore"],
      });
    }
    const envArgs = Object.entries(env).flatMap(([k, v]) => ["-e", `${k}=${v}`]);
    tmux(
      "-f",
      "/dev/null",
      "new-session",
      "-d",
      "-s",
      "rec",
      "-x",
      String(w),
      "-y",
      String(h),
      "-c",
      work,
      ...envArgs,
      bins[sc.cli],
      ...(sc.args ?? []),
    );
    for (const step of sc.steps) {
      // Generous: a first start on a loaded machine can take minutes (opencode npm-installs
      // its plugin package into the fresh HOME before it draws anything).
      const deadline = Date.now() + 360_000;
      let screen = "";
      let last = "";
      let stableSince = Date.now();
      for (;;) {
        screen = tmux("capture-pane", "-p", "-t", "rec");
        if (screen !== last) {
          last = screen;
          stableSince = Date.now();
        }
        if (step.wait.test(screen) && (!step.quiet || Date.now() - stableSince >= 1500)) break;
        if (Date.now() > deadline) throw new Error(`${sc.name} ${w}x${h}: no ${step.wait} on:\n${screen}`);
        await sleep(200);
      }
      if (step.save) {
        const file = `${sc.cli}-${step.save}-${w}x${h}.ansi`;
        writeFileSync(join(OUT, file), tmux("capture-pane", "-e", "-p", "-t", "rec"));
        console.log(`recorded ${file}`);
      }
      if (step.keys)
        for (const k of step.keys) {
          tmux("send-keys", "-t", "rec", k);
          await sleep(300);
        }
      if (step.text) await typeLine(tmux, step.text);
    }
  } finally {
    spawnSync("tmux", ["-L", socket, "kill-server"], { stdio: "ignore" });
    killUnder(root);
    try {
      rmSync(root, { recursive: true, force: true, maxRetries: 5 });
    } catch (e) {
      console.error(`could not remove ${root}: ${e.message}`);
    }
  }
}

const only = process.argv.slice(2);
const wanted = SCENARIOS.filter((s) => only.length === 0 || only.includes(s.cli) || only.includes(s.name));
const bins = {};
for (const cli of new Set(wanted.map((s) => s.cli))) bins[cli] = (await installAgentCli(cli)).bin;
mkdirSync(OUT, { recursive: true });
// The versions of the CLIs that have recorded screens (not the ACP adapters, which have none).
const recorded = new Set(SCENARIOS.map((s) => s.cli));
const versions = Object.fromEntries(
  Object.entries(AGENT_CLIS)
    .filter(([k]) => recorded.has(k))
    .map(([k, v]) => [k, `${v.pkg}@${v.version}`]),
);
writeFileSync(join(OUT, "versions.json"), `${JSON.stringify(versions, null, 2)}\n`);
const failures = [];
await Promise.all(
  wanted.flatMap((sc) =>
    SIZES.map((size) => record(sc, bins, size).catch((e) => failures.push(String(e.message ?? e)))),
  ),
);
for (const f of failures) console.error(f);
process.exit(failures.length > 0 ? 1 : 0);
