import { UsageError } from '../errors.js';
import { GLOBAL_OPTIONS } from './globals.js';
import { COMMANDS } from './index.js';
import { defineHandler, type CommandDefinition } from './registry.js';

interface Spec {
  /** "report", or "data check" */
  name: string;
  summary: string;
  options: string[];
}

const longFlags = (flags: string) => flags.split(/[ ,|]+/).filter((f) => f.startsWith('--'));

function specs(commands: CommandDefinition[]): Spec[] {
  return commands.map((c) => ({ name: c.name, summary: c.summary, options: (c.options ?? []).flatMap((o) => longFlags(o.flags)) }));
}

const globalFlags = () => GLOBAL_OPTIONS.flatMap((o) => longFlags(o.flags)).concat('--help');

export function bashScript(all: Spec[]): string {
  const top = [...new Set(all.map((s) => s.name.split(' ')[0]!))];
  const cases = all
    .map((s) => `    "${s.name}") opts="${[...s.options, ...globalFlags()].join(' ')}" ;;`)
    .join('\n');
  const groups = [...new Set(all.filter((s) => s.name.includes(' ')).map((s) => s.name.split(' ')[0]!))];
  const groupCases = groups
    .map((g) => {
      const subcommands = all.filter((s) => s.name.startsWith(`${g} `)).map((s) => s.name.split(' ')[1]);
      return `    "${g}") [ "$COMP_CWORD" -eq 2 ] && { COMPREPLY=( $(compgen -W "${subcommands.join(' ')}" -- "$cur") ); return; } ;;`;
    })
    .join('\n');
  return `# convx completion for bash: eval "$(convx completion bash)"
_convx() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" first="\${COMP_WORDS[1]}" second="\${COMP_WORDS[2]}" opts
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=( $(compgen -W "${top.join(' ')} ${globalFlags().join(' ')}" -- "$cur") ); return
  fi
  case "$first" in
${groupCases}
  esac
  local cmd="$first"
  case "$first" in ${groups.map((g) => `${g}) cmd="$first $second" ;;`).join(' ')} esac
  case "$cmd" in
${cases}
    *) opts="${globalFlags().join(' ')}" ;;
  esac
  COMPREPLY=( $(compgen -W "$opts" -- "$cur") )
}
complete -o default -F _convx convx
`;
}

export function zshScript(all: Spec[]): string {
  return `#compdef convx
# convx completion for zsh: eval "$(convx completion zsh)"
autoload -U +X bashcompinit && bashcompinit
${bashScript(all).split('\n').slice(1).join('\n')}`;
}

export function fishScript(all: Spec[]): string {
  const escape = (text: string) => text.replaceAll("'", "\\'");
  const lines = ['# convx completion for fish: convx completion fish | source', 'complete -c convx -f'];
  const top = new Map<string, string>();
  for (const s of all) {
    const [first] = s.name.split(' ');
    if (!top.has(first!)) top.set(first!, s.name.includes(' ') ? `${first} commands` : s.summary);
  }
  for (const [name, summary] of top) {
    lines.push(`complete -c convx -n '__fish_use_subcommand' -a '${name}' -d '${escape(summary)}'`);
  }
  for (const s of all) {
    const [first, second] = s.name.split(' ');
    if (second) lines.push(`complete -c convx -n '__fish_seen_subcommand_from ${first}' -a '${second}' -d '${escape(s.summary)}'`);
    for (const flag of s.options) {
      lines.push(`complete -c convx -n '__fish_seen_subcommand_from ${second ?? first}' -l '${flag.slice(2)}'`);
    }
  }
  for (const o of GLOBAL_OPTIONS) {
    for (const flag of longFlags(o.flags)) lines.push(`complete -c convx -l '${flag.slice(2)}' -d '${escape(o.description)}'`);
  }
  return `${lines.join('\n')}\n`;
}

/** Completion for every command of the registry (commands/index.ts), this one included. */
export default defineHandler<Record<string, never>>({
  async run(ctx, args) {
    const all = specs(COMMANDS);
    const scripts: Record<string, (s: Spec[]) => string> = { bash: bashScript, zsh: zshScript, fish: fishScript };
    const make = scripts[args[0]!];
    if (!make) throw new UsageError(`completion: "${args[0]}" is not one of bash, zsh, fish`);
    await ctx.output.text(make(all));
  },
});
