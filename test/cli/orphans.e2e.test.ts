/**
 * End-to-end: processes of a session that outlive its infrastructure (a child in its own
 * session ignoring SIGHUP, re-parented to init when the tmux server or the holder dies) are
 * found by the city's `GC_OWNER` tag. The controller kills the lost incarnation's orphans
 * before starting the session again — one incarnation runs, however many losses — and
 * `gc stop` kills orphans and says "nothing is left" only when that is true.
 */
import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it, onTestFinished } from "vitest";
import { killPids } from "../../internal/proc/kill.js";
import { makeCity, type TestCity, until } from "../support/city.js";

/**
 * The agent: `sleep 100000` in the pane, and a child in its own session that ignores SIGHUP
 * (`sleep 100001`) — what a Gemini CLI or a `codex app-server` daemon does to its terminal.
 */
const AGENT = `setsid sh -c 'trap "" HUP; exec sleep 100001' & exec sleep 100000`;

interface StatusRow {
  name: string;
  running: boolean;
  infraLosses: number;
}

async function row(city: TestCity, name: string): Promise<StatusRow | undefined> {
  const r = await city.gc(["status", "--json"]);
  if (r.code !== 0) return undefined;
  return (JSON.parse(r.stdout) as { sessions: StatusRow[] }).sessions.find((s) => s.name === name);
}

/** Live processes whose environment says they belong to `session` of the city (by name, as a person would look). */
function tagged(city: TestCity, session?: string): { pid: number; ppid: number; argv: string }[] {
  const out: { pid: number; ppid: number; argv: string }[] = [];
  for (const e of readdirSync("/proc")) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const env = readFileSync(`/proc/${e}/environ`, "utf8").split("\0");
      if (!env.includes(`GC_CITY=${city.name}`)) continue;
      if (session !== undefined && !env.includes(`GC_SESSION=${session}`)) continue;
      const stat = readFileSync(`/proc/${e}/stat`, "utf8");
      const [state = "", ppid = ""] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (state === "Z") continue;
      const argv = readFileSync(`/proc/${e}/cmdline`, "utf8").split("\0").join(" ").trim();
      out.push({ pid: Number(e), ppid: Number(ppid), argv });
    } catch {
      // gone mid-read
    }
  }
  return out;
}

/** The SIGHUP-immune children (`sleep 100001`) of the city's sessions. */
const immune = (city: TestCity, session?: string) =>
  tagged(city, session)
    .filter((p) => p.argv === "sleep 100001")
    .map((p) => p.pid);

/** A city with agents (`a` by default) running AGENT; every tagged process is killed after the test, even on failure. */
function orphanCity(provider: "tmux" | "subprocess" | "auto", agents: readonly string[] = ["a"]): TestCity {
  const city = makeCity(`workspace:
  name: @NAME@
session:
  provider: ${provider}
  auto: { default: tmux }
daemon:
  interval: 1h
agents:
${agents.map((a) => `  - name: ${a}\n    start_command: ${JSON.stringify(AGENT)}\n`).join("")}`);
  onTestFinished(async () => {
    await killPids(tagged(city).map((p) => p.pid));
    // Holders of the city (subprocess): not tagged, found by their argv.
    const holders: number[] = [];
    for (const e of readdirSync("/proc")) {
      try {
        const argv = readFileSync(`/proc/${e}/cmdline`, "utf8").split("\0");
        if (argv.some((a) => a.endsWith("holder.js")) && argv.some((a) => a.startsWith(city.dir)))
          holders.push(Number(e));
      } catch {
        // not a process, or gone
      }
    }
    await killPids(holders);
  });
  return city;
}

async function lossEvents(
  city: TestCity,
  session = "a",
): Promise<{ orphansKilled?: number; orphanPids?: number[] }[]> {
  const r = await city.gc(["session", "logs", session, "--events", "--json"]);
  const { events } = JSON.parse(r.stdout) as {
    events: { type: string; payload: { orphansKilled?: number; orphanPids?: number[] } }[];
  };
  return events.filter((e) => e.type === "session.infrastructure-lost").map((e) => e.payload);
}

describe("orphans of lost infrastructure (e2e)", { timeout: 180_000 }, () => {
  it("tmux: each kill-server under a running controller → every session is back, each old incarnation's orphan is killed (and named on its own session), one incarnation runs", async () => {
    const names = ["a", "b"] as const;
    const city = orphanCity("tmux", names);
    expect((await city.gc(["start"])).code).toBe(0);
    const kidsOf = async (loss: number, before: ReadonlyMap<string, number>) => {
      const out = new Map<string, number>();
      for (const n of names) {
        const r = await row(city, n);
        const kids = immune(city, n);
        if (!r?.running || r.infraLosses !== loss || kids.length !== 1 || kids[0] === before.get(n))
          return false;
        out.set(n, kids[0]!);
      }
      return out;
    };
    let current = await until("a, b and their immune children run", () => kidsOf(0, new Map()));
    const killed = new Map<string, number[]>(names.map((n) => [n, []]));
    for (let loss = 1; loss <= 2; loss++) {
      const old = current;
      city.tmux("kill-server");
      current = await until(
        `back after loss ${loss}, with new immune children`,
        () => kidsOf(loss, old),
        60_000,
      );
      for (const n of names) {
        // The old child is dead (not merely re-parented), and exactly one incarnation runs.
        expect(tagged(city).some((p) => p.pid === old.get(n))).toBe(false);
        expect(tagged(city, n).filter((p) => p.argv.startsWith("sleep")).length).toBe(2);
        killed.get(n)!.push(old.get(n)!);
      }
    }
    for (const n of names) {
      const events = await lossEvents(city, n);
      expect(events).toHaveLength(2);
      // One census for both sessions each time: each event names its own session's orphans only.
      expect(
        events
          .flatMap((e) => e.orphanPids ?? [])
          .filter((pid) => killed.get(n)!.includes(pid))
          .sort(),
      ).toEqual([...killed.get(n)!].sort());
      const other = names.find((m) => m !== n)!;
      expect(
        events.flatMap((e) => e.orphanPids ?? []).filter((pid) => killed.get(other)!.includes(pid)),
      ).toEqual([]);
      for (const e of events) expect(e.orphanPids).toHaveLength(e.orphansKilled ?? -1);
    }

    const stop = await city.gc(["stop"]);
    expect(stop.code, stop.stderr).toBe(0);
    expect(stop.stdout).toContain(`census: nothing of city ${city.name} is left running`);
    expect(tagged(city)).toEqual([]);
  });

  // Under a router (auto over tmux) the orphan is found through the router's census.
  it.each(["tmux", "auto"] as const)(
    "%s: gc stop with an orphan of a lost tmux server (no controller) kills it, says so, and only then reports nothing left",
    async (provider) => {
      const city = orphanCity(provider);
      expect((await city.gc(["start", "--once"])).code).toBe(0);
      const kid = (
        await until("immune child runs", () => immune(city, "a").length === 1 && immune(city, "a"))
      )[0]!;
      city.tmux("kill-server");
      // The pane is gone; its child lives on, re-parented to init, with nothing owning it.
      await until("the pane's program is gone", () => tagged(city, "a").length === 1);
      expect(tagged(city, "a")).toEqual([expect.objectContaining({ pid: kid, ppid: 1 })]);

      const stop = await city.gc(["stop"]);
      expect(stop.code, stop.stderr).toBe(0);
      expect(stop.stdout).toContain(`killing 1 leftover process of ${provider}: pid ${kid} (sleep)`);
      expect(stop.stdout).toContain(`census: nothing of city ${city.name} is left running`);
      expect(tagged(city)).toEqual([]);
    },
  );

  it("subprocess: a holder killed with SIGKILL → the session is back on a new holder, the old orphan is killed", async () => {
    const city = orphanCity("subprocess");
    expect((await city.gc(["start"])).code).toBe(0);
    const old = (
      await until("a and its immune child run", async () => {
        const r = await row(city, "a");
        const kids = immune(city, "a");
        return r?.running && kids.length === 1 && kids;
      })
    )[0]!;
    const holderPid = (
      JSON.parse(readFileSync(`${city.dir}/.gc/subprocess/sessions/a/session.json`, "utf8")) as {
        holderPid: number;
      }
    ).holderPid;
    process.kill(holderPid, "SIGKILL");
    const current = (
      await until(
        "back on a new holder with a new immune child, the old one dead",
        async () => {
          const r = await row(city, "a");
          const kids = immune(city, "a");
          return r?.running && r.infraLosses === 1 && kids.length === 1 && kids[0] !== old && kids;
        },
        60_000,
      )
    )[0]!;
    expect(tagged(city).some((p) => p.pid === old)).toBe(false);
    const events = await lossEvents(city);
    expect(events).toHaveLength(1);
    // The old child is dead (above), but who killed it is a race: the observation that finds
    // the holder dead tears the session down (its tree, while the old program still lives),
    // or, once the old program has died of the hangup, the restart kills it as an orphan and
    // counts it. Measured 2 of 6 under load with 0 counted. The event says how many, and which.
    const loss = events[0]!;
    expect(loss.orphanPids).toHaveLength(loss.orphansKilled ?? -1);
    // Whatever it killed was of the old incarnation, never the new one.
    expect(loss.orphanPids).not.toContain(current);
    expect(loss.orphanPids?.filter((pid) => tagged(city).some((p) => p.pid === pid))).toEqual([]);

    const stop = await city.gc(["stop"]);
    expect(stop.code, stop.stderr).toBe(0);
    expect(tagged(city)).toEqual([]);
  });
});
