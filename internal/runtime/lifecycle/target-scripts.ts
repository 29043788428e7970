// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these strings are POSIX sh, whose ${…} is the shell's
/**
 * POSIX sh programs gc runs inside a remote target (a pod, a container) over the target's exec
 * API — for a start, and around `execCommand` — the one copy every remote backend uses. User values reach them only as positional
 * arguments or on stdin, never inside the script text. Pure constants.
 */

/**
 * `sh -c RUN_STDIN gc-script DIR` with a script on stdin (`session_setup_script`): keeps it
 * in a private temp file, runs it in DIR through its shebang (by `/bin/sh` when it cannot be
 * executed directly, exit 126), removes it and exits with its status. DIR is created when
 * missing; 127 when it is unusable, 125 when the temp file cannot be written.
 */
export const RUN_STDIN = [
  'f=$(mktemp "${TMPDIR:-/tmp}/gc-script.XXXXXX") || exit 125',
  'cat > "$f" && chmod 700 "$f" || { rm -f "$f"; exit 125; }',
  'mkdir -p "$1" 2>/dev/null; cd "$1" || { rm -f "$f"; exit 127; }',
  '"$f"; r=$?',
  '[ "$r" -eq 126 ] && { /bin/sh "$f"; r=$?; }',
  'rm -f "$f"',
  'exit "$r"',
].join("\n");

/**
 * `sh -c RUN_GROUP gc-exec DIR ID ARGV…`: runs ARGV in a process group of its own (a new
 * session, by `setsid`) with this stdin, stdout and stderr, and exits with its status. While
 * it runs, the group's id is in `DIR/gc-exec-ID.pgid` (DIR empty: `${TMPDIR:-/tmp}` of the
 * target), where {@link KILL_GROUP} finds it; the file is removed when ARGV ends. ARGV runs in
 * the foreground (a background job of a non-interactive shell would start with SIGINT and
 * SIGQUIT ignored): `setsid`, not a group leader here, makes the new session without forking,
 * and the shell it runs records its own pid (the group's id) before it execs ARGV. Without a
 * `setsid` program ARGV runs in this shell's group, recorded only when this shell leads it (as
 * an exec started by a container runtime does); otherwise nothing can be killed.
 */
export const RUN_GROUP = [
  'f="${1:-${TMPDIR:-/tmp}}/gc-exec-$2.pgid"; shift 2',
  "if command -v setsid >/dev/null 2>&1; then",
  `  setsid /bin/sh -c 'echo "$$" > "$1" 2>/dev/null; shift; exec "$@"' gc-group "$f" "$@"; r=$?`,
  "else",
  '  read -r l 2>/dev/null < "/proc/$$/stat"; l=${l##*) }; l=${l#* }; l=${l#* }',
  '  [ "${l%% *}" = "$$" ] && echo "$$" > "$f" 2>/dev/null',
  '  "$@"; r=$?',
  "fi",
  'rm -f "$f"',
  'exit "$r"',
].join("\n");

/**
 * `sh -c KILL_GROUP gc-kill DIR ID TICKS`: kills what {@link RUN_GROUP} with the same DIR and
 * ID runs — SIGTERM to its process group, a wait until the group has no live (non-zombie)
 * process or TICKS × 0.1 s have passed, SIGKILL to the group — and removes its file. Waits up to a second for
 * the file to appear (a command still starting); when it does not, the command has ended (or
 * never started) and nothing is done. Always exits 0.
 */
export const KILL_GROUP = [
  'f="${1:-${TMPDIR:-/tmp}}/gc-exec-$2.pgid"; n=$3; i=0',
  "while :; do",
  '  g=; [ -r "$f" ] && read -r g 2>/dev/null < "$f"',
  '  case "$g" in ""|0|1|*[!0-9]*) ;; *) break;; esac',
  '  i=$((i+1)); [ "$i" -gt 10 ] && exit 0',
  "  sleep 0.1",
  "done",
  "alive() {",
  "  for s in /proc/[0-9]*/stat; do",
  '    read -r l 2>/dev/null < "$s" || continue',
  "    l=${l##*) }",
  '    case "$l" in Z*) continue;; esac',
  "    l=${l#* }; l=${l#* }",
  '    [ "${l%% *}" = "$g" ] && return 0',
  "  done",
  "  return 1",
  "}",
  'kill -s TERM -- "-$g" 2>/dev/null',
  "i=0",
  'while alive && [ "$i" -lt "$n" ]; do i=$((i+1)); sleep 0.1; done',
  'kill -s KILL -- "-$g" 2>/dev/null',
  'rm -f "$f"',
  "exit 0",
].join("\n");
