/**
 * How the conformance suite grades an exec script on what its protocol level promises:
 * cases state the level they need, and session files are observed locally when the backend
 * is local (probed for a script without copy-from), or the cases that read them are skipped
 * with the reason when the script is remote and lacks copy-from.
 */
import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it, onTestFinished } from "vitest";
import { type ConformanceCase, runCase } from "../../../conformance/harness.js";
import { PROVIDER_CASES } from "../../../conformance/provider-cases.js";
import { createTarget as createExecTarget } from "../../../conformance/targets/exec.js";
import { createTarget as createFakeTarget } from "../../../conformance/targets/fake.js";

import { onPath } from "../../support/path.js";

const SCREEN_SCRIPT = fileURLToPath(
  new URL("../../../contrib/session-scripts/gc-session-screen", import.meta.url),
);

const caseById = (id: string): ConformanceCase => {
  const c = PROVIDER_CASES.find((x) => x.id === id);
  if (!c) throw new Error(`no case ${id}`);
  return c;
};

describe("conformance: protocol levels and observation", () => {
  it("a case needing v2 is skipped on a v1 target, with the reason", async () => {
    const fake = await createFakeTarget();
    const v2case = PROVIDER_CASES.filter((c) => c.protocol === 2).map((c) => c.id);
    expect(v2case.sort()).toEqual(["activity.moves", "runLive.no-restart"]);
    const r = await runCase(caseById("runLive.no-restart"), { ...fake, protocol: 1 });
    expect(r).toMatchObject({ status: "skipped", error: "requires exec protocol v2 (the script speaks v1)" });
    // Level 1 cases run at level 1.
    expect((await runCase(caseById("start.running"), { ...fake, protocol: 1 })).status).toBe("passed");
  });

  it("a target that cannot read session files skips the cases that read them, saying why", async () => {
    const fake = await createFakeTarget();
    const { readFile: _drop, ...noFiles } = fake;
    const r = await runCase(caseById("copyTo.file"), {
      ...noFiles,
      noFilesReason: "the backend is far away",
    });
    expect(r.status).toBe("skipped");
    expect(r.error).toBe("reads session files: the backend is far away");
  });

  it.skipIf(!onPath("screen") || !onPath("jq"))(
    "exec target: a local v1 script without copy-from is read locally; a remote-looking one skips with the reason",
    { timeout: 120_000 },
    async () => {
      const local = await createExecTarget(SCREEN_SCRIPT);
      onTestFinished(async () => {
        await local.cleanup?.();
      });
      expect(local.protocol).toBe(1);
      expect(local.readFile).toBeDefined();
      expect(local.pidAlive).toBeDefined();

      // The same script, but every session's work dir is elsewhere: as seen from here, remote.
      const dir = await mkdtemp(join(tmpdir(), "gc-remote-"));
      onTestFinished(() => rm(dir, { recursive: true, force: true }));
      const remote = join(dir, "remote-screen");
      await writeFile(
        remote,
        [
          "#!/usr/bin/env bash",
          'if [ "$1" = start ]; then',
          `  jq --arg d "${dir}/elsewhere" '.work_dir = $d' | ${SCREEN_SCRIPT} "$@"`,
          // biome-ignore lint/suspicious/noTemplateCurlyInString: bash text
          '  exit "${PIPESTATUS[1]}"',
          "fi",
          `exec ${SCREEN_SCRIPT} "$@"`,
          "",
        ].join("\n"),
      );
      await chmod(remote, 0o755);
      const far = await createExecTarget(remote);
      onTestFinished(async () => {
        await far.cleanup?.();
      });
      expect(far.readFile).toBeUndefined();
      const r = await runCase(caseById("start.env-workdir"), far);
      expect(r.status).toBe("skipped");
      expect(r.error).toMatch(/lacks copy-from/);
    },
  );
});
