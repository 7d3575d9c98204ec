/** Flags and helpers shared by the reporting commands. */
import type { Backend, DataCoverage, DateRange, KnownSource, RowStream } from '../backend.js';
import { closest } from '../model/closest.js';
import type { Context } from '../context.js';
import { UsageError } from '../errors.js';
import { timed } from '../timings.js';
import { bucketCount, cliWording, DEFAULT_REPORT_DAYS, EVERY_DATE, monthDates, shortPeriod, type Dates, type RawParams } from '../model/query.js';
import { WINDOW_DAYS, type Page, type Paging } from '../model/types.js';
import {
  BREAKDOWN_COLUMNS,
  BREAKDOWN_TABLE_COLUMNS,
  comparisonColumns,
  ITEM_COLUMNS,
  ITEM_TABLE_COLUMNS,
  ITEM_TABLE_DROP_FIRST,
  REPORT_COLUMNS,
  REPORT_TABLE_COLUMNS,
  withChangeColumns,
} from '../output/columns.js';
import { otherPeriod } from '../model/compare.js';
import type { CardOptions } from '../output/cards.js';
import { breakdownKind, type RecordKind, type TableExtras } from '../output/writer.js';
import { field, flagKey, flagName, MAX_BUCKETS, parameters, PERIOD_FLAGS, QUERY_PARAMETERS, type CompareTo, type Interval, type Operation } from '../model/parameters.js';
import { canonicalZone, periodInstants, UTC, zoneProblem, zoneTime } from '../model/period.js';
import { shellWord, withCommas } from '../words.js';

export const ITEM_KIND: RecordKind = {
  columns: ITEM_COLUMNS,
  tableColumns: ITEM_TABLE_COLUMNS,
  dropFirst: ITEM_TABLE_DROP_FIRST,
  objectFields: ['attribution', 'source'],
};

export const REPORT_KIND: RecordKind = {
  columns: REPORT_COLUMNS,
  tableColumns: REPORT_TABLE_COLUMNS,
  objectFields: ['source', 'breakdown'],
};

export const REPORT_BREAKDOWN_KIND = breakdownKind(REPORT_KIND, BREAKDOWN_COLUMNS, BREAKDOWN_TABLE_COLUMNS);

/**
 * A kind compared with another period (--compare): the comparison's columns after the row's
 * (`bucket`: a series', which names the bucket it lines up with, in a table too, Against, beside its own:
 * with `previous` the other period's bucket in the same place, which may be a part of a week or
 * month), a change column beside each headline figure of a table, and `comparison` a whole object
 * --fields may name in json.
 */
function comparedKind(kind: RecordKind, bucket: boolean): RecordKind {
  const tableColumns = bucket ? kind.tableColumns.flatMap((c) => (c === 'bucket' ? [c, 'comparison.bucket'] : [c])) : kind.tableColumns;
  return {
    ...kind,
    columns: [...kind.columns, ...comparisonColumns(bucket)],
    tableColumns: withChangeColumns(tableColumns),
    objectFields: [...kind.objectFields, 'comparison'],
  };
}

/** The kind a command prints: `plain`, or with --compare that kind compared (refused with --breakdown, see refuseBreakdownCompare). */
export function compareAwareKind(flags: { breakdown?: boolean | undefined }, query: { compareTo?: string | undefined }, plain: RecordKind, bucket: boolean): RecordKind {
  refuseBreakdownCompare(flags, query);
  return query.compareTo === undefined ? plain : comparedKind(plain, bucket);
}

/**
 * trend and total: a line on stderr naming the period, in a table with --compare (and the period compared
 * with), and in any format when a short period (--month …) or a default chose it; none for an empty
 * result, whose explanation names them.
 */
export function comparedSummary(ctx: Context, query: { dateFrom: string; dateTo: string; timeZone?: string; compareTo?: CompareTo }, chosen: string | undefined, empty: boolean): void {
  // an empty result's explanation names the period (and the one compared) itself
  if (empty) return;
  if ((query.compareTo !== undefined && ctx.format === 'table') || chosen !== undefined) ctx.log.info(periodText(query, chosen));
}

/**
 * The period and, with --compare, the one it is compared with, as a summary on stderr names them;
 * `chosen`: the short period that chose it, as typed (`2024-03-01..2024-03-31 (--month 2024-03)`).
 */
export function periodText(query: { dateFrom: string; dateTo: string; timeZone?: string; compareTo?: CompareTo }, chosen?: string): string {
  // its zone where it is not UTC: `2024-03-01..2024-03-31 Europe/Prague`
  const dates = `${query.dateFrom}..${query.dateTo}${query.timeZone === undefined ? '' : ` ${query.timeZone}`}`;
  const period = chosen === undefined ? dates : `${dates} (${chosen})`;
  if (query.compareTo === undefined) return period;
  const other = otherPeriod(query, query.compareTo);
  return `${period} compared with ${other.dateFrom}..${other.dateTo} (${query.compareTo === 'year' ? 'a year before' : 'the previous period'})`;
}

/** How the CLI names each interface parameter, so errors speak in flags: the flag as declared, short form first (`-q`). */
export const FLAG_FOR_PARAMETER: Record<string, string> = Object.fromEntries(
  QUERY_PARAMETERS.flatMap((p) => {
    const flag = field(p, 'flag');
    return flag === undefined ? [] : [[p.name, flag.split(/[ ,]/)[0]!]];
  }),
);

/**
 * The raw parameters of an operation from a command's parsed flags: each parameter with a
 * flag (model/parameters.ts) under its interface name, its value as typed. settings: the
 * defaults of the environment and profile (the time zone, CONVX_TZ or tz) where no flag is given.
 */
export function queryParams(
  operation: Operation,
  flags: { readonly [flag: string]: string | boolean | undefined },
  settings: { readonly tz?: string; readonly tzFrom?: string } = {},
): RawParams {
  const raw: RawParams = {};
  for (const p of parameters(operation)) {
    const flag = field(p, 'flag');
    const value = flag === undefined ? undefined : flags[flagKey(flag)];
    if (typeof value === 'string') raw[p.name] = value;
    // a switch (--per-source) is a flag without a value
    else if (value === true && p.kind === 'switch') raw[p.name] = 'true';
    else if (p.kind === 'zone' && settings.tz !== undefined) raw[p.name] = defaultZone(settings.tz, settings.tzFrom);
  }
  return raw;
}

/**
 * The zone a look-up's card shows its times in beside UTC (order, contact: --tz, else CONVX_TZ or
 * the profile's tz), by its canonical name; undefined for UTC, where a card keeps one time.
 */
export function cardZone(given: string | undefined, settings: { readonly tz?: string; readonly tzFrom?: string }): string | undefined {
  const zone = given ?? settings.tz;
  if (zone === undefined) return undefined;
  const problem = zoneProblem(zone);
  if (problem !== undefined) {
    if (given !== undefined) throw new UsageError(`--tz: ${problem}`);
    defaultZone(zone, settings.tzFrom);
  }
  const name = canonicalZone(zone)!;
  return name === 'UTC' ? undefined : name;
}

/** How a look-up's card is laid out: stdout's colours, the terminal's width (none off a terminal or with --wide) and the zone beside UTC. */
export function cardOptions(ctx: Context, zone: string | undefined): CardOptions {
  const width = ctx.output.tableWidth();
  return { chalk: ctx.chalk, ...(width !== undefined ? { width } : {}), ...(zone !== undefined ? { timeZone: zone } : {}) };
}

/** A period a short period flag chose: its dates and the flag as typed (`--since 7d`). */
export interface ChosenPeriod extends Dates {
  chosen: string;
}

/**
 * The short period given (--month, --since, --last-month, --ytd: model/parameters.ts PERIOD_FLAGS) as
 * its dates, today being the date of io.now() in `zone` (a zone the parser refuses: UTC's today
 * meanwhile); undefined without one. A usage error with --from or --to, or with another of them.
 */
export function chosenPeriod(
  flags: { readonly [flag: string]: string | boolean | undefined },
  now: Date,
  zone: string | undefined,
): ChosenPeriod | undefined {
  const given = PERIOD_FLAGS.filter((p) => flags[p.name] !== undefined && flags[p.name] !== false);
  if (given.length === 0) return undefined;
  const typed = (p: (typeof given)[number]) => (typeof flags[p.name] === 'string' ? `${flagName(p.flag)} ${flags[p.name] as string}` : flagName(p.flag));
  const [first, second] = given.map((p) => flagName(p.flag));
  if (second !== undefined) throw new UsageError(`${first} and ${second} do not go together: each sets the whole period`, [], 'give one of them');
  const bound = flags.from !== undefined ? '--from' : flags.to !== undefined ? '--to' : undefined;
  if (bound !== undefined) throw new UsageError(`${first} and ${bound} do not go together: ${first} sets both dates of the period`, [], `drop ${bound}, or give --from and --to instead of ${first}`);
  const p = given[0]!;
  const dates = shortPeriod(p.name, flags[p.name] as string | true, now, canonicalZone(zone ?? UTC) ?? UTC);
  return { ...dates, chosen: typed(p) };
}

/**
 * The raw parameters of report, items, trend or total (queryParams) with the period of a short period
 * flag, and that flag as typed (undefined without one).
 */
export function periodParams(
  operation: Operation,
  flags: { readonly [flag: string]: string | boolean | undefined },
  ctx: Pick<Context, 'settings' | 'io'>,
): { raw: RawParams; chosen?: string } {
  const raw = queryParams(operation, flags, ctx.settings);
  const period = chosenPeriod(flags, ctx.io.now(), raw.timeZone);
  return period === undefined ? { raw } : { raw: { ...raw, dateFrom: period.dateFrom, dateTo: period.dateTo }, chosen: period.chosen };
}

/** The zone of the environment or profile, refused in the parser's words naming where it came from. */
function defaultZone(zone: string, from = 'the default time zone'): string {
  const problem = zoneProblem(zone);
  if (problem !== undefined) throw new UsageError(`${from}: ${problem}`, [], 'set it to an IANA name, or give --tz');
  return zone;
}

/** Runs a parse* of model/query.ts, restating its problems with the CLI's flag names (and wording, where a problem names another parameter). */
export function parseFlags<T>(parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    if (error instanceof UsageError && error.problems.length) {
      const text = error.problems.map((p) => `${FLAG_FOR_PARAMETER[p.parameter] ?? p.parameter}: ${cliWording(p) ?? p.message}`);
      throw new UsageError(text.length === 1 ? text[0]! : `invalid flags:\n  ${text.join('\n  ')}`, error.problems);
    }
    throw error;
  }
}

/**
 * Opens the backend, runs work and closes it. A progress line (startProgress) says "reading and checking the dataset"
 * while it opens; with `progress: true`, work gets the line to name its own phases, else it is cleared
 * before work runs (which may print anything).
 */
export async function withBackend<T>(
  ctx: Context,
  work: (backend: Backend, progress: Progress) => Promise<T>,
  options: { progress?: boolean } = {},
): Promise<T> {
  const progress = startProgress(ctx);
  try {
    if (ctx.settings.mode !== 'api') progress.phase('reading and checking the dataset');
    const backend = await timed(ctx.settings.mode === 'api' ? 'set up the API client' : 'open the dataset', () => ctx.openBackend({
      // API mode, --all: the pages fetched so far, on the same line (not where stdout is that terminal: the rows land there).
      onPage: (fetched, total) => {
        if (!ctx.io.stdoutIsTTY) progress.phase(`fetched ${withCommas(fetched)} of ${withCommas(total)} row${total === 1 ? '' : 's'}`);
      },
    }));
    try {
      if (!options.progress) progress.done();
      return await work(backend, progress);
    } finally {
      await backend.close();
    }
  } finally {
    progress.done();
  }
}

/** A progress line on stderr: the phase of the work and the seconds it has taken. */
export interface Progress {
  phase(message: string): void;
  /** Removes the line, so that something else can be printed; the next phase brings it back. */
  clear(): void;
  /** Removes the line for good. */
  done(): void;
}

/** Work that ends sooner than this shows no progress line at all. */
export const PROGRESS_DELAY_MS = 1000;

/** True where the environment says it is a CI job (CI set to anything but "", "0" or "false"). */
export function isCI(env: Context['io']['env']): boolean {
  const ci = env.CI?.trim().toLowerCase();
  return ci !== undefined && ci !== '' && ci !== '0' && ci !== 'false';
}

/**
 * A progress line for a person at a terminal: only when stderr is a terminal, never with --quiet,
 * in a CI job (CI set) or with -o json/jsonl, and only once the work has taken PROGRESS_DELAY_MS,
 * so quick commands print nothing. It redraws every second with the time taken.
 */
export function startProgress(ctx: Context): Progress {
  const { io, globals, format } = ctx;
  if (globals.quiet || !io.stderrIsTTY || isCI(io.env) || format === 'json' || format === 'jsonl') {
    return { phase: () => undefined, clear: () => undefined, done: () => undefined };
  }
  const started = Date.now();
  // CONVX_PROGRESS_DELAY_MS: how long work runs before the line shows (a whole number of ms).
  const delay = /^\d+$/.test(io.env.CONVX_PROGRESS_DELAY_MS ?? '') ? Number(io.env.CONVX_PROGRESS_DELAY_MS) : PROGRESS_DELAY_MS;
  let message: string | undefined;
  let timer: NodeJS.Timeout | undefined;
  let shown = false;
  let finished = false;
  const draw = () => {
    if (finished || message === undefined) return;
    ctx.log.progress(`${message} (${Math.floor((Date.now() - started) / 1000)} s)`);
    shown = true;
  };
  const tick = () => {
    draw();
    timer = setTimeout(tick, 1000 - ((Date.now() - started) % 1000));
    timer.unref?.();
  };
  return {
    phase(next) {
      if (finished) return;
      message = next;
      if (timer === undefined) {
        timer = setTimeout(tick, Math.max(0, delay - (Date.now() - started)));
        timer.unref?.();
      } else if (Date.now() - started >= delay) draw();
    },
    clear() {
      if (shown) ctx.log.done();
      shown = false;
      message = undefined;
    },
    done() {
      finished = true;
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      if (shown) ctx.log.done();
      shown = false;
    },
  };
}

/** Prints the backend's dataset warnings (local mode) on stderr, unless --quiet; stdout never changes. */
export function printDatasetWarnings(ctx: Context, backend: Backend): void {
  if (ctx.globals.quiet) return;
  const warnings = (backend as Backend & { warnings?: () => string[] }).warnings?.() ?? [];
  for (const warning of warnings) ctx.log.warn(warning);
}

/**
 * Streams every row of a query to the output. With a progress line, it counts the records written
 * ("writing 20,000 of 43,788 records"), unless stdout is the same terminal, where the line would
 * land among the rows: there it is cleared before the first row.
 */
export async function writeAll<T>(
  ctx: Context,
  kind: RecordKind,
  stream: RowStream<T>,
  start: number,
  progress: Progress = startProgress(ctx),
): Promise<number> {
  const count = Math.max(stream.totalCount - start, 0);
  const total = withCommas(count);
  if (ctx.io.stdoutIsTTY) progress.clear();
  else progress.phase(`writing ${total} record${count === 1 ? '' : 's'}`);
  try {
    return await ctx.output.stream(kind, stream, start, (written) => {
      // API mode: the pages fetched (withBackend's onPage) already move the line, page by page.
      if (!ctx.io.stdoutIsTTY && ctx.settings.mode !== 'api') progress.phase(`writing ${withCommas(written)} of ${total} records`);
    });
  } finally {
    progress.done();
  }
}

/**
 * A listing as report and items print it: a page, or with --all every row streamed; then either
 * why it is empty (explainEmpty) or which rows these were (pageSummary).
 */
export async function printListing<T>(
  ctx: Context,
  backend: Backend,
  progress: Progress,
  listing: {
    kind: RecordKind;
    noun: string;
    request: ResultRequest;
    offset: number;
    /** The period as the summary names it (FROM..TO). */
    period: string;
    /** Every row from the offset on (--all), else undefined for a page. */
    all?: () => Promise<RowStream<T>>;
    page: () => Promise<Page<T>>;
    /** What a page's table may add (the report's Trend column), asked once the page is read. */
    extras?: (page: Page<T>) => Promise<TableExtras | undefined>;
  },
): Promise<void> {
  const { kind, noun, request, period } = listing;
  progress.clear();
  printDatasetWarnings(ctx, backend);
  progress.phase(ctx.settings.mode === 'api' ? 'asking the API' : 'attributing conversions');
  if (listing.all) {
    const stream = await timed('query', () => listing.all!());
    const count = await timed('write the output', () => writeAll(ctx, kind, stream, listing.offset, progress));
    if (stream.totalCount === 0) await explainEmpty(ctx, backend, noun, request);
    else pageSummary(ctx, { start: listing.offset, count, totalCount: stream.totalCount }, noun, period, true, request.chosen !== undefined);
  } else {
    const page = await timed('query', () => listing.page());
    const extras = await listing.extras?.(page);
    progress.done();
    await timed('write the output', () => ctx.output.page(kind, page, extras));
    if (page.paging.totalCount === 0) await explainEmpty(ctx, backend, noun, request);
    else pageSummary(ctx, page.paging, noun, period, false, request.chosen !== undefined);
  }
}

/**
 * A line on stderr saying which rows these were and how to get the rest: in a table, when there is
 * more, or `always` (a short period chose the dates, which the line names).
 */
export function pageSummary(ctx: Context, paging: Paging, noun: string, period: string, all: boolean, always = false): void {
  if (paging.count === 0) {
    ctx.log.info(
      paging.totalCount === 0
        ? `No ${noun} in ${period}.`
        : `No ${noun} at offset ${paging.start}; there ${paging.totalCount === 1 ? 'is' : 'are'} ${paging.totalCount}.`,
    );
    return;
  }
  const range = `${paging.start + 1}-${paging.start + paging.count} of ${paging.totalCount} ${paging.totalCount === 1 ? noun.replace(/s$/, '') : noun}`;
  const more = !all && paging.start + paging.count < paging.totalCount
    ? `; next page: --offset ${paging.start + paging.count}, every row: --all`
    : '';
  if (ctx.format === 'table' || more || always) ctx.log.info(`${range}, ${period}${more}`);
}

/** A filter of a query as the command line names it; no flag for one the command takes positionally (drill's campaign). */
export interface FilterFlag {
  parameter: string;
  flag?: string;
  value: string;
}

/** The filters in force of a parsed query, in the order of `parameters`, named by their flags. */
export function filtersOf(query: object, parameters: readonly string[]): FilterFlag[] {
  const out: FilterFlag[] = [];
  for (const parameter of parameters) {
    const value = (query as Record<string, unknown>)[parameter];
    if (value === undefined || value === null || (Array.isArray(value) && value.length === 0)) continue;
    const flag = FLAG_FOR_PARAMETER[parameter];
    out.push({ parameter, ...(flag ? { flag } : {}), value: Array.isArray(value) ? value.join(',') : String(value) });
  }
  return out;
}

/** What a listing asked for, to explain an empty result. */
export interface ResultRequest {
  /** The command and its positional arguments as the user would type them: "report", "drill k-1". */
  command: string;
  /** The period asked, with its zone (absent: UTC). */
  period: { dateFrom: string; dateTo: string; timeZone?: string };
  /** --from and --to as given; undefined where the default applied. */
  given: { from?: string | undefined; to?: string | undefined };
  /** What gave a bound of `given` other than its flag, as the note names it (drill: "the detailUrl's dateFrom"). */
  givenBy?: { from?: string; to?: string };
  /** The short period flag that chose the period, as typed (`--month 2024-03`). */
  chosen?: string;
  /** The source the command's argument fixes, as typed (drill's target); not among the filters, which the command's flags give. */
  source?: string;
  filters: FilterFlag[];
  /** A series' interval (trend): a suggested command keeps it, and to the buckets a series may have. */
  interval?: Interval;
}

/** An instant's UTC date, as the instant writes it (a year past 9999 has more digits). */
const day = (instant: string) => instant.split('T', 1)[0]!;

/** The first day of the month after a date's. */
function nextMonth(date: string): string {
  const [y, m] = date.slice(0, 7).split('-').map(Number) as [number, number];
  return new Date(Date.UTC(y, m, 1)).toISOString().slice(0, 10);
}

/**
 * The whole months around a range: the period a suggested command asks for. A series' (an
 * `interval`) keeps to the latest of them that hold at most MAX_BUCKETS buckets (a month always
 * does: 744 hours at most), so that the command it suggests is not refused; `over`: the buckets
 * all the months would have been, where they were too many.
 */
function monthsAround(range: DateRange, interval?: Interval): { dateFrom: string; dateTo: string; over?: number } {
  // A period can name only the four-digit years: data past them is suggested from their edge.
  const month = (instant: string) => {
    const date = day(instant);
    return (date.startsWith('-') || date < EVERY_DATE.dateFrom ? EVERY_DATE.dateFrom : date.length > 10 ? EVERY_DATE.dateTo : date).slice(0, 7);
  };
  const { dateTo } = monthDates(month(range.to));
  const whole = `${month(range.from)}-01`;
  if (interval === undefined || bucketCount(interval, whole, dateTo) <= MAX_BUCKETS) return { dateFrom: whole, dateTo };
  let dateFrom = whole;
  while (bucketCount(interval, dateFrom, dateTo) > MAX_BUCKETS) dateFrom = nextMonth(dateFrom);
  return { dateFrom, dateTo, over: bucketCount(interval, whole, dateTo) };
}

/**
 * Days a zone's clocks skipped (Pacific/Apia's 2011-12-30, when Samoa crossed the date line), as a
 * note names them: `at`, the instant after the jump, where they would have started.
 */
export function skippedDaysText(days: string, zone: string, at: Date): string {
  return `${days} ${days.includes('..') ? 'do' : 'does'} not exist in ${zone} (its clocks went from ${zoneTime(new Date(at.getTime() - 1), zone)} to ${zoneTime(at, zone)})`;
}

/** A period of days that all do not exist in its zone, as a note names it; undefined where it holds time. */
function skippedPeriod(period: { dateFrom: string; dateTo: string; timeZone?: string }): string | undefined {
  if (period.timeZone === undefined) return undefined;
  const { start, end } = periodInstants(period.dateFrom, period.dateTo, period.timeZone);
  if (start.getTime() < end.getTime()) return undefined;
  const days = period.dateFrom === period.dateTo ? period.dateFrom : `${period.dateFrom}..${period.dateTo}`;
  return `${skippedDaysText(days, period.timeZone, start)}: the period holds no time`;
}

/**
 * How the period's dates were chosen where --from or --to was not given (a report's defaults: the
 * 30 days ending today, or from or to the bound given), as stderr names it; undefined with both.
 * `by`: what gave a bound other than its flag (a detailUrl's dateFrom), named instead of the flag.
 */
export function defaultedPeriod(
  given: { from?: string | undefined; to?: string | undefined },
  timeZone: string | undefined,
  by: { from?: string; to?: string } = {},
): string | undefined {
  const span = `the ${DEFAULT_REPORT_DAYS} days`;
  // a zone asked is named beside the dates already (periodText); the default one here
  if (given.from === undefined && given.to === undefined) return `no --from/--to: ${span} ending today${timeZone === undefined ? ', UTC' : ''}`;
  if (given.from === undefined) return `no --from: ${span} ending ${by.to ?? '--to'}`;
  if (given.to === undefined) return `no --to: ${span} from ${by.from ?? '--from'}`;
  return undefined;
}

/**
 * An id a query names (drill's target, items' filters) that no source of the data holds (known:
 * KnownSource, local mode's `knownSources`): the first of source, campaign, smartflow and delivery,
 * then the others. `what`: "no campaign k-99" ("no automation k-1" for a source of a type, "no
 * delivery d-3 of smartflow sf-1" for a delivery of the smartflow given); `other`: what the id is
 * instead, a source of another type ("campaign:k-1") or a delivery of another smartflow; `hint`: the
 * nearest known ids, else the first few. A delivery of an unknown smartflow is not listed: the
 * smartflow is.
 */
export interface UnknownId {
  key: 'sourceId' | 'campaignId' | 'smartflowId' | 'deliveryId';
  id: string;
  what: string;
  other: string[];
  hint: string;
}

export function unknownIds(target: Readonly<Record<string, string | undefined>>, sources: readonly KnownSource[]): UnknownId[] {
  const checks: [UnknownId['key'], string, (s: KnownSource) => string | null][] = [
    ['sourceId', 'source', (s) => (target.sourceType === undefined || s.type === target.sourceType ? s.id : null)],
    ['campaignId', 'campaign', (s) => s.campaignId],
    ['smartflowId', 'smartflow', (s) => s.smartflowId],
    ['deliveryId', 'delivery', (s) => (target.smartflowId === undefined || s.smartflowId === target.smartflowId ? s.deliveryId : null)],
  ];
  const out: UnknownId[] = [];
  for (const [key, noun, idOf] of checks) {
    const id = target[key];
    if (id === undefined) continue;
    const known = sources.map(idOf).filter((k): k is string => k !== null);
    if (known.includes(id)) continue;
    // a delivery is asked of the smartflow given: none of an unknown smartflow (its own entry says so), or one of another smartflow
    const scoped = key === 'deliveryId' && target.smartflowId !== undefined;
    if (scoped && out.some((u) => u.key === 'smartflowId')) continue;
    const of = scoped ? [...new Set(sources.filter((s) => s.deliveryId === id).map((s) => s.smartflowId))] : [];
    const other =
      key === 'sourceId' ? sources.filter((s) => s.id === id).map((s) => `${s.type}:${s.id}`) : of.map((smartflow) => `a delivery of smartflow ${smartflow}`);
    const near = closest(id, known);
    out.push({
      key,
      id,
      what: `no ${key === 'sourceId' && target.sourceType ? target.sourceType : noun} ${id}${of.length ? ` of smartflow ${target.smartflowId}` : ''}`,
      other,
      hint: near.length ? `did you mean ${near.join(', ')}?` : `known ${noun} ids: ${[...new Set(known)].slice(0, 8).join(', ') || 'none'}`,
    });
  }
  return out;
}

/**
 * The lines of an empty result's hint naming an id of a filter that the data holds nowhere (a typo,
 * say), where the backend can tell (local mode): unknownIds, and a smartflow's id given as a
 * smartflow node's (--source-type smartflow --source), with the flag that takes it.
 */
async function unknownIdLines(backend: Backend, filters: readonly FilterFlag[]): Promise<string[]> {
  const asked = Object.fromEntries(filters.map((f) => [f.parameter, f.value]));
  if (!backend.knownSources || !['sourceId', 'campaignId', 'smartflowId', 'deliveryId'].some((key) => asked[key] !== undefined)) return [];
  const sources = await backend.knownSources();
  return unknownIds(asked, sources).map((u) =>
    u.key === 'sourceId' && asked.sourceType === 'smartflow' && sources.some((s) => s.smartflowId === u.id)
      ? `  no smartflow node ${u.id} in the dataset; ${u.id} is a smartflow: --smartflow ${shellWord(u.id)}`
      : `  ${u.what} in the dataset; ${u.other.length ? `it is ${u.other.join(', ')}` : u.hint}`,
  );
}

/**
 * Says on stderr (unless --quiet) why a listing is empty: the period and how it was chosen, the
 * filters, the dates the data holds (Backend.coverage) and a command that would find something.
 * stdout is not touched: it holds what the format prints for no rows.
 */
export async function explainEmpty(ctx: Context, backend: Backend, noun: string, request: ResultRequest): Promise<void> {
  if (ctx.globals.quiet) return;
  const { period, given, filters } = request;
  // A short period (--month …), or the defaults, chose the dates: the period names it instead.
  const defaulted = request.chosen === undefined ? defaultedPeriod(given, period.timeZone, request.givenBy) : undefined;
  const how = defaulted === undefined ? '' : ` (${defaulted})`;
  const lines = [`No ${noun} in ${periodText(period, request.chosen)}${how}.`];
  const skipped = skippedPeriod(period);
  if (skipped !== undefined) lines.push(`  ${skipped}`);
  // A filter without a flag of its own (drill's campaign from a detailUrl) by its name: "campaign k-1".
  const typed = (f: FilterFlag) => `${f.flag ?? f.parameter.replace(/Id$/, '')} ${shellWord(f.value)}`;
  if (request.source !== undefined) lines.push(`  source: ${shellWord(request.source)}`);
  if (filters.length) lines.push(`  filters: ${filters.map(typed).join(' ')}`);
  lines.push(...(await unknownIdLines(backend, filters)));
  let coverage: DataCoverage = {};
  try {
    coverage = (await backend.coverage?.()) ?? {};
  } catch {
    // Only a hint: an API that cannot say leaves it out.
  }
  const held = (name: string, range: DateRange | null | undefined) =>
    range === undefined ? undefined : range === null ? `no ${name}` : `${name} from ${day(range.from)} to ${day(range.to)}`;
  const tables = [held('orders', coverage.orders), held('touches', coverage.touches)].filter((t): t is string => t !== undefined);
  // "no orders, and touches from …": a comma, so that "no" does not read as covering both.
  if (tables.length) lines.push(`  the dataset holds ${tables.join(tables.some((t) => t.startsWith('no ')) ? ', and ' : ' and ')} (UTC)`);
  if (coverage.conversions !== undefined) {
    lines.push(
      coverage.conversions === null
        ? '  the API holds no conversions at all'
        : `  the API's conversions run from ${day(coverage.conversions.from)} to ${day(coverage.conversions.to)} (UTC)`,
    );
  }
  const range = coverage.orders ?? coverage.conversions;
  if (range) {
    const overlaps = day(range.from) <= period.dateTo && day(range.to) >= period.dateFrom;
    const command = (withFilters: boolean, p: { dateFrom: string; dateTo: string }, name = request.command) => {
      const words = ['convx', name];
      const g = ctx.globals;
      for (const [flag, value] of [
        ['--data', g.data],
        ['--api', g.api],
        ['--token-file', g.tokenFile],
        ['--profile', g.profile],
        ['--plugin', g.plugin],
      ] as const) {
        if (value !== undefined) words.push(flag, shellWord(value));
      }
      if (withFilters) for (const f of filters) words.push(f.flag!, shellWord(f.value));
      words.push('--from', p.dateFrom, '--to', p.dateTo);
      if (period.timeZone !== undefined) words.push('--tz', period.timeZone);
      if (request.interval !== undefined && request.interval !== 'day') words.push(FLAG_FOR_PARAMETER.interval!, request.interval);
      return words.join(' ');
    };
    const expressible = filters.every((f) => f.flag !== undefined);
    if (!overlaps && expressible) {
      const months = monthsAround(range, request.interval);
      if (months.over !== undefined) {
        const all = `${day(range.from).slice(0, -3)}..${day(range.to).slice(0, -3)}`;
        lines.push(`  its months ${all} are ${withCommas(months.over)} ${request.interval!} buckets, over the ${withCommas(MAX_BUCKETS)} a series may have; the latest of them:`);
      }
      lines.push(`  try: ${command(true, months)}`);
    } else if (skipped !== undefined) {
      // nothing of another period, filter or source to say: the period has no instant
    } else if (overlaps && filters.length) {
      lines.push(`  without the filters: ${command(false, period)}`);
    } else if (overlaps && request.source !== undefined) {
      // the period holds conversions of other sources, maybe: the report lists those it does
      lines.push(`  this source has no conversions in the period; the sources with conversions in it: ${command(false, period, 'report')}`);
    } else if (overlaps) {
      lines.push(
        `  no order in this period is attributed to a source (each needs a click in the ${WINDOW_DAYS} days before it; \`convx order ID\` says why one is not)`,
      );
    }
  }
  ctx.log.info(lines.join('\n'));
}

/**
 * --compare sets a whole row, bucket or total beside the other period's: a line per order currency
 * (--breakdown) has no comparison of its own, so the two do not go together.
 */
function refuseBreakdownCompare(flags: { breakdown?: boolean | undefined }, query: { compareTo?: string | undefined }): void {
  if (flags.breakdown && query.compareTo !== undefined) {
    throw new UsageError(
      '--breakdown and --compare do not go together: a comparison is of a whole row, bucket or total, not of one order currency',
      [],
      'drop --breakdown to compare; -o json with --compare holds each row\'s breakdown beside its comparison',
    );
  }
}

/** The other period of a query's --compare, for a page's header; undefined without one. */
export function comparedPeriod(query: { dateFrom: string; dateTo: string; compareTo?: CompareTo | undefined }): { dateFrom: string; dateTo: string } | undefined {
  return query.compareTo === undefined ? undefined : otherPeriod(query, query.compareTo);
}
