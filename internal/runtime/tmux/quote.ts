/**
 * The only way a tmux command line is built from values: {@link commandLine} quotes every
 * argument with {@link quoteArg}, following tmux's own parser rules (double quotes, `\`
 * escapes, octal for control bytes, `~` and `$` neutralised). Also the reversible mapping
 * between gc session names and tmux session names, and the hex codec for stored values.
 */

/** Tokens made only of these characters are passed unquoted (tmux gives none of them a meaning). */
const SAFE_TOKEN = /^[A-Za-z0-9_@%+=:,./-]+$/;
/** Arguments whose quoted form only escapes {@link BACKSLASHED} characters. */
const PLAIN_QUOTABLE = /^[^\x00-\x1f\x7f~\ud800-\udfff]*$/;
const BACKSLASHED = /["\\$]/g;

/**
 * Quotes one argument for a tmux command line so tmux's parser yields exactly `arg`:
 * no command separator (`;`), no comment (`#`), no `$VAR`/`~` expansion, no line break
 * (control bytes become octal escapes). Non-ASCII is passed as UTF-8. A lone UTF-16
 * surrogate becomes U+FFFD (it has no UTF-8 form). Quoting protects the command line
 * only: arguments that tmux itself format-expands (`-F`, `-c`, display-message text,
 * `if-shell -F`) must never carry user text, whatever the quoting.
 * @throws TypeError when `arg` contains NUL, which no tmux string can hold.
 */
export function quoteArg(arg: string): string {
  if (SAFE_TOKEN.test(arg)) return arg;
  // The common case (no control byte, `~`, NUL or surrogate): only `"`, `\` and `$` need a
  // backslash, exactly as in the loop below.
  if (PLAIN_QUOTABLE.test(arg)) return `"${arg.replace(BACKSLASHED, "\\$&")}"`;
  let out = '"';
  for (const ch of arg) {
    const cp = ch.codePointAt(0)!;
    if (cp === 0) throw new TypeError("a tmux argument cannot contain NUL");
    if (ch === '"' || ch === "\\" || ch === "$") out += `\\${ch}`;
    else if (ch === "~")
      out += "\\176"; // "~/x" would be expanded to $HOME/x even inside quotes
    else if (cp < 0x20 || cp === 0x7f) out += `\\${cp.toString(8).padStart(3, "0")}`;
    else if (cp >= 0xd800 && cp <= 0xdfff) out += "\uFFFD";
    else out += ch;
  }
  return `${out}"`;
}

/**
 * One tmux command line (no trailing newline) from a command name and its arguments.
 * The result never contains a line break or an unquoted `;`, so it is exactly one command.
 * @throws TypeError for an empty argv, a command name that is not a plain word, or NUL.
 */
export function commandLine(argv: readonly string[]): string {
  const cmd = argv[0];
  if (!cmd || !COMMAND_NAME.test(cmd)) throw new TypeError(`not a tmux command name: ${JSON.stringify(cmd)}`);
  // Built in one pass: a command list of 100 captures is 600 arguments.
  let line = cmd;
  for (let i = 1; i < argv.length; i++) line += ` ${quoteArg(argv[i]!)}`;
  return line;
}

/** A tmux command name: a plain lowercase word. */
const COMMAND_NAME = /^[a-z][a-z-]*$/;

/**
 * One tmux command *list* line: each command quoted by {@link commandLine}, joined by a
 * lone `;` (tmux's separator; {@link quoteArg} never yields an unquoted one).
 * @throws TypeError as {@link commandLine}, or for an empty list.
 */
export function commandListLine(argvs: readonly (readonly string[])[]): string {
  if (argvs.length === 0) throw new TypeError("an empty tmux command list");
  let line = commandLine(argvs[0]!);
  for (let i = 1; i < argvs.length; i++) line += ` ; ${commandLine(argvs[i]!)}`;
  return line;
}

/**
 * tmux replaces `.` and `:` in session names with `_`, which would make `a.b` and `a_b`
 * collide. gc names never contain `+`, so `.` ↔ `+` is a reversible mapping that keeps
 * ordinary names unchanged. Pure; expects a validated gc name.
 */
export function tmuxSessionName(name: string): string {
  return name.replaceAll(".", "+");
}

/**
 * The tmux target of exactly the session of gc name `name`, valid wherever tmux takes a
 * session, window or pane target: `=NAME:`. The trailing colon matters: without it a window
 * or pane target (`list-panes -t`, `capture-pane -t`, `send-keys -t`) is first read as a
 * window, then as a session name *prefix*, so `=w-2` reaches `w-20` when `w-2` does not
 * exist. Pure; expects a validated gc name.
 */
export function sessionTarget(name: string): string {
  return `=${tmuxSessionName(name)}:`;
}

/** Inverse of {@link tmuxSessionName}. Pure. */
export function gcSessionName(tmuxName: string): string {
  return tmuxName.replaceAll("+", ".");
}

/** Hex of the UTF-8 bytes of `s` (what gc stores in tmux user options). Pure. */
export function toHex(s: string): string {
  return Buffer.from(s, "utf8").toString("hex");
}

/** Inverse of {@link toHex}; `undefined` for text that is not even-length lowercase hex. Pure. */
export function fromHex(hex: string): string | undefined {
  if (hex.length % 2 !== 0 || !/^[0-9a-f]*$/.test(hex)) return undefined;
  return Buffer.from(hex, "hex").toString("utf8");
}
