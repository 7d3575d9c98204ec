/**
 * `convx completion bash|zsh|fish`: a short script for the shell that asks convx itself for the
 * candidates (`convx __complete WORDS…`, the engine of complete.ts, from the command registry),
 * and `convx completion --values KIND`: the values of the configured dataset or API (values.ts).
 */
import { UsageError } from '../errors.js';
import type { CommandFlags } from './options.js';
import { defineHandler } from './registry.js';
import { completionValues } from './values.js';

/**
 * The bash function: the words up to the cursor to `convx __complete`, a candidate a line; none:
 * file names (-o default). The command is the line's first word, or what an alias of that name
 * stands for (`alias convx='node ~/convx/bin/convx.js'`: bash's BASH_ALIASES, zsh's aliases),
 * as `command` would not find an alias.
 */
const BASH_FUNCTION = `_convx() {
  [ -n "\${ZSH_VERSION:-}" ] && setopt localoptions ksharrays
  local line alias_text=
  local -a cmd=("\${COMP_WORDS[0]}")
  if [ -n "\${ZSH_VERSION:-}" ]; then alias_text=\${aliases[\${COMP_WORDS[0]}]-}
  else alias_text=\${BASH_ALIASES[\${COMP_WORDS[0]}]-}; fi
  [ -n "$alias_text" ] && eval "cmd=($alias_text)"
  COMPREPLY=()
  while IFS= read -r line; do COMPREPLY+=("$line"); done < <(command "\${cmd[@]}" __complete "\${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null)
}
complete -o default -F _convx convx
`;

const ENGINE_NOTE = '# The candidates come from convx itself: `convx __complete WORDS…` prints them for the words up to the cursor.';

/** The scripts, each a shim over `convx __complete`. */
const SCRIPTS: Record<string, string> = {
  bash: `# convx completion for bash: eval "$(convx completion bash)"\n${ENGINE_NOTE}\n${BASH_FUNCTION}`,
  zsh: `#compdef convx
# convx completion for zsh: eval "$(convx completion zsh)"
# (the bash function through zsh's bashcompinit, with zero-based arrays inside it)
${ENGINE_NOTE}
autoload -U +X bashcompinit && bashcompinit
${BASH_FUNCTION}`,
  fish: `# convx completion for fish: convx completion fish > ~/.config/fish/completions/convx.fish
${ENGINE_NOTE}
function __convx_complete
    set -l words (commandline -opc)
    set -l found (command $words[1] __complete $words[2..-1] (commandline -ct) 2>/dev/null)
    if set -q found[1]
        printf '%s\\n' $found
    else
        __fish_complete_path (commandline -ct)
    end
end
complete -c convx -f -a '(__convx_complete)'
`,
};

/** The script of a shell, or the values of a kind (what the engine offers for a flag's value). */
export default defineHandler<CommandFlags<'completion'>>({
  async run(ctx, args, flags) {
    if (flags.values !== undefined) {
      const values = await completionValues(ctx, flags.values);
      if (values.length) await ctx.output.text(`${values.join('\n')}\n`);
      return;
    }
    if (args[0] === undefined) throw new UsageError('completion: name the shell: bash, zsh or fish', [], 'eval "$(convx completion bash)"   # in ~/.bashrc');
    const script = SCRIPTS[args[0]];
    if (script === undefined) throw new UsageError(`completion: "${args[0]}" is not one of bash, zsh, fish`);
    await ctx.output.text(script);
  },
});
