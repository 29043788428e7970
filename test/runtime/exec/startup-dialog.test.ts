/**
 * Startup dialogs on an exec script with a screen (`peek` + `send-keys`): the reference tmux
 * script's `peek` returns scrollback too, so the answered dialog's old frame (pushed into
 * history when the program clears its screen) is still in what gc reads. The start must
 * still finish: the dialog answered with its accept option, the ready prompt reached.
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { onPath } from "../../support/path.js";
import { fakeAgent } from "../tmux/helpers.js";
import { TMUX_SCRIPT, testProvider } from "./mock.js";

describe.skipIf(!onPath("tmux") || !onPath("jq"))(
  "exec provider: startup dialogs through gc-session-tmux",
  () => {
    it("a trust dialog with 'No, exit' pre-selected is answered with accept and the start reaches the ready prompt", async () => {
      const t = await testProvider({ script: TMUX_SCRIPT });
      const work = await mkdtemp(join(tmpdir(), "gc-exec-dialog-"));
      onTestFinished(async () => {
        await t.provider.stop("trust").catch(() => undefined);
        await rm(work, { recursive: true, force: true });
        await t.cleanup();
      });
      await t.provider.start("trust", {
        command: fakeAgent(
          "menu",
          "chosen.txt",
          "1",
          "Do you trust the files in this folder?",
          "Yes, proceed",
          "No, exit",
        ),
        workDir: work,
        env: {},
        readyPromptPrefix: "READY> ",
      });
      expect(await readFile(join(work, "chosen.txt"), "utf8")).toBe("Yes, proceed\n");
      expect(await t.provider.isRunning("trust")).toBe(true);
      // What gc read: the answered frames are still in the scrollback `peek` returns, above the prompt.
      const screen = await t.provider.peek("trust", 60);
      expect(screen).toContain("Do you trust the files in this folder?");
      expect(screen.split("\n").at(-1)?.trimEnd()).toBe("READY>");
    });
  },
);
