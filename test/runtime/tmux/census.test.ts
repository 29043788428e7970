/**
 * The tmux census (`TmuxProvider.census`, internal/proc/census.ts) on a real server: every
 * process on the city's socket counts, whether its session carries gc's tags or not; a
 * server that is exiting is waited for; a program that outlives its server (ignores SIGHUP)
 * is followed and killed as an orphan.
 */
import { spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import { afterEach, describe, expect, it } from "vitest";
import { awaitEmptyCensus } from "../../../internal/proc/census.js";
import { pidAlive } from "../../../internal/proc/kill.js";
import { KEEPER_SESSION } from "../../../internal/runtime/tmux/control-client.js";
import { CLIENT_OWNER_ENV, orphanClients } from "../../../internal/runtime/tmux/server.js";
import { HAS_TMUX, type TmuxFixture, tmuxFixture } from "./helpers.js";

let fx: TmuxFixture | undefined;
afterEach(async () => {
  await fx?.cleanup();
  fx = undefined;
});

/**
 * A control client on `fx`'s server tagged by a gc process that is gone (no such pid), whose
 * stdin stays open: what a killed controller leaves when the other end of its pipe is held
 * elsewhere. Resolves once it runs as a tmux client; `exited` resolves when it exits.
 */
async function orphanClient(fx: TmuxFixture) {
  const argv = ["-u", "-L", fx.socket, "-f", "/dev/null", "-C", "new-session", "-A", "-s", KEEPER_SESSION];
  const dead = `${2 ** 22 + 1}:1`; // above Linux's pid_max limit: never a live pid
  const orphan = spawn("tmux", argv, { env: { ...process.env, [CLIENT_OWNER_ENV]: dead }, stdio: "pipe" });
  orphan.stdout.resume();
  const exited = new Promise((r) => orphan.once("exit", r));
  try {
    await expect
      .poll(async () => (await readFile(`/proc/${orphan.pid}/comm`, "utf8").catch(() => "")).trim())
      .toBe("tmux: client");
  } catch (e) {
    orphan.kill("SIGKILL");
    throw e;
  }
  return { orphan, exited };
}

describe.skipIf(!HAS_TMUX)("tmux census", { timeout: 60_000 }, () => {
  it("counts the server and the panes of an untagged session; empty once the server is gone", async () => {
    fx = await tmuxFixture();
    const p = fx.provider();
    expect(await p.census()).toEqual([]);
    expect((await fx.tmux("new-session", "-d", "-s", "untagged", "exec sleep 100000")).exitCode).toBe(0);
    const pane = Number(
      (await fx.tmux("display-message", "-p", "-t", "=untagged:", "#{pane_pid}")).stdout.trim(),
    );
    const seen = await p.census();
    expect(seen.map((e) => e.pid)).toContain(pane);
    expect(seen.some((e) => e.comm.startsWith("tmux"))).toBe(true);
    expect(await p.listRunning("")).toEqual([]); // invisible to the tagged view
    await fx.tmux("kill-server");
    expect(await awaitEmptyCensus(() => p.census(), { before: seen })).toEqual([]);
    expect(await pidAlive(pane)).toBe(false);
  });

  it("a program that ignores SIGHUP outlives its server: followed as an orphan and killed", async () => {
    fx = await tmuxFixture();
    const p = fx.provider();
    // `trap "" HUP` makes the shell (and the sleep it execs) ignore the server's SIGHUP.
    expect(
      (await fx.tmux("new-session", "-d", "-s", "stubborn", "trap '' HUP; exec sleep 100000")).exitCode,
    ).toBe(0);
    const pane = Number(
      (await fx.tmux("display-message", "-p", "-t", "=stubborn:", "#{pane_pid}")).stdout.trim(),
    );
    const seen = await p.census();
    expect(seen.map((e) => e.pid)).toContain(pane);
    await fx.tmux("kill-server");
    expect(await awaitEmptyCensus(() => p.census(), { before: seen, killOrphansAfterMs: 200 })).toEqual([]);
    // Killed: gone once init has reaped it (not necessarily at the same instant).
    await expect.poll(() => pidAlive(pane)).toBe(false);
  });

  it("reports what the backend still holds after the timeout (never clean while one lives)", async () => {
    fx = await tmuxFixture();
    const p = fx.provider();
    expect((await fx.tmux("new-session", "-d", "-s", "foreign", "exec sleep 100000")).exitCode).toBe(0);
    const seen = await p.census();
    const left = await awaitEmptyCensus(() => p.census(), { before: seen, timeoutMs: 300 });
    expect(left.map((e) => e.pid).sort()).toEqual(seen.map((e) => e.pid).sort());
  });

  it("an orphaned control client (the gc process that tagged it is gone) is removed at the next connect; live clients and the server stay", async () => {
    fx = await tmuxFixture();
    const p = fx.provider();
    await p.listRunning("").catch(() => undefined);
    await p.control.connect();
    const live = p.control.pid!;
    const { orphan, exited } = await orphanClient(fx);
    try {
      const socket = ["-L", fx.socket];
      expect(await orphanClients(socket)).toEqual([orphan.pid]);
      // The server never sees the tag in its global environment (no session inherits it).
      expect((await fx.tmux("show-environment", "-g", CLIENT_OWNER_ENV)).exitCode).not.toBe(0);
      const next = fx.provider();
      await next.listRunning("");
      await exited;
      expect(await pidAlive(orphan.pid!)).toBe(false);
      expect(await pidAlive(live)).toBe(true);
      expect(await orphanClients(socket)).toEqual([]);
      expect((await fx.tmux("has-session", "-t", `=${KEEPER_SESSION}:`)).exitCode).toBe(0);
    } finally {
      orphan.kill("SIGKILL");
    }
  });

  it("a read-only provider's connect (gc status) leaves an orphaned control client; the next writer's connect removes it", async () => {
    fx = await tmuxFixture();
    await fx.provider().control.connect(); // the server and its keeper
    const { orphan, exited } = await orphanClient(fx);
    try {
      const socket = ["-L", fx.socket];
      expect(await orphanClients(socket)).toEqual([orphan.pid]);
      const reader = fx.provider({}, undefined, { readOnly: true });
      expect(await reader.listRunning("")).toEqual([]);
      expect(reader.control.pid).toBeDefined(); // it did connect
      expect(await orphanClients(socket)).toEqual([orphan.pid]);
      expect(await pidAlive(orphan.pid!)).toBe(true);
      const writer = fx.provider();
      await writer.listRunning("");
      await exited;
      expect(await orphanClients(socket)).toEqual([]);
      expect(await pidAlive(reader.control.pid!)).toBe(true);
    } finally {
      orphan.kill("SIGKILL");
    }
  });
});
