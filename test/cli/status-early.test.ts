/**
 * `gc status`'s early question (cmd/gc/early.ts): gc's loader asks the running controller for
 * the snapshot before the CLI bundle runs, and status takes that answer only when it is the
 * answer to its own question. The controller side is the real control server
 * (internal/controller/control.ts serveControl) with a handler that counts what it is asked.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import type { Server } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { commandArgs, startEarly, statusQuestion, takeEarlyAnswer } from "../../cmd/gc/early.js";
import { type ControlHandlers, serveControl } from "../../internal/controller/control.js";
import type { StatusJson } from "../../internal/controller/status-snapshot.js";
import { GC_BIN, runGc } from "../support/city.js";

describe("commandArgs(status): which invocations are asked early", () => {
  const env = {};
  it.each([
    [["status"], { city: undefined }],
    [["status", "--json"], { city: undefined }],
    [["--json", "status"], { city: undefined }],
    [["--city", "/c", "status"], { city: "/c" }],
    [["status", "--city", "rel/dir"], { city: "rel/dir" }],
    [["--city=/c", "status", "--json"], { city: "/c" }],
  ])("%j → %j", (argv, want) => {
    expect(commandArgs("status", argv, env)).toEqual(want);
  });

  it.each([
    [[]],
    [["start"]],
    [["status", "extra"]],
    [["status", "status"]],
    [["status", "--config", "f.yaml"]],
    [["--config=f.yaml", "status"]],
    [["status", "--help"]],
    [["status", "-h"]],
    [["help", "status"]],
    [["status", "--city"]],
    [["status", "--city", "--json"]],
    [["status", "--city="]],
    [["status", "--"]],
    [["session", "status"]],
    [["status", "--jsn"]],
  ])("%j is not", (argv) => {
    expect(commandArgs("status", argv, env)).toBeNull();
  });

  it("takes GC_CITY when no --city is given, as the CLI does", () => {
    expect(commandArgs("status", ["status"], { GC_CITY: "/from/env" })).toEqual({ city: "/from/env" });
    expect(commandArgs("status", ["status", "--city", "/flag"], { GC_CITY: "/from/env" })).toEqual({
      city: "/flag",
    });
    expect(commandArgs("status", ["status"], { GC_CITY: "" })).toEqual({ city: undefined });
  });
});

/** A city dir with a real control server answering `snapshot` with `doc`, counting requests. */
async function fakeCity(doc: (file: string) => StatusJson | Promise<StatusJson>) {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "gc-early-")));
  writeFileSync(join(dir, "city.yaml"), "workspace:\n  name: early\n");
  mkdirSync(join(dir, ".gc"), { mode: 0o700 });
  const asked: string[] = [];
  const handlers: ControlHandlers = {
    status: () => {
      throw new Error("not asked in this test");
    },
    desired: () => undefined,
    pending: async () => new Map(),
    snapshot: async (file) => {
      asked.push(file);
      return doc(file);
    },
    watch: async () => undefined,
    shutdown: () => undefined,
  };
  const server: Server = await serveControl(statusQuestion(dir).socket, handlers);
  cleanups.push(async () => {
    await new Promise<void>((r) => server.close(() => r()));
    rmSync(dir, { recursive: true, force: true });
  });
  return { dir, asked };
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A snapshot document as a controller of no build would send it. */
function snapshotDoc(city: string): StatusJson {
  return {
    city,
    build: null,
    controller: { running: true, pid: process.pid, build: null, buildMismatch: false, lastPass: null },
    sessions: [],
    configError: null,
    massStop: null,
    observeErrors: [],
    errors: [],
  } as unknown as StatusJson;
}

describe("the early answer", () => {
  it("is the controller's answer to status's own question, taken once", async () => {
    const { dir, asked } = await fakeCity(() => snapshotDoc("early-city"));
    startEarly(["status", "--json"], {}, dir);
    const q = statusQuestion(dir);
    const msgs = await takeEarlyAnswer(q, new AbortController().signal);
    expect(msgs).toEqual([{ type: "snapshot", snapshot: snapshotDoc("early-city") }]);
    expect(asked).toEqual([join(dir, "city.yaml")]);
    // Taken: a second asker asks itself.
    expect(await takeEarlyAnswer(q, new AbortController().signal)).toBeUndefined();
  });

  it("finds the city upward from the working directory, as status does", async () => {
    const { dir, asked } = await fakeCity(() => snapshotDoc("found"));
    const sub = join(dir, "deep", "er");
    mkdirSync(sub, { recursive: true });
    startEarly(["status"], {}, sub);
    const msgs = await takeEarlyAnswer(statusQuestion(dir), new AbortController().signal);
    expect(msgs?.[0]).toMatchObject({ type: "snapshot" });
    expect(asked).toHaveLength(1);
  });

  it("is not taken by a question about another city", async () => {
    const a = await fakeCity(() => snapshotDoc("a"));
    const b = await fakeCity(() => snapshotDoc("b"));
    startEarly(["status", "--city", a.dir], {}, b.dir);
    expect(await takeEarlyAnswer(statusQuestion(b.dir), new AbortController().signal)).toBeUndefined();
    expect(b.asked).toEqual([]);
  });

  it("rejects as the request did when no controller listens", async () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), "gc-early-none-")));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(join(dir, "city.yaml"), "workspace:\n  name: none\n");
    startEarly(["status"], {}, dir);
    await expect(takeEarlyAnswer(statusQuestion(dir), new AbortController().signal)).rejects.toMatchObject({
      code: "ENOENT",
    });
  });

  it("is not there without a city, or for another command", async () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), "gc-early-nocity-")));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    startEarly(["status"], {}, dir);
    expect(await takeEarlyAnswer(statusQuestion(dir), new AbortController().signal)).toBeUndefined();
    startEarly(["stop"], {}, dir);
    expect(await takeEarlyAnswer(statusQuestion(dir), new AbortController().signal)).toBeUndefined();
  });

  it("gives way to an abort while it waits", async () => {
    // A controller that has not answered yet: the abort wins.
    let answer = (): void => undefined;
    const gate = new Promise<void>((r) => {
      answer = r;
    });
    const slow = await fakeCity(async () => {
      await gate;
      return snapshotDoc("slow");
    });
    cleanups.push(async () => answer()); // before the server closes (cleanups run last first)
    startEarly(["status"], {}, slow.dir);
    const ac = new AbortController();
    const taking = takeEarlyAnswer(statusQuestion(slow.dir), ac.signal);
    await expect.poll(() => slow.asked.length).toBe(1);
    ac.abort(new Error("interrupted"));
    await expect(taking).rejects.toThrow("interrupted");
  });
});

describe("built gc status", () => {
  it("the loader asks early: dist/cmd/gc/early.cjs on its own asks the controller", async () => {
    const { dir, asked } = await fakeCity(() => snapshotDoc("standalone"));
    const early = join(dirname(GC_BIN), "early.cjs");
    const loader = readFileSync(join(dirname(GC_BIN), "main.cjs"), "utf8");
    expect(loader).toContain(
      `require("./early.cjs").startEarly(process.argv.slice(2), process.env, process.cwd(), __dirname)`,
    );
    // Spawned asynchronously: the server that answers is this process.
    const child = spawn(
      process.execPath,
      ["-e", `require(${JSON.stringify(early)}).startEarly(["status"], {}, process.cwd())`],
      { cwd: dir, stdio: "ignore" },
    );
    const [code] = (await once(child, "close")) as [number | null];
    expect(code).toBe(0);
    expect(asked).toEqual([join(dir, "city.yaml")]);
  });

  it("asks the running controller once, and not at all with --config", async () => {
    const { dir, asked } = await fakeCity(() => snapshotDoc("asked-once"));
    const json = await runGc(["status", "--json"], { cwd: dir });
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ city: "asked-once", controller: { running: true } });
    expect(asked).toHaveLength(1);

    const text = await runGc(["--city", dir, "status"], { cwd: tmpdir() });
    expect(text.code).toBe(0);
    expect(text.stdout).toContain("city asked-once");
    expect(asked).toHaveLength(2);

    // With --config status builds its own snapshot (here: a city with no sessions).
    const own = await runGc(["status", "--json", "--config", join(dir, "city.yaml")], { cwd: dir });
    expect(own.code).toBe(0);
    expect(JSON.parse(own.stdout)).toMatchObject({ city: "early" });
    expect(asked).toHaveLength(2);
  });
});
