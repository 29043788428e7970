/**
 * Reading a tmux pane's text: the capture flags and the trimming used by the one pane
 * module (tmux/pane.ts) for every provider, and the one-line tail of a program's last
 * words. Pure.
 */

/**
 * `capture-pane` flags (after the command name, before `-t`) for the last `lines` lines of
 * history, wrapped lines joined (`lines <= 0` = all history), with colours and attributes
 * kept as SGR escape sequences when `styled` (`-e`).
 */
export function captureFlags(lines: number, styled: boolean): string[] {
  return ["-p", "-J", ...(styled ? ["-e"] : []), "-S", lines > 0 ? String(-Math.floor(lines)) : "-"];
}

/** Captured pane output as peek returns it: rows right-trimmed, trailing blank rows dropped, the last `lines` kept (all when `<= 0`). */
export function paneText(stdout: string, lines: number): string {
  const rows = stdout
    .replace(/\n$/, "")
    .split("\n")
    .map((l) => l.trimEnd());
  while (rows.length > 0 && rows[rows.length - 1] === "") rows.pop();
  return (lines > 0 ? rows.slice(-Math.floor(lines)) : rows).join("\n");
}

/**
 * The last words of a program for a one-line report: the last `max` non-blank lines of
 * `screen` (tmux's own "Pane is dead …" line left out) joined by ` ⏎ `, at most 400
 * characters; "" when nothing is left. Pure.
 */
export function outputTail(screen: string, max = 6): string {
  return screen
    .split("\n")
    .filter((l) => l.trim() !== "" && !/^Pane is dead/.test(l))
    .slice(-max)
    .join(" ⏎ ")
    .slice(0, 400);
}
