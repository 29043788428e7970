/**
 * Which build the running controller is (docs/operating.md "Upgrading gc under a running
 * city"): the built gc against a temporary city with a real controller — started by this
 * build, by a copy of it with one file changed (another build id, as after an upgrade in
 * another checkout), and by a copy without a build id (a controller from before build ids).
 */
import { appendFileSync, cpSync, mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it, onTestFinished } from "vitest";
import { BUILD_ID_FILE, readBuildId, writeBuildId } from "../../internal/build/build-id.js";
import { pidAlive } from "../../internal/proc/kill.js";
import { makeCity, runGc, type TestCity, until } from "../support/city.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const DIST = join(ROOT, "dist");

interface StatusDoc {
  build: string | null;
  controller: { running: boolean; pid: number | null; build: string | null; buildMismatch: boolean };
}

/**
 * A copy of the build (dist/ only) inside the repository, so its imports of node_modules
 * resolve; removed after the test. Register before the city: finish hooks run in reverse, so
 * the city's controller is stopped first.
 */
function copyOfBuild(): { main: string; dist: string } {
  const dir = mkdtempSync(join(ROOT, ".build-copy-"));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const dist = join(dir, "dist");
  cpSync(DIST, dist, { recursive: true });
  return { main: join(dist, "cmd", "gc", "main.js"), dist };
}

async function statusJson(city: TestCity): Promise<StatusDoc> {
  const r = await city.gc(["status", "--json"]);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as StatusDoc;
}

/** Stops only the controller (the upgrade procedure's step 1) and waits until it is gone. */
async function stopController(city: TestCity): Promise<void> {
  const { pid } = (await statusJson(city)).controller;
  expect(pid).not.toBeNull();
  process.kill(pid!, "SIGTERM");
  await until("the controller gone", async () => !(await pidAlive(pid!)));
}

describe("gc status: the controller's build", () => {
  it("same build: no warning; a controller of a changed copy: both ids and what to do; one without an id: an older build (unknown)", async () => {
    const ours = readBuildId(DIST);
    expect(ours).toMatch(/^[0-9a-f]{12}$/);
    const copy = copyOfBuild();
    const city = makeCity("workspace:\n  name: @NAME@\nsession:\n  provider: subprocess\nagents: []\n");

    // Started by this build: its build, no mismatch, no warning.
    const started = await city.gc(["start"]);
    expect(started.code, started.stderr).toBe(0);
    let doc = await statusJson(city);
    expect(doc.build).toBe(ours);
    expect(doc.controller).toMatchObject({ running: true, build: ours, buildMismatch: false });
    let text = await city.gc(["status"]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain(`controller running (pid ${doc.controller.pid}, build ${ours})`);
    expect(text.stdout + text.stderr).not.toMatch(/restart the controller/);

    // A copy with one file changed, rebuilt's id: a genuinely different build runs the controller.
    appendFileSync(join(copy.dist, "cmd", "gc", "main.js"), "// another build\n");
    const theirs = writeBuildId(copy.dist);
    expect(theirs).not.toBe(ours);
    await stopController(city);
    const other = await runGc(["--city", city.dir, "start"], { gcBin: copy.main });
    expect(other.code, other.stderr).toBe(0);
    doc = await statusJson(city);
    const pid = doc.controller.pid;
    expect(doc.build).toBe(ours);
    expect(doc.controller).toMatchObject({ running: true, build: theirs, buildMismatch: true });
    text = await city.gc(["status"]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain(`controller running (pid ${pid}, build ${theirs})`);
    expect(text.stdout).toContain(
      `the controller runs build ${theirs}, this gc is build ${ours}: restart the controller to run this build ` +
        `(kill -TERM ${pid}, then gc start; sessions keep running — docs/operating.md "Upgrading gc under a running city")`,
    );
    // The same when gc status observes the city itself (--config: no snapshot from the controller).
    const self = await city.gc(["--config", join(city.dir, "city.yaml"), "status", "--json"]);
    expect(self.code, self.stderr).toBe(0);
    expect(JSON.parse(self.stdout)).toMatchObject({
      build: ours,
      controller: { running: true, pid, build: theirs, buildMismatch: true },
    });
    // gc start beside it keeps it (operating.md) and says it is another build.
    const again = await city.gc(["start"]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain(`controller already running (pid ${pid})`);
    expect(again.stdout).toContain(`the controller runs build ${theirs}, this gc is build ${ours}`);

    // A controller that records no build (one from before build ids).
    rmSync(join(copy.dist, BUILD_ID_FILE));
    await stopController(city);
    const older = await runGc(["--city", city.dir, "start"], { gcBin: copy.main });
    expect(older.code, older.stderr).toBe(0);
    doc = await statusJson(city);
    expect(doc.controller).toMatchObject({ running: true, build: null, buildMismatch: true });
    text = await city.gc(["status"]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain(`controller running (pid ${doc.controller.pid}, build unknown)`);
    expect(text.stdout).toContain(
      `the controller runs an older build (unknown), this gc is build ${ours}: restart`,
    );

    // The upgrade done: this build's controller again, no warning.
    await stopController(city);
    expect((await city.gc(["start"])).code).toBe(0);
    doc = await statusJson(city);
    expect(doc.controller).toMatchObject({ running: true, build: ours, buildMismatch: false });
  });
});
