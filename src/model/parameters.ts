/**
 * The query parameters of GET /conversions (`report`) and GET /conversions/items
 * (`items`), each defined once: the interface's name, the operations that take
 * it, the CLI flag and its help, the description in the server's request schema,
 * what kind of value it holds (and so how it is parsed and validated), and how it
 * filters: the column of the attributed transactions (conv) it compares.
 *
 * Everything else derives from this table: the commander options
 * (commands/options.ts), the flags a command turns into raw parameters
 * (commands/shared.ts), the parser that validates a request once on both sides
 * (query.ts), the server's request schemas (schemas.ts, documentation only), the
 * API client's query string (api/backend.ts) and the local SQL filter
 * (local/queries.ts). The query types (`ReportQuery`, `ItemsQuery`) derive from it
 * too. Adding a filter is a row here, and the column in the attribution if it is
 * new.
 *
 * Plain data: `convx --help` loads it.
 */
import type { SortKey, SourceType } from './types.js';
import { withCommas } from '../words.js';

export type Operation = 'report' | 'items' | 'trend' | 'total';

/** The buckets of a series (convx trend, GET /v1/conversions/timeframes). */
export const INTERVALS = ['hour', 'day', 'week', 'month'] as const;
export type Interval = (typeof INTERVALS)[number];
/** A series has at most this many buckets (hours over more than 41 days are refused). */
export const MAX_BUCKETS = 1000;

/** --compare: the other period of a comparison (the previous of equal length, the same dates a year before). */
export const COMPARE_TO = ['previous', 'year'] as const;
export type CompareTo = (typeof COMPARE_TO)[number];
/** --top: the sources a per-source series shows apart (the rest is one `other` series). */
export const TOP = { min: 1, max: 20, fallback: 5 } as const;

/** A parameter's kind decides its value's type and how it is parsed. */
export type ParameterKind =
  /** YYYY-MM-DD, a real calendar date */
  | 'date'
  /** any non-empty text compared as it is, blanks around it ignored (TRIMMED_KINDS) */
  | 'id'
  /** one of SOURCE_TYPES, blanks around it ignored */
  | 'sourceType'
  /** a comma-separated list of codes (countries, currencies), any case, upper-cased */
  | 'codes'
  /** free text, matched case-insensitively */
  | 'text'
  /** a whole number in decimal digits within bounds */
  | 'count'
  /** comma-separated fields of the response, "-" for descending */
  | 'sort'
  /** one of a fixed list of words (choices), a default when absent */
  | 'choice'
  /** on or off: true or false (a flag without a value) */
  | 'switch'
  /** an IANA time zone name, any case, held in its canonical spelling; UTC is held as absent */
  | 'zone';

/**
 * The kinds whose value is compared whole, an id or a source type: blanks around it are ignored, as
 * the look-ups ignore them (`convx order ' o-1'`), by the one parser (query.ts), so the CLI's flag,
 * the server's parameter and API mode's query string alike; blanks alone are an empty value. (A
 * list of codes ignores blanks around each code; `q`, text found within names, keeps its blanks.)
 */
export const TRIMMED_KINDS: ReadonlySet<ParameterKind> = new Set<ParameterKind>(['id', 'sourceType']);

export interface QueryParameter {
  /** The interface's name: the query parameter and the key of the parsed query. */
  name: string;
  kind: ParameterKind;
  /** The operations that take it. */
  in: readonly Operation[];
  /** The CLI flag as commander declares it (none: the parameter comes from a path, not a flag). */
  flag?: string;
  /** The CLI help. */
  help?: string;
  /** The description in the server's request schema (OpenAPI), per operation where they differ. */
  description: string | Readonly<Partial<Record<Operation, string>>>;
  /** Required where the operation is listed (a date of items). */
  required?: readonly Operation[];
  /**
   * How it filters the attributed transactions (conv): the column the value must equal
   * (codes: be among, compared upper-cased). A parameter without one filters otherwise
   * (the period, `q` the sources' names) or not at all (paging, sort).
   */
  column?: string;
  /** Only transactions of sources of these types match (campaignId: a smartflow's campaign is not the campaign's). */
  ofTypes?: readonly SourceType[];
  /** It picks the source: the per-source aliases (/v1/campaigns/{id}/conversions ...), whose path fixes the source, do not take it (unless inAlias); drill takes no flag of it. */
  source?: boolean;
  /**
   * A source filter the per-source aliases take too, in their query string: it narrows within the
   * path's source, which stays authoritative (a detailUrl names its row's source with sourceType
   * and sourceId: a smartflow node without a delivery, a campaign beside an automation of its id).
   */
  inAlias?: boolean;
  /** Not a query parameter of the interface: only a per-source alias's path sets it (/v1/campaigns/{campaignId}/conversions). */
  pathOnly?: boolean;
  /** codes: what one looks like. */
  codes?: { pattern: string; one: string; many: string; example: string };
  /** count: bounds and the value when absent. */
  count?: { min: number; max: number; fallback: number };
  /** sort: per operation, the default and whether several fields may be given. */
  sort?: Readonly<Partial<Record<Operation, { fallback: string; multiple: boolean }>>>;
  /** It counts only with this switch on (top: perSource): given without it, a problem; without it, the query does not hold it. */
  requires?: string;
  /** choice: the words it takes and the one when absent (none: absent is absent, compareTo). */
  choice?: { values: readonly string[]; fallback?: string };
}

/**
 * How API mode finds an order at any date when the API has no look-up by order id: the items
 * endpoint, a span of this many days at a time (a year), back this many spans from today.
 */
export const ORDER_SEARCH = { days: 365, spans: 10 } as const;

export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 1000;

/** A bound of the period: required by items; a report defaults it. */
function periodBound<const Name extends string, const Flag extends string>(name: Name, flag: Flag, day: 'first' | 'last', reportDefault: string) {
  return {
    name,
    kind: 'date',
    in: ['report', 'items', 'trend', 'total'],
    required: ['items'],
    flag,
    help: `${day} day, inclusive (YYYY-MM-DD; a day of --tz)`,
    description: { report: `${day} day; default: ${reportDefault}`, items: `${day} day` },
  } as const;
}

/**
 * The short periods of the CLI, beside --from/--to on every command that takes them: each sets both
 * dates from today, the date in the period's zone (--tz, the profile's or CONVX_TZ, else UTC) when
 * the command runs. Not parameters of the interface: the CLI turns them into dateFrom and dateTo
 * (query.ts, shortPeriod), in API mode too. One at a time, and neither with --from nor --to.
 */
export const PERIOD_FLAGS = [
  { name: 'month', flag: '--month <month>', help: 'instead of --from/--to: a calendar month, YYYY-MM (2024-03)' },
  {
    name: 'since',
    flag: '--since <days>',
    help: 'instead of --from/--to: the days ending today, today included: 7d is today and the 6 days before, 2w the same as 14d',
  },
  { name: 'lastMonth', flag: '--last-month', help: "instead of --from/--to: the calendar month before today's" },
  { name: 'ytd', flag: '--ytd', help: 'instead of --from/--to: year to date, January 1 of this year to today' },
] as const;
export type PeriodFlag = (typeof PERIOD_FLAGS)[number]['name'];

/** A list of codes of so many letters, compared with the column of its name. */
function codeList<const Name extends string, const Flag extends string>(
  name: Name,
  flag: Flag,
  letters: number,
  words: { help: string; description: string; code: string; example: string },
) {
  const { help, description, code, example } = words;
  const codes = { pattern: `^[A-Za-z]{${letters}}$`, one: `a ${code}`, many: `${code}s`, example };
  return { name, kind: 'codes', in: ['report', 'items', 'trend', 'total'], flag, help, description, column: name, codes } as const;
}

export const QUERY_PARAMETERS = [
  periodBound('dateFrom', '--from <date>', 'first', '29 days before dateTo'),
  periodBound('dateTo', '--to <date>', 'last', 'today'),
  {
    name: 'timeZone',
    kind: 'zone',
    in: ['report', 'items', 'trend', 'total'],
    flag: '--tz <zone>',
    help: 'the period\'s days are of this time zone, an IANA name (Europe/Prague); default: CONVX_TZ or the profile\'s tz, else UTC',
    description:
      "the IANA time zone whose days dateFrom and dateTo name (default UTC): the period runs from dateFrom 00:00 to the end of dateTo in this zone (a DST day has 23 or 25 hours), and a series' buckets are its hours, days, weeks and months; record timestamps stay UTC, exchange rates are those of a conversion's UTC day",
  },
  { name: 'sourceId', kind: 'id', in: ['items', 'trend'], source: true, inAlias: true, flag: '--source <id>', help: 'only this source id', description: 'only this source', column: 'source_id' },
  {
    name: 'sourceType',
    kind: 'sourceType',
    in: ['items', 'trend'],
    source: true,
    inAlias: true,
    flag: '--source-type <type>',
    help: 'only this source type: campaign, automation or smartflow',
    description: 'only this source type (with sourceId: both must match)',
    column: 'source_type',
  },
  { name: 'smartflowId', kind: 'id', in: ['items', 'trend'], source: true, flag: '--smartflow <id>', help: 'only this smartflow', description: 'only this smartflow', column: 'smartflow_id' },
  { name: 'deliveryId', kind: 'id', in: ['items', 'trend'], source: true, flag: '--delivery <id>', help: 'only this delivery', description: 'only this delivery', column: 'delivery_id' },
  { name: 'contactId', kind: 'id', in: ['items'], flag: '--contact <id>', help: 'only this contact', description: 'only this contact', column: 'contact_id' },
  { name: 'orderId', kind: 'id', in: ['items'], flag: '--order <id>', help: 'only this order id', description: 'only this order', column: 'order_id' },
  {
    name: 'campaignId',
    kind: 'id',
    in: ['items'],
    pathOnly: true,
    description: 'the campaign or automation of /v1/campaigns/{campaignId}/conversions',
    column: 'campaign_id',
    ofTypes: ['campaign', 'automation'],
  },
  codeList('country', '--country <codes>', 2, {
    help: 'only these countries: two-letter codes, comma-separated or repeated, any case (CZ,SK)',
    description: 'comma-separated two-letter country codes of the transactions, any case (e.g. CZ,sk)',
    code: 'two-letter country code',
    example: 'CZ',
  }),
  codeList('currency', '--currency <codes>', 3, {
    help: 'only these order currencies: three-letter codes, comma-separated or repeated, any case (EUR,CZK)',
    description: 'comma-separated three-letter order currencies, any case (e.g. EUR,czk)',
    code: 'three-letter currency code',
    example: 'EUR',
  }),
  {
    name: 'q',
    kind: 'text',
    in: ['report', 'trend', 'total'],
    flag: '-q, --query <text>',
    help: 'only sources whose name or smartflow name contains the text',
    description: { report: 'case-insensitive text in the row name or its smartflow name', trend: 'only sources whose name or smartflow name holds this case-insensitive text', total: 'only sources whose name or smartflow name holds this case-insensitive text' },
  },
  {
    name: 'sort',
    kind: 'sort',
    in: ['report', 'items'],
    flag: '--sort <fields>',
    help: 'sort fields, comma-separated or repeated, "-" for descending',
    description: { report: 'comma-separated fields, "-" for descending', items: 'one field, "-" for descending' },
    sort: { report: { fallback: '-conversionsAmountWTax,name', multiple: true }, items: { fallback: '-datetime', multiple: false } },
  },
  {
    name: 'limit',
    kind: 'count',
    in: ['report', 'items'],
    flag: '--limit <n>',
    help: `rows per page, 1 to ${MAX_LIMIT} (default ${DEFAULT_LIMIT})`,
    description: `rows per page (default ${DEFAULT_LIMIT})`,
    count: { min: 1, max: MAX_LIMIT, fallback: DEFAULT_LIMIT },
  },
  {
    name: 'offset',
    kind: 'count',
    in: ['report', 'items'],
    flag: '--offset <n>',
    help: 'rows to skip (default 0)',
    description: 'rows to skip (default 0)',
    count: { min: 0, max: Number.MAX_SAFE_INTEGER, fallback: 0 },
  },
  {
    name: 'interval',
    kind: 'choice',
    in: ['trend'],
    flag: '--by <interval>',
    help: `the buckets: hour, day, week (ISO, from Monday) or month (default day); at most ${withCommas(MAX_BUCKETS)} of them (hours: 41 days)`,
    description: `the buckets: hour, day, week (ISO weeks from Monday) or month; at most ${withCommas(MAX_BUCKETS)} buckets (hours over at most 41 days), more is a 400 problem`,
    choice: { values: INTERVALS, fallback: 'day' },
  },
  {
    name: 'perSource',
    kind: 'switch',
    in: ['trend'],
    flag: '--per-source',
    help: 'one series per source (the --top sources by revenue, the rest as one "other" series)',
    description: 'true: one series per source (the top sources by conversionsAmountWTax, the rest as one "other" series)',
  },
  {
    name: 'top',
    kind: 'count',
    in: ['trend'],
    flag: '--top <n>',
    help: `with --per-source: the sources shown apart, ${TOP.min} to ${TOP.max} (default ${TOP.fallback})`,
    description: `with perSource: the sources shown apart by the period's conversionsAmountWTax (default ${TOP.fallback})`,
    count: { min: TOP.min, max: TOP.max, fallback: TOP.fallback },
    requires: 'perSource',
  },
  {
    name: 'compareTo',
    kind: 'choice',
    in: ['report', 'trend', 'total'],
    flag: '--compare <period>',
    help: 'set the figures of another period beside each row: previous (the period of equal length before) or year (the same dates a year before)',
    description:
      'previous: the period of equal length ending the day before dateFrom; year: the same dates a year before (February 29 is February 28); each row, bucket or total gets a comparison (the other figures, the absolute and relative change)',
    choice: { values: COMPARE_TO },
  },
] as const satisfies readonly QueryParameter[];

/** One row of the table, with its literal types. */
export type Parameter = (typeof QUERY_PARAMETERS)[number];

/** The rows an operation takes. */
export type ParameterOf<Op extends Operation> = Parameter extends infer P ? (P extends { in: readonly (infer O)[] } ? (Op extends O ? P : never) : never) : never;

/** The value a parsed query holds for a parameter of this kind. */
type ValueOf<P extends Parameter> = P['kind'] extends 'date' | 'id' | 'text' | 'zone'
  ? string
  : P['kind'] extends 'sourceType'
    ? SourceType
    : P['kind'] extends 'codes'
      ? string[]
      : P['kind'] extends 'count'
        ? number
        : P['kind'] extends 'choice'
          ? P extends { choice: { values: readonly (infer C)[] } }
            ? C
            : string
          : P['kind'] extends 'switch'
            ? boolean
            : SortKey[];

/** Kinds a parsed query always holds: the period (defaulted for a report), paging and sort. */
type Always = 'date' | 'count' | 'sort' | 'choice';
/** Held always: of those kinds, a choice only with a fallback; never one that counts only with a switch (requires). */
type Held<P extends Parameter> = P extends { requires: string } ? false : P['kind'] extends Always ? (P extends { kind: 'choice'; choice: { fallback: string } } | { kind: Exclude<Always, 'choice'> } ? true : false) : false;

/** The parsed query of an operation: every parameter it takes, under its interface name, typed by its kind. */
export type QueryOf<Op extends Operation> = {
  [P in ParameterOf<Op> as Held<P> extends true ? P['name'] : never]: ValueOf<P>;
} & {
  [P in ParameterOf<Op> as Held<P> extends true ? never : P['name']]?: ValueOf<P>;
};

export const parameters = (operation: Operation): Parameter[] =>
  QUERY_PARAMETERS.filter((p) => (p.in as readonly Operation[]).includes(operation));

/** The parameters that narrow what an operation returns beyond the period (its filters), in the table's order. */
export const filterNames = (operation: Operation): string[] =>
  parameters(operation)
    .filter((p) => field(p, 'column') !== undefined || p.kind === 'text')
    .map((p) => p.name);

/** A parameter's field of the table, read without narrowing to the rows that have it. */
export function field<K extends keyof QueryParameter>(p: Parameter, key: K): QueryParameter[K] | undefined {
  return (p as QueryParameter)[key];
}

/** Its description for an operation. */
export function describe(p: Parameter, operation: Operation): string {
  const d = field(p, 'description')!;
  return typeof d === 'string' ? d : (d[operation] ?? d.report!);
}

/**
 * What an empty value is, for every flag that takes a value and every query parameter: refused, never
 * read as absent (`--source "$SRC"` with SRC unset would report every source). The CLI says it after
 * the flag (cli.ts), the server after the parameter (query.ts).
 */
export const EMPTY_VALUE = 'is empty: give a value, or leave it out';

/** The problem of an empty value of a flag that some command cannot run without (`token --plugin ''`). */
export const EMPTY_REQUIRED_VALUE = 'is empty: give a value';

/** The flag as typed: `-q, --query <text>` is `--query`. */
export function flagName(flag: string): string {
  return /--[a-z0-9-]+/.exec(flag)![0];
}

/** The key commander gives a flag's value: `--source-type <type>` is `sourceType`, `--no-color` is `color` (FlagsOf's rule). */
export function flagKey(flag: string): string {
  return flagName(flag)
    .slice(2)
    .replace(/^no-/, '')
    .replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}
