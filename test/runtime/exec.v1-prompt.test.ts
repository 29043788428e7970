/**
 * Acceptance for protocol v1 exec scripts: `gc start` of an agent with a hostile multi-line
 * prompt on the v1-only reference script (contrib/session-scripts/gc-session-screen) — the
 * prompt reaches the program's argv byte for byte (read back from /proc/<pid>/cmdline),
 * although a v1 script knows no `prompt` key. Needs GNU screen, jq and python3.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { makeCity, until } from "../support/city.js";
import { onPath } from "../support/path.js";

const SCRIPT = fileURLToPath(new URL("../../contrib/session-scripts/gc-session-screen", import.meta.url));

/** Quotes, substitutions, tmux formats, backslashes, Unicode, blank and indented lines. */
const PROMPT = [
  `Line one with 'single' and "double" quotes; it's fine`,
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the literal text is the point
  "$(touch pwned) `touch pwned2` ${HOME} $HOME $1 $@ && rm -rf / ; | > <",
  "#{session_name} #(touch pwned3) ## #[fg=red] %1",
  "Ünïcödé — 日本語 🦀 e\u0301 \u{1F600}",
  "\\back\\slash\\ \\n \\t and a trailing space ",
  "",
  "\tindented last line",
].join("\n");

describe.skipIf(!onPath("screen") || !onPath("jq") || !onPath("python3"))(
  "exec v1 script: the initial prompt reaches the program",
  { timeout: 180_000 },
  () => {
    it("gc start: a hostile multi-line prompt arrives byte-exact in the program's argv", async () => {
      const city = makeCity(`
workspace: { name: "@NAME@" }
session:
  provider: exec:${SCRIPT}
agents:
  - name: argv
    work_dir: ./w
    prompt_template: ./prompt.txt
    prompt_mode: argument
    start_command: >-
      exec python3 -c 'import os, time; open("pid.out", "w").write(str(os.getpid())); time.sleep(300)'
`);
      writeFileSync(join(city.dir, "prompt.txt"), PROMPT);
      const r = await city.gc(["start", "--once"]);
      expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
      const pidFile = join(city.dir, "w", "pid.out");
      const pid = await until(
        "the program's pid",
        () => existsSync(pidFile) && readFileSync(pidFile, "utf8"),
      );
      const argv = readFileSync(`/proc/${pid}/cmdline`).toString("utf8").split("\0").slice(0, -1);
      // python3 -c CODE <prompt>: the prompt is the last argument, exactly one argument.
      expect(argv[0], JSON.stringify(argv)).toMatch(/(^|\/)python3$/);
      expect(argv[1]).toBe("-c");
      expect(argv).toHaveLength(4);
      const prompt = argv[3]!;
      // gc prefixes the beacon line ("[city] session • time") and a blank line.
      const beacon = prompt.slice(0, prompt.indexOf("\n\n"));
      expect(beacon).toMatch(
        new RegExp(`^\\[${city.name}\\] argv • \\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d$`),
      );
      expect(prompt).toBe(`${beacon}\n\n${PROMPT}`);
      for (const f of ["pwned", "pwned2", "pwned3"]) {
        expect(existsSync(join(city.dir, "w", f)), f).toBe(false);
        expect(existsSync(join(city.dir, f)), f).toBe(false);
      }
      const stop = await city.gc(["stop"]);
      expect(stop.code, `${stop.stdout}\n${stop.stderr}`).toBe(0);
      await until("the program to exit", () => !existsSync(`/proc/${pid}`));
    });
  },
);
