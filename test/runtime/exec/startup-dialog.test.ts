/**
 * Startup dialogs on exec scripts with a screen (`peek` + `send-keys`), answered by the shared
 * dialog code in the one start lifecycle. An exec script's `peek` returns scrollback too (the
 * reference tmux script's `capture-pane -S -`), so the frames the dialog drew — pushed into
 * history each time the program clears its screen — are still in what gc reads after the
 * answer. The start must still finish: the dialog answered with its accept option, the
 * ready prompt reached, the session running.
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it, onTestFinished } from "vitest";
import { onPath } from "../../support/path.js";
import { fakeAgent } from "../tmux/helpers.js";
import { TMUX_SCRIPT, testProvider } from "./mock.js";

const SCREEN_SCRIPT = fileURLToPath(
  new URL("../../../contrib/session-scripts/gc-session-screen", import.meta.url),
);

const SCRIPTS = [
  // GNU screen's hardcopy writes one byte per cell: a non-ASCII cursor would read as "?".
  { label: "gc-session-tmux", script: TMUX_SCRIPT, needs: "tmux", cursor: "❯" },
  { label: "gc-session-screen", script: SCREEN_SCRIPT, needs: "screen", cursor: ">" },
] as const;

describe.each(SCRIPTS)("exec provider over $label: startup dialogs", ({ script, needs, cursor }) => {
  it.skipIf(!onPath(needs) || !onPath("jq"))(
    "a trust dialog with 'No, exit' pre-selected is answered with accept and the start reaches the ready prompt",
    async () => {
      const t = await testProvider({ script });
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
        env: { FAKE_AGENT_CURSOR: cursor },
        readyPromptPrefix: "READY> ",
      });
      // Answered once, with the accept option (the fake agent exits on "No, exit").
      expect(await readFile(join(work, "chosen.txt"), "utf8")).toBe("Yes, proceed\n");
      expect(await t.provider.isRunning("trust")).toBe(true);
      // What gc read after the answer: the dialog's frames still in the scrollback, above the prompt.
      const lines = (await t.provider.peek("trust", 60)).split("\n");
      expect(lines.at(-1)?.trimEnd()).toBe("READY>");
      expect(
        lines.findLastIndex((l) => l.trimEnd() === "Do you trust the files in this folder?"),
      ).toBeGreaterThanOrEqual(0);
    },
  );
});
