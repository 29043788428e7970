/**
 * What a look at many sessions costs the tmux server (session-screens.ts `look`): a look at
 * a few sessions finds each by name instead of listing every pane, a look at some sessions
 * keeps the screens cached for the others, and metadata written right after a start needs no
 * lookup of the name. Every command goes through the provider's control client, so the tests
 * count them there.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { TmuxProvider } from "../../../internal/runtime/tmux/index.js";
import { FEW_LOOKS, looksOneByOne } from "../../../internal/runtime/tmux/session-screens.js";
import { HAS_TMUX, type TmuxFixture, tmuxFixture } from "./helpers.js";

describe("looksOneByOne", () => {
  it.each([
    [FEW_LOOKS, 0, true],
    [FEW_LOOKS + 1, 0, false],
    [FEW_LOOKS + 1, 160, false],
    [FEW_LOOKS + 4, 200, true],
    [100, 1000, true],
    [101, 1000, false],
  ])("%i sessions wanted, %i listed last: %s", (wanted, listed, one) => {
    expect(looksOneByOne(wanted, listed)).toBe(one);
  });
});

describe.skipIf(!HAS_TMUX)("look and metadata reads (tmux)", () => {
  let fx: TmuxFixture;
  let p: TmuxProvider;
  beforeEach(async () => {
    fx = await tmuxFixture();
    p = fx.provider();
  });
  afterEach(async () => {
    vi.restoreAllMocks();
    await fx.cleanup();
  });

  /** Every command sent on the provider's client (a command list counts each of its commands). */
  function record(): string[][] {
    const sent: string[][] = [];
    const list = p.control.commandList.bind(p.control);
    const one = p.control.command.bind(p.control);
    vi.spyOn(p.control, "commandList").mockImplementation((argvs, o) => {
      for (const a of argvs) sent.push([...a]);
      return list(argvs, o);
    });
    vi.spyOn(p.control, "command").mockImplementation((argv, o) => {
      sent.push([...argv]);
      return one(argv, o);
    });
    return sent;
  }
  const captures = (sent: string[][]) => sent.filter((a) => a[0] === "capture-pane").length;
  const listsAll = (sent: string[][]) => sent.filter((a) => a[0] === "list-panes" && a[1] === "-a").length;

  it("a look at a few sessions lists no pane of the others, and keeps their screens cached", async () => {
    const names = Array.from({ length: FEW_LOOKS + 2 }, (_, i) => `s${i}`);
    const workDir = await fx.dir();
    await Promise.all(
      names.map((n) => p.start(n, { command: `echo READY-${n}; exec sleep 1000`, workDir, env: {} })),
    );
    // Once a look is taken in a later second than the sessions' last output, their screens
    // are cached: a look at all of them captures nothing.
    await expect
      .poll(
        async () => {
          const sent = record();
          const looks = await p.look(names);
          vi.restoreAllMocks();
          return looks.size === names.length && captures(sent) === 0;
        },
        { timeout: 15_000 },
      )
      .toBe(true);

    const sent = record();
    const few = await p.look(["s0", "s1", "gone"]);
    expect([...few.keys()].sort()).toEqual(["s0", "s1"]);
    expect(few.get("s0")?.screen).toContain("READY-s0");
    expect(listsAll(sent)).toBe(0);
    expect(captures(sent)).toBe(0);

    // The few-session look evicted nothing: the next look at all of them still captures none.
    const all = await p.look(names);
    expect(all.size).toBe(names.length);
    expect(all.get(`s${FEW_LOOKS + 1}`)?.screen).toContain(`READY-s${FEW_LOOKS + 1}`);
    expect(listsAll(sent)).toBe(1);
    expect(captures(sent)).toBe(0);
  });

  it("a few-session look sees a session of another city as absent", async () => {
    const other = fx.provider(undefined, "other-city");
    const workDir = await fx.dir();
    await other.start("theirs", { command: "exec sleep 1000", workDir, env: {} });
    await p.start("ours", { command: "exec sleep 1000", workDir, env: {} });
    const looks = await p.look(["theirs", "ours"]);
    expect([...looks.keys()]).toEqual(["ours"]);
  });

  it("a start looks the name up before it creates only when something runs before the create", async () => {
    const workDir = await fx.dir();
    const lookups = (sent: string[][]) => sent.filter((a) => a[0] === "list-panes").length;
    const plain = record();
    await p.start("plain", { command: "exec sleep 1000", workDir, env: {} });
    expect(lookups(plain)).toBe(1); // the check that the program is alive after the create
    vi.restoreAllMocks();
    const hooked = record();
    await p.start("hooked", { command: "exec sleep 1000", workDir, env: {}, preStart: ["true"] });
    expect(lookups(hooked)).toBe(2); // the name first: pre_start never runs beside a live session
    // A name held by a dead session of ours is found taken by the create, freed, and made anew.
    await p.start("again", { command: "exec sleep 1000", workDir, env: {} });
    await p.interrupt("again"); // Ctrl-C ends sleep: the pane stays, dead, with its exit status
    await vi.waitFor(async () => expect(await p.lastExit("again")).toBeDefined());
    await p.start("again", { command: "exec sleep 1000", workDir, env: {} });
    expect(await p.isRunning("again")).toBe(true);
    expect(await p.lastExit("again")).toBeUndefined();
  });

  it("metadata written right after a start needs no lookup of the session", async () => {
    await p.start("meta", { command: "exec sleep 1000", workDir: await fx.dir(), env: {} });
    const sent = record();
    await Promise.all([p.setMeta("meta", "core", "c1"), p.setMeta("meta", "live", "l1")]);
    expect(sent.filter((a) => a[0] === "list-panes")).toEqual([]);
    expect(sent.filter((a) => a[0] === "set-option")).toHaveLength(2);
    expect(await p.getMeta("meta", "core")).toBe("c1");
  });
});
