/**
 * The session programs and texts the provider conformance cases run and send (POSIX sh, so
 * they run in minimal containers too): data shared by the case groups in this folder.
 */

/** A program that runs until stopped and is named `sleep`. */
export const LONG = "exec sleep 300";
/** Reads its terminal line by line into `nudge.out`. */
export const READER = "exec cat > nudge.out";
/**
 * Asks for bracketed paste, then appends each line it reads (a canonical-mode tty: one read
 * per Enter) to nudge.out, so where the paste brackets fall shows how a nudge was typed.
 */
export const LINE_READER = `printf '\\033[?2004h'; while printf '> '; IFS= read -r l; do printf '%s\\n' "$l" >> nudge.out; done`;
/** Writes its pid, then becomes `sleep` (same pid). */
export const PID_LONG = "echo $$ > pid.out; exec sleep 300";
/**
 * `sh -c EXEC_TREE gc-tree FILE [stubborn]`: starts a child `sleep`, writes its own pid and
 * the child's to FILE, and waits. With `stubborn` both ignore SIGTERM, so only SIGKILL ends them.
 */
export const EXEC_TREE = `[ "$2" = stubborn ] && trap '' TERM; sleep 1000 & echo "$$ $!" > "$1"; wait`;
/**
 * `sh -c EXEC_PRINT gc-print OUT ERR FILE`: prints OUT on stdout and ERR on stderr, then
 * creates FILE and runs until killed.
 */
export const EXEC_PRINT = `printf '%s' "$1"; printf '%s' "$2" >&2; : > "$3"; exec sleep 1000`;
/** What {@link EXEC_PRINT} prints before it is cut: quotes, `$(…)`, backquotes, unicode, lines. */
export const CUT_OUT = "out: a'b\"c $(touch pwned) `id` ; | & ü ✓ 日本\nsecond line\n";
export const CUT_ERR = "err: $HOME \\ 🙂 no newline";
/** `sh -c EXEC_ALIVE gc-alive PID…`: exit 0 when one of the pids is a live (not zombie) process, else 1. */
export const EXEC_ALIVE =
  // biome-ignore lint/suspicious/noTemplateCurlyInString: POSIX sh parameter expansion
  'for p; do s=$(cat "/proc/$p/stat" 2>/dev/null) || continue; case "${s##*) }" in Z*) continue;; esac; exit 0; done; exit 1';
/** Records SIGINTs and keeps running; writes `armed.out` once its trap is set. */
export const INT_TRAP = "trap 'echo INT >> int.out' INT; echo armed > armed.out; while :; do sleep 1; done";
/**
 * A full-screen program's way with keys: the terminal in raw mode (no signals from the line
 * discipline), `armed.out` written, then the first byte typed saved to `key.out`.
 */
export const RAW_KEYS =
  "stty raw -echo; echo armed > armed.out; dd bs=1 count=1 2>/dev/null > key.out; exec sleep 300";
/** Runs until its first SIGINT, then exits 0 by itself; writes `armed.out` once its trap is set. */
export const EXIT_ON_INT = "trap 'exit 0' INT; echo armed > armed.out; while :; do sleep 1; done";

export const BIG_LINE = "0123456789abcdefghijklmnopqrstuvwxyz-ABCDEFGHIJKLMNOPQRSTUVWXYZ_αβγδ".repeat(14);
export const BIG_TEXT = Array.from({ length: 100 }, (_, i) =>
  `${String(i).padStart(3, "0")} ${BIG_LINE}`.slice(0, 1000),
).join("\n");

/** Hostile and awkward nudge texts: each must arrive byte for byte. */
export const NUDGE_TEXTS: readonly (readonly [string, string])[] = [
  ["plain", "hello from gc"],
  ["unicode", "héllo wörld — 日本語 🦀 e\u0301 \u{1F600}"],
  ["quotes", `it's "quoted" and \`backticked\``],
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the literal text is the point
  ["shell", "a; b && c | d > e $(touch pwned) `touch pwned2` $HOME ${PATH}"],
  ["backslash", "C:\\path\\to\\file \\n \\t \\\\ end\\"],
  ["tmux-format", "#{session_name} #(touch pwned3) ## #[fg=red] %1"],
  ["key-words", "C-c Enter Escape C-d Up"],
  ["multiline", "line one\nline two\n\n  line four"],
  ["100k", BIG_TEXT],
];

export const INVALID_NAMES = [
  "",
  "a b",
  "a;b",
  "$(x)",
  "-rf",
  "a:b",
  "../x",
  "x\ny",
  "é",
  "a'b",
  "x".repeat(200),
];

export const HOSTILE_META = [
  "line1\nline2\n",
  `quotes ' " \` and ; && | $(rm -rf /) #{session_name}`,
  "ünïcödé 🦀 \u{10FFFF}",
  "\t tabs and trailing spaces   ",
  "x".repeat(4096),
];
