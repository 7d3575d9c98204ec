import { FORMATS } from '../output/format.js';
import type { FlagsOf, OptionDefinition } from './flags.js';

/**
 * Options every command takes (commander reads them before or after the command
 * name). Their literal types stay (`as const`): GlobalFlags derives from them.
 */
export const GLOBAL_OPTIONS = [
  { flags: '--data <dir>', description: 'local mode: the dataset directory or imported .duckdb file (env CONVX_DATA)' },
  { flags: '--api <url>', description: 'API mode: the reporting base URL, e.g. https://host/v1 (env CONVX_API_URL)' },
  { flags: '--delivery-api <url>', description: 'API mode: the delivery base URL, e.g. https://host/v4 (env CONVX_DELIVERY_API_URL)' },
  { flags: '--token-file <file>', description: 'API mode: read the bearer token from a file, or - for stdin (else CONVX_TOKEN or the profile)' },
  { flags: '--timeout <seconds>', description: 'API mode: connect and answer timeout (default 30)' },
  { flags: '--profile <name>', description: 'the config profile to use (env CONVX_PROFILE)' },
  { flags: '--plugin <id>', description: 'the plugin (tenant) of a dataset that holds several' },
  { flags: '--reference-currency <code>', description: 'local mode: report amounts in this currency (default: from the dataset)' },
  { flags: '-o, --format <format>', description: `output format: ${FORMATS.join(', ')}` },
  { flags: '--fields <list>', description: 'only these fields, comma-separated or repeated (dotted for nested: source.name)', list: true },
  {
    flags: '--no-formula-escape',
    description: "csv/tsv: print text cells as they are; by default text beginning with = + - @ tab or CR gets a leading ' (quoted in csv) so spreadsheets do not run it as a formula (numbers are never changed)",
  },
  { flags: '--wide', description: 'table: every column at full width, names uncut (a table fits the terminal otherwise)' },
  { flags: '--no-color', description: 'no colours (also NO_COLOR)' },
  { flags: '--quiet', description: 'no summaries, notes (left-out columns, empty-result hints) or progress on stderr' },
] as const satisfies readonly OptionDefinition[];

/**
 * The global flags as commander parses them, typed from GLOBAL_OPTIONS:
 * `{ data?: string; ...; formulaEscape?: boolean; color?: boolean; quiet?: boolean }`.
 * A flag renamed there is renamed here, and every place that reads it fails to build.
 */
export type GlobalFlags = FlagsOf<typeof GLOBAL_OPTIONS>;

/** Flags that change nothing but how messages look; every command takes them. */
const ALWAYS = ['--no-color', '--quiet'];

const MODE = ['--data', '--api', '--token-file', '--timeout', '--profile', '--plugin'];
const REPORTING = [...MODE, '--reference-currency', '--format', '--fields', '--no-formula-escape', '--wide', ...ALWAYS];

/**
 * The global flags each command honours (its --help lists them; any other one
 * given on the command line is a usage error). A command not named here, and
 * without `globals` in its definition, takes them all.
 */
export const COMMAND_GLOBALS: Record<string, readonly string[]> = {
  report: REPORTING,
  items: REPORTING,
  order: REPORTING,
  drill: REPORTING,
  contact: REPORTING,
  validate: [...MODE, '--delivery-api', '--format', ...ALWAYS],
  serve: ['--data', '--profile', '--reference-currency', ...ALWAYS],
  token: ['--plugin', ...ALWAYS],
  init: ['--profile', ...ALWAYS],
  'auth login': ['--api', '--delivery-api', '--profile', ...ALWAYS],
  'auth status': ['--data', '--api', '--token-file', '--profile', '--format', ...ALWAYS],
  'auth logout': ['--profile', ...ALWAYS],
  'data check': ['--format', ...ALWAYS],
  'data import': ['--reference-currency', ...ALWAYS],
  'data generate': [...ALWAYS],
  'config list': ['--profile', '--format', ...ALWAYS],
  'config get': ['--profile', ...ALWAYS],
  'config set': ['--profile', ...ALWAYS],
  'config unset': ['--profile', ...ALWAYS],
  'config profiles': ['--profile', '--format', ...ALWAYS],
  // --values reads the dataset or API that these name, as a report would
  completion: ['--data', '--api', '--token-file', '--timeout', '--profile', '--plugin', ...ALWAYS],
};

/**
 * The formats -o may name for commands that print text or one JSON document
 * rather than rows (their default stays as it is: text unless -o json).
 */
export const COMMAND_FORMATS: Record<string, readonly string[]> = {
  'auth status': ['table', 'json', 'jsonl'],
  'config list': ['table', 'json', 'jsonl'],
  'config profiles': ['table', 'json', 'jsonl'],
  'data check': ['table', 'json', 'jsonl'],
};

/** What the next two read of a command's definition. */
interface Honouring {
  name: string;
  globals?: readonly string[];
  formats?: readonly string[];
}

/** The long names of the global flags a command honours: its definition's, COMMAND_GLOBALS', else all of them. */
export function commandGlobals(command: Honouring): readonly string[] {
  return command.globals ?? COMMAND_GLOBALS[command.name] ?? GLOBAL_OPTIONS.map((o) => /--[a-z-]+/.exec(o.flags)![0]);
}

/** The formats -o may name for a command: its definition's, COMMAND_FORMATS', else the reporting formats. */
export function commandFormats(command: Honouring): readonly string[] {
  return command.formats ?? COMMAND_FORMATS[command.name] ?? FORMATS;
}
