/**
 * `gc completion bash|zsh|fish`: prints a completion script for commands and their flags,
 * generated from the command registry and each command's declared options.
 */
import { UsageError } from "../../../internal/base/errors.js";
import { defineCommand, EXIT } from "../context.js";
import { COMMANDS, type CommandName, loadCommand } from "../registry.js";

const USAGE = `Usage: gc completion bash|zsh|fish

Prints a shell completion script. Install it with, for example:
  bash:  gc completion bash > ~/.local/share/bash-completion/completions/gc
  zsh:   gc completion zsh > "\${fpath[1]}/_gc"
  fish:  gc completion fish > ~/.config/fish/completions/gc.fish`;

const GLOBAL = ["--city", "--config", "--json", "--help"];

/** Each command's flags, global ones included. */
async function flagsByCommand(): Promise<[CommandName, string[]][]> {
  const names = Object.keys(COMMANDS) as CommandName[];
  return Promise.all(
    names.map(async (n): Promise<[CommandName, string[]]> => {
      const c = await loadCommand(n);
      return [n, [...Object.keys(c.options).map((k) => `--${k}`), ...GLOBAL]];
    }),
  );
}

/** A word list for a shell script: names are plain `[a-z-]`, so no quoting is needed. Pure. */
function words(list: readonly string[]): string {
  return list.join(" ");
}

function bash(flags: [CommandName, string[]][]): string {
  const cases = flags.map(([n, f]) => `    ${n}) opts="${words(f)}" ;;`).join("\n");
  return `# bash completion for gc
_gc() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" cmd="" i
  for ((i = 1; i < COMP_CWORD; i++)); do
    case "\${COMP_WORDS[i]}" in
      --city|--config) ((i++)) ;;
      -*) ;;
      *) cmd="\${COMP_WORDS[i]}"; break ;;
    esac
  done
  local opts
  case "$cmd" in
    "") opts="${words([...Object.keys(COMMANDS), "help", ...GLOBAL, "--version"])}" ;;
    help) opts="${words(Object.keys(COMMANDS))}" ;;
${cases}
  esac
  COMPREPLY=($(compgen -W "$opts" -- "$cur"))
}
complete -o default -F _gc gc
`;
}

function zsh(flags: [CommandName, string[]][]): string {
  const cmds = Object.entries(COMMANDS)
    .map(([n, s]) => `    '${n}:${s.replace(/'/g, "'\\''").replace(/:/g, "\\:")}'`)
    .join("\n");
  const cases = flags
    .map(([n, f]) => `    ${n}) _arguments ${f.map((x) => `'${x}'`).join(" ")} '*:file:_files' ;;`)
    .join("\n");
  return `#compdef gc
# zsh completion for gc
_gc() {
  local -a commands
  commands=(
${cmds}
  )
  if (( CURRENT == 2 )); then
    _describe 'command' commands
    return
  fi
  case "$words[2]" in
    help) _describe 'command' commands ;;
${cases}
  esac
}
compdef _gc gc
`;
}

function fish(flags: [CommandName, string[]][]): string {
  const lines = ["# fish completion for gc", "complete -c gc -f"];
  for (const [n, s] of Object.entries(COMMANDS)) {
    lines.push(`complete -c gc -n __fish_use_subcommand -a ${n} -d '${s.replace(/'/g, "\\'")}'`);
  }
  lines.push(`complete -c gc -n '__fish_seen_subcommand_from help' -a '${words(Object.keys(COMMANDS))}'`);
  for (const [n, f] of flags) {
    for (const flag of f)
      lines.push(`complete -c gc -n '__fish_seen_subcommand_from ${n}' -l ${flag.slice(2)}`);
  }
  return `${lines.join("\n")}\n`;
}

export const command = defineCommand({
  usage: USAGE,
  options: {},
  async run(ctx, { positionals }) {
    const [shell, ...extra] = positionals;
    if (extra.length > 0 || (shell !== "bash" && shell !== "zsh" && shell !== "fish")) {
      throw new UsageError(`expected one of bash, zsh, fish\n\n${USAGE}`);
    }
    const flags = await flagsByCommand();
    ctx.stdout.write(shell === "bash" ? bash(flags) : shell === "zsh" ? zsh(flags) : fish(flags));
    return EXIT.ok;
  },
});
