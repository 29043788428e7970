/**
 * A city's identity is created once and kept (runtime/identity.ts): renaming
 * `workspace.name` under a running controller or moving the city directory keeps the fleet
 * the city's (no second tmux server, nothing orphaned); after a provider switch `gc stop`
 * still stops what the old provider runs; a session name taken on a shared tmux socket by
 * another city is reported as such, with the fix.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { defaultSocketName, storedIdentity } from "../../internal/runtime/identity.js";
import { makeCity, runGc, type TestCity, until } from "../support/city.js";
import { onPath } from "../support/path.js";

const hasTmux = onPath("tmux");

function cityYaml(name: string, provider: string, extra = ""): string {
  return `workspace:
  name: ${name}
session:
  provider: ${provider}
${extra}daemon:
  interval: 1h
agents:
  - name: a
    start_command: "exec sleep 100000"
  - name: b
    start_command: "exec sleep 100000"
`;
}

/** Session names on tmux socket `socket` (empty when no server runs there). */
function tmuxSessions(socket: string): string[] {
  const r = spawnSync("tmux", ["-L", socket, "list-sessions", "-F", "#{session_name}"], { encoding: "utf8" });
  // The server's own keeper session is not one of the city's.
  return r.status === 0
    ? r.stdout
        .split("\n")
        .filter((s) => s && s !== "_gc_keeper")
        .sort()
    : [];
}

async function running(city: { gc: TestCity["gc"] }): Promise<string[]> {
  const r = await city.gc(["status", "--json"]);
  expect(r.code, r.stderr).toBe(0);
  return (JSON.parse(r.stdout) as { sessions: { name: string; running: boolean }[] }).sessions
    .filter((s) => s.running)
    .map((s) => s.name)
    .sort();
}

/** Pids of the city's session programs (`sleep 100000` tagged with the city's stored name). */
function sessionPids(ownerName: string): number[] {
  const out: number[] = [];
  for (const e of readdirSync("/proc")) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const argv = readFileSync(`/proc/${e}/cmdline`, "utf8");
      if (argv !== "sleep\u0000100000\u0000") continue;
      const env = readFileSync(`/proc/${e}/environ`, "utf8").split("\0");
      if (env.some((v) => v.startsWith(`GC_OWNER=${ownerName}-`))) out.push(Number(e));
    } catch {
      // gone mid-read
    }
  }
  return out.sort((a, b) => a - b);
}

function killSocketAfter(socket: string): void {
  onTestFinished(() => {
    spawnSync("tmux", ["-L", socket, "kill-server"], { stdio: "ignore" });
  });
}

describe.each([
  { provider: "tmux", skip: !hasTmux },
  { provider: "subprocess", skip: false },
])("city identity: a renamed workspace ($provider)", ({ provider, skip }) => {
  it.skipIf(skip)(
    "renaming workspace.name under a running controller keeps the fleet; gc stop stops it",
    {
      timeout: 180_000,
    },
    async () => {
      const city = makeCity(cityYaml("@NAME@", provider));
      expect((await city.gc(["start"])).code).toBe(0);
      const socket = city.socket;
      await until("both sessions run", async () => (await running(city)).length === 2);
      const pids = sessionPids(city.name);
      expect(pids).toHaveLength(2);
      const renamed = `${city.name}r`;
      killSocketAfter(defaultSocketName(renamed, storedIdentity(city.dir)?.id));
      city.write(cityYaml(renamed, provider));
      const r = await city.gc(["reconcile"]);
      expect(r.code, r.stderr).toBe(0);
      expect(await running(city)).toEqual(["a", "b"]);
      // One fleet, the city's own (restarted: GC_CITY changed), no second set under the new name.
      await until("one process per session", () => sessionPids(city.name).length === 2);
      if (provider === "tmux") {
        expect(tmuxSessions(socket)).toEqual(["a", "b"]);
        expect(tmuxSessions(defaultSocketName(renamed, storedIdentity(city.dir)?.id))).toEqual([]);
      }
      const stop = await city.gc(["stop"]);
      expect(stop.code, stop.stdout + stop.stderr).toBe(0);
      expect(stop.stdout).toContain("stopped 2 sessions");
      expect(sessionPids(city.name)).toEqual([]);
    },
  );
});

describe.skipIf(!hasTmux)("city identity", () => {
  it("moving the city directory keeps ownership: gc start adopts the fleet, gc stop stops it", {
    timeout: 180_000,
  }, async () => {
    const city = makeCity(cityYaml("@NAME@", "tmux"));
    expect((await city.gc(["start"])).code).toBe(0);
    const socket = city.socket;
    killSocketAfter(socket);
    await until("both sessions run", async () => (await running(city)).length === 2);
    const before = tmuxSessions(socket);
    const parent = realpathSync(mkdtempSync(join(tmpdir(), "gc-moved-")));
    const moved = join(parent, "city");
    renameSync(city.dir, moved);
    onTestFinished(async () => {
      await runGc(["--city", moved, "stop"], { timeoutMs: 60_000 }).catch(() => undefined);
      rmSync(parent, { recursive: true, force: true });
    });
    const gcMoved: TestCity["gc"] = (args, opts) => runGc(["--city", moved, ...args], opts);
    expect(defaultSocketName(storedIdentity(moved)!.name, storedIdentity(moved)!.id)).toBe(socket);
    const started = await gcMoved(["start"]);
    expect(started.code, started.stderr).toBe(0);
    expect(await running({ gc: gcMoved })).toEqual(["a", "b"]);
    expect(tmuxSessions(socket)).toEqual(before);
    const stop = await gcMoved(["stop"]);
    expect(stop.code, stop.stdout + stop.stderr).toBe(0);
    expect(stop.stdout).toContain("nothing of city");
    expect(tmuxSessions(socket)).toEqual([]);
  });

  it("after a switch from tmux to subprocess, gc stop stops the tmux server too", {
    timeout: 180_000,
  }, async () => {
    const city = makeCity(cityYaml("@NAME@", "tmux"));
    expect((await city.gc(["start"])).code).toBe(0);
    const socket = city.socket;
    await until("both sessions run on tmux", async () => tmuxSessions(socket).length === 2);
    city.write(cityYaml(city.name, "subprocess"));
    const r = await city.gc(["reconcile"]);
    expect(r.code, r.stderr).toBe(0);
    await until("both sessions run", async () => (await running(city)).length === 2);
    expect(storedIdentity(city.dir)?.providers).toEqual(expect.arrayContaining(["tmux", "subprocess"]));
    const stop = await city.gc(["stop"]);
    expect(stop.code, stop.stdout + stop.stderr).toBe(0);
    expect(spawnSync("tmux", ["-L", socket, "list-sessions"]).status).not.toBe(0);
  });

  it("a session name on a shared socket that another city holds is reported as such, with the fix", {
    timeout: 180_000,
  }, async () => {
    const shared = `gc-shared-${process.pid}`;
    killSocketAfter(shared);
    const sock = `  tmux:\n    socket: ${shared}\n`;
    const one = makeCity(cityYaml("@NAME@", "tmux", sock));
    const two = makeCity(cityYaml("@NAME@", "tmux", sock));
    expect((await one.gc(["start"])).code).toBe(0);
    await until("the first city runs", async () => (await running(one)).length === 2);
    await two.gc(["start"]);
    const out = await two.gc(["status"]);
    const log = spawnSync("cat", [join(two.dir, ".gc", "controller.log")], { encoding: "utf8" }).stdout;
    expect(out.stdout + out.stderr + log).toMatch(
      /already exists: it belongs to another city \(owner [^)]+\) on the shared tmux socket gc-shared-\d+; give this city its own socket/,
    );
    // The other city's sessions are untouched.
    expect(await running(one)).toEqual(["a", "b"]);
  });
});
