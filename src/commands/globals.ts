/** Which global flags (src/globals.ts) and formats each command honours. */
import { FORMATS, MARKDOWN, PAGE_FORMATS, type AnyFormat } from '../output/formats.js';
import { GLOBAL_OPTIONS } from '../globals.js';


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
  trend: REPORTING,
  total: REPORTING,
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
  'data check': ['--data', '--profile', '--format', ...ALWAYS],
  'data import': ['--reference-currency', ...ALWAYS],
  'data generate': [...ALWAYS],
  'data shards': ['--format', ...ALWAYS],
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
  'config profiles': ['table', 'json', 'jsonl', 'csv', 'tsv'],
  'data check': ['table', 'json', 'jsonl'],
  'data shards': ['table', 'json', 'jsonl'],
};

/**
 * The commands that print a report as one page to share too: -o html (output/html.ts), with
 * --output and --open (PAGE_OPTIONS in their flags; commands/page.ts prints the page).
 */
export const PAGE_COMMANDS: readonly string[] = ['report', 'trend'];

/** The commands that print -o markdown too (output/markdown.ts): a table or a card to paste into a ticket or a chat. */
export const MARKDOWN_COMMANDS: readonly string[] = ['report', 'order', 'contact'];

/** What the next three read of a command's definition. */
interface Honouring {
  name: string;
  globals?: readonly string[];
  formats?: readonly AnyFormat[];
}

/** The long names of the global flags a command honours: its definition's, COMMAND_GLOBALS', else all of them. */
export function commandGlobals(command: Honouring): readonly string[] {
  return command.globals ?? COMMAND_GLOBALS[command.name] ?? GLOBAL_OPTIONS.map((o) => /--[a-z-]+/.exec(o.flags)![0]);
}

/** The formats -o may name for a command: its definition's, COMMAND_FORMATS', else the reporting formats. */
export function commandFormats(command: Honouring): readonly string[] {
  return command.formats ?? COMMAND_FORMATS[command.name] ?? pageFormats(command);
}

/** The formats the context parses -o against when not the reporting ones: a definition's own, or those of a command that prints pages or markdown. */
export function pageFormats(command: Honouring): readonly AnyFormat[] {
  if (command.formats) return command.formats;
  const formats = PAGE_COMMANDS.includes(command.name) ? PAGE_FORMATS : FORMATS;
  return MARKDOWN_COMMANDS.includes(command.name) ? [...formats, MARKDOWN] : formats;
}
