/**
 * Shell completion as an engine: `convx __complete WORDS…` (hidden; the shells' scripts of
 * `convx completion` call it) gets the words of the line after `convx`, the last one the word at
 * the cursor, and prints the candidates for it, one a line, from the command registry
 * (commands/index.ts: commands, subcommands, their flags and formats; src/globals.ts: the global
 * flags each honours) and fixed values; a flag's values from the data or the config come from
 * values.ts, with the line's --data, --api, --profile and --plugin. Nothing printed: the shell
 * completes file names.
 */
import { Writable } from 'node:stream';
import { CONFIG_KEYS } from '../model/settings.js';
import type { BackendFactory, Io, LookupsFactory } from '../context.js';
import type { OptionDefinition } from '../flags.js';
import { GLOBAL_OPTIONS } from '../globals.js';
import { field, QUERY_PARAMETERS } from '../model/parameters.js';
import { SORT_FIELDS } from '../model/query.js';
import { zoneNames } from '../model/period.js';
import { SOURCE_TYPES } from '../model/shapes.js';
import { CHECKS } from '../model/validation.js';
import { FORMATS } from '../output/formats.js';
import { streamSink } from '../output/sink.js';
import { commandFormats, commandGlobals } from './globals.js';
import { COMMANDS } from './index.js';
import { VALUE_KINDS, type ValueKind } from './values.js';

/** The columns of the query parameters (model/parameters.ts) whose values completion looks up in the data. */
const LOOKED_UP: Record<string, ValueKind> = { country: 'countries', currency: 'currencies', source_id: 'sources', smartflow_id: 'smartflows' };
const longFlag = (flags: string | undefined) => /--[a-z-]+/.exec(flags ?? '')?.[0];

/** Flags whose values come from the dataset or API (or the config, for profiles): the parameters' from the table, and global ones. */
const DYNAMIC_VALUES: Record<string, ValueKind> = {
  '--plugin': 'plugins',
  ...Object.fromEntries(
    QUERY_PARAMETERS.flatMap((p) => {
      const flag = longFlag(field(p, 'flag'));
      const kind = LOOKED_UP[field(p, 'column') ?? ''];
      return flag && kind ? [[flag, kind]] : [];
    }),
  ),
  '--reference-currency': 'currencies',
  '--profile': 'profiles',
};

/**
 * The flags whose values are taken in any case (codes: --country cz is CZ; --reference-currency eur;
 * zones: europe/prague), so a value typed in another case is completed too.
 */
const ANY_CASE = new Set<string>([
  ...QUERY_PARAMETERS.flatMap((p) => {
    const flag = longFlag(field(p, 'flag'));
    return flag && (p.kind === 'codes' || p.kind === 'zone') ? [flag] : [];
  }),
  '--reference-currency',
]);

/** The zones a zone parameter takes, by their canonical names (model/period.ts). */
const zoneValues = () => [...new Set(['UTC', ...zoneNames()])];

/** Flags with a fixed set of values: a source type parameter's, a time zone's, a choice's (--by, --compare), and commands' own. */
const FIXED_VALUES: Record<string, readonly string[]> = {
  ...Object.fromEntries(QUERY_PARAMETERS.flatMap((p) => (p.kind === 'sourceType' ? [[longFlag(field(p, 'flag')), SOURCE_TYPES]] : []))),
  ...Object.fromEntries(QUERY_PARAMETERS.flatMap((p) => (p.kind === 'zone' ? [[longFlag(field(p, 'flag')), zoneValues()]] : []))),
  ...Object.fromEntries(QUERY_PARAMETERS.flatMap((p) => (p.kind === 'choice' ? [[longFlag(field(p, 'flag')), p.choice.values]] : []))),
  '--file-format': ['csv', 'parquet'],
  '--values': VALUE_KINDS,
  // convx validate's finding codes.
  '--ignore': Object.values(CHECKS).flat(),
  '--fail-on': ['warning', 'error', ...Object.values(CHECKS).flat()],
};

/** The global flags on the line that name the data a value comes from. */
const DATA_FLAGS: Record<string, keyof DataFlags> = { '--data': 'data', '--api': 'api', '--profile': 'profile', '--plugin': 'plugin' };

/** The values of a kind for the line (its words before the cursor name the data: dataFlags); none on any error. */
export type ValuesOf = (kind: ValueKind, words: readonly string[]) => Promise<string[]>;

const longFlags = (flags: string) => flags.split(/[ ,|]+/).filter((f) => f.startsWith('--'));
/** Every spelling of an option that takes a value: "-o", "--format". */
const valueFlags = (o: OptionDefinition) => (/[<[]/.test(o.flags) ? o.flags.split(/[ ,|]+/).filter((f) => /^--?[A-Za-z]/.test(f)) : []);

/** Every flag of any command that takes a value: the word after it is its value, not an argument. */
const TAKES = new Set([...GLOBAL_OPTIONS, ...COMMANDS.flatMap((c) => c.options ?? [])].flatMap(valueFlags));
/** The first words of the commands, and the groups (data, auth, config) with their subcommands in order. */
const TOP = [...new Set(COMMANDS.map((c) => c.name.split(' ')[0]!))];
const GROUP_MEMBERS = new Map<string, string[]>();
for (const c of COMMANDS) {
  const [group, member] = c.name.split(' ');
  if (member) GROUP_MEMBERS.set(group!, [...(GROUP_MEMBERS.get(group!) ?? []), member]);
}

/** The words before the cursor that are not flags or their values: the command, then its arguments. */
function commandOf(before: readonly string[]): { cmd: string; args: string[] } {
  const pos: string[] = [];
  for (let i = 0; i < before.length; i++) {
    const word = before[i]!;
    if (word.startsWith('-')) {
      if (TAKES.has(word)) i++;
    } else pos.push(word);
  }
  const top = pos[0] ?? '';
  if (top === '') return { cmd: '', args: [] };
  if (GROUP_MEMBERS.has(top)) return pos.length >= 2 ? { cmd: `${top} ${pos[1]}`, args: pos.slice(2) } : { cmd: top, args: [] };
  return { cmd: top, args: pos.slice(1) };
}

/**
 * The candidates that start with the word; after a comma, for the last item of a list
 * (--country CZ,S), without the items the list already holds (--country CZ, offers no CZ).
 */
function listReply(values: readonly string[], current: string, anyCase = false): string[] {
  const comma = current.lastIndexOf(',');
  const prefix = comma < 0 ? '' : current.slice(0, comma + 1);
  const fold = (text: string) => (anyCase ? text.toUpperCase() : text);
  const word = fold(current.slice(comma + 1));
  const given = new Set(prefix.split(',').map(fold));
  return values.filter((v) => fold(v).startsWith(word) && !given.has(fold(v))).map((v) => `${prefix}${v}`);
}

const startingWith = (values: readonly string[], current: string) => values.filter((v) => v.startsWith(current));

/** The sort parameter's settings per operation: its fields, and whether it takes a list (report) or one (items). */
const SORT = QUERY_PARAMETERS.find((p) => p.kind === 'sort')!.sort;
/** The operation whose sort a command's --sort takes (drill lists items). */
const SORTED: Record<string, 'report' | 'items'> = { report: 'report', items: 'items', drill: 'items' };

/**
 * --sort's candidates: the command's fields, each either way ("-" for descending); after a comma,
 * where the command takes a list (report), the fields the list does not hold yet either way; none
 * after a comma where it takes one field (items, drill).
 */
function sortReply(cmd: string, current: string): string[] {
  const operation = SORTED[cmd];
  if (!operation) return [];
  const comma = current.lastIndexOf(',');
  if (comma >= 0 && !SORT[operation].multiple) return [];
  const given = new Set(current.slice(0, Math.max(comma, 0)).split(',').map((f) => f.replace(/^-/, '')));
  const fields = SORT_FIELDS[operation].filter((f) => !given.has(f)).flatMap((f) => [f, `-${f}`]);
  return listReply(fields, current);
}

/** The values of a flag's value (undefined: a path or free text, which the shell completes). */
async function flagValues(flag: string, cmd: string, words: readonly string[], valuesOf: ValuesOf): Promise<readonly string[] | undefined> {
  if (flag === '-o' || flag === '--format') {
    const command = COMMANDS.find((c) => c.name === cmd);
    return command ? commandFormats(command) : FORMATS;
  }
  if (DYNAMIC_VALUES[flag]) return valuesOf(DYNAMIC_VALUES[flag], words);
  return FIXED_VALUES[flag];
}

/** The values of a command's argument (undefined: files, which the shell completes). */
async function argumentValues(cmd: string, args: readonly string[], words: readonly string[], valuesOf: ValuesOf): Promise<readonly string[] | undefined> {
  if (GROUP_MEMBERS.has(cmd)) return GROUP_MEMBERS.get(cmd);
  const first = args.length === 0;
  switch (cmd) {
    case 'completion':
      return first ? ['bash', 'zsh', 'fish'] : [];
    case 'drill':
      // a source id or a smartflow id (not TYPE:ID: bash splits a word at its colon)
      return first ? [...new Set([...(await valuesOf('sources', words)), ...(await valuesOf('smartflows', words))])] : [];
    case 'config get':
    case 'config unset':
      return first ? CONFIG_KEYS : [];
    case 'config set':
      if (first) return CONFIG_KEYS;
      if (args.length > 1) return [];
      if (args[0] === 'format') return FORMATS;
      if (args[0] === 'mode') return ['local', 'api'];
      if (args[0] === 'plugin') return valuesOf('plugins', words);
      if (args[0] === 'defaultProfile' || args[0] === 'default-profile') return valuesOf('profiles', words);
      return undefined;
    default:
      return undefined;
  }
}

/** The flags a command takes (its own, the global ones it honours, --help); before a command, every global flag. */
function flagsOf(cmd: string): string[] {
  if (cmd === '') return [...GLOBAL_OPTIONS.flatMap((o) => longFlags(o.flags)), '--help'];
  const command = COMMANDS.find((c) => c.name === cmd);
  if (!command) return ['--help'];
  return [...(command.options ?? []).flatMap((o) => longFlags(o.flags)), ...commandGlobals(command), '--help'];
}

/**
 * Whether the command takes a flag that takes a value (every spelling: -o and --format): a
 * value is offered only for a flag of the command (report takes no --source, so it offers no
 * source ids after one). Before a command, and for a word that names none, any flag.
 */
function takesValueFlag(cmd: string, flag: string): boolean {
  const command = COMMANDS.find((c) => c.name === cmd);
  if (!command) return true;
  const globals = commandGlobals(command);
  const honoured = GLOBAL_OPTIONS.filter((o) => longFlags(o.flags).some((f) => globals.includes(f)));
  return [...(command.options ?? []), ...honoured].some((o) => valueFlags(o).includes(flag));
}

/**
 * A word of the line as the shell hands it to a command: the shells give completion the words as
 * typed, quotes and backslashes in them (`--data "my data"`, `--data my\ data`), and those are removed
 * here as the shell would (no expansion but a leading ~, which dataFlags makes $HOME).
 */
export function shellWord(typed: string): string {
  let word = '';
  let quote: '' | "'" | '"' = '';
  for (let i = 0; i < typed.length; i++) {
    const char = typed[i]!;
    if (quote === "'") {
      if (char === "'") quote = '';
      else word += char;
    } else if (char === '\\' && i + 1 < typed.length && (quote === '' || '"\\$`'.includes(typed[i + 1]!))) {
      word += typed[++i];
    } else if (char === '"' && quote === '"') quote = '';
    else if ((char === '"' || char === "'") && quote === '') quote = char;
    else word += char;
  }
  return word;
}

/**
 * The words before the cursor as a command reads them: unquoted (shellWord), and a flag's value
 * given with = (`--profile=prod`; bash splits it into `--profile`, `=`, `prod`, = being one of
 * its COMP_WORDBREAKS) as the flag and its value.
 */
function lineWords(words: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!;
    const joined = /^(--[A-Za-z][\w-]*)=(.*)$/s.exec(word);
    if (joined && TAKES.has(joined[1]!)) out.push(joined[1]!, shellWord(joined[2]!));
    else if (word === '=' && TAKES.has(out.at(-1) ?? '')) {
      if (i + 1 < words.length) out.push(shellWord(words[++i]!));
    } else out.push(shellWord(word));
  }
  return out;
}

/**
 * The word at the cursor as a flag's value given with =: bash's words `--profile`, `=` with the
 * cursor on = (candidates written after it: `=prod`) or on a word after it, and one word
 * `--profile=pr` (zsh, fish; candidates `--profile=prod`). The flag and the value typed so far,
 * else undefined.
 */
function valueAfterEquals(words: readonly string[]): { flag: string; current: string; before: string[]; prefix: string } | undefined {
  const current = words.at(-1) ?? '';
  const joined = /^(--[A-Za-z][\w-]*)=(.*)$/s.exec(current);
  if (joined && TAKES.has(joined[1]!)) return { flag: joined[1]!, current: joined[2]!, before: [...words.slice(0, -1), joined[1]!], prefix: `${joined[1]}=` };
  if (current === '=' && TAKES.has(words.at(-2) ?? '')) return { flag: words.at(-2)!, current: '', before: words.slice(0, -1), prefix: '=' };
  if (words.at(-2) === '=' && TAKES.has(words.at(-3) ?? '')) return { flag: words.at(-3)!, current, before: words.slice(0, -2), prefix: '' };
  return undefined;
}

/** The candidates for the last word of the line (the words after `convx`, as the shell gives them). */
export async function candidates(words: readonly string[], valuesOf: ValuesOf): Promise<string[]> {
  const equals = valueAfterEquals(words);
  const current = equals?.current ?? words.at(-1) ?? '';
  const before = lineWords(equals?.before ?? words.slice(0, -1));
  const previous = before.at(-1) ?? '';
  const { cmd, args } = commandOf(before);
  // The data a value comes from is named by the words before the cursor: the word being typed is no
  // profile or dataset yet (--profile st<TAB> asks the config's profiles, not a profile "st").
  if (TAKES.has(previous)) {
    if (!takesValueFlag(cmd, previous)) return [];
    if (previous === '--sort') return sortReply(cmd, current).map((value) => `${equals?.prefix ?? ''}${value}`);
    const values = listReply((await flagValues(previous, cmd, before, valuesOf)) ?? [], current, ANY_CASE.has(previous));
    return values.map((value) => `${equals?.prefix ?? ''}${value}`);
  }
  if (current.startsWith('-')) return startingWith(flagsOf(cmd), current);
  if (cmd === '') return startingWith(TOP, current);
  return listReply((await argumentValues(cmd, args, before, valuesOf)) ?? [], current);
}

/** The global flags of the line that name the data a value comes from. */
export interface DataFlags {
  data?: string;
  api?: string;
  profile?: string;
  plugin?: string;
}

/**
 * The line's --data, --api, --profile and --plugin, each with the word after it (a leading ~ as
 * $HOME), the last one given of each, as a command would take them.
 */
export function dataFlags(words: readonly string[], home = ''): DataFlags {
  const flags: DataFlags = {};
  for (let i = 0; i < words.length - 1; i++) {
    const name = DATA_FLAGS[words[i]!];
    const value = words[i + 1]!;
    if (name) flags[name] = value.startsWith('~') ? `${home}${value.slice(1)}` : value;
  }
  return flags;
}

/** What `convx __complete` gets besides its words: the outside world, and what a test swaps in. */
export interface CompleteOptions {
  backends: BackendFactory;
  lookups?: LookupsFactory;
}

/** `convx __complete WORDS…`: prints the candidates, one a line; always exit 0. */
export async function runComplete(words: readonly string[], io: Io, options: CompleteOptions): Promise<number> {
  const valuesOf: ValuesOf = async (kind, line) => {
    try {
      const [{ createContext }, { completionValues }] = await Promise.all([import('../context.js'), import('./values.js')]);
      // a wrong stored setting stops no completion (the commands that repair it are completed too), and no warning garbles the line
      const quiet = { ...io, stderr: new Writable({ write: (_chunk, _encoding, done) => done() }) };
      const ctx = await createContext(quiet, { ...dataFlags(line, io.env.HOME), color: true, tolerant: true }, options.backends, options.lookups);
      return await completionValues(ctx, kind);
    } catch {
      return [];
    }
  };
  const found = await candidates(words.length ? words : [''], valuesOf);
  const out = streamSink(io.stdout);
  if (found.length) await out.write(`${found.join('\n')}\n`);
  await out.flush();
  return 0;
}
