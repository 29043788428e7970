import { existsSync } from "node:fs";
import { mkdir, readFile, rm, stat } from "node:fs/promises";
import { connect, type Socket } from "node:net";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isGcError } from "../../../internal/base/errors.js";
import {
  holderSocketPath,
  MAX_SOCKET_PATH_BYTES,
  providerRoot,
  sessionPaths,
} from "../../../internal/runtime/subprocess/layout.js";
import type { HolderRecord } from "../../../internal/runtime/subprocess/protocol.js";
import { makeCity, type TestCity, until } from "./helpers.js";

/** A raw JSON-lines client that collects every reply line. */
class RawClient {
  readonly sock: Socket;
  readonly replies: Record<string, unknown>[] = [];
  private buf = "";

  constructor(path: string) {
    this.sock = connect(path);
    this.sock.setEncoding("utf8");
    this.sock.on("data", (d: string) => {
      this.buf += d;
      let nl = this.buf.indexOf("\n");
      while (nl >= 0) {
        this.replies.push(JSON.parse(this.buf.slice(0, nl)) as Record<string, unknown>);
        this.buf = this.buf.slice(nl + 1);
        nl = this.buf.indexOf("\n");
      }
    });
  }

  send(raw: string): void {
    this.sock.write(raw);
  }

  reply(id: unknown): Promise<Record<string, unknown>> {
    return until(`reply ${String(id)}`, () => this.replies.find((r) => r.id === id));
  }

  close(): void {
    this.sock.destroy();
  }
}

describe("subprocess holder protocol", () => {
  let city: TestCity;
  const name = "proto-1";

  beforeAll(async () => {
    city = await makeCity();
    await city.provider.start(name, await city.config("printf 'proto> '; exec cat > in.txt"));
    // start returns once the program runs, not once it has printed: the cases read its screen.
    await until("the prompt on screen", async () => (await city.provider.peek(name, 3)).includes("proto>"));
  });
  afterAll(async () => {
    await city?.cleanup();
  });

  const paths = () => sessionPaths(providerRoot(city.stateDir), name);

  it("files: socket 0600 in a 0700 dir, no spec on disk, record names city and pids", async () => {
    const p = paths();
    expect((await stat(p.socket)).mode & 0o777).toBe(0o600);
    expect((await stat(holderSocketPath(p.root))).mode & 0o777).toBe(0o600);
    expect((await stat(p.dir)).mode & 0o777).toBe(0o700);
    expect((await stat(p.root)).mode & 0o777).toBe(0o700);
    await expect(stat(join(p.dir, "spec.json"))).rejects.toThrow(); // the spec (env) never touches disk
    const rec = JSON.parse(await readFile(p.record, "utf8")) as HolderRecord;
    expect(rec).toMatchObject({ city: city.city, name, exit: null });
    expect(rec.holderPid).toBeGreaterThan(0);
    expect(rec.childPid).toBeGreaterThan(0);
  });

  it("requests: pipelined requests on one connection are answered by id", async () => {
    const c = new RawClient(paths().socket);
    try {
      c.send(
        `${JSON.stringify({ id: "a", op: "status" })}\n${JSON.stringify({ id: 7, op: "peek", lines: 3 })}\n`,
      );
      const [a, b] = await Promise.all([c.reply("a"), c.reply(7)]);
      expect(a).toMatchObject({ ok: true, result: { name, city: city.city, running: true } });
      expect(b).toMatchObject({ ok: true, result: { text: expect.stringContaining("proto>") } });
    } finally {
      c.close();
    }
  });

  it("requests: malformed lines, missing ids and unknown ops get errors; the connection survives", async () => {
    const c = new RawClient(paths().socket);
    try {
      c.send('{"not json\n{"op":"status"}\n{"id":1,"op":"format-disk"}\n{"id":2,"op":"status"}\n');
      await c.reply(2);
      expect(c.replies.filter((r) => r.id === null).map((r) => (r.error as { code: string }).code)).toEqual([
        "bad_request",
        "bad_request",
      ]);
      expect(await c.reply(1)).toMatchObject({ ok: false, error: { code: "unknown_op" } });
      expect(await c.reply(2)).toMatchObject({ ok: true });
    } finally {
      c.close();
    }
  });

  it("requests: a request expecting another city or name is refused with not_owner", async () => {
    const c = new RawClient(paths().socket);
    try {
      c.send(`${JSON.stringify({ id: 1, op: "shutdown", expect: { city: "other", name } })}\n`);
      c.send(
        `${JSON.stringify({ id: 2, op: "meta.set", key: "k", value: "v", expect: { city: city.city, name: "proto" } })}\n`,
      );
      expect(await c.reply(1)).toMatchObject({ ok: false, error: { code: "not_owner" } });
      expect(await c.reply(2)).toMatchObject({ ok: false, error: { code: "not_owner" } });
      expect(await city.provider.isRunning(name)).toBe(true);
    } finally {
      c.close();
    }
  });

  /** A `create` spec as a raw client writes it: session `n` at `paths`, running `sh -c script`. */
  const rawSpec = (n: string, paths: ReturnType<typeof sessionPaths>, script: string) => ({
    protocol: 1,
    city: city.city,
    name: n,
    dir: paths.dir,
    argv: ["/bin/sh", "-c", script],
    env: {},
    cwd: dirname(paths.dir),
    cols: 80,
    rows: 24,
    scrollback: 100,
    ringBytes: 4096,
    socket: paths.socket,
    log: paths.log,
    holderLog: paths.holderLog,
    logMaxBytes: 1 << 20,
  });

  it("create: a spec naming a mode this holder does not run (acp, to the pty holder) is refused, leaving nothing", async () => {
    const root = providerRoot(city.stateDir);
    const other = sessionPaths(root, "proto-mode");
    const c = new RawClient(holderSocketPath(root));
    try {
      const spec = { ...rawSpec("proto-mode", other, "exec sleep 30"), mode: "acp" };
      c.send(`${JSON.stringify({ id: 1, op: "create", spec })}\n`);
      expect(await c.reply(1)).toMatchObject({
        ok: false,
        error: { code: "bad_request", message: 'this holder runs no "acp" sessions' },
      });
      expect(existsSync(other.dir)).toBe(false);
      expect(existsSync(other.socket)).toBe(false);
      expect(await city.provider.isRunning(name)).toBe(true);
    } finally {
      c.close();
    }
  });

  it("create: with readyWaitMs the reply comes with the new session's prompt on screen", async () => {
    const root = providerRoot(city.stateDir);
    const late = sessionPaths(root, "proto-wait");
    await mkdir(late.dir, { mode: 0o700 });
    const c = new RawClient(holderSocketPath(root));
    try {
      const spec = {
        ...rawSpec("proto-wait", late, "sleep 0.3; printf 'late> '; exec cat"),
        readyPromptPrefix: "late> ",
      };
      c.send(`${JSON.stringify({ id: 1, op: "create", spec, readyWaitMs: 30_000 })}\n`);
      const r = await c.reply(1);
      expect(r).toMatchObject({ ok: true });
      expect((r.result as { screen?: string }).screen).toContain("late>");
    } finally {
      c.close();
      await city.provider.stop("proto-wait");
    }
  });

  it("nudge: protocol-looking text is typed as text, never executed", async () => {
    const text = `${JSON.stringify({ id: 99, op: "shutdown" })}\n{"id":100,"op":"meta.set","key":"x","value":"y"}`;
    await city.provider.nudge(name, text);
    const p = join((await city.provider.execCommand(name, ["pwd"])).stdout.trim(), "in.txt");
    await until(
      "the text in the program",
      async () => (await readFile(p, "utf8").catch(() => "")) === `${text}\n`,
    );
    expect(await city.provider.isRunning(name)).toBe(true);
    expect(await city.provider.getMeta(name, "x")).toBeUndefined();
  });

  it("keys: unknown key names are refused and nothing is typed", async () => {
    const c = new RawClient(paths().socket);
    try {
      const before = await city.provider.output(name, 0);
      c.send(`${JSON.stringify({ id: 1, op: "keys", keys: ["a", "NoSuchKey"] })}\n`);
      expect(await c.reply(1)).toMatchObject({ ok: false, error: { code: "invalid_key" } });
      expect((await city.provider.output(name, 0))?.next).toBe(before?.next);
    } finally {
      c.close();
    }
    const e = await city.provider.sendKeys(name, ["Enter", "Bogus"]).catch((x: unknown) => x);
    expect(isGcError(e, "GC_INVALID_NAME")).toBe(true);
  });

  it("meta: a raw client cannot use a hostile key; values are persisted in meta.json", async () => {
    const c = new RawClient(paths().socket);
    try {
      c.send(`${JSON.stringify({ id: 1, op: "meta.set", key: "../../evil", value: "x" })}\n`);
      expect(await c.reply(1)).toMatchObject({ ok: false, error: { code: "invalid_name" } });
    } finally {
      c.close();
    }
    const value = 'multi\nline "quoted" $(x) \u{1F980}';
    await city.provider.setMeta(name, "persisted", value);
    const onDisk = JSON.parse(await readFile(paths().meta, "utf8")) as Record<string, string>;
    expect(onDisk.persisted).toBe(value);
  });

  it("output: returns raw output after a cursor", async () => {
    const first = await city.provider.output(name, 0);
    expect(first?.data).toContain("proto> ");
    await city.provider.nudge(name, "more output");
    const next = await until("new output", async () => {
      const o = await city.provider.output(name, first?.next ?? 0);
      return o?.data.includes("more output") ? o : undefined;
    });
    expect(next.data).not.toContain("proto> ");
    expect(next.truncated).toBe(false);
  });

  it("exit: a finished program keeps its holder (exit code, screen) until stop reaps it", async () => {
    const n2 = "proto-exit";
    await city.provider.start(n2, await city.config("echo bye-now; sleep 1; exit 42"));
    await until("the exit", async () => !(await city.provider.isRunning(n2)));
    expect((await city.provider.lastExit(n2))?.code).toBe(42);
    expect(await city.provider.peek(n2, 5)).toContain("bye-now");
    expect(await city.provider.listRunning("proto")).not.toContain(n2);
    const rec = JSON.parse(
      await readFile(sessionPaths(providerRoot(city.stateDir), n2).record, "utf8"),
    ) as HolderRecord;
    expect(rec.exit?.code).toBe(42);
    await city.provider.stop(n2);
    expect(await city.provider.lastExit(n2)).toBeUndefined();
    await expect(stat(sessionPaths(providerRoot(city.stateDir), n2).dir)).rejects.toThrow();
  });
});

describe("subprocess holder output retention", () => {
  let city: TestCity;
  beforeAll(async () => {
    city = await makeCity();
  });
  afterAll(async () => {
    await city?.cleanup();
  });

  it("output: the raw log rotates at log_max_bytes and the ring keeps only ring_bytes", async () => {
    const p = city.fresh({ logMaxBytes: 4096, ringBytes: 1024 });
    const name = "retain";
    await p.start(
      name,
      await city.config(
        "i=0; while [ $i -lt 200 ]; do echo line-$i-xxxxxxxxxxxxxxxxxxxxxxxx; i=$((i+1)); done; exec sleep 300",
      ),
    );
    await until("all output", async () => (await p.peek(name, 1)).includes("line-199"));
    const { output } = p.logFiles(name);
    const [cur, old] = [await readFile(output, "utf8"), await readFile(`${output}.1`, "utf8")];
    expect(old.length).toBeGreaterThanOrEqual(4096);
    expect(cur.length).toBeLessThan(4096 + 1024);
    expect(old + cur).toContain("line-199");
    const o = await p.output(name, 0);
    expect(o?.truncated).toBe(true);
    expect(Buffer.byteLength(o?.data ?? "")).toBeLessThanOrEqual(1024);
    expect(o?.data).toContain("line-199");
    await p.stop(name);
    expect((await stat(output)).isFile()).toBe(true); // logs outlive the session
  });
});

describe("subprocess holder sockets on long paths", () => {
  let city: TestCity;
  beforeAll(async () => {
    city = await makeCity({
      stateDir: (root) => join(root, "a-rather-long-state-directory-name".repeat(2), "x"),
    });
  });
  afterAll(async () => {
    await city?.cleanup();
    // The holders are gone; after a failure their short socket directory may not be.
    if (city)
      await rm(dirname(holderSocketPath(providerRoot(city.stateDir))), { recursive: true, force: true });
  });

  it("start: falls back to a short private socket path when the natural one is too long", async () => {
    const name = `long-${"n".repeat(60)}`;
    const p = sessionPaths(providerRoot(city.stateDir), name);
    expect(Buffer.byteLength(join(p.dir, "holder.sock"))).toBeGreaterThan(MAX_SOCKET_PATH_BYTES);
    expect(Buffer.byteLength(p.socket)).toBeLessThanOrEqual(MAX_SOCKET_PATH_BYTES);
    await city.provider.start(name, await city.config("exec sleep 300"));
    expect(await city.provider.listRunning("long-")).toEqual([name]);
    expect((await stat(p.socket)).mode & 0o777).toBe(0o600);
    expect((await stat(join(p.socket, ".."))).mode & 0o777).toBe(0o700);
    await city.provider.stop(name);
    await expect(stat(p.socket)).rejects.toThrow();
  });

  it("the short /tmp socket directories go with their last socket (session stop, holder exit)", async () => {
    const root = providerRoot(city.stateDir);
    const names = [`long-a-${"n".repeat(60)}`, `long-b-${"n".repeat(60)}`];
    const [a, b] = names.map((n) => sessionPaths(root, n));
    const dir = dirname(a!.socket);
    expect(dir).toMatch(/^\/tmp\/gc-\d+-[0-9a-f]{12}$/);
    expect(dirname(holderSocketPath(root))).toBe(dir);
    for (const n of names) await city.provider.start(n, await city.config("exec sleep 300"));
    await city.provider.stop(names[0]!);
    // b's socket and the holder's control socket are still in it.
    expect(existsSync(dir)).toBe(true);
    expect(existsSync(b!.socket)).toBe(true);
    await city.provider.stop(names[1]!);
    // The last session gone, the holder exits and takes the directory with its socket.
    await expect.poll(() => existsSync(dir), { timeout: 10_000 }).toBe(false);
  });
});
