import { closeSync, existsSync, openSync, readFileSync, writeSync } from "node:fs";
import { chmod, mkdir, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it, onTestFinished } from "vitest";
import { isGcError, StoreError } from "../../internal/base/errors.js";
import { readRecovery } from "../../internal/session/recovery.js";
import { MIGRATIONS, SCHEMA_VERSION } from "../../internal/session/sqlite-schema.js";
import {
  openSqliteStore,
  type SqliteStore,
  type SqliteStoreOptions,
} from "../../internal/session/sqlite-store.js";
import { spawnStoreChild, tempDir } from "./helpers.js";

function open(opts: SqliteStoreOptions): SqliteStore {
  const s = openSqliteStore(opts);
  onTestFinished(() => s.close());
  return s;
}

function expectStoreError(fn: () => unknown, ...mentions: (string | RegExp)[]): StoreError {
  let thrown: unknown;
  try {
    fn();
  } catch (e) {
    thrown = e;
  }
  expect(thrown).toBeInstanceOf(StoreError);
  expect(isGcError(thrown, "GC_STORE")).toBe(true);
  for (const m of mentions) expect((thrown as Error).message).toMatch(m);
  return thrown as StoreError;
}

const mode = async (p: string) => (await stat(p)).mode & 0o777;

describe("sqlite store: files", () => {
  it("checkFile: a deleted state.db is written back from the open store (a file in its place moved aside)", async () => {
    const city = await tempDir();
    const s = open({ cityDir: city, actor: "a" });
    await s.create({ name: "x", agent: "w", provider: "fake" });
    const db = join(city, ".gc", "state.db");
    expect(s.checkFile()).toEqual({ found: "same" });
    for (const f of [db, `${db}-wal`, `${db}-shm`]) await rm(f, { force: true });
    expect(s.checkFile()).toEqual({ found: "missing" });
    expect(s.checkFile({ writeBack: true })).toEqual({ found: "restored" });
    const back = open({ cityDir: city, actor: "a" });
    expect((await back.list()).map((r) => r.name)).toEqual(["x"]);
    expect(s.checkFile()).toEqual({ found: "replaced" });

    // Deleted, then a command opened the path (an empty database): moved aside, not lost.
    await rm(db);
    const fresh = open({ cityDir: city, actor: "a" });
    await fresh.create({ name: "y", agent: "w", provider: "fake" });
    const r = back.checkFile({ writeBack: true });
    expect(r.found).toBe("restored");
    expect(r.movedAside).toMatch(/state\.db\.replaced-/);
    expect((await open({ cityDir: city, actor: "a" }).list()).map((x) => x.name)).toEqual(["x"]);
    expect((await open({ path: r.movedAside as string, actor: "a" }).list()).map((x) => x.name)).toEqual([
      "y",
    ]);
  });

  it("checkFile: garbage over the open state.db is salvaged from the open store (ids kept); the damaged file moved aside", async () => {
    const city = await tempDir();
    const s = open({ cityDir: city, actor: "a" });
    await s.create({ name: "x", agent: "w", provider: "fake" });
    const n1 = await s.enqueueNudge({ session: "x", text: "kept" });
    // The highest id so far belongs to a deleted session's nudge.
    await s.create({ name: "y", agent: "w", provider: "fake" });
    const n2 = await s.enqueueNudge({ session: "y", text: "gone" });
    await s.delete("y");
    const db = join(city, ".gc", "state.db");
    const garbage = Buffer.alloc(4096, 0x5a);
    const fd = openSync(db, "r+");
    writeSync(fd, garbage, 0, garbage.length, 0);
    closeSync(fd);
    // Only the process that writes the file back looks at its header.
    expect(s.checkFile()).toEqual({ found: "same" });
    expectStoreError(() => openSqliteStore({ cityDir: city, actor: "a" }), "the state database is damaged");
    const r = s.checkFile({ writeBack: true });
    expect(r.found).toBe("salvaged");
    expect(r.movedAside).toMatch(/state\.db\.corrupt-/);
    expect(
      readFileSync(r.movedAside as string)
        .subarray(0, 4096)
        .equals(garbage),
    ).toBe(true);
    const back = open({ cityDir: city, actor: "a" });
    expect((await back.list()).map((x) => x.name)).toEqual(["x"]);
    expect((await back.listNudges()).map((n) => [n.id, n.text])).toEqual([[n1.id, "kept"]]);
    // The id sequence came along: a new nudge never reuses an old id.
    expect((await back.enqueueNudge({ session: "x", text: "new" })).id).toBeGreaterThan(n2.id);
    expect(back.checkFile({ writeBack: true })).toEqual({ found: "same" });
  });

  it("checkFile: when the open store cannot read its copy either, `damaged` leaves the file for recovery", async () => {
    const city = await tempDir();
    const s = open({ cityDir: city, actor: "a" });
    const other = open({ cityDir: city, actor: "a" });
    for (let i = 0; i < 50; i++)
      await s.create({ name: `s${i}`, agent: "w", provider: "fake", metadata: { pad: "x".repeat(500) } });
    const db = join(city, ".gc", "state.db");
    s.checkFile(); // nothing to do
    await other.compact(); // every page into the file, the WAL emptied
    const size = (await stat(db)).size;
    const fd = openSync(db, "r+");
    writeSync(fd, Buffer.alloc(size, 0x5a), 0, size, 0);
    closeSync(fd);
    // Another connection's write: the open store's page cache is no longer trusted.
    await other.appendEvent({ type: "x" }).catch(() => undefined);
    const r = s.checkFile({ writeBack: true, damaged: true });
    expect(r).toEqual({ found: "damaged" });
    expect((await stat(db)).size).toBe(size); // left in place
    const back = open({ cityDir: city, actor: "a", recover: true });
    expect(back.recovery?.movedTo).toMatch(/state\.db\.corrupt-/);
  });

  it("openSqliteStore create: false: a missing file is a StoreError and nothing is created", async () => {
    const city = await tempDir();
    expectStoreError(
      () => openSqliteStore({ cityDir: city, actor: "a", create: false }),
      "the state database is missing",
    );
    expect(existsSync(join(city, ".gc", "state.db"))).toBe(false);
  });

  it("openSqliteStore: creates <city>/.gc/state.db 0600 in a 0700 directory, WAL files 0600", async () => {
    const city = await tempDir();
    const s = open({ cityDir: city, actor: "a" });
    const db = join(city, ".gc", "state.db");
    expect(s.path).toBe(db);
    expect(s.info).toEqual({ kind: "sqlite", location: db, tenancy: "multi", actor: "a" });
    await s.create({ name: "x", agent: "w", provider: "fake" });
    expect(await mode(join(city, ".gc"))).toBe(0o700);
    expect(await mode(db)).toBe(0o600);
    expect(existsSync(`${db}-wal`)).toBe(true);
    expect(await mode(`${db}-wal`)).toBe(0o600);
    expect(await mode(`${db}-shm`)).toBe(0o600);
  });

  it("openSqliteStore: tightens a loose existing .gc directory and state file", async () => {
    const city = await tempDir();
    await openSqliteStore({ cityDir: city, actor: "a" }).close();
    await chmod(join(city, ".gc"), 0o755);
    await chmod(join(city, ".gc", "state.db"), 0o644);
    open({ cityDir: city, actor: "a" });
    expect(await mode(join(city, ".gc"))).toBe(0o700);
    expect(await mode(join(city, ".gc", "state.db"))).toBe(0o600);
  });

  it("openSqliteStore: WAL journal, NORMAL sync, a busy timeout and the schema version table", async () => {
    const dir = await tempDir();
    const path = join(dir, "nested", "state.db");
    const s = open({ path, actor: "a", busyTimeoutMs: 1234 });
    expect(await mode(join(dir, "nested"))).toBe(0o700);
    expect(s.schemaVersion()).toBe(SCHEMA_VERSION);
    const raw = new Database(path, { readonly: true });
    onTestFinished(() => {
      raw.close();
    });
    expect(raw.pragma("journal_mode", { simple: true })).toBe("wal");
    const versions = raw.prepare("SELECT version, description FROM gc_schema_version ORDER BY version").all();
    expect(versions).toEqual(MIGRATIONS.map((m) => ({ version: m.version, description: m.description })));
    expect(s.integrityCheck()).toEqual(["ok"]);
  });

  it("openSqliteStore: needs exactly one of cityDir and path, and an actor or singleTenant", async () => {
    const dir = await tempDir();
    expect(() => openSqliteStore({ actor: "a" })).toThrow(TypeError);
    expect(() => openSqliteStore({ actor: "a", cityDir: dir, path: join(dir, "x.db") })).toThrow(TypeError);
    expect(() => openSqliteStore({ cityDir: dir })).toThrow(/singleTenant/);
    expect(existsSync(join(dir, ".gc")), "nothing created on bad options").toBe(false);
  });
});

describe("sqlite store: list", () => {
  it("list: an unchanged database returns the same records; a write here or by another connection is seen", async () => {
    const dir = await tempDir();
    const path = join(dir, "state.db");
    const a = open({ path, actor: "a" });
    const b = open({ path, actor: "a" });
    await a.create({ name: "x", agent: "w", provider: "fake" });
    const first = await a.list();
    const again = await a.list();
    expect(again).not.toBe(first);
    expect(again[0]).toBe(first[0]);
    expect(Object.isFrozen(again[0])).toBe(true);

    // Another connection (another process in real use) writes: seen at once.
    const x = first[0];
    if (!x) throw new Error("no record");
    await b.update("x", x.version, { metadata: { k: "v" } });
    expect((await a.list()).map((r) => [r.name, r.metadata.k])).toEqual([["x", "v"]]);
    await b.create({ name: "y", agent: "w", provider: "fake" });
    expect((await a.list()).map((r) => r.name)).toEqual(["x", "y"]);

    // This connection writes, in any table: seen at once too.
    await a.delete("y");
    expect((await a.list()).map((r) => r.name)).toEqual(["x"]);
    const before = await a.list();
    await a.appendEvent({ type: "note" });
    expect(await a.list()).toEqual(before);
    expect(await a.list({ states: ["stopped"] })).toEqual([]);
  });

  it("list: decoding many records gives the event loop turns, and returns every record in order", async () => {
    const dir = await tempDir();
    const a = open({ path: join(dir, "state.db"), actor: "a" });
    const names = Array.from({ length: 250 }, (_, i) => `s${String(i).padStart(3, "0")}`);
    for (const name of names) await a.create({ name, agent: "w", provider: "fake" });
    const b = open({ path: join(dir, "state.db"), actor: "a" });
    let turned = false;
    setImmediate(() => {
      turned = true;
    });
    const listed = await b.list();
    expect(turned, "an I/O turn ran while the records were decoded").toBe(true);
    expect(listed.map((r) => r.name)).toEqual(names);
    expect(listed.every((r) => Object.isFrozen(r))).toBe(true);
    // Nothing written since: the same records, without a turn.
    turned = false;
    setImmediate(() => {
      turned = true;
    });
    const again = await b.list();
    expect(turned).toBe(false);
    expect(again.every((r, i) => r === listed[i])).toBe(true);
  });
});

describe("sqlite store: migrations and foreign files", () => {
  it("openSqliteStore: migrates a version-1 database forward and keeps its data", async () => {
    const dir = await tempDir();
    const path = join(dir, "state.db");
    const v1 = MIGRATIONS[0];
    if (!v1) throw new Error("no migrations");
    // Build a database as the first release wrote it.
    {
      const db = new Database(path);
      db.exec(`CREATE TABLE gc_schema_version (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL, description TEXT NOT NULL);
        CREATE TABLE gc_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
        INSERT INTO gc_meta VALUES ('application', 'gc-state'), ('tenancy', 'multi');`);
      db.exec(v1.sql);
      db.prepare("INSERT INTO gc_schema_version VALUES (1, 0, ?)").run(v1.description);
      db.prepare(
        "INSERT INTO events (actor, session, type, at, payload) VALUES ('a', 's', 'old', 1, '{}')",
      ).run();
      db.close();
    }
    const s = open({ path, actor: "a" });
    expect(s.schemaVersion()).toBe(SCHEMA_VERSION);
    expect((await s.queryEvents()).map((e) => e.type)).toEqual(["old"]);
    await s.close();
    const reopened = open({ path, actor: "a" });
    expect(reopened.schemaVersion()).toBe(SCHEMA_VERSION);
  });

  it("openSqliteStore: a database from a newer gc is refused with the path and versions", async () => {
    const dir = await tempDir();
    const path = join(dir, "state.db");
    await open({ path, actor: "a" }).close();
    const db = new Database(path);
    db.prepare("INSERT INTO gc_schema_version VALUES (?, 0, 'future')").run(SCHEMA_VERSION + 1);
    db.close();
    expectStoreError(
      () => openSqliteStore({ path, actor: "a" }),
      path,
      /newer gc/,
      String(SCHEMA_VERSION + 1),
    );
  });

  it("openSqliteStore: garbage bytes get a StoreError naming the path; the file is untouched", async () => {
    const dir = await tempDir();
    const path = join(dir, "state.db");
    const garbage = Buffer.from(Array.from({ length: 8192 }, (_, i) => (i * 7919 + 13) % 256));
    await writeFile(path, garbage, { mode: 0o600 });
    expectStoreError(
      () => openSqliteStore({ path, actor: "a" }),
      path,
      /not a usable gc state database|not a database/,
    );
    expect(Buffer.compare(await readFile(path), garbage)).toBe(0);
  });

  it("openSqliteStore: a 0-byte state.db is damage, never a fresh database; recover moves it aside", async () => {
    const city = await tempDir();
    const first = openSqliteStore({ cityDir: city, singleTenant: true });
    await first.create({ name: "held", agent: "w", provider: "fake" });
    await first.close();
    const db = join(city, ".gc", "state.db");
    await writeFile(db, "");
    await rm(`${db}-wal`, { force: true });
    expectStoreError(() => openSqliteStore({ cityDir: city, singleTenant: true }), db, /damaged/, /0 bytes/);
    expect((await stat(db)).size).toBe(0); // untouched without `recover`
    const s = open({
      cityDir: city,
      singleTenant: true,
      recover: true,
      now: () => Date.UTC(2026, 0, 2, 3, 4, 5),
    });
    expect(s.recovery?.reason).toMatch(/0 bytes/);
    expect(s.recovery?.movedTo).toBe(`${db}.corrupt-2026-01-02T03-04-05.000Z`);
    expect((await stat(s.recovery!.movedTo)).size).toBe(0);
    expect(readRecovery(join(city, ".gc"))).toEqual(s.recovery);
    expect(await s.list()).toEqual([]);
    await s.create({ name: "x", agent: "w", provider: "fake" });
    expect(await mode(db)).toBe(0o600);
    // Ids of the new file count from the recovery's time: none of the lost file's is reused.
    const floor = Date.UTC(2026, 0, 2, 3, 4, 5);
    expect((await s.enqueueNudge({ session: "x", text: "n" })).id).toBe(floor + 1);
    expect((await s.createWait({ session: "x", kind: "idle" })).id).toBe(floor + 1);
    expect((await s.queryEvents()).every((e) => e.seq > floor)).toBe(true);
    // The next open finds a healthy file: no second recovery.
    const again = open({ cityDir: city, singleTenant: true, recover: true });
    expect(again.recovery).toBeUndefined();
    expect((await again.list()).map((r) => r.name)).toEqual(["x"]);
  });

  it("openSqliteStore: garbage bytes and damaged pages are recovered with `recover`; the bytes are kept aside", async () => {
    const city = await tempDir();
    await mkdir(join(city, ".gc"), { mode: 0o700 });
    const db = join(city, ".gc", "state.db");
    const garbage = Buffer.from(Array.from({ length: 8192 }, (_, i) => (i * 7919 + 13) % 256));
    await writeFile(db, garbage, { mode: 0o600 });
    const s = open({ cityDir: city, singleTenant: true, recover: true });
    expect(s.recovery?.reason).toMatch(/not a database/);
    expect(Buffer.compare(await readFile(s.recovery!.movedTo), garbage)).toBe(0);
    for (let i = 0; i < 200; i++)
      await s.create({ name: `s${i}`, agent: "w", provider: "fake", metadata: { pad: "x".repeat(500) } });
    await s.close();
    // Keep the header, scribble over the b-tree pages.
    const bytes = await readFile(db);
    for (let off = 4096; off < bytes.length; off += 97) bytes[off] = (bytes[off]! + 91) % 256;
    await writeFile(db, bytes);
    await rm(`${db}-wal`, { force: true });
    await rm(`${db}-shm`, { force: true });
    expectStoreError(() => openSqliteStore({ cityDir: city, singleTenant: true }), /damaged/);
    const r = open({ cityDir: city, singleTenant: true, recover: true });
    expect(r.recovery?.movedTo).toMatch(/state\.db\.corrupt-/);
    expect(await r.list()).toEqual([]);
  });

  it("openSqliteStore: four processes opening a new city at once share one database", {
    timeout: 120_000,
  }, async () => {
    const city = await tempDir();
    const db = join(city, ".gc", "state.db");
    await mkdir(join(city, ".gc"), { mode: 0o700 });
    const children = Array.from({ length: 4 }, () => spawnStoreChild(["open", db]));
    const said = await Promise.all(children.map((c) => c.next((m) => "opened" in m)));
    expect(said.map((m) => m.recovered)).toEqual(Array(4).fill(false));
    const s = open({ path: db, actor: "multi-proc" });
    expect(s.recovery).toBeUndefined();
    expect(
      (await readdir(join(city, ".gc"))).filter((f) => f.includes(".init-") || f.includes("corrupt")),
    ).toEqual([]);
  });

  it("openSqliteStore: a valid SQLite database with unrelated tables is refused, not modified", async () => {
    const dir = await tempDir();
    const path = join(dir, "state.db");
    const db = new Database(path);
    db.exec(
      "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO customers VALUES (1, 'ann');",
    );
    db.close();
    const before = await readFile(path);
    expectStoreError(
      () => openSqliteStore({ path, actor: "a" }),
      path,
      /not a gc state database/,
      /customers/,
    );
    const after = new Database(path, { readonly: true });
    onTestFinished(() => {
      after.close();
    });
    const tables = after.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all();
    expect(tables).toEqual(["customers"]);
    expect(before.length).toBeGreaterThan(0);
  });

  it("openSqliteStore: a gc-looking database without the application marker is refused", async () => {
    const dir = await tempDir();
    const path = join(dir, "state.db");
    const db = new Database(path);
    db.exec(
      "CREATE TABLE gc_meta (key TEXT PRIMARY KEY, value TEXT); CREATE TABLE gc_schema_version (version INTEGER);",
    );
    db.close();
    expectStoreError(() => openSqliteStore({ path, actor: "a" }), path, /application marker/);
  });

  it("openSqliteStore: a directory in place of the file gets a StoreError naming the path", async () => {
    const dir = await tempDir();
    const path = join(dir, "state.db");
    await mkdir(path);
    expectStoreError(() => openSqliteStore({ path, actor: "a" }), path);
  });

  it("openSqliteStore: the tenancy mismatch error names the path", async () => {
    const dir = await tempDir();
    const path = join(dir, "state.db");
    open({ path, singleTenant: true });
    expectStoreError(() => openSqliteStore({ path, actor: "a" }), path, /single-tenant/);
  });
});

describe("sqlite store: nothing secret or transient on disk", () => {
  it("replaced content is zeroed (secure_delete) and compact() leaves none of it in state.db or its WAL", async () => {
    const city = await tempDir();
    const s = open({ cityDir: city, actor: "a" });
    const OLD = "v1:0ld0ld0ld0ld0ld";
    const NEW = "v1:5eed5eed5eed5eed";
    const files = async () => {
      const dir = join(city, ".gc");
      const out: string[] = [];
      for (const f of await readdir(dir)) if ((await readFile(join(dir, f))).includes(OLD)) out.push(f);
      return out;
    };
    await s.create({
      name: "x",
      agent: "w",
      provider: "fake",
      breakdown: { command: { hash: OLD, value: "" } },
    });
    for (let v = 1; v <= 5; v++) await s.update("x", v, { coreHash: `${OLD}-${v}` });
    await s.update("x", 6, { coreHash: NEW, breakdown: { command: { hash: NEW, value: "" } } });
    expect((await s.get("x"))?.coreHash).toBe(NEW);
    expect(await files()).not.toEqual([]); // the old versions' page images, in the WAL at least
    await s.compact();
    expect(await files()).toEqual([]);
    expect(await s.get("x")).toMatchObject({ coreHash: NEW, version: 7 });
    // A reader in another connection holding the WAL: compact says it could not finish (and
    // is not taken for done); once the reader is gone, it does.
    await s.update("x", 7, { coreHash: `${NEW}-2` });
    await s.update("x", 8, { coreHash: OLD });
    await s.update("x", 9, { coreHash: NEW });
    const reader = new Database(join(city, ".gc", "state.db"), { readonly: true });
    reader.exec("BEGIN");
    reader.prepare("SELECT count(*) FROM sqlite_master").get();
    await expect(s.compact()).rejects.toMatchObject({
      code: "GC_STORE",
      message: expect.stringContaining("compaction"),
    });
    reader.exec("COMMIT");
    reader.close();
    await s.compact();
    expect(await files()).toEqual([]);
    const db = new Database(join(city, ".gc", "state.db"), { readonly: true });
    onTestFinished(() => {
      db.close();
    });
    expect(db.pragma("integrity_check", { simple: true })).toBe("ok");
  });

  it("state.db and state.db-wal bytes hold no secret values and no transient entries", async () => {
    const city = await tempDir();
    const s = open({ cityDir: city, actor: "a" });
    const SECRET = "s3cr3t-VALUE-7f1e";
    const TRANSIENT = "transient-NOTE-9c2d";
    const VISIBLE = "visible-MARKER-4b8a";
    await s.create({
      name: "x",
      agent: "w",
      provider: "fake",
      metadata: { GITHUB_TOKEN: SECRET, visible: VISIBLE, cmd: `env API_KEY=${SECRET} agent` },
      breakdown: { "env.DB_PASSWORD": { hash: "v1:0000000000000000", value: SECRET } },
    });
    await s.update("x", 1, {
      lastError: `boom: AWS_SECRET_ACCESS_KEY=${SECRET}`,
      pending: { action: "start", at: 1, generation: 1, detail: { auth_token: SECRET } },
      transition: { to: "starting", reason: `with SECRET=${SECRET}` },
    });
    await s.appendEvent({
      session: "x",
      type: "start",
      payload: { env: { OPENAI_API_KEY: SECRET }, argv: [`PASSWORD=${SECRET}`], note: VISIBLE },
    });
    await s.appendHistory(
      "x",
      [
        { kind: "prompt", data: { text: VISIBLE, credentials: SECRET } },
        { kind: "system", data: TRANSIENT, transient: true },
      ],
      0,
    );
    await s.checkpoint("x", [
      { kind: "prompt", data: { text: VISIBLE, credentials: SECRET } },
      { kind: "note", data: TRANSIENT, transient: true },
      { kind: "env", data: [`SLACK_TOKEN=${SECRET}`] },
    ]);
    const w = await s.createWait({
      session: "x",
      kind: "match",
      condition: { token: SECRET },
      note: VISIBLE,
    });
    await s.resolveWait(w.id, { api_key: SECRET });
    const db = join(city, ".gc", "state.db");
    const scan = () => {
      const bytes = [db, `${db}-wal`].filter(existsSync).map((p) => readFileSync(p));
      const all = Buffer.concat(bytes);
      return {
        secret: all.includes(SECRET),
        transient: all.includes(TRANSIENT),
        visible: all.includes(VISIBLE),
        walBytes: existsSync(`${db}-wal`) ? readFileSync(`${db}-wal`).length : 0,
      };
    };
    const live = scan();
    expect(live.walBytes, "the WAL holds the writes while the store is open").toBeGreaterThan(0);
    expect(live.visible, "the scan reads the real data").toBe(true);
    expect(live.secret).toBe(false);
    expect(live.transient).toBe(false);
    await s.close();
    const closed = scan();
    expect(closed.visible).toBe(true);
    expect(closed.secret).toBe(false);
    expect(closed.transient).toBe(false);
  });
});

// Real child processes on a shared 2-core machine: generous deadlines, no timing assertions.
describe("sqlite store: separate processes", { timeout: 180_000 }, () => {
  it("SIGKILL in the middle of writes leaves a database that opens consistent", async () => {
    const city = await tempDir();
    const path = join(city, "state.db");
    const setup = openSqliteStore({ path, actor: "multi-proc" });
    await setup.create({ name: "w", agent: "w", provider: "fake" });
    await setup.close();
    for (let round = 0; round < 3; round++) {
      const child = spawnStoreChild(["writer", path, "w"]);
      // Kill at a different point each round: after 1, 2, then 3 progress reports.
      for (let i = 0; i <= round; i++) await child.next((m) => "step" in m);
      child.proc.kill("SIGKILL");
      expect((await child.exited).signal).toBe("SIGKILL");

      const s = openSqliteStore({ path, actor: "multi-proc" });
      try {
        expect(s.integrityCheck()).toEqual(["ok"]);
        const rec = await s.get("w");
        expect(rec).toBeDefined();
        if (!rec) return;
        // The update is one transaction: count and version move together.
        expect(Number(rec.metadata.count)).toBe(rec.version - 1);
        // The tick event is the next transaction, so it lags by at most one.
        const [last] = await s.queryEvents({ session: "w", types: ["tick"], order: "desc", limit: 1 });
        const lastTick = Number(last?.payload.count);
        expect(lastTick === rec.version - 1 || lastTick === rec.version - 2).toBe(true);
        // A checkpoint replaces the whole history or nothing; an append adds whole entries.
        const kinds = (await s.readHistory("w")).map((e) => e.kind);
        const body = kinds.filter((k) => k !== "c");
        expect(body.length === 40 || body.length === 25 || body.length === 0).toBe(true);
        expect(new Set(body).size).toBeLessThanOrEqual(1);
        expect(kinds.length - body.length).toBeLessThanOrEqual(1);
        for (const [i, e] of (await s.readHistory("w")).entries()) expect(e.index).toBe(i);
        // Still writable.
        await s.update("w", rec.version, { metadata: { count: String(rec.version) } });
      } finally {
        await s.close();
      }
    }
  });

  it("tryLock: refuses while another process holds the lock, naming it; recovers once it is SIGKILLed", async () => {
    const dir = await tempDir();
    const path = join(dir, "state.db");
    const s = open({ path, actor: "multi-proc" });
    const child = spawnStoreChild(["lock", path, "s1", "gc run"]);
    const { locked } = await child.next((m) => "locked" in m);
    expect(locked).toBe(child.pid);
    let refused: unknown;
    try {
      await s.tryLock("s1", { purpose: "second gc run" });
    } catch (e) {
      refused = e;
    }
    expect(isGcError(refused, "GC_LOCKED")).toBe(true);
    expect((refused as Error).message).toMatch(new RegExp(`locked by pid ${child.pid} \\(gc run\\)`));
    expect((await s.lockHolder("s1"))?.pid).toBe(child.pid);
    // synchronize waits while the holder lives…
    let entered = false;
    const waiting = s.synchronize("s1", () => {
      entered = true;
    });
    await new Promise((r) => setTimeout(r, 50));
    expect(entered).toBe(false);
    // …and takes over once the holder is dead.
    child.proc.kill("SIGKILL");
    await child.exited;
    await waiting;
    expect(entered).toBe(true);
    const lock = await s.tryLock("s1");
    expect(lock.holder.pid).toBe(process.pid);
    await lock.release();
  });

  it("synchronize: two processes × 100 guarded read-modify-writes never overlap", async () => {
    const dir = await tempDir();
    const path = join(dir, "state.db");
    const s = open({ path, actor: "multi-proc" });
    await s.create({ name: "ctr", agent: "w", provider: "fake" });
    const kids = [
      spawnStoreChild(["sync", path, "ctr", "100"]),
      spawnStoreChild(["sync", path, "ctr", "100"]),
    ];
    for (const k of kids) await k.next((m) => "ready" in m);
    for (const k of kids) k.proc.stdin.write("go\n");
    const reports = await Promise.all(kids.map((k) => k.next((m) => "done" in m)));
    for (const k of kids) expect((await k.exited).code, k.stderr()).toBe(0);
    expect(reports.map((r) => r.stale)).toEqual([0, 0]);
    const rec = await s.get("ctr");
    expect(rec?.restarts).toBe(200);
    expect(rec?.version).toBe(201);
  });

  it("update: 4 processes × 500 compare-and-set increments end at exactly 2000", async () => {
    const dir = await tempDir();
    const path = join(dir, "state.db");
    const s = open({ path, actor: "multi-proc" });
    await s.create({ name: "ctr", agent: "w", provider: "fake", metadata: { count: "0" } });
    const kids = Array.from({ length: 4 }, () => spawnStoreChild(["cas", path, "ctr", "500"]));
    for (const k of kids) await k.next((m) => "ready" in m);
    for (const k of kids) k.proc.stdin.write("go\n");
    const reports = await Promise.all(kids.map((k) => k.next((m) => "done" in m)));
    for (const k of kids) expect((await k.exited).code, k.stderr()).toBe(0);
    expect(reports.map((r) => r.done)).toEqual([500, 500, 500, 500]);
    const rec = await s.get("ctr");
    expect(rec?.metadata.count).toBe("2000");
    expect(rec?.version).toBe(2001);
    // Report contention so a regression to "no real concurrency" is visible in the log.
    console.info(`CAS retries per process: ${reports.map((r) => r.retries).join(", ")}`);
  });
});
