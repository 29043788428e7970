/**
 * Shared scaffolding for tmux tests: a private server per fixture (unique socket), raw tmux
 * on that socket, providers bound to it, and cleanup that kills the server and removes the
 * socket file and temp dirs even when a test fails.
 */
import { mkdir, mkdtemp, rm, unlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type RunResult, run } from "../../../internal/proc/run.js";
import { TmuxProvider } from "../../../internal/runtime/tmux/index.js";
import type { TmuxSettings } from "../../../internal/runtime/tmux/settings.js";
import { has } from "../../support/needs.js";

/** True when a tmux binary is on PATH (test/support/needs.ts). */
export const HAS_TMUX = has("tmux");

/** Absolute path of the fake agent TUI. */
export const FAKE_AGENT = fileURLToPath(new URL("./fixtures/fake-agent.mjs", import.meta.url));

/** Shell text that runs the fake agent with `args` (test-controlled values only). */
export function fakeAgent(...args: string[]): string {
  const q = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;
  return [process.execPath, FAKE_AGENT, ...args].map(q).join(" ");
}

/** One private tmux server plus a temp dir. */
export interface TmuxFixture {
  readonly socket: string;
  readonly root: string;
  /** A provider for a fresh city (default) on this fixture's socket; closed by cleanup. */
  provider(settings?: TmuxSettings, city?: string, opts?: { readOnly?: boolean }): TmuxProvider;
  /** Runs raw tmux on this socket (argv, no shell). */
  tmux(...args: string[]): Promise<RunResult>;
  /** A fresh empty directory under root. */
  dir(): Promise<string>;
  cleanup(): Promise<void>;
}

let seq = 0;

/** Creates a fixture; call `cleanup` in afterEach/onTestFinished. */
export async function tmuxFixture(): Promise<TmuxFixture> {
  const socket = `gc-test-${process.pid}-${++seq}-${Math.random().toString(36).slice(2, 6)}`;
  const root = await mkdtemp(join(tmpdir(), "gc-tmux-test-"));
  const providers: TmuxProvider[] = [];
  let dirs = 0;
  const uid = process.getuid?.() ?? 0;
  const socketPath = join(process.env.TMUX_TMPDIR || "/tmp", `tmux-${uid}`, socket);
  return {
    socket,
    root,
    provider(settings = {}, city = `c${seq}-${Math.random().toString(36).slice(2, 6)}`, opts = {}) {
      const p = new TmuxProvider({
        city,
        cityDir: root,
        stateDir: join(root, ".gc"),
        settings: { socket, ...settings },
        ...opts,
      });
      providers.push(p);
      return p;
    },
    tmux: (...args) => run(["tmux", "-u", "-L", socket, ...args], { timeoutMs: 10_000 }),
    async dir() {
      const d = join(root, `d${++dirs}`);
      await mkdir(d, { recursive: true });
      return d;
    },
    async cleanup() {
      await Promise.all(providers.map((p) => p.close().catch(() => undefined)));
      await run(["tmux", "-L", socket, "kill-server"], { timeoutMs: 10_000 }).catch(() => undefined);
      await unlink(socketPath).catch(() => undefined);
      await unlink(`${socketPath}.gc-gate`).catch(() => undefined);
      await rm(root, { recursive: true, force: true });
    },
  };
}
