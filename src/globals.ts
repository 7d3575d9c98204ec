/**
 * The global flags: options every command may take (which ones each honours is
 * commands/globals.ts's). Plain data, at the top so that the context types its
 * globals from them without importing commands/.
 */
import { FORMATS } from './output/formats.js';
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

/**
 * The colour level of a stream convx writes (chalk's: 0 none, 1 basic, 2 256 colours, 3 true
 * colour), one rule for results, notes and errors alike: none with --no-color (enabled false) or a
 * non-empty NO_COLOR; FORCE_COLOR's level where it is set (0 or false: none); else basic colours on
 * a terminal.
 */
export function colorLevel(isTTY: boolean, env: Record<string, string | undefined>, enabled: boolean): 0 | 1 | 2 | 3 {
  if (!enabled) return 0;
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return 0;
  const force = env.FORCE_COLOR;
  if (force !== undefined) {
    if (force === '0' || force === 'false') return 0;
    return force === '2' ? 2 : force === '3' ? 3 : 1;
  }
  return isTTY ? 1 : 0;
}

/** Whether the arguments ask for --no-color (before a "--"): for an error told before the flags are parsed, or when they fail to parse. */
export function noColorAsked(argv: readonly string[]): boolean {
  const end = argv.indexOf('--');
  return (end === -1 ? argv : argv.slice(0, end)).includes('--no-color');
}
