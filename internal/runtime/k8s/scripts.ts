/**
 * Fixed POSIX sh programs the k8s provider runs in a pod over exec. Every user value reaches
 * them as a positional argument (argv over the WebSocket) or on stdin, never inside the
 * script text, so no quoting is involved. Pure constants.
 */
import { TMUX_TARGET } from "./spec.js";

/** `$1` dir, `$2…` argv: runs argv in dir (mkdir -p first). Exit 127 when the dir is unusable. */
export const IN_DIR = 'mkdir -p "$1" 2>/dev/null; cd "$1" || exit 127; shift; exec "$@"';

/**
 * `$1` socket, `$2…` process names: exit 0 when a live process of one of the names is in the
 * pane's process tree (read from /proc), 1 when none is, 3 when there is no live pane.
 * Names are compared with the kernel's command name (first 15 bytes).
 */
export const PROCESS_ALIVE = [
  `info=$(tmux -S "$1" display-message -p -t ${TMUX_TARGET} '#{pane_dead} #{pane_pid}' 2>/dev/null) || exit 3`,
  "shift",
  "dead=${info%% *}; root=${info#* }",
  '[ "$dead" = 0 ] || exit 3',
  'tree=" $root "; changed=1',
  'while [ "$changed" = 1 ]; do',
  "  changed=0",
  "  for st in /proc/[0-9]*/stat; do",
  "    pid=${st#/proc/}; pid=${pid%/stat}",
  '    case "$tree" in *" $pid "*) continue;; esac',
  '    read -r line < "$st" 2>/dev/null || continue',
  "    rest=${line##*) }; ppid=${rest#* }; ppid=${ppid%% *}",
  '    case "$tree" in *" $ppid "*) tree="$tree$pid "; changed=1;; esac',
  "  done",
  "done",
  "for pid in $tree; do",
  '  read -r comm < "/proc/$pid/comm" 2>/dev/null || continue',
  '  read -r line < "/proc/$pid/stat" 2>/dev/null || continue',
  '  case "$line" in *") Z "*) continue;; esac',
  '  for n in "$@"; do',
  '    short=$(printf %.15s "$n")',
  '    [ "$comm" = "$short" ] && exit 0',
  "  done",
  "done",
  "exit 1",
].join("\n");

/** `$1` dir: extracts a tar stream from stdin into dir (created first). */
export const UNTAR = 'mkdir -p "$1" && exec tar -xf - -C "$1"';

/**
 * `$1` dir, `$2` name in the archive, `$3` destination name: extracts a one-file tar stream
 * from stdin into a temp dir beside the destination, then renames the file into place.
 */
export const UNTAR_FILE = [
  'mkdir -p "$1" || exit 1',
  't=$(mktemp -d "$1/.gc-stage.XXXXXX") || exit 1',
  'tar -xf - -C "$t" && mv -f "$t/$2" "$1/$3"; rc=$?',
  'rm -rf "$t"',
  'exit "$rc"',
].join("\n");

/** `$1` path: prints the file; exit 4 when it does not exist. */
export const CAT = '[ -f "$1" ] || exit 4; exec cat -- "$1"';
