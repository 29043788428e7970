/**
 * A city's stored identity (runtime/identity.ts): a new city gets a random id, even when
 * `gc start` launched its controller (which made `.gc` and its log) before the file was read;
 * a city that ran before identities existed (a state database in `.gc`) gets the hash of its path.
 */
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { cityIdentity, RAN_BEFORE_FILE } from "../../internal/runtime/identity.js";
import { STATE_DB_FILE } from "../../internal/session/sqlite-store.js";

describe("cityIdentity", () => {
  const dirs: string[] = [];
  const city = (gcFiles: string[]) => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), "gc-identity-")));
    dirs.push(dir);
    if (gcFiles.length > 0) mkdirSync(join(dir, ".gc"), { mode: 0o700 });
    for (const f of gcFiles) writeFileSync(join(dir, ".gc", f), "");
    return dir;
  };
  const pathHash = (dir: string) => createHash("sha256").update(dir).digest("hex");
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it("names the session store's database", () => {
    expect(RAN_BEFORE_FILE).toBe(STATE_DB_FILE);
  });

  it.each([
    ["no .gc", []],
    ["a .gc holding only the controller's log", ["controller.log"]],
  ])("a new city (%s) gets a random id, stored once", (_, files) => {
    const dir = city(files);
    const id = cityIdentity(dir, "town");
    expect(id.name).toBe("town");
    expect(pathHash(dir).startsWith(id.id)).toBe(false);
    expect(cityIdentity(dir, "renamed")).toEqual(id);
  });

  it("a city that ran before identities (a state database) gets the hash of its real path", () => {
    const dir = city([RAN_BEFORE_FILE]);
    const id = cityIdentity(dir, "town");
    expect(pathHash(dir).startsWith(id.id)).toBe(true);
  });
});
