/**
 * Directories gc uses outside the city for its sockets (the /tmp fallback of a deep city's
 * control socket, and of the subprocess holders' sockets) are checked before use: another
 * local user who pre-creates one (mode 777) and listens in it cannot pose as the controller.
 * gc refuses with a clear error and never talks to the socket found there.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { controlSocketPath } from "../../internal/controller/control.js";
import { fallbackSocketDir } from "../../internal/runtime/subprocess/layout.js";
import { makeCity, runGc, until } from "../support/city.js";

const OTHER_UID = 65534; // nobody
const canSwitchUid = process.getuid?.() === 0 && spawnSync("setpriv", ["--version"]).status === 0;

/** A city whose state dir is too deep for a unix socket path: its sockets go under /tmp. */
function deepCity() {
  const city = makeCity(`workspace:
  name: @NAME@
session:
  provider: subprocess
daemon:
  interval: 1h
agents:
  - name: a
    start_command: "exec sleep 100000"
`);
  // Deepen the city: move its file into a long subdirectory tree, the city dir from now on.
  const deep = join(city.dir, "d".repeat(60), "e".repeat(60));
  mkdirSync(deep, { recursive: true });
  spawnSync("mv", [join(city.dir, "city.yaml"), deep]);
  onTestFinished(async () => {
    await runGc(["--city", deep, "stop"], { timeoutMs: 60_000 });
  });
  const gc = (args: string[]) => runGc(["--city", deep, ...args], { timeoutMs: 60_000 });
  return { deep, gc };
}

/** Runs `argv` as the other user (no groups). */
function asOther(argv: string[]): ChildProcess {
  return spawn("setpriv", [`--reuid=${OTHER_UID}`, `--regid=${OTHER_UID}`, "--clear-groups", ...argv], {
    stdio: ["ignore", "pipe", "pipe"],
  });
}

describe.skipIf(!canSwitchUid)("socket directories outside the city", () => {
  it("a /tmp control socket directory made by another user is refused; its socket is never asked", {
    timeout: 120_000,
  }, async () => {
    const { deep, gc } = deepCity();
    const sock = controlSocketPath(join(deep, ".gc"));
    const dir = dirname(sock);
    expect(dir).toMatch(/^\/tmp\/gc-\d+-[0-9a-f]{12}$/);
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    // The other user makes the directory (mode 777) and listens in it, logging every request.
    const log = join(dir, "requests.log");
    const fake = asOther([
      process.execPath,
      "-e",
      `const fs=require("fs"),net=require("net");fs.mkdirSync(${JSON.stringify(dir)},{mode:0o777});fs.chmodSync(${JSON.stringify(dir)},0o777);` +
        `net.createServer(s=>s.on("data",d=>{fs.appendFileSync(${JSON.stringify(log)},d);s.end(JSON.stringify({type:"error",error:"ATTACKER"})+"\\n")})).listen(${JSON.stringify(sock)},()=>fs.chmodSync(${JSON.stringify(sock)},0o777))`,
    ]);
    onTestFinished(() => {
      fake.kill("SIGKILL");
    });
    await until("the other user's socket listens", () => existsSync(sock));

    const start = await gc(["start"]);
    expect(start.code).not.toBe(0);
    expect(start.stdout + start.stderr).toContain(`refusing to use ${dir} for gc's sockets`);
    expect(start.stdout + start.stderr).toMatch(/owned by uid 65534, not by this user/);
    for (const args of [["status"], ["reconcile"]]) {
      const r = await gc(args);
      expect(r.stdout + r.stderr).not.toContain("ATTACKER");
    }
    // Nothing gc sent reached the other user's socket.
    expect(existsSync(log)).toBe(false);
  });

  it("a /tmp holder socket directory made by another user is refused", { timeout: 120_000 }, async () => {
    const { deep, gc } = deepCity();
    const root = join(deep, ".gc", "subprocess");
    const dir = fallbackSocketDir(root);
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const made = asOther([
      process.execPath,
      "-e",
      `require("fs").mkdirSync(${JSON.stringify(dir)},{mode:0o777});require("fs").chmodSync(${JSON.stringify(dir)},0o777)`,
    ]);
    await new Promise((r) => made.on("close", r));
    expect(existsSync(dir)).toBe(true);
    await gc(["start"]);
    await until("the start failure is reported", async () => {
      const r = await gc(["status"]);
      const log = spawnSync("cat", [join(deep, ".gc", "controller.log")], { encoding: "utf8" }).stdout;
      return (r.stdout + r.stderr + log).includes(`refusing to use ${dir} for gc's sockets`);
    });
    chmodSync(dir, 0o700); // let the cleanup remove it
  });
});
