import { existsSync, mkdirSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { bindInSocketDir, isShortSocketDir, releaseSocketDir } from "../../internal/runtime/socket-dir.js";

/** A short socket directory of this test's own (a hash no state dir has). */
function shortDir(): string {
  const uid = typeof process.getuid === "function" ? process.getuid() : 0;
  const hex = Math.floor(Math.random() * 2 ** 48)
    .toString(16)
    .padStart(12, "0");
  const dir = `/tmp/gc-${uid}-${hex}`;
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

describe("short socket directories under /tmp", () => {
  it("isShortSocketDir: only /tmp/gc-<uid>-<12 hex>", () => {
    expect(isShortSocketDir("/tmp/gc-0-0123456789ab")).toBe(true);
    expect(isShortSocketDir("/tmp/gc-1000-0123456789ab")).toBe(true);
    expect(isShortSocketDir("/tmp/gc-0-0123456789ab/x")).toBe(false);
    expect(isShortSocketDir("/tmp/gc-0-0123456789")).toBe(false);
    expect(isShortSocketDir("/var/tmp/gc-0-0123456789ab")).toBe(false);
    expect(isShortSocketDir("/home/u/city/.gc")).toBe(false);
  });

  it("releaseSocketDir removes an empty short directory only, never one holding a socket or another directory", async () => {
    const dir = shortDir();
    mkdirSync(dir, { mode: 0o700 });
    const live = createServer();
    await new Promise<void>((r) => live.listen(join(dir, "b.sock"), () => r()));
    releaseSocketDir(join(dir, "a.sock")); // a.sock was unlinked; b.sock is still served
    expect(existsSync(join(dir, "b.sock"))).toBe(true);
    await new Promise<void>((r) => live.close(() => r()));
    releaseSocketDir(join(dir, "b.sock"));
    expect(existsSync(dir)).toBe(false);
    releaseSocketDir(join(dir, "b.sock")); // already gone: no error

    const root = await mkdtemp(join(tmpdir(), "gc-sockdir-"));
    onTestFinished(() => rm(root, { recursive: true, force: true }));
    releaseSocketDir(join(root, "controller.sock")); // a state dir: never removed, even empty
    expect(existsSync(root)).toBe(true);
  });

  it("bindInSocketDir: a bind that lost its directory to a release makes it again and binds", async () => {
    const dir = shortDir();
    const path = join(dir, "c.sock");
    const server = createServer();
    onTestFinished(() => new Promise<void>((r) => server.close(() => r())));
    const made: string[] = [];
    // The directory was made, then released by another process before this bind.
    await bindInSocketDir(
      path,
      () =>
        new Promise<void>((resolve, reject) => {
          server.once("error", reject);
          server.listen(path, () => resolve());
        }),
      (d) => {
        made.push(d);
        mkdirSync(d, { recursive: true, mode: 0o700 });
      },
    );
    expect(made).toEqual([dir]);
    expect(existsSync(path)).toBe(true);
  });

  it("bindInSocketDir: other errors, a missing directory that is not a short one, and EACCES in an existing one are thrown at once", async () => {
    const enoent = Object.assign(new Error("listen EACCES"), { code: "EACCES" });
    let binds = 0;
    const bind = async () => {
      binds++;
      throw enoent;
    };
    await expect(bindInSocketDir("/no/such/dir/x.sock", bind, () => undefined)).rejects.toBe(enoent);
    expect(binds).toBe(1);
    const present = shortDir();
    mkdirSync(present, { mode: 0o700 });
    binds = 0;
    await expect(bindInSocketDir(join(present, "x.sock"), bind, () => undefined)).rejects.toBe(enoent);
    expect(binds).toBe(1);
    const busy = Object.assign(new Error("listen EADDRINUSE"), { code: "EADDRINUSE" });
    await expect(
      bindInSocketDir(
        join(shortDir(), "x.sock"),
        async () => {
          throw busy;
        },
        () => undefined,
      ),
    ).rejects.toBe(busy);
    // A directory that keeps vanishing: given up after a few attempts.
    binds = 0;
    await expect(bindInSocketDir(join(shortDir(), "x.sock"), bind, () => undefined)).rejects.toBe(enoent);
    expect(binds).toBe(5);
  });
});
