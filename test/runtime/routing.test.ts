/**
 * The routing provider's own rules, on in-memory backends (real backends are proven by the
 * routing conformance suite and test/cli/routing.e2e.test.ts): remembered routes, no
 * duplicates across backends, and a partial observation that stops nothing while sessions on
 * healthy backends still start.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { PartialObservationError, SessionExistsError } from "../../internal/base/errors.js";
import type { DesiredSession } from "../../internal/reconcile/execute.js";
import { DEFAULT_POLICY } from "../../internal/reconcile/plan.js";
import { Reconciler } from "../../internal/reconcile/reconciler.js";
import { RoutingProvider, routeSession } from "../../internal/runtime/auto/index.js";
import { FakeProvider } from "../../internal/runtime/fake.js";
import { diffBreakdown, fingerprint } from "../../internal/runtime/fingerprint.js";
import type { SessionEnd, SessionLook, StartConfig } from "../../internal/runtime/provider.js";
import { openMemoryStore } from "../../internal/session/memory-store.js";

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function router(stateDir?: string) {
  const dir = stateDir ?? (await mkdtemp(join(tmpdir(), "gc-route-")));
  if (!stateDir) dirs.push(dir);
  const a = new FakeProvider({ city: "c" });
  const b = new FakeProvider({ city: "c" });
  const make = (bs: Map<string, FakeProvider>) =>
    new RoutingProvider({
      name: "auto",
      rules: { kind: "auto", default: "a" },
      backends: bs,
      open: async (s) => {
        throw new Error(`no backend ${s}`);
      },
      stateDir: dir,
      ownsBackends: false,
    });
  return {
    dir,
    a,
    b,
    p: make(
      new Map([
        ["a", a],
        ["b", b],
      ]),
    ),
    again: () =>
      make(
        new Map([
          ["a", a],
          ["b", b],
        ]),
      ),
  };
}

const cfg = (backend?: string): StartConfig => ({ command: "sleep 300", workDir: "/w", env: {}, backend });

describe("routeSession", () => {
  it("auto: the declared provider, else the default; hybrid: by remote_match on the name", () => {
    expect(routeSession({ kind: "auto", default: "tmux" }, "x", "subprocess").backend).toBe("subprocess");
    expect(routeSession({ kind: "auto", default: "tmux" }, "x").backend).toBe("tmux");
    const h = { kind: "hybrid", local: "tmux", remote: "k8s", remoteMatch: "^w-" } as const;
    expect(routeSession(h, "w-1")).toEqual({
      backend: "k8s",
      why: 'name matches session.hybrid.remote_match "^w-"',
    });
    expect(routeSession(h, "mayor").backend).toBe("tmux");
  });
});

describe("a changed route is core drift", () => {
  it("the backend is a core field only under a router, so moving a session restarts it", () => {
    const plain = fingerprint(cfg());
    expect(Object.keys(plain.breakdown)).not.toContain("backend");
    const onTmux = fingerprint(cfg("tmux"));
    const onSub = fingerprint(cfg("subprocess"));
    expect(onSub.core).not.toBe(onTmux.core);
    expect(diffBreakdown(onTmux.breakdown, onSub.breakdown)).toEqual([
      { field: "backend", from: "tmux", to: "subprocess" },
    ]);
  });
});

describe("RoutingProvider", () => {
  it("killOrphans asks every local backend (the session may have moved) and returns what they killed", async () => {
    const { a, b, p } = await router();
    const asked: string[] = [];
    const orphan = (pid: number, session: string) => ({
      pid,
      comm: "sleep",
      startTime: "1",
      orphan: true as const,
      session,
    });
    Object.assign(a, {
      killOrphans: async (names: readonly string[]) => {
        asked.push(`a:${names.join(",")}`);
        return [orphan(11, "s")];
      },
    });
    Object.assign(b, {
      killOrphans: async (names: readonly string[]) => {
        asked.push(`b:${names.join(",")}`);
        return [orphan(22, "t")];
      },
    });
    expect((await p.killOrphans(["s", "t"])).map((e) => [e.pid, e.session])).toEqual([
      [11, "s"],
      [22, "t"],
    ]);
    expect(asked.sort()).toEqual(["a:s,t", "b:s,t"]);
  });

  it("routes by the start config, remembers routes across instances, re-learns a lost record", async () => {
    const { dir, a, b, p, again } = await router();
    await p.start("one", cfg());
    await p.start("two", cfg("b"));
    expect(a.session("one")).toBeDefined();
    expect(b.session("two")).toBeDefined();
    expect(await p.listRunning("")).toEqual(["one", "two"]);
    const next = again();
    expect(await next.backendOf("two")).toBe("b");
    await rm(join(dir, "routes", "two"));
    const third = again();
    expect(await third.backendOf("two")).toBeUndefined();
    await third.listRunning("");
    expect(await third.backendOf("two")).toBe("b");
    await third.setMeta("two", "k", "v");
    expect(await b.getMeta("two", "k")).toBe("v");
  });

  it("peekStyled: the routed backend's styled screen where it has one, else its peek text", async () => {
    const dir = await mkdtemp(join(tmpdir(), "gc-route-"));
    dirs.push(dir);
    class Styled extends FakeProvider {
      async peekStyled(name: string, lines: number): Promise<string> {
        return `\x1b[1m${await this.peek(name, lines)}\x1b[0m`;
      }
    }
    const styled = new Styled({ city: "c" });
    const plain = new FakeProvider({ city: "c" });
    const p = new RoutingProvider({
      name: "auto",
      rules: { kind: "auto", default: "s" },
      backends: new Map<string, FakeProvider>([
        ["s", styled],
        ["p", plain],
      ]),
      open: async (spec) => {
        throw new Error(`no backend ${spec}`);
      },
      stateDir: dir,
      ownsBackends: false,
    });
    await p.start("on-styled", cfg());
    await p.start("on-plain", cfg("p"));
    styled.peekOutput.set("on-styled", "hello");
    plain.peekOutput.set("on-plain", "world");
    expect(await p.peekStyled("on-styled", 5)).toBe("\x1b[1mhello\x1b[0m");
    expect(await p.peekStyled("on-plain", 5)).toBe("world");
  });

  it("look: each backend's one look at its sessions; a backend without looks gives their interactions", async () => {
    const dir = await mkdtemp(join(tmpdir(), "gc-route-"));
    dirs.push(dir);
    const asked: string[][] = [];
    class Looking extends FakeProvider {
      async look(names: readonly string[]): Promise<Map<string, SessionLook>> {
        asked.push([...names]);
        const out = new Map<string, SessionLook>();
        for (const n of names) out.set(n, { screen: await this.peek(n, 0) });
        return out;
      }
    }
    const looking = new Looking({ city: "c" });
    const plain = new FakeProvider({ city: "c" });
    const p = new RoutingProvider({
      name: "auto",
      rules: { kind: "auto", default: "l" },
      backends: new Map<string, FakeProvider>([
        ["l", looking],
        ["p", plain],
      ]),
      open: async (spec) => {
        throw new Error(`no backend ${spec}`);
      },
      stateDir: dir,
      ownsBackends: false,
    });
    await p.start("l1", cfg());
    await p.start("l2", cfg());
    await p.start("p1", cfg("p"));
    looking.peekOutput.set("l1", "one · esc to interrupt");
    looking.peekOutput.set("l2", "two");
    const q = { requestId: "r", kind: "approval", prompt: "Proceed?" };
    plain.setPending("p1", q);
    const looks = await p.look(["l1", "l2", "p1", "missing"]);
    expect(asked).toEqual([["l1", "l2"]]);
    expect(Object.fromEntries(looks)).toEqual({
      l1: { screen: "one · esc to interrupt" },
      l2: { screen: "two" },
      p1: { interaction: q },
    });
  });

  it("sessionEnd: the routed backend's word on how a session ended; undefined where it cannot tell", async () => {
    const dir = await mkdtemp(join(tmpdir(), "gc-route-"));
    dirs.push(dir);
    class Ending extends FakeProvider {
      async sessionEnd(name: string): Promise<SessionEnd | undefined> {
        return this.session(name) ? undefined : "infrastructure";
      }
    }
    const ending = new Ending({ city: "c" });
    const plain = new FakeProvider({ city: "c" });
    const p = new RoutingProvider({
      name: "auto",
      rules: { kind: "auto", default: "e" },
      backends: new Map<string, FakeProvider>([
        ["e", ending],
        ["p", plain],
      ]),
      open: async (spec) => {
        throw new Error(`no backend ${spec}`);
      },
      stateDir: dir,
      ownsBackends: false,
    });
    await p.start("on-ending", cfg());
    await p.start("on-plain", cfg("p"));
    expect(await p.sessionEnd("on-ending")).toBeUndefined(); // running
    ending.crash("on-ending");
    plain.crash("on-plain");
    expect(await p.sessionEnd("on-ending")).toBe("infrastructure"); // the route is remembered
    expect(await p.sessionEnd("on-plain")).toBeUndefined();
    expect(await p.sessionEnd("never-started")).toBeUndefined();
  });

  it("capabilities: the whole's are the backends' intersection, a session's are its backend's", async () => {
    const dir = await mkdtemp(join(tmpdir(), "gc-route-"));
    dirs.push(dir);
    class Rich extends FakeProvider {
      override capabilities() {
        return { ...super.capabilities(), attach: true, processNames: true, interaction: true };
      }
    }
    class Poor extends FakeProvider {
      override capabilities() {
        return { ...super.capabilities(), attach: false, processNames: true, interaction: false };
      }
    }
    const p = new RoutingProvider({
      name: "auto",
      rules: { kind: "auto", default: "rich" },
      backends: new Map<string, FakeProvider>([
        ["rich", new Rich({ city: "c" })],
        ["poor", new Poor({ city: "c" })],
      ]),
      open: async (spec) => {
        throw new Error(`no backend ${spec}`);
      },
      stateDir: dir,
      ownsBackends: false,
    });
    expect(p.capabilities()).toMatchObject({ attach: false, processNames: true, interaction: false });
    await p.start("r", cfg());
    await p.start("q", cfg("poor"));
    expect(await p.capabilitiesOf("r")).toMatchObject({ attach: true, interaction: true });
    expect(await p.capabilitiesOf("q")).toMatchObject({ attach: false, interaction: false });
    expect(await p.capabilitiesOf("nowhere")).toEqual(p.capabilities());
  });

  it("never runs one name on two backends; stop clears every copy", async () => {
    const { a, b, p } = await router();
    await p.start("one", cfg("a"));
    await expect(p.start("one", cfg("b"))).rejects.toBeInstanceOf(SessionExistsError);
    await b.start("one", cfg()); // a duplicate left behind by a crash
    expect(await p.listRunning("")).toEqual(["one"]);
    await p.stop("one");
    expect([a.session("one"), b.session("one")]).toEqual([undefined, undefined]);
  });

  it("a failing backend makes the listing partial, with the healthy part", async () => {
    const { b, p } = await router();
    await p.start("one", cfg("a"));
    await p.start("two", cfg("b"));
    b.failAlways("listRunning", new Error("backend b is down"));
    const e = await p.listRunning("").catch((x: unknown) => x);
    expect(e).toBeInstanceOf(PartialObservationError);
    expect((e as PartialObservationError).running).toEqual(["one"]);
    expect((e as PartialObservationError).failed).toEqual([{ backend: "b", error: "backend b is down" }]);
  });

  it("reconciler: partial observation stops nothing, waits on the down backend, starts on the healthy one", async () => {
    const { a, b, p } = await router();
    await p.start("orphan", cfg("a"));
    await p.start("two", cfg("b"));
    b.failAlways("listRunning", new Error("down"));
    const want = (name: string, backend: string): DesiredSession => {
      const config = cfg(backend);
      const fp = fingerprint(config);
      return { name, agent: name, provider: "auto", backend, dependsOn: [], suspended: false, config, ...fp };
    };
    const store = openMemoryStore({ singleTenant: true });
    const r = new Reconciler({
      store,
      providerFor: async () => p,
      loadDesired: async () => [want("two", "b"), want("three", "a")],
      baseProviders: ["auto"],
      policy: DEFAULT_POLICY,
      concurrency: 2,
      drainTimeoutMs: 100,
    });
    const report = await r.tick();
    expect(report.observeErrors).toEqual([{ provider: "auto backend b", error: "down" }]);
    expect(report.plan.actions.map((x) => [x.kind, x.name])).toEqual(
      expect.arrayContaining([
        ["start", "three"],
        ["wait", "two"],
        ["wait", "orphan"],
      ]),
    );
    expect(a.session("three")).toBeDefined();
    expect(a.session("orphan")).toBeDefined();
    expect(b.session("two")).toBeDefined();
  });
});
