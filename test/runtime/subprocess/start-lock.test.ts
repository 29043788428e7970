/**
 * Start locks (subprocess/start-lock.ts): each a hard link to the taking process's owner file
 * in the lock directory, so a lock appears with its owner written; owner files are removed
 * when their process exits, and those of killed processes are swept by the next process.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { lockOwner, tryLock } from "../../../internal/runtime/subprocess/start-lock.js";
import { until } from "./helpers.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempRoot(): string {
  const d = mkdtempSync(join(tmpdir(), "gc-lock-"));
  dirs.push(d);
  return join(d, "subprocess");
}

const ownerFiles = (dir: string) => readdirSync(dir).filter((f) => f.startsWith(".owner-"));

/** A pid that no process has now: one of a process that has exited. */
function deadPid(): number {
  const r = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], {
    encoding: "utf8",
  });
  return Number(r.stdout);
}

describe("start locks", () => {
  it("a lock is a link to this process's owner file: taken once, refused while held, free after release", async () => {
    const root = tempRoot();
    const locks = join(root, "locks");
    const a = join(locks, "a.lock");
    const release = await tryLock(root, a);
    expect(release).toBeDefined();
    expect(readFileSync(a, "utf8")).toMatch(new RegExp(`^${process.pid} \\d+\\n$`));
    const [owner] = ownerFiles(locks);
    expect(owner).toBeDefined();
    expect(statSync(a).ino).toBe(statSync(join(locks, owner!)).ino);
    expect(await lockOwner(a)).toBe("live");
    expect(await tryLock(root, a)).toBeUndefined();
    // Another name: another link to the same owner file.
    const releaseB = await tryLock(root, join(locks, "b.lock"));
    expect(ownerFiles(locks)).toEqual([owner]);
    await release!();
    await releaseB!();
    expect(readdirSync(locks)).toEqual([owner]);
    expect(await lockOwner(a)).toBe("none");
    await (await tryLock(root, a))!();
  });

  it("the lock directory (or the owner file) removed since: the next lock makes them again", async () => {
    const root = tempRoot();
    const a = join(root, "locks", "a.lock");
    await (await tryLock(root, a))!();
    rmSync(join(root, "locks"), { recursive: true, force: true });
    const release = await tryLock(root, a);
    expect(release).toBeDefined();
    await release!();
    for (const f of ownerFiles(join(root, "locks"))) rmSync(join(root, "locks", f));
    const again = await tryLock(root, a);
    expect(again).toBeDefined();
    expect(ownerFiles(join(root, "locks"))).toHaveLength(1);
    await again!();
  });

  it("a process's owner files go when it exits; a killed one's are swept by the next process", async () => {
    const root = tempRoot();
    const locks = join(root, "locks");
    // A process that takes a lock and exits holding it: its owner file is gone, the lock stays
    // (with its owner written) and is stale.
    const moduleUrl = pathToFileURL(
      join(import.meta.dirname, "../../../dist/internal/runtime/subprocess/start-lock.js"),
    ).href;
    const child = spawnSync(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        `const { tryLock } = await import(${JSON.stringify(moduleUrl)}); process.exitCode = (await tryLock(${JSON.stringify(root)}, ${JSON.stringify(join(locks, "c.lock"))})) ? 0 : 1;`,
      ],
      { encoding: "utf8" },
    );
    expect(child.stderr).toBe("");
    expect(child.status).toBe(0);
    expect(ownerFiles(locks)).toEqual([]);
    expect(await lockOwner(join(locks, "c.lock"))).toBe("stale");
    // A killed process's owner file: swept when this process makes its own there.
    const left = join(locks, `.owner-${deadPid()}-x`);
    writeFileSync(left, "1 1\n");
    const release = await tryLock(root, join(locks, "c.lock")); // takes the stale lock over
    expect(release).toBeDefined();
    await until("the dead process's owner file swept", () => ownerFiles(locks).length === 1);
    expect(ownerFiles(locks)[0]).toMatch(new RegExp(`^\\.owner-${process.pid}-`));
    await release!();
  });
});
