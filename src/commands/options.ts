/**
 * Every command's own flags (OPTIONS; their types reach the handlers as
 * CommandFlags), the flags of the query parameters (from the table in
 * model/parameters.ts), and the constants help texts and handlers share.
 * Plain data: `convx --help` loads this module.
 */
import { field, ORDER_SEARCH, parameters, PERIOD_FLAGS, type Operation, type Parameter, type ParameterOf } from '../model/parameters.js';
import { MAX_SAMPLE_SIZE } from '../model/validation.js';
import { DEFAULT_LIMITS, DEFAULT_MAX_CONNECTIONS, DEFAULT_VERSION_GRACE_SECONDS } from '../server/limits.js';
import { DEFAULT_RENDER_LIMITS, LIMIT_FLAGS } from '../validation/limits.js';
import type { FlagsOf, OptionDefinition } from '../flags.js';

/** The commander option of a query parameter, its flag kept literal (FlagsOf reads a handler's flags from it). */
export interface ParameterOption<P extends Parameter> extends OptionDefinition {
  readonly flags: P extends { flag: infer F } ? F : never;
}

/** A code list or a sort accumulates its values over repeats (`--country CZ --country sk,at`). */
const LIST_KINDS: readonly Parameter['kind'][] = ['codes', 'sort'];

/**
 * The flags of the query parameters an operation takes, in the table's order (model/parameters.ts);
 * `keep` picks some of them (a command that sets the others itself).
 */
export function parameterOptions<Op extends Operation, P extends ParameterOf<Op> = ParameterOf<Op>>(
  operation: Op,
  keep: (p: ParameterOf<Op>) => p is P = (_: ParameterOf<Op>): _ is P => true,
): ParameterOption<P>[] {
  // parameters() returns the rows of the operation, which is what ParameterOf<Op> names at the type level.
  return (parameters(operation) as ParameterOf<Op>[]).filter(keep).flatMap((p) => {
    const flag = field(p, 'flag');
    if (flag === undefined) return [];
    const option: OptionDefinition = { flags: flag, description: field(p, 'help')! };
    if (LIST_KINDS.includes(p.kind)) option.list = true;
    // its flags are p's flag, which ParameterOption<P> types literally
    return [option as ParameterOption<P>];
  });
}

/** The flags of the short periods (--month, --since, --last-month, --ytd; model/parameters.ts PERIOD_FLAGS), their flags literal. */
const SHORT_PERIOD_OPTIONS = PERIOD_FLAGS.map(({ flag, help }) => ({ flags: flag, description: help }));

/** A command's flags with the short periods after --to (every command that takes --from/--to for a period). */
function withShortPeriods<O extends OptionDefinition>(options: O[]): (O | (typeof SHORT_PERIOD_OPTIONS)[number])[] {
  const at = options.findIndex((o) => o.flags.startsWith('--to ')) + 1;
  return [...options.slice(0, at), ...SHORT_PERIOD_OPTIONS, ...options.slice(at)];
}

/** --from and --to. */
export const PERIOD_OPTIONS = parameterOptions('items', (p): p is Extract<ParameterOf<'items'>, { kind: 'date' }> => p.kind === 'date');

/** Flags without a default, a [flags, description] pair a line; the flags keep their literal types (FlagsOf). */
export function described<const Flags extends string>(rows: readonly (readonly [Flags, string])[]): { flags: Flags; description: string }[] {
  return rows.map(([flags, description]) => ({ flags, description }));
}

/** The limit flags, shared by `convx validate` and `convx serve`. */
export const RENDER_LIMIT_OPTIONS: OptionDefinition[] = LIMIT_FLAGS.map((f) => ({
  flags: `--${f.flag} <${f.unit === 'MB' ? 'mb' : f.unit === 'ms' ? 'ms' : 'n'}>`,
  description: `${f.description}, in ${f.unit} (default ${DEFAULT_RENDER_LIMITS[f.name]})`,
}));

/** --stdin of the look-ups: ids one a line, as a support queue holds them (README, several at once). */
const STDIN_IDS = (what: string, more = '') => `read more ids from stdin, one ${what} a line (blank lines ignored); with several ids: one answer each, exit 3 when any is not found${more}`;

/** Not a query parameter: every page, walked by the command. */
export const ALL_OPTION = { flags: '--all', description: 'every row from --offset on, streamed' } as const;

/**
 * The flags of a command that prints a page (-o html; commands/globals.ts PAGE_COMMANDS): where it
 * goes and whether a browser shows it. commands/page.ts reads them.
 */
export const PAGE_OPTIONS = described([
  ['--output <file>', '-o html: write the page to FILE (replaced whole: written beside it, then renamed; through a symbolic link to its file; a FIFO or a terminal written into) instead of stdout'],
  ['--open', '-o html with --output: open the page in the default browser (not when CI is set or stdout is not a terminal)'],
]);

export { VALIDATE_FORMATS } from '../output/formats.js';

/** convx validate's comparison with an earlier result (commands/baseline.ts, model/baseline.ts; issue 20, point 4). */
export const BASELINE_OPTIONS = described([
  ['--baseline <file>', 'compare with an earlier result, the JSON of -o json: audience drift, new and gone findings, changed samples; new findings fail the run'],
  ['--max-audience-drift <percent>', 'with --baseline: fail when the deliverable audience differs from the baseline by more than this, e.g. 10%'],
  ['--strict-baseline', 'with --baseline: fail on any change (changed samples, findings gone, any audience drift)'],
  ['--update-baseline', 'with --baseline: write this result to that file (replaced whole) after comparing; changes do not fail the run'],
]);

/** The look-ups by id (order, contact): the zone their cards show times in beside UTC (commands/shared.ts, cardZone). */
export const CARD_ZONE_OPTION = {
  flags: '--tz <zone>',
  description: "show times in this time zone too, beside UTC (an IANA name, e.g. Europe/Prague; default: CONVX_TZ or the profile's tz)",
} as const;

/** `init` and `auth login` check an API profile before they store it (api/interface-check.ts); this skips that. */
const NO_VERIFY_OPTION = {
  flags: '--no-verify',
  description: 'store without checking that the URL answers the reporting interface (/healthz, the /v1 prefix) and that the API accepts the token',
} as const;

/** Drill's target fixes the source: it takes the items parameters but the source filters. */
const notSourceFilter = (p: ParameterOf<'items'>): p is Exclude<ParameterOf<'items'>, { source: true }> => !field(p, 'source');

/**
 * Each command's own flags, apart from the rest of its definition so that their literal types
 * reach its handler (CommandFlags): a flag renamed here breaks the build where it is read.
 */
export const OPTIONS = {
  report: [
    ...withShortPeriods(parameterOptions('report')),
    ALL_OPTION,
    { flags: '--breakdown', description: 'one row per source and order currency (table, csv, tsv)' },
    ...PAGE_OPTIONS,
  ],
  items: [...withShortPeriods(parameterOptions('items')), ALL_OPTION],
  trend: [
    ...withShortPeriods(parameterOptions('trend')),
    { flags: '--breakdown', description: 'one row per bucket and order currency (table, csv, tsv)' },
    { flags: '--no-chart', description: 'on a terminal: the table alone, without the chart drawn above it' },
    ...PAGE_OPTIONS,
  ],
  total: [...withShortPeriods(parameterOptions('total')), { flags: '--breakdown', description: 'one row per order currency (table, csv, tsv)' }],
  order: [
    ...withShortPeriods(
      PERIOD_OPTIONS.map((o) => ({
        ...o,
        description: `${o.description}; default: every date (API mode: the API's look-up by order id; an API without one is searched ${ORDER_SEARCH.days} days at a time, ${ORDER_SEARCH.spans} years back)`,
      })),
    ),
    { ...CARD_ZONE_OPTION, description: "--from and --to are days of this time zone, and the card shows times in it too, beside UTC (an IANA name, e.g. Europe/Prague; default: CONVX_TZ or the profile's tz, else UTC)" },
    { flags: '--stdin', description: STDIN_IDS('order id') },
  ],
  contact: [CARD_ZONE_OPTION, { flags: '--stdin', description: STDIN_IDS('contact id, e-mail address or client contact id', ', else 2 when a key names several contacts') }],
  drill: [
    // A detailUrl names its zone (none: a UTC row's), which only --tz overrides (drill.ts).
    ...withShortPeriods(parameterOptions('items', notSourceFilter)).map((o) =>
      o.flags === '--tz <zone>' ? { ...o, description: "the period's days are of this time zone, an IANA name (Europe/Prague); default: a detailUrl's own zone (none: UTC), else CONVX_TZ or the profile's tz, else UTC" } : o,
    ),
    ALL_OPTION,
  ],
  validate: [
    { flags: '--sample-size <n>', description: `rendered samples per language, 1 to ${MAX_SAMPLE_SIZE} (overrides options.sampleSize)` },
    { flags: '--resolve-only', description: 'counts and languages only, no rendering or template checks' },
    { flags: '--max-warnings <n>', description: 'exit 1 when there are more warnings than this (default: no limit)' },
    {
      flags: '--clients <globs>',
      description: 'mail clients whose support of the HTML is checked, family.platform globs: gmail.*,outlook.windows (default: the most used, docs/validation.md; overrides options.clients)',
    },
    {
      flags: '--tracking-domains <domains>',
      description: "the shop's own domains (comma-separated; subdomains count): their links must carry the tracking parameters (overrides options.trackingDomains and the profile's trackingDomains)",
    },
    {
      flags: '--tracking-params <names>',
      description: 'the tracking parameters those links carry (default: utm_source,utm_medium,utm_campaign; overrides options.trackingParams and the profile)',
    },
    { flags: '--ignore <codes>', description: 'leave out the findings of these codes (comma-separated, repeatable)', list: true },
    { flags: '--fail-on <codes>', description: 'make these codes fatal, or every warning with "warning" (comma-separated, repeatable)', list: true },
    ...BASELINE_OPTIONS,
    ...RENDER_LIMIT_OPTIONS.map((o) => ({ ...o, description: `${o.description}; local mode only` })),
  ],
  serve: [
    { flags: '--host <host>', description: 'address to listen on', defaultValue: '127.0.0.1' },
    { flags: '--port <port>', description: 'port to listen on (0: any free port)', defaultValue: '8080' },
    ...described([
      ['--jwt-public-key <file>', 'verify RS256/ES256 tokens with this PEM public key'],
      ['--jwks <file>', 'verify RS256/ES256 tokens with this JSON Web Key Set'],
      ['--jwt-issuer <iss>', 'accept only tokens whose "iss" claim is this'],
      ['--jwt-audience <aud>', 'accept only tokens whose "aud" claim holds this'],
      ['--allow-tokens-without-exp', 'accept tokens that never expire (no "exp" claim); off by default'],
      ['--pool-size <n>', 'DuckDB connections the requests share (default: four per core); each query runs on cores/n threads, at least one'],
    ]),
    { flags: '--body-limit <size>', description: 'largest request body: bytes, or with k/m for KiB/MiB (larger: 413)', defaultValue: '1m' },
    {
      flags: '--rate-limit <n>',
      description: 'requests per minute per token, also the burst (over it: 429 with Retry-After; 0: no limit)',
      defaultValue: String(DEFAULT_LIMITS.rateLimitPerMinute),
    },
    {
      flags: '--query-timeout <seconds>',
      description: 'time budget of a request from its arrival to its answer, waiting for its turn included (over it: 503 with Retry-After; 0: no limit)',
      defaultValue: String(DEFAULT_LIMITS.queryTimeoutMs / 1000),
    },
    {
      flags: '--version-grace <seconds>',
      description: 'how long the data a reload replaced still answers requests pinned to its version (Convx-Data-Version; after it: 412; 0: none)',
      defaultValue: String(DEFAULT_VERSION_GRACE_SECONDS),
    },
    {
      flags: '--max-connections <n>',
      description: 'connections open at once; one more is closed as it comes, before a request is read (0: no limit)',
      defaultValue: String(DEFAULT_MAX_CONNECTIONS),
    },
    {
      flags: '--body-timeout <seconds>',
      description: "time a request's headers and body may take to arrive (over it: 408, and the connection is closed; 0: no limit)",
      defaultValue: String(DEFAULT_LIMITS.bodyTimeoutMs / 1000),
    },
    {
      flags: '--send-timeout <seconds>',
      description: 'time an answer may go without the client taking any of it (over it: the connection is closed; 0: no limit)',
      defaultValue: String(DEFAULT_LIMITS.sendTimeoutMs! / 1000),
    },
    ...described([
      ['--plugin-concurrency <n>', 'requests of one plugin that run at once (default: half of --pool-size); more wait their turn, round-robin between plugins'],
      ['--token-concurrency <n>', 'requests of one token that run at once (default: as many as its plugin)'],
      ['--plugin-queue <n>', 'requests of one plugin that may wait for their turn (default: eight per pooled connection, at least 64); one more: 503 busy with Retry-After'],
    ]),
    ...RENDER_LIMIT_OPTIONS,
    {
      flags: '--no-health-log',
      description: "leave the answers 200 to GET /healthz out of the access log (a load balancer's health checks: one a second from each HAProxy of convx data shards); every other answer is logged",
    },
    {
      flags: '--shared-tables',
      description: "serve a dataset of several plugins whose orders, touches or contacts have no plugin_id, which every plugin's token then reads whole (refused without it)",
    },
    { flags: '--no-compression', description: 'send answers uncompressed (behind a proxy that compresses); by default gzip or br as Accept-Encoding asks, for answers over 1 KiB' },
    { flags: '--cors-origin <origins>', description: 'let browser scripts of these origins call the API (CORS): scheme://host[:port], comma-separated; none by default' },
    {
      flags: '--max-open-plugins <n>',
      description: 'with --data a directory of plugin files (data import --split-plugins): files open at once (default: 16); one more closes the least recently used that no request holds',
    },
    {
      flags: '--max-plugin-memory <size>',
      description:
        "with --data a directory of plugin files: the open files' memory all together (DuckDB's and their per-day sums'), bytes or with k/m/g for KiB/MiB/GiB (default: no bound); each file's DuckDB memory_limit (at least 64 MiB), and past it the least recently used files no request holds are closed",
    },
  ],
  token: [
    { flags: '--expires <duration>', description: 'lifetime: 90s, 15m, 1h, 7d, 2w', defaultValue: '1h' },
    { flags: '--issuer <iss>', description: 'the "iss" claim, for a server started with --jwt-issuer' },
    { flags: '--audience <aud>', description: 'the "aud" claim, for a server started with --jwt-audience' },
  ],
  init: [NO_VERIFY_OPTION],
  'auth login': [{ flags: '--with-token', description: 'read the token from stdin instead of a hidden prompt' }, NO_VERIFY_OPTION],
  'data import': [
    { flags: '--into <file>', description: 'the .duckdb file to write (written beside it first, renamed when complete)' },
    { flags: '--force', description: 'replace an existing --into file' },
    {
      flags: '--split-plugins',
      description: 'write one file per plugin, DIR/<plugin>.duckdb, into the directory --into names (made if missing); `convx serve --data DIR` serves them',
    },
    {
      flags: '--shared-tables',
      description: "with --split-plugins: split a dataset whose orders, touches or contacts have no plugin_id, each plugin's file then holding all of their rows (refused without it)",
    },
    {
      flags: '--append',
      description: "add the dataset's new files (new files of its tables' folders, after the imported ones) to the --into file an earlier import wrote; it reads only those and attributes again only the orders they can change, and the result is what a full import writes",
    },
  ],
  'data generate': [
    { flags: '--out <dir>', description: 'directory to write (must be empty or absent)' },
    { flags: '--seed <n>', description: 'random seed; the same flags give the same files', defaultValue: '1' },
    { flags: '--contacts <n>', description: 'number of contacts', defaultValue: '1000' },
    { flags: '--orders <n>', description: 'number of orders (refunds come on top)', defaultValue: '2000' },
    { flags: '--touches <n>', description: 'number of touches (clicks and opens)', defaultValue: '20000' },
    { flags: '--from <date>', description: 'first day of orders', defaultValue: '2024-01-01' },
    { flags: '--to <date>', description: 'last day of orders', defaultValue: '2024-06-30' },
    { flags: '--file-format <format>', description: 'csv or parquet', defaultValue: 'csv' },
    { flags: '--plugins <n>', description: 'number of plugins (tenants)', defaultValue: '1' },
    { flags: '--sources <n>', description: 'sources of every plugin: the 16 named ones (or the first n), more are campaigns', defaultValue: '16' },
    { flags: '--currencies <n>', description: 'order currencies, from 2 (EUR, CZK) to 8 (USD, PLN, GBP, HUF, CHF, SEK)', defaultValue: '4' },
    { flags: '--force', description: 'replace a non-empty --out directory' },
  ],
  'data shards': [
    { flags: '--out <dir>', description: 'the directory to write: shards.map, haproxy.cfg, 503.http and shard_K/ (links to the files each shard serves); written beside it first, renamed when complete' },
    { flags: '--shards <n>', description: 'number of shards (convx serve processes), from 1 to 256' },
    { flags: '--servers <list>', description: "the shards' host:port, comma-separated, in order (default: 127.0.0.1:8081, :8082 ...)" },
    { flags: '--listen <host:port>', description: 'where HAProxy listens', defaultValue: '127.0.0.1:8080' },
    { flags: '--force', description: 'replace an existing --out directory' },
  ],
  completion: [
    {
      flags: '--values <kind>',
      description: 'what the scripts call: print the plugins, currencies, countries, sources, smartflows or profiles of the configured dataset or API, one a line (nothing on any error, within 2 s)',
    },
  ],
} as const satisfies Record<string, readonly OptionDefinition[]>;

/**
 * The flags a command's handler gets, typed from its definition above: a flag renamed
 * or removed there breaks the build where the handler reads it.
 */
export type CommandFlags<Name extends keyof typeof OPTIONS> = FlagsOf<(typeof OPTIONS)[Name]>;

