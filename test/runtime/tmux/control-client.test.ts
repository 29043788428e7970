import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { OperationTimeoutError } from "../../../internal/base/errors.js";
import { pidAlive } from "../../../internal/proc/kill.js";
import { ControlClient, KEEPER_SESSION } from "../../../internal/runtime/tmux/control-client.js";
import {
  TmuxCommandError,
  TmuxConnectionError,
  TmuxGenerationError,
} from "../../../internal/runtime/tmux/errors.js";
import type { Notification } from "../../../internal/runtime/tmux/protocol.js";
import { killServer, orphanClients } from "../../../internal/runtime/tmux/server.js";
import { localTransport } from "../../../internal/runtime/tmux/transport.js";
import { HAS_TMUX, type TmuxFixture, tmuxFixture } from "./helpers.js";

describe.skipIf(!HAS_TMUX)("ControlClient", () => {
  let fx: TmuxFixture;
  let client: ControlClient;
  beforeEach(async () => {
    fx = await tmuxFixture();
    client = new ControlClient({ socket: { name: fx.socket }, env: { PATH: process.env.PATH } });
  });
  afterEach(async () => {
    await client.close();
    await fx.cleanup();
  });

  it("command: starts the server with a keeper session and returns output lines", async () => {
    expect(await client.command(["display-message", "-p", "hello"])).toEqual(["hello"]);
    expect(client.version).toMatch(/^\d+\.\d+/);
    const sessions = await client.command(["list-sessions", "-F", "#{session_name}"]);
    expect(sessions).toEqual([KEEPER_SESSION]);
    expect(await client.command(["show-options", "-gwv", "remain-on-exit"])).toEqual(["off"]);
  });

  it("command: %error rejects with TmuxCommandError carrying tmux's message", async () => {
    const err = await client.command(["kill-session", "-t", "=no-such"]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TmuxCommandError);
    expect((err as TmuxCommandError).output.join(" ")).toMatch(/can't find session/);
    // The connection is still in step afterwards.
    expect(await client.command(["display-message", "-p", "next"])).toEqual(["next"]);
  });

  it("commandList: one line, one reply per command; a failure ends the list and framing stays in step", async () => {
    const ok = await client.commandList([
      ["new-session", "-d", "-P", "-F", "#{session_id}", "-s", "L1"],
      ["set-option", "-t", "=L1:", "@gc_t", "tagged"],
      ["display-message", "-p", "after"],
    ]);
    expect(ok[0]?.[0]).toMatch(/^\$\d+$/);
    expect(ok[2]).toEqual(["after"]);
    expect(await client.command(["show-options", "-qv", "-t", "=L1:", "@gc_t"])).toEqual(["tagged"]);
    // Duplicate: tmux runs nothing after the failing command, so the tag keeps its value.
    const err = await client
      .commandList([
        ["new-session", "-d", "-s", "L1"],
        ["set-option", "-t", "=L1:", "@gc_t", "overwritten"],
      ])
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TmuxCommandError);
    expect((err as TmuxCommandError).output.join(" ")).toMatch(/duplicate session/);
    const [a, b] = await Promise.all([
      client.command(["show-options", "-qv", "-t", "=L1:", "@gc_t"]),
      client
        .commandList([
          ["display-message", "-p", "x"],
          ["kill-session", "-t", "=nope"],
          ["display-message", "-p", "never"],
        ])
        .catch((e: unknown) => e),
    ]);
    expect(a).toEqual(["tagged"]);
    expect(b).toBeInstanceOf(TmuxCommandError);
    expect(await client.command(["display-message", "-p", "next"])).toEqual(["next"]);
  });

  it("commandList: an abort after sending does not hide the mutation — the list's answer arrives", async () => {
    await client.command(["display-message", "-p", "connected"]);
    const ac = new AbortController();
    const p = client.commandList(
      [
        ["new-session", "-d", "-P", "-F", "#{session_id}", "-s", "AB"],
        ["set-option", "-t", "=AB:", "@gc_t", "tagged"],
      ],
      { signal: ac.signal },
    );
    // The client is connected, so the list is written before a macrotask runs.
    await sleep(0);
    ac.abort(new Error("too late"));
    const out = await p;
    expect(out[0]?.[0]).toMatch(/^\$\d+$/);
    expect(await client.command(["show-options", "-qv", "-t", "=AB:", "@gc_t"])).toEqual(["tagged"]);
    // Aborted before sending: nothing is sent.
    const pre = new AbortController();
    pre.abort(new Error("early"));
    await expect(
      client.commandList([["new-session", "-d", "-s", "NO"]], { signal: pre.signal }),
    ).rejects.toThrow("early");
    expect(await client.command(["has-session", "-t", "=NO"]).catch((e: unknown) => e)).toBeInstanceOf(
      TmuxCommandError,
    );
  });

  it("command: 200 pipelined commands each get their own reply, in order", async () => {
    const replies = await Promise.all(
      Array.from({ length: 200 }, (_, i) => client.command(["display-message", "-p", `n${i}`])),
    );
    expect(replies.map((r) => r[0])).toEqual(Array.from({ length: 200 }, (_, i) => `n${i}`));
  });

  it("command: values with newlines and control characters cross the connection intact", async () => {
    const value = "line1\nline2\t\x01\x1b[31m;#{x} $HOME ~";
    await client.command(["set-option", "-g", "@v", value]);
    const out = await client.command(["display-message", "-p", "#{@v}"]);
    expect(out.join("\n")).toBe(value);
    expect(await client.command(["display-message", "-p", "after"])).toEqual(["after"]);
  });

  it("command: pane output that forges control lines cannot cut a reply short", async () => {
    await client.command([
      "new-session",
      "-d",
      "-s",
      "forger",
      "--",
      "sh",
      "-c",
      'printf "%%end 1 2 1\\n%%error 1 2 1\\n%%begin 1 3 1\\n%%exit\\n"; exec sleep 300',
    ]);
    let out: string[] = [];
    for (let i = 0; i < 50 && !out.includes("%exit"); i++) {
      out = await client.command(["capture-pane", "-p", "-t", "=forger:"]);
      await sleep(50);
    }
    expect(out.slice(0, 4)).toEqual(["%end 1 2 1", "%error 1 2 1", "%begin 1 3 1", "%exit"]);
    expect(await client.command(["display-message", "-p", "still in step"])).toEqual(["still in step"]);
  });

  it("command: a reply past the deadline rejects with OperationTimeoutError and the client recovers", async () => {
    // `wait-for` answers at once but blocks this client's queue until the channel is signalled.
    await client.command(["wait-for", "gc-never"]);
    const slow = client.command(["display-message", "-p", "late"], { timeoutMs: 200 });
    await expect(slow).rejects.toBeInstanceOf(OperationTimeoutError);
    expect(await client.command(["display-message", "-p", "recovered"])).toEqual(["recovered"]);
  });

  it("wedged server: a SIGSTOPped server's silence times the command out, the client is killed, and the next command reconnects once it runs again", async () => {
    const [serverPid] = await client.command(["display-message", "-p", "#{pid}"]);
    const oldClient = client.pid!;
    const gen = client.generation;
    process.kill(Number(serverPid), "SIGSTOP");
    try {
      await expect(client.command(["display-message", "-p", "x"], { timeoutMs: 300 })).rejects.toBeInstanceOf(
        OperationTimeoutError,
      );
      await expect.poll(() => pidAlive(oldClient)).toBe(false);
    } finally {
      process.kill(Number(serverPid), "SIGCONT");
    }
    expect(await client.command(["display-message", "-p", "back"])).toEqual(["back"]);
    expect(client.generation).toBe(gen + 1);
    expect(client.pid).not.toBe(oldClient);
    expect(await orphanClients(["-L", fx.socket])).toEqual([]);
  });

  it("wedged server: silent past wedgedAfterMs (commands and reconnects timing out) → killed once, lost listeners told; the next command gets a new server", async () => {
    let wedgedCalls = 0;
    const wedgy = new ControlClient({
      socket: { name: fx.socket },
      env: { PATH: process.env.PATH },
      commandTimeoutMs: 300,
      connectTimeoutMs: 300,
      wedgedAfterMs: 1_000,
      onWedged: async () => {
        wedgedCalls++;
        return (await killServer(["-L", fx.socket])).length > 0;
      },
    });
    try {
      await wedgy.command(["new-session", "-d", "-s", "victim", "--", "sleep", "300"]);
      const [serverPid] = await wedgy.command(["display-message", "-p", "#{pid}"]);
      let lost = 0;
      wedgy.onConnectionLost(() => lost++);
      process.kill(Number(serverPid), "SIGSTOP");
      try {
        // A stopped server is not killed before it has been silent for wedgedAfterMs.
        await expect(wedgy.command(["display-message", "-p", "x"])).rejects.toBeInstanceOf(
          OperationTimeoutError,
        );
        expect(await pidAlive(Number(serverPid))).toBe(true);
        await expect
          .poll(
            async () => {
              await wedgy.command(["display-message", "-p", "x"]).catch(() => undefined);
              return await pidAlive(Number(serverPid));
            },
            { timeout: 20_000 },
          )
          .toBe(false);
      } finally {
        if (await pidAlive(Number(serverPid))) process.kill(Number(serverPid), "SIGCONT");
      }
      expect(wedgedCalls).toBe(1);
      // The lost listeners are told once the killed server's connection has closed.
      await expect.poll(() => lost).toBe(1);
      const [fresh] = await wedgy.command(["display-message", "-p", "#{pid}"]);
      expect(fresh).not.toBe(serverPid);
      expect(await wedgy.command(["list-sessions", "-F", "#{session_name}"])).toEqual([KEEPER_SESSION]);
    } finally {
      await wedgy.close();
    }
  });

  it("command: aborting rejects with the reason and later replies stay matched", async () => {
    const ac = new AbortController();
    await client.command(["display-message", "-p", "connected"]);
    await client.command(["wait-for", "gc-abort"]);
    const slow = client.command(["display-message", "-p", "abandoned"], { signal: ac.signal });
    const next = client.command(["display-message", "-p", "queued-after"]);
    const reason = new Error("stop waiting");
    ac.abort(reason);
    await expect(slow).rejects.toBe(reason);
    // The abandoned reply arrives once the channel is signalled; it must not be given to `next`.
    expect((await fx.tmux("wait-for", "-S", "gc-abort")).exitCode).toBe(0);
    expect(await next).toEqual(["queued-after"]);
  });

  it("reconnect: a server SIGKILLed mid-command fails that command, and the next one gets a fresh server", async () => {
    await client.command(["new-session", "-d", "-s", "victim", "--", "sleep", "300"]);
    const [serverPid] = await client.command(["display-message", "-p", "#{pid}"]);
    const gen = client.generation;
    await client.command(["wait-for", "gc-forever"]);
    const pending = client.command(["display-message", "-p", "never"]);
    process.kill(Number(serverPid), "SIGKILL");
    await expect(pending).rejects.toBeInstanceOf(TmuxConnectionError);
    // Queries may retry once on the new connection.
    expect(await client.command(["list-sessions", "-F", "#{session_name}"], { retry: true })).toEqual([
      KEEPER_SESSION,
    ]);
    expect(client.generation).toBe(gen + 1);
    expect(await client.command(["show-options", "-gwv", "remain-on-exit"])).toEqual(["off"]);
  });

  it("reconnect: kill-server while a command waits; the next command gets a fresh server and keeper", async () => {
    await client.command(["new-session", "-d", "-s", "victim", "--", "sleep", "300"]);
    await client.command(["wait-for", "gc-flushed-by-kill"]);
    const pending = client.command(["display-message", "-p", "maybe"]);
    expect((await fx.tmux("kill-server")).exitCode).toBe(0);
    // tmux wakes waiters when it shuts down, so the command may still complete; it must not hang.
    const r = await pending.then(
      (v) => v,
      (e: unknown) => e,
    );
    expect(Array.isArray(r) ? r : r instanceof TmuxConnectionError).toBeTruthy();
    expect(await client.command(["list-sessions", "-F", "#{session_name}"], { retry: true })).toEqual([
      KEEPER_SESSION,
    ]);
  });

  it("command: a command bound to an earlier connection generation is refused unsent", async () => {
    await client.command(["display-message", "-p", "x"]);
    const gen = client.generation;
    expect(await client.command(["display-message", "-p", "same"], { generation: gen })).toEqual(["same"]);
    expect((await fx.tmux("kill-server")).exitCode).toBe(0);
    await vi.waitFor(() => expect(client.pid).toBeUndefined(), { timeout: 10_000 }); // the client noticed
    await expect(
      client.command(["set-option", "-g", "@stale", "1"], { generation: gen }),
    ).rejects.toBeInstanceOf(TmuxGenerationError);
    expect(await client.command(["show-options", "-gqv", "@stale"])).toEqual([]);
  });

  it("connect: concurrent first commands share one client process", async () => {
    await Promise.all([0, 1, 2, 3].map((i) => client.command(["display-message", "-p", String(i)])));
    const pid = client.pid;
    expect(pid).toBeGreaterThan(0);
    await client.command(["display-message", "-p", "x"]);
    expect(client.pid).toBe(pid);
  });

  it("setup: commands run after every connect, before anything else", async () => {
    const c = new ControlClient({
      socket: { name: fx.socket },
      env: { PATH: process.env.PATH },
      setup: [["set-option", "-g", "@setup", "done"]],
    });
    try {
      expect(await c.command(["show-options", "-gv", "@setup"])).toEqual(["done"]);
    } finally {
      await c.close();
    }
  });

  it("setup: a query asked while connecting goes out behind the setup, before its replies, and sees it done", async () => {
    const inner = localTransport({ tmuxPath: "tmux", env: { PATH: process.env.PATH } });
    let replies = 0;
    const writes: { text: string; replies: number }[] = [];
    const c = new ControlClient({
      socket: { name: fx.socket },
      env: { PATH: process.env.PATH },
      setup: [["set-option", "-g", "@early", "set"]],
      transport: {
        open: async (args, events) => {
          const stream = await inner.open(args, {
            ...events,
            data: (b) => {
              replies += (b.toString().match(/^%(end|error) /gm) ?? []).length;
              events.data(b);
            },
          });
          return {
            ...stream,
            write: (text) => {
              writes.push({ text, replies });
              stream.write(text);
            },
          };
        },
      },
    });
    try {
      expect(await c.command(["show-options", "-gv", "@early"], { retry: true })).toEqual(["set"]);
      const query = writes.find((w) => w.text.includes("show-options"));
      // Only the client's own first command had answered when the query was written.
      expect(query?.replies).toBe(1);
      const sent = writes.map((w) => w.text).join("");
      expect(sent.indexOf("set-option -g @early")).toBeLessThan(sent.indexOf("show-options"));
    } finally {
      await c.close();
    }
  });

  it("setup: a failing setup fails a query asked while connecting, as a connection error", async () => {
    const c = new ControlClient({
      socket: { name: fx.socket },
      env: { PATH: process.env.PATH },
      setup: [["set-option", "-g", "no-such-option-at-all", "x"]],
    });
    try {
      await expect(c.command(["display-message", "-p", "x"], { retry: true })).rejects.toBeInstanceOf(
        TmuxConnectionError,
      );
    } finally {
      await c.close();
    }
  });

  it("notifications: sessions-changed is delivered", async () => {
    const seen: Notification[] = [];
    client.onNotification((n) => seen.push(n));
    await client.command(["new-session", "-d", "-s", "notify", "--", "sleep", "300"]);
    await vi.waitFor(() => expect(seen.some((n) => n.name === "sessions-changed")).toBe(true));
  });

  it("close: the client process is gone and further commands reject", async () => {
    await client.command(["display-message", "-p", "x"]);
    const pid = client.pid!;
    await client.close();
    expect(await pidAlive(pid)).toBe(false);
    await expect(client.command(["display-message", "-p", "x"])).rejects.toBeInstanceOf(TmuxConnectionError);
    await client.close(); // idempotent
  });

  it("connect: a missing tmux binary is a TmuxConnectionError", async () => {
    const c = new ControlClient({ socket: { name: fx.socket }, tmuxPath: "/nonexistent/tmux" });
    await expect(c.command(["display-message", "-p", "x"])).rejects.toBeInstanceOf(TmuxConnectionError);
    await c.close();
  });
});
