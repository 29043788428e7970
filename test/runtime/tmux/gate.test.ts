/**
 * The identify gate (internal/runtime/tmux/gate.ts): its lock semantics within a process and
 * across processes, and the tmux crash it prevents — a tmux 3.3a server segfaults when a
 * control client is told of an event (a session made or killed, a paste buffer set, another
 * client leaving) while it is still identifying. Without the gate the churn below kills the
 * server within a few dozen connects.
 */
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from "vitest";
import { ControlClient, KEEPER_SESSION } from "../../../internal/runtime/tmux/control-client.js";
import { ServerGate } from "../../../internal/runtime/tmux/gate.js";
import { HAS_TMUX, type TmuxFixture, tmuxFixture } from "./helpers.js";

const CHURN = fileURLToPath(new URL("./fixtures/identify-churn.mjs", import.meta.url));
const SQLITE = createRequire(import.meta.url).resolve("better-sqlite3");

let seq = 0;
const key = () => `gate-test-${process.pid}-${++seq}`;

/** A promise with its resolver, and whether it settled. */
function flag() {
  let set!: () => void;
  let done = false;
  const p = new Promise<void>((r) => {
    set = () => {
      done = true;
      r();
    };
  });
  return {
    p,
    set,
    get done() {
      return done;
    },
  };
}

describe("ServerGate within a process", () => {
  it("shared holders run together; an exclusive taker waits for all of them", async () => {
    const gate = ServerGate.of(key(), undefined);
    const a = flag();
    const b = flag();
    const bothIn = flag();
    let inside = 0;
    const hold = (f: ReturnType<typeof flag>) =>
      gate.shared(async () => {
        if (++inside === 2) bothIn.set();
        await f.p;
        inside--;
      });
    const ha = hold(a);
    const hb = hold(b);
    await bothIn.p; // two shared holders at once
    let taken = false;
    const ex = gate.exclusive().then((release) => {
      taken = true;
      expect(inside).toBe(0);
      release();
    });
    a.set();
    await ha;
    expect(taken).toBe(false); // b still holds it
    b.set();
    await Promise.all([hb, ex]);
    expect(taken).toBe(true);
  });

  it("a waiting exclusive taker goes before later shared ones; release is idempotent", async () => {
    const gate = ServerGate.of(key(), undefined);
    const first = flag();
    const order: string[] = [];
    const holder = gate.shared(async () => {
      await first.p;
      order.push("first shared");
    });
    const ex = gate.exclusive().then((release) => {
      order.push("exclusive");
      release();
      release();
    });
    const later = gate.shared(async () => {
      order.push("later shared");
    });
    first.set();
    await Promise.all([holder, ex, later]);
    expect(order).toEqual(["first shared", "exclusive", "later shared"]);
  });
});

describe("ServerGate across processes", () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "gc-gate-"));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("another process's SHARED lock on the file keeps an exclusive taker waiting until it lets go", async () => {
    const file = join(dir, "server.gc-gate");
    // The other process: takes SQLite's SHARED lock on the gate file, says so, holds it until stdin ends.
    const child = spawn(
      process.execPath,
      [
        "-e",
        `const D = require(${JSON.stringify(SQLITE)}); const db = new D(${JSON.stringify(file)});
         db.exec("BEGIN"); db.prepare("SELECT count(*) FROM sqlite_master").get();
         process.stdout.write("held\\n");
         process.stdin.on("end", () => { db.exec("COMMIT"); process.stdout.write("released\\n"); });
         process.stdin.resume();`,
      ],
      { stdio: ["pipe", "pipe", "inherit"] },
    );
    onTestFinished(() => {
      child.kill("SIGKILL");
    });
    let out = "";
    child.stdout.on("data", (b: Buffer) => {
      out += b.toString();
    });
    await expect.poll(() => out).toContain("held");
    const gate = ServerGate.of(key(), file);
    let taken = false;
    const ex = gate.exclusive().then((release) => {
      taken = true;
      return release;
    });
    // Still waiting after the other process answered again (it holds the lock).
    await expect.poll(() => out.includes("held") && !taken).toBe(true);
    child.stdin.end();
    await expect.poll(() => out).toContain("released");
    const release = await ex;
    expect(taken).toBe(true);
    release();
    // Held shared now by this process: the file's lock is taken (the other side sees BUSY).
    await gate.shared(async () => {
      const probe = spawn(
        process.execPath,
        [
          "-e",
          `const D = require(${JSON.stringify(SQLITE)}); const db = new D(${JSON.stringify(file)}, { timeout: 0 });
           try { db.exec("BEGIN EXCLUSIVE"); console.log("got it"); } catch (e) { console.log(e.code); }`,
        ],
        { stdio: ["ignore", "pipe", "inherit"] },
      );
      let said = "";
      probe.stdout.on("data", (b: Buffer) => {
        said += b.toString();
      });
      await new Promise((r) => probe.once("close", r));
      expect(said.trim()).toBe("SQLITE_BUSY");
    });
  });
});

describe.skipIf(!HAS_TMUX)("the identify race on a real tmux server", () => {
  let fx: TmuxFixture;
  beforeEach(async () => {
    fx = await tmuxFixture();
  });
  afterEach(async () => {
    await fx.cleanup();
  });

  async function serverPid(): Promise<string> {
    const r = await fx.tmux("display-message", "-p", "#{pid}");
    return r.stdout.trim();
  }

  it("clients connecting and leaving while sessions are made, pasted into and killed leave the server alive (one process)", {
    timeout: 240_000,
  }, async () => {
    const env = { PATH: process.env.PATH };
    const main = new ControlClient({ socket: { name: fx.socket }, env });
    onTestFinished(() => main.close());
    await main.connect();
    const pid = await serverPid();
    expect(pid).toMatch(/^\d+$/);
    const connects = async () => {
      for (let i = 0; i < 40; i++) {
        const w = new ControlClient({ socket: { name: fx.socket }, env, attach: KEEPER_SESSION });
        await w.connect();
        await w.close();
      }
    };
    const churn = async (who: string) => {
      for (let i = 0; i < 60; i++) {
        const name = `churn-${who}-${i}`;
        await main.command(["new-session", "-d", "-s", name, "sleep", "1000"]);
        await main.command(["set-buffer", "-b", name, "x"]);
        await main.command(["delete-buffer", "-b", name]);
        await main.command(["kill-session", "-t", `=${name}`]);
      }
    };
    await Promise.all([connects(), connects(), connects(), churn("a"), churn("b")]);
    expect(await serverPid()).toBe(pid);
    expect(await main.command(["list-sessions", "-F", "#{session_name}"])).toEqual([KEEPER_SESSION]);
  });

  it("…and across processes (two connecting, two churning)", { timeout: 240_000 }, async () => {
    const main = new ControlClient({ socket: { name: fx.socket }, env: { PATH: process.env.PATH } });
    onTestFinished(() => main.close());
    await main.connect();
    const pid = await serverPid();
    const runOne = (mode: string, rounds: number) =>
      new Promise<string>((resolve) => {
        const child = spawn(process.execPath, [CHURN, fx.socket, mode, String(rounds)], {
          stdio: ["ignore", "pipe", "pipe"],
        });
        onTestFinished(() => {
          child.kill("SIGKILL");
        });
        let out = "";
        child.stdout.on("data", (b: Buffer) => {
          out += b.toString();
        });
        child.stderr.on("data", (b: Buffer) => {
          out += b.toString();
        });
        child.once("close", () => resolve(out.trim()));
      });
    const results = await Promise.all([
      runOne("connect", 40),
      runOne("connect", 40),
      runOne("churn", 60),
      runOne("churn", 60),
    ]);
    expect(results).toEqual(["done 40", "done 40", "done 60", "done 60"]);
    expect(await serverPid()).toBe(pid);
  });
});
