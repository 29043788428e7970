/**
 * POSIX sh programs a start runs inside its target (a pod, a container) over the target's exec
 * API — the one copy every remote backend uses. User values reach them only as positional
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
