/**
 * Shell completion (bash, zsh, fish) for every command of the registry
 * (commands/index.ts): commands, subcommands, flags, formats and fixed values,
 * and values of the configured dataset or API (plugins, currencies, countries,
 * source and smartflow ids, profiles) through `convx completion --values KIND`,
 * which the scripts call with the line's --data, --api, --profile and --plugin.
 */
import { UsageError } from '../errors.js';
import { FORMATS } from '../output/format.js';
import { safeValue } from '../output/terminal.js';
import type { Context } from '../context.js';
import { CONFIG_KEYS } from '../config.js';
import { SOURCE_TYPES } from '../model/shapes.js';
import { commandFormats, commandGlobals, GLOBAL_OPTIONS } from './globals.js';
import { COMMANDS, GROUPS } from './index.js';
import type { OptionDefinition } from './flags.js';
import type { CommandDefinition } from './registry.js';
import { defineHandler } from './registry.js';
import type { CommandFlags } from './options.js';

interface Spec {
  /** "report", or "data check" */
  name: string;
  summary: string;
  /** Long flags ("--breakdown"). */
  options: string[];
  /** The global flags it honours (long names), as the CLI checks them (commandGlobals). */
  globals: readonly string[];
  /** Its output formats. */
  formats: readonly string[];
}

/** What `--values` prints, and where a script asks for it. */
export const VALUE_KINDS = ['plugins', 'currencies', 'countries', 'sources', 'smartflows', 'profiles'] as const;
export type ValueKind = (typeof VALUE_KINDS)[number];

/** Flags whose values come from the dataset or API (or the config, for profiles). */
const DYNAMIC_VALUES: Record<string, ValueKind> = {
  '--plugin': 'plugins',
  '--currency': 'currencies',
  '--reference-currency': 'currencies',
  '--country': 'countries',
  '--source': 'sources',
  '--smartflow': 'smartflows',
  '--profile': 'profiles',
};

/** Flags with a fixed set of values. */
const FIXED_VALUES: Record<string, readonly string[]> = {
  '--source-type': SOURCE_TYPES,
  '--file-format': ['csv', 'parquet'],
  '--values': VALUE_KINDS,
};

/** How long `--values` may take before it prints nothing: a TAB must not hang the shell. */
export const VALUES_BUDGET_MS = 2000;
/** At most this many values of a kind. */
const MAX_VALUES = 1000;

const longFlags = (flags: string) => flags.split(/[ ,|]+/).filter((f) => f.startsWith('--'));
/** Every spelling of an option that takes a value: "-o", "--format". */
const valueFlags = (o: OptionDefinition) => (/[<[]/.test(o.flags) ? o.flags.split(/[ ,|]+/).filter((f) => /^--?[A-Za-z]/.test(f)) : []);

function specs(commands: readonly CommandDefinition[]): Spec[] {
  return commands.map((c) => ({
    name: c.name,
    summary: c.summary,
    options: (c.options ?? []).flatMap((o) => longFlags(o.flags)),
    globals: commandGlobals(c),
    formats: commandFormats(c),
  }));
}

const globalFlags = () => GLOBAL_OPTIONS.flatMap((o) => longFlags(o.flags)).concat('--help');
const allValueFlags = (commands: readonly CommandDefinition[]) => [
  ...new Set([...GLOBAL_OPTIONS, ...commands.flatMap((c) => c.options ?? [])].flatMap(valueFlags)),
];

export function bashScript(all: Spec[], commands: readonly CommandDefinition[] = COMMANDS): string {
  const top = [...new Set(all.map((s) => s.name.split(' ')[0]!))];
  const groups = [...new Set(all.filter((s) => s.name.includes(' ')).map((s) => s.name.split(' ')[0]!))];
  const flagCases = all.map((s) => `      "${s.name}") opts="${[...s.options, ...s.globals].join(' ')}" ;;`).join('\n');
  const groupCases = groups
    .map((g) => `      "${g}") values="${all.filter((s) => s.name.startsWith(`${g} `)).map((s) => s.name.split(' ')[1]).join(' ')}" ;;`)
    .join('\n');
  const formatCases = [...new Set(all.map((s) => s.formats.join(' ')))]
    .map((list) => {
      const names = all.filter((s) => s.formats.join(' ') === list).map((s) => `"${s.name}"`);
      return list === FORMATS.join(' ') ? `          *) values="${list}" ;;` : `          ${names.join('|')}) values="${list}" ;;`;
    })
    .sort((a, b) => Number(a.trimStart().startsWith('*)')) - Number(b.trimStart().startsWith('*)')))
    .join('\n');
  const dynamicCases = Object.entries(
    Object.entries(DYNAMIC_VALUES).reduce<Record<string, string[]>>((acc, [flag, kind]) => ((acc[kind] ??= []).push(flag), acc), {}),
  )
    .map(([kind, flags]) => `      ${flags.join('|')}) values="$(__convx_values ${kind})" ;;`)
    .join('\n');
  const fixedCases = Object.entries(FIXED_VALUES)
    .map(([flag, values]) => `      ${flag}) values="${values.join(' ')}" ;;`)
    .join('\n');
  return `# convx completion for bash: eval "$(convx completion bash)"
# Values of the dataset or API come from \`convx completion --values KIND\` (nothing on any error).
__convx_values() {
  [ -n "\${ZSH_VERSION:-}" ] && setopt localoptions ksharrays
  local i w args=()
  for (( i=1; i < COMP_CWORD; i++ )); do
    w="\${COMP_WORDS[i]}"
    case "$w" in
      --data|--api|--profile|--plugin) args+=("$w" "\${COMP_WORDS[i+1]/#\\~/$HOME}") ;;
    esac
  done
  command "\${COMP_WORDS[0]}" completion --values "$1" "\${args[@]}" 2>/dev/null
}
# The candidates in $1 for the word at the cursor; after a comma, for the last item of a list (--country CZ,S).
__convx_reply() {
  [ -n "\${ZSH_VERSION:-}" ] && setopt localoptions ksharrays
  local cur="\${COMP_WORDS[COMP_CWORD]}" prefix=""
  if [[ "$cur" == *,* ]]; then prefix="\${cur%,*},"; cur="\${cur##*,}"; fi
  COMPREPLY=( $(compgen -P "$prefix" -W "$1" -- "$cur") )
}
_convx() {
  [ -n "\${ZSH_VERSION:-}" ] && setopt localoptions ksharrays
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="" w i top="" cmd="" opts="" values=""
  local takes=" ${allValueFlags(commands).join(' ')} "
  local -a pos=()
  COMPREPLY=()
  (( COMP_CWORD > 0 )) && prev="\${COMP_WORDS[COMP_CWORD-1]}"
  # the words before the cursor that are not flags or their values: the command, then its arguments
  for (( i=1; i < COMP_CWORD; i++ )); do
    w="\${COMP_WORDS[i]}"
    if [[ "$w" == -* ]]; then
      [[ "$takes" == *" $w "* ]] && i=$((i + 1))
    else
      pos+=("$w")
    fi
  done
  top="\${pos[0]:-}"
  cmd="$top"
  case "$top" in
    "") ;;
    ${groups.join('|')}) if (( \${#pos[@]} >= 2 )); then cmd="$top \${pos[1]}"; pos=("\${pos[@]:2}"); else pos=(); fi ;;
    *) pos=("\${pos[@]:1}") ;;
  esac
  # the value of a flag
  if [[ "$takes" == *" $prev "* ]]; then
    case "$prev" in
      -o|--format)
        case "$cmd" in
${formatCases}
        esac ;;
${dynamicCases}
${fixedCases}
      *) return ;;   # a path or free text: the shell's own completion
    esac
    __convx_reply "$values"; return
  fi
  if [[ -z "$top" ]]; then
    if [[ "$cur" == -* ]]; then opts="${globalFlags().join(' ')}"; else opts="${top.join(' ')}"; fi
    COMPREPLY=( $(compgen -W "$opts" -- "$cur") ); return
  fi
  if [[ "$cur" == -* ]]; then
    case "$cmd" in
${flagCases}
    esac
    COMPREPLY=( $(compgen -W "$opts --help" -- "$cur") ); return
  fi
  # arguments
  case "$cmd" in
${groupCases}
    completion) (( \${#pos[@]} == 0 )) && values="bash zsh fish" ;;
    drill) (( \${#pos[@]} == 0 )) && values="$(__convx_values sources)" ;;
    "config get"|"config unset") (( \${#pos[@]} == 0 )) && values="${CONFIG_KEYS.join(' ')}" ;;
    "config set")
      if (( \${#pos[@]} == 0 )); then values="${CONFIG_KEYS.join(' ')}"
      elif (( \${#pos[@]} == 1 )); then
        case "\${pos[0]}" in
          format) values="${FORMATS.join(' ')}" ;;
          mode) values="local api" ;;
          plugin) values="$(__convx_values plugins)" ;;
          defaultProfile|default-profile) values="$(__convx_values profiles)" ;;
          *) return ;;
        esac
      fi ;;
    *) return ;;   # files (validate REQUEST.json, data check DIR ...)
  esac
  [[ -n "$values" ]] && __convx_reply "$values"
}
complete -o default -F _convx convx
`;
}

export function zshScript(all: Spec[]): string {
  return `#compdef convx
# convx completion for zsh: eval "$(convx completion zsh)"
# (the bash functions through zsh's bashcompinit, with zero-based arrays inside them)
autoload -U +X bashcompinit && bashcompinit
${bashScript(all).split('\n').slice(1).join('\n')}`;
}

export function fishScript(all: Spec[], commands: readonly CommandDefinition[] = COMMANDS): string {
  const escape = (text: string) => text.replaceAll('\\', '\\\\').replaceAll("'", "\\'");
  const lines = [
    '# convx completion for fish: convx completion fish > ~/.config/fish/completions/convx.fish',
    '# values of the dataset or API: `convx completion --values KIND` with the line\'s --data, --api, --profile, --plugin',
    'function __convx_values',
    '    set -l words (commandline -opc)',
    '    set -l args',
    '    for i in (seq 2 (math (count $words) - 1))',
    '        switch $words[$i]',
    '            case --data --api --profile --plugin',
    '                set -a args $words[$i] $words[(math $i + 1)]',
    '        end',
    '    end',
    '    command $words[1] completion --values $argv[1] $args 2>/dev/null',
    'end',
    'complete -c convx -f',
  ];
  const top = new Map<string, string>();
  for (const s of all) {
    const [first] = s.name.split(' ');
    if (!top.has(first!)) top.set(first!, s.name.includes(' ') ? (GROUPS[first!] ?? `${first} commands`) : s.summary);
  }
  for (const [name, summary] of top) {
    lines.push(`complete -c convx -n '__fish_use_subcommand' -a '${name}' -d '${escape(summary)}'`);
  }
  const valueArgs = (flag: string, formats: readonly string[]) => {
    if (flag === '--format') return ` -x -a '${formats.join(' ')}'`;
    if (DYNAMIC_VALUES[flag]) return ` -x -a '(__convx_values ${DYNAMIC_VALUES[flag]})'`;
    if (FIXED_VALUES[flag]) return ` -x -a '${FIXED_VALUES[flag]!.join(' ')}'`;
    return ' -r -F';
  };
  const byName = new Map(commands.map((c) => [c.name, c]));
  for (const s of all) {
    const [first, second] = s.name.split(' ');
    if (second) {
      const siblings = all.filter((t) => t.name.startsWith(`${first} `)).map((t) => t.name.split(' ')[1]);
      lines.push(`complete -c convx -n '__fish_seen_subcommand_from ${first}; and not __fish_seen_subcommand_from ${siblings.join(' ')}' -a '${second}' -d '${escape(s.summary)}'`);
    }
    const condition = second ? `__fish_seen_subcommand_from ${first}; and __fish_seen_subcommand_from ${second}` : `__fish_seen_subcommand_from ${first}`;
    for (const o of byName.get(s.name)?.options ?? []) {
      for (const flag of longFlags(o.flags)) {
        const takes = valueFlags(o).includes(flag);
        lines.push(`complete -c convx -n '${condition}' -l '${flag.slice(2)}'${takes ? valueArgs(flag, s.formats) : ''} -d '${escape(o.description)}'`);
      }
    }
    // the global flags it honours, -o with its own formats
    for (const o of GLOBAL_OPTIONS) {
      const short = o.flags.match(/^-([A-Za-z]),/)?.[1];
      for (const flag of longFlags(o.flags).filter((f) => s.globals.includes(f))) {
        const takes = valueFlags(o).includes(flag);
        const description = flag === '--format' ? `output format: ${s.formats.join(', ')}` : o.description;
        lines.push(`complete -c convx -n '${condition}'${short ? ` -s ${short}` : ''} -l '${flag.slice(2)}'${takes ? valueArgs(flag, s.formats) : ''} -d '${escape(description)}'`);
      }
    }
  }
  lines.push(`complete -c convx -n '__fish_seen_subcommand_from completion' -a 'bash zsh fish'`);
  lines.push(`complete -c convx -n '__fish_seen_subcommand_from drill' -a '(__convx_values sources)'`);
  lines.push(
    `complete -c convx -n '__fish_seen_subcommand_from config; and __fish_seen_subcommand_from get set unset; and test (count (commandline -opc)) -eq 3' -a '${CONFIG_KEYS.join(' ')}'`,
  );
  lines.push(`complete -c convx -n '__fish_seen_subcommand_from config; and __fish_seen_subcommand_from set; and __fish_seen_subcommand_from format' -a '${FORMATS.join(' ')}'`);
  lines.push(`complete -c convx -n '__fish_seen_subcommand_from config; and __fish_seen_subcommand_from set; and __fish_seen_subcommand_from mode' -a 'local api'`);
  // before a command, every global flag
  for (const o of GLOBAL_OPTIONS) {
    const short = o.flags.match(/^-([A-Za-z]),/)?.[1];
    for (const flag of longFlags(o.flags)) {
      const takes = valueFlags(o).includes(flag);
      lines.push(`complete -c convx -n '__fish_use_subcommand'${short ? ` -s ${short}` : ''} -l '${flag.slice(2)}'${takes ? valueArgs(flag, FORMATS) : ''} -d '${escape(o.description)}'`);
    }
  }
  return `${lines.join('\n')}\n`;
}

/** Distinct non-empty values a terminal shows as they are, sorted, at most MAX_VALUES. */
function tidy(values: Iterable<unknown>, upper: boolean): string[] {
  const out = new Set<string>();
  for (const value of values) {
    if (value === null || value === undefined) continue;
    const text = String(value).trim();
    // A value a terminal would not show as it is (controls, C1, bidi overrides) is never offered.
    if (text && !/[\s\n]/.test(text) && safeValue(text) === text) out.add(upper ? text.toUpperCase() : text);
  }
  return [...out].sort().slice(0, MAX_VALUES);
}

/** [table, column] pairs that hold a kind's values, the first that yields any wins (sources before the touches). */
const COLUMNS: Record<Exclude<ValueKind, 'profiles'>, [string, string][][]> = {
  plugins: [[['plugins', 'plugin_id'], ['orders', 'plugin_id'], ['touches', 'plugin_id'], ['contacts', 'plugin_id']]],
  currencies: [[['orders', 'currency'], ['fx', 'currency'], ['fx', 'reference_currency'], ['plugins', 'reference_currency']]],
  countries: [[['orders', 'country'], ['contacts', 'country']]],
  sources: [[['sources', 'source_id']], [['touches', 'source_id']]],
  smartflows: [[['sources', 'smartflow_id']]],
};

/** The kind's values from a dataset directory or an imported .duckdb file, reading only the columns it needs. */
async function localValues(path: string, kind: Exclude<ValueKind, 'profiles'>, signal: AbortSignal): Promise<string[]> {
  const [{ Database, ident, sqlString }, { isDuckDbFile }] = await Promise.all([import('../local/db.js'), import('../local/imported.js')]);
  let tables: (table: string) => string | undefined;
  const imported = isDuckDbFile(path);
  if (imported) {
    tables = (table) => `imported.main.${ident(`t_${table}`)}`;
  } else {
    const [{ discoverTables, readExpression }, { compile }] = await Promise.all([import('../local/dataset.js'), import('../local/sql.js')]);
    const found = discoverTables(path) as Map<string, Parameters<typeof readExpression>[0]>;
    tables = (table) => {
      const source = found.get(table);
      // readExpression is an Sql now (no parameters in it: its paths are literals); the text until this moves to the sql tag.
      return source ? compile(readExpression(source)).text : undefined;
    };
  }
  const db = await Database.open();
  const stop = () => db.interrupt();
  signal.addEventListener('abort', stop);
  try {
    if (imported) await db.exec(`ATTACH ${sqlString(path)} AS imported (READ_ONLY)`);
    for (const tier of COLUMNS[kind]) {
      const values: unknown[] = [];
      for (const [table, column] of tier) {
        const from = tables(table);
        if (!from || signal.aborted) continue;
        try {
          const rows = await db.all<{ v: unknown }>(
            `SELECT DISTINCT CAST(${ident(column)} AS VARCHAR) AS v FROM ${from} WHERE ${ident(column)} IS NOT NULL LIMIT ${MAX_VALUES}`,
          );
          values.push(...rows.map((r) => r.v));
        } catch {
          // no such column or table: another may have it
        }
      }
      const tidied = tidy(values, kind === 'currencies' || kind === 'countries');
      if (tidied.length) return tidied;
    }
    return [];
  } finally {
    signal.removeEventListener('abort', stop);
    await db.close();
  }
}

/** In API mode: the token names the plugin; sources and currencies are those of the last 365 days' report (one page). */
async function apiValues(ctx: Context, kind: Exclude<ValueKind, 'profiles'>, signal: AbortSignal): Promise<string[]> {
  const token = await ctx.token();
  if (kind === 'plugins') {
    const { decodeJwt } = await import('jose');
    const plugin = decodeJwt(token).plugin;
    return typeof plugin === 'string' ? [plugin] : [];
  }
  if (kind === 'countries') return [];
  const { ApiClient } = await import('../api/client.js');
  const client = new ApiClient(ctx.settings.api!, { token, timeoutMs: VALUES_BUDGET_MS, retries: 0 });
  const stop = () => void client.close();
  signal.addEventListener('abort', stop);
  try {
    const now = ctx.io.now();
    const day = (d: Date) => d.toISOString().slice(0, 10);
    const body = (await client.getJson('conversions', {
      dateFrom: day(new Date(now.getTime() - 365 * 86_400_000)),
      dateTo: day(now),
      limit: '1000',
    })) as { conversions?: { id?: string; source?: { smartflowId?: string | null }; breakdown?: { currency?: string }[] }[] };
    const rows = body.conversions ?? [];
    if (kind === 'sources') return tidy(rows.map((r) => r.id), false);
    if (kind === 'smartflows') return tidy(rows.map((r) => r.source?.smartflowId), false);
    return tidy(rows.flatMap((r) => (r.breakdown ?? []).map((b) => b.currency)), true);
  } finally {
    signal.removeEventListener('abort', stop);
    await client.close();
  }
}

/** The values of a kind, or none: any error, or the time budget running out, prints nothing. */
export async function completionValues(ctx: Context, kind: string, budgetMs = VALUES_BUDGET_MS): Promise<string[]> {
  if (!(VALUE_KINDS as readonly string[]).includes(kind)) return [];
  if (kind === 'profiles') return tidy(Object.keys(ctx.config.profiles), false);
  const typed = kind as Exclude<ValueKind, 'profiles'>;
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<string[]>((resolve) => {
    timer = setTimeout(() => {
      controller.abort();
      resolve([]);
    }, budgetMs);
  });
  const work = (async () => {
    if (ctx.settings.mode === 'api') return apiValues(ctx, typed, controller.signal);
    if (!ctx.settings.data) return [];
    return localValues(ctx.resolvePath(ctx.settings.data), typed, controller.signal);
  })().catch(() => [] as string[]);
  try {
    return await Promise.race([work, expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** Completion for every command of the registry (commands/index.ts), this one included. */
export default defineHandler<CommandFlags<'completion'>>({
  async run(ctx, args, flags) {
    if (flags.values !== undefined) {
      const values = await completionValues(ctx, flags.values);
      if (values.length) await ctx.output.text(`${values.join('\n')}\n`);
      return;
    }
    const all = specs(COMMANDS);
    const scripts: Record<string, (s: Spec[]) => string> = { bash: (s) => bashScript(s), zsh: zshScript, fish: (s) => fishScript(s) };
    if (args[0] === undefined) throw new UsageError('completion: name the shell: bash, zsh or fish', [], 'eval "$(convx completion bash)"   # in ~/.bashrc');
    const make = scripts[args[0]];
    if (!make) throw new UsageError(`completion: "${args[0]}" is not one of bash, zsh, fish`);
    await ctx.output.text(make(all));
  },
});
