/**
 * Parsing and validation of query parameters, shared by the CLI and the server:
 * both build the raw parameter map with the interface's names and get either a
 * typed query or a UsageError naming every bad parameter.
 */
import { UsageError, type ParameterProblem } from '../errors.js';
import { AGGREGATE_FIELDS, RECORD_FIELDS, scalarFields } from './fields.js';
import { EMPTY_VALUE, field, flagName, MAX_BUCKETS, parameters, PERIOD_FLAGS, QUERY_PARAMETERS, TRIMMED_KINDS, type Interval, type Operation, type Parameter, type PeriodFlag, type QueryOf } from './parameters.js';
import { canonicalZone, EVERY_DATE, UTC, zoneDate, zoneProblem } from './period.js';
import { SOURCE_TYPES } from './shapes.js';
import type { SortKey } from './types.js';
import { withCommas } from '../words.js';

export { DEFAULT_LIMIT, MAX_LIMIT } from './parameters.js';
export const DEFAULT_REPORT_DAYS = 30;

export { EVERY_DATE } from './period.js';

export const ITEMS_SORT_FIELDS = scalarFields(RECORD_FIELDS);
export const REPORT_SORT_FIELDS = scalarFields(AGGREGATE_FIELDS);

/** The fields an operation may sort by: the scalar fields of its rows (model/shapes.ts). */
export const SORT_FIELDS: Readonly<Record<Operation, readonly string[]>> = { report: REPORT_SORT_FIELDS, items: ITEMS_SORT_FIELDS, trend: [], total: [] };

/** The parsed queries, typed from the table of parameters (model/parameters.ts). */
export type ReportQuery = QueryOf<'report'>;
export type ItemsQuery = QueryOf<'items'>;
export type TrendQuery = QueryOf<'trend'>;
export type TotalQuery = QueryOf<'total'>;

/** The raw parameters of a request: each under its interface name, as text (absent: undefined). */
export type RawParams = Record<string, string | undefined>;

/** A query string's parameters: a parameter given more than once holds its values. */
export type RequestParams = Record<string, string | readonly string[] | undefined>;

const DATE_RE = /^(\d{4})-(\d{2})-(\d{2})$/;

export function isValidDate(value: string): boolean {
  const m = DATE_RE.exec(value);
  if (!m) return false;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  // setUTCFullYear, unlike Date.UTC, does not read years 0-99 as 1900-1999.
  const date = new Date(0);
  date.setUTCFullYear(y, mo - 1, d);
  return date.getUTCFullYear() === y && date.getUTCMonth() === mo - 1 && date.getUTCDate() === d;
}

const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];

/** The days of a month (1 to 12) of a year. */
function monthDays(year: number, month: number): number {
  const date = new Date(0);
  date.setUTCFullYear(year, month, 0);
  return date.getUTCDate();
}

/** Why a text is not a date, in words ("February 2024 has 29 days"); undefined when it is one. */
export function dateProblem(value: string): string | undefined {
  const m = DATE_RE.exec(value);
  if (!m) return `"${value}" is not a date of the form YYYY-MM-DD`;
  if (isValidDate(value)) return undefined;
  const [year, month] = [Number(m[1]), Number(m[2])];
  if (month < 1 || month > 12) return `"${value}" is not a date: the months are 01 to 12`;
  return `"${value}" is not a date: ${MONTHS[month - 1]} ${m[1]} has ${monthDays(year, month)} days`;
}

export function formatDate(date: Date): string {
  return date.toISOString().slice(0, 10);
}

export function addDays(isoDate: string, days: number): string {
  const d = new Date(`${isoDate}T00:00:00.000Z`);
  d.setUTCDate(d.getUTCDate() + days);
  return formatDate(d);
}

/**
 * The CLI's wording of problems whose message names another parameter: the
 * same text with flags (`--to`) where the server names parameters (`dateTo`).
 */
const CLI_WORDING = new WeakMap<ParameterProblem, string>();

/** How the CLI words a problem of these parsers, where it differs from the server's message. */
export function cliWording(problem: ParameterProblem): string | undefined {
  return CLI_WORDING.get(problem);
}

/**
 * The order problems are named in: unknown names first, then the period, paging and sort,
 * then the filters, each group in the table's order.
 */
const GROUP_OF_KIND: Partial<Record<Parameter['kind'], number>> = { date: 0, count: 1, sort: 2 };
function rank(parameter: string): number {
  const index = QUERY_PARAMETERS.findIndex((p) => p.name === parameter);
  if (index < 0) return -1;
  return (GROUP_OF_KIND[QUERY_PARAMETERS[index]!.kind] ?? 3) * QUERY_PARAMETERS.length + index;
}

/** Collects every problem before throwing, so one run names all of them, in the order rank() gives. */
class Problems {
  readonly list: ParameterProblem[] = [];
  /** cli: the message as the CLI words it, when it names another parameter. */
  add(parameter: string, message: string, cli?: string): void {
    const problem = { parameter, message };
    if (cli !== undefined) CLI_WORDING.set(problem, cli);
    this.list.push(problem);
  }
  throwIfAny(): void {
    if (this.list.length === 0) return;
    this.list.sort((a, b) => rank(a.parameter) - rank(b.parameter));
    const text = this.list.map((p) => `${p.parameter}: ${p.message}`).join('; ');
    throw new UsageError(`invalid parameter${this.list.length > 1 ? 's' : ''}: ${text}`, this.list);
  }
}

/** A list's items, empty ones left out (`CZ,,SK`); none at all is undefined. */
function parseList(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  const items = value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  return items.length ? items : undefined;
}

export function parseSort(
  problems: Problems,
  value: string,
  allowed: readonly string[],
  multiple: boolean,
): SortKey[] {
  const keys: SortKey[] = [];
  const parts = value.split(',').map((s) => s.trim());
  if (!multiple && parts.length > 1) {
    problems.add('sort', 'takes one field here');
    return [];
  }
  for (const part of parts) {
    const descending = part.startsWith('-');
    const field = descending ? part.slice(1) : part.replace(/^\+/, '');
    if (!allowed.includes(field)) {
      problems.add('sort', `unknown field "${field}"; allowed: ${allowed.join(', ')}`);
      continue;
    }
    if (keys.some((k) => k.field === field)) {
      problems.add('sort', `field "${field}" is named twice`);
      continue;
    }
    keys.push({ field, descending });
  }
  return keys;
}

/** A date parameter's value (YYYY-MM-DD); an empty value is not a date (absent is: the report's default, or required). */
function parseDate(problems: Problems, p: Parameter, operation: Operation, text: string | undefined): string | undefined {
  if (text === undefined) {
    if ((field(p, 'required') ?? []).includes(operation)) problems.add(p.name, 'is required (YYYY-MM-DD)');
    return undefined;
  }
  const problem = dateProblem(text);
  if (problem !== undefined) problems.add(p.name, problem);
  return problem === undefined ? text : undefined;
}

/**
 * One parameter's value from its raw text, by its kind (model/parameters.ts); a
 * problem and undefined when it is not valid. Absent: the kind's default, or
 * undefined (an empty value never gets here: parseOperation refuses it).
 */
function parseParameter(problems: Problems, p: Parameter, operation: Operation, text: string | undefined): unknown {
  const name = p.name;
  switch (p.kind) {
    case 'date':
      return parseDate(problems, p, operation, text);
    case 'count': {
      const { min, max, fallback } = field(p, 'count')!;
      if (text === undefined) return fallback;
      // Decimal digits only: not 0x10, 1e3 or +5.
      if (!/^\d+$/.test(text) || Number(text) < min || Number(text) > max) {
        const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `from ${min} to ${max}`;
        problems.add(name, `"${text}" must be a whole number ${range}`);
        return fallback;
      }
      return Number(text);
    }
    case 'sort': {
      const { fallback, multiple } = field(p, 'sort')![operation]!;
      return parseSort(problems, text ?? fallback, SORT_FIELDS[operation], multiple);
    }
    case 'codes': {
      const items = parseList(text);
      const rule = field(p, 'codes')!;
      // only commas and spaces: no code, which is not every code
      if (!items) {
        if (text !== undefined) problems.add(name, `"${text}" holds no ${rule.many} (e.g. ${rule.example})`);
        return undefined;
      }
      const pattern = new RegExp(rule.pattern);
      const bad = items.filter((code) => !pattern.test(code));
      if (bad.length) {
        const quoted = bad.map((code) => `"${code}"`).join(', ');
        problems.add(name, `${quoted} ${bad.length === 1 ? `is not ${rule.one}` : `are not ${rule.many}`} (e.g. ${rule.example})`);
        return undefined;
      }
      // Each code once, upper-cased, in the order given.
      return [...new Set(items.map((code) => code.toUpperCase()))];
    }
    case 'sourceType': {
      const value = text;
      if (value !== undefined && !(SOURCE_TYPES as readonly string[]).includes(value)) {
        problems.add(name, `"${value}" is not one of ${SOURCE_TYPES.join(', ')}`);
        return undefined;
      }
      return value;
    }
    case 'zone': {
      // Absent or UTC: the days are UTC days, as without the parameter (nothing carries it on).
      if (text === undefined) return undefined;
      const problem = zoneProblem(text);
      if (problem !== undefined) {
        problems.add(name, problem);
        return undefined;
      }
      const zone = canonicalZone(text)!;
      return zone === UTC ? undefined : zone;
    }
    case 'id':
    case 'text':
      return text;
    case 'choice': {
      const { values, fallback } = field(p, 'choice')!;
      if (text === undefined) return fallback;
      if (!values.includes(text)) problems.add(name, `"${text}" is not one of ${values.join(', ')}`);
      return values.includes(text) ? text : fallback;
    }
    case 'switch':
      if (text === undefined || text === 'false') return undefined;
      if (text !== 'true') problems.add(name, `"${text}" is not true or false`);
      return text === 'true' ? true : undefined;
  }
}

/** A name no parameter taken has is a problem. */
function rejectUnknown(problems: Problems, raw: RequestParams, taken: readonly Parameter[]): void {
  for (const key of Object.keys(raw)) {
    if (raw[key] !== undefined && !taken.some((p) => p.name === key)) problems.add(key, 'is not a parameter of this operation');
  }
}

/**
 * The parameters of an operation from raw text, each by its row of the table:
 * unknown names and every invalid value are problems, named all at once.
 * `accepted`: the parameters this request may carry (a per-source alias does not
 * take the source filters; only its path sets campaignId).
 */
function parseOperation(problems: Problems, raw: RequestParams, operation: Operation, accepted: (p: Parameter) => boolean): Record<string, unknown> {
  const taken = parameters(operation).filter(accepted);
  rejectUnknown(problems, raw, taken);
  const query: Record<string, unknown> = {};
  for (const p of taken) {
    const given = raw[p.name];
    const text = typeof given === 'string' && TRIMMED_KINDS.has(p.kind) ? given.trim() : given;
    if (typeof text === 'object') {
      const list = p.kind === 'codes' || (p.kind === 'sort' && field(p, 'sort')![operation]!.multiple);
      problems.add(p.name, `is given more than once${list ? ' (a list is one value, comma-separated)' : ''}`);
      continue;
    }
    // An empty value is not an absent one (an unset variable in a script): every kind refuses it.
    if (text === '') {
      problems.add(p.name, EMPTY_VALUE);
      continue;
    }
    const value = parseParameter(problems, p, operation, text);
    if (value !== undefined) query[p.name] = value;
  }
  for (const p of taken) requireSwitch(problems, p, taken, raw, query);
  return query;
}

/** A parameter that counts only with a switch on (`requires`): given without it, a problem; else, without it, not held. */
function requireSwitch(problems: Problems, p: Parameter, taken: Parameter[], raw: RequestParams, query: Record<string, unknown>): void {
  const name = field(p, 'requires');
  if (name === undefined || query[name] === true) return;
  delete query[p.name];
  if (raw[p.name] === undefined || raw[p.name] === '') return;
  const flag = (q: Parameter | undefined) => flagName(field(q ?? p, 'flag') ?? '');
  const needed = flag(taken.find((q) => q.name === name));
  problems.add(p.name, `counts only with ${name}=true: add it, or leave ${p.name} out`, `counts only with ${needed}: add ${needed}, or leave ${flag(p)} out`);
}

function checkPeriod(problems: Problems, from?: string, to?: string): void {
  if (from && to && from > to) problems.add('dateFrom', `${from} is after dateTo ${to}`, `${from} is after --to ${to}`);
}

/** Which parameters a request of an operation may carry. */
export interface Accepting {
  /** campaignId, which only a per-source alias's path (or drill's target) sets. */
  campaignId?: boolean;
  /** the source filters (sourceId, sourceType, smartflowId, deliveryId); a per-source alias, whose path fixes the source, takes only those that narrow within it (inAlias). */
  sourceFilters?: boolean;
}

const accepting =
  ({ campaignId = false, sourceFilters = true }: Accepting) =>
  (p: Parameter) =>
    (!field(p, 'pathOnly') || campaignId) && (!field(p, 'source') || sourceFilters || field(p, 'inAlias') === true);

export function parseItemsQuery(raw: RequestParams, options: Accepting = {}): ItemsQuery {
  const problems = new Problems();
  const query = parseOperation(problems, raw, 'items', accepting(options)) as ItemsQuery;
  checkPeriod(problems, query.dateFrom, query.dateTo);
  problems.throwIfAny();
  return query;
}

/**
 * The default period of /conversions: the 30 days ending today (the date in the period's zone); a lone bound
 * anchors the 30 days on its side. Bounds that are not valid dates are left
 * as they are for the parser to reject.
 */
export function defaultPeriod(
  dateFrom: string | undefined,
  dateTo: string | undefined,
  today: Date,
  timeZone: string = UTC,
): { dateFrom: string | undefined; dateTo: string | undefined } {
  const span = DEFAULT_REPORT_DAYS - 1;
  if (dateFrom === undefined && dateTo === undefined) {
    // today: the date in the period's zone
    const to = zoneDate(today, timeZone);
    return { dateFrom: addDays(to, -span), dateTo: to };
  }
  // A default end never leaves the four-digit years: the period is cut at the calendar's edge.
  const within = (date: string, edge: string) => (isValidDate(date) && date >= EVERY_DATE.dateFrom ? date : edge);
  if (dateFrom === undefined && isValidDate(dateTo!)) return { dateFrom: within(addDays(dateTo!, -span), EVERY_DATE.dateFrom), dateTo };
  if (dateTo === undefined && isValidDate(dateFrom!)) return { dateFrom, dateTo: within(addDays(dateFrom!, span), EVERY_DATE.dateTo) };
  return { dateFrom, dateTo };
}

export function parseReportQuery(raw: RequestParams, today: Date): ReportQuery {
  return parsePeriodQuery(raw, today, 'report') as ReportQuery;
}

/** An operation whose period defaults as a report's (report, trend, total); `accepted` as parseOperation's. */
function parsePeriodQuery(raw: RequestParams, today: Date, operation: Operation, accepted = accepting({})): Record<string, unknown> {
  const problems = new Problems();
  const query = parseOperation(problems, raw, operation, accepted);
  problems.throwIfAny();
  const { dateFrom, dateTo } = defaultPeriod(query.dateFrom as string | undefined, query.dateTo as string | undefined, today, query.timeZone as string | undefined);
  checkPeriod(problems, dateFrom, dateTo);
  problems.throwIfAny();
  return { ...query, dateFrom: dateFrom!, dateTo: dateTo! };
}

/** A period's first and last day. */
export interface Dates {
  dateFrom: string;
  dateTo: string;
}

/** A calendar month's days: `2024-02` is 2024-02-01..2024-02-29. */
export function monthDates(month: string): Dates {
  const [year, number] = month.split('-').map(Number) as [number, number];
  return { dateFrom: `${month}-01`, dateTo: `${month}-${String(monthDays(year, number)).padStart(2, '0')}` };
}

/**
 * A short period of the CLI (PERIOD_FLAGS) as its dates: `value` as typed (true for a switch), today
 * the date in `timeZone` of the instant `now`. A UsageError naming the flag when the value is not one.
 * --since Nd: the N days ending today (today and the N-1 before); Nw: 7N days.
 */
export function shortPeriod(name: PeriodFlag, value: string | true, now: Date, timeZone: string = UTC): Dates {
  const today = zoneDate(now, timeZone);
  const flag = flagName(PERIOD_FLAGS.find((p) => p.name === name)!.flag);
  const text = String(value);
  switch (name) {
    case 'month':
      if (!/^\d{4}-(0[1-9]|1[0-2])$/.test(text)) throw new UsageError(`${flag}: "${text}" is not a month of the form YYYY-MM (2024-03)`);
      return monthDates(text);
    case 'lastMonth':
      return monthDates(addDays(`${today.slice(0, 7)}-01`, -1).slice(0, 7));
    case 'ytd':
      return { dateFrom: `${today.slice(0, 4)}-01-01`, dateTo: today };
    case 'since': {
      const m = /^(\d+)([dw])$/i.exec(text);
      if (!m) throw new UsageError(`${flag}: "${text}" is not a number of days or weeks: 7d, 2w`);
      const days = Number(m[1]) * (m[2]!.toLowerCase() === 'w' ? 7 : 1);
      if (days < 1) throw new UsageError(`${flag}: "${text}" must be 1d or more (1d: today)`);
      if (days > daysOf(EVERY_DATE.dateFrom, today)) throw new UsageError(`${flag}: "${text}" reaches before ${EVERY_DATE.dateFrom}`);
      return { dateFrom: addDays(today, 1 - days), dateTo: today };
    }
  }
}

/** The days from dateFrom to dateTo, both counted. */
export function daysOf(dateFrom: string, dateTo: string): number {
  return Math.round((Date.parse(`${dateTo}T00:00:00Z`) - Date.parse(`${dateFrom}T00:00:00Z`)) / 86_400_000) + 1;
}

/** The ISO week's Monday of a date. */
function mondayOf(date: string): string {
  const weekday = (new Date(`${date}T00:00:00Z`).getUTCDay() + 6) % 7;
  return addDays(date, -weekday);
}

/**
 * How many buckets of an interval a period holds (a week or month cut by the period counts
 * once). Hours count 24 a day: in a zone with summer time, a day of 23 or 25 hours changes
 * the count by one, which the limit does not need to know.
 */
export function bucketCount(interval: Interval, dateFrom: string, dateTo: string): number {
  switch (interval) {
    case 'hour':
      return daysOf(dateFrom, dateTo) * 24;
    case 'day':
      return daysOf(dateFrom, dateTo);
    case 'week':
      return (daysOf(mondayOf(dateFrom), mondayOf(dateTo)) - 1) / 7 + 1;
    case 'month': {
      const month = (date: string) => Number(date.slice(0, 4)) * 12 + Number(date.slice(5, 7));
      return month(dateTo) - month(dateFrom) + 1;
    }
  }
}

/**
 * A series' query (convx trend, GET /v1/conversions/timeframes): a report's period and filters,
 * the interval and the per-source series; more than MAX_BUCKETS buckets is a problem of the
 * interval. `interval`: the one a route fixes (GET /v1/conversions/daily), which then takes no
 * interval parameter.
 */
export function parseTrendQuery(raw: RequestParams, today: Date, interval?: Interval): TrendQuery {
  const query = parsePeriodQuery(raw, today, 'trend', (p) => p.name !== 'interval' || interval === undefined) as TrendQuery;
  if (interval !== undefined) query.interval = interval;
  const count = bucketCount(query.interval, query.dateFrom, query.dateTo);
  if (count > MAX_BUCKETS) {
    const problems = new Problems();
    const n = withCommas(count);
    problems.add('interval', `${query.dateFrom}..${query.dateTo} holds ${n} ${query.interval} buckets, over the limit of ${withCommas(MAX_BUCKETS)} buckets a series may have: a coarser interval or a shorter period`);
    problems.throwIfAny();
  }
  return query;
}

/** A period's total (convx total, GET /v1/conversions/total): a report's period and filters. */
export function parseTotalQuery(raw: RequestParams, today: Date): TotalQuery {
  return parsePeriodQuery(raw, today, 'total') as TotalQuery;
}

/** A look-up by id (order, contact, activity) takes no query parameters. */
export function parseNoQuery(raw: RequestParams): void {
  const problems = new Problems();
  rejectUnknown(problems, raw, []);
  problems.throwIfAny();
}

/** A sort as the interface writes it: `-conversionsAmountWTax,name`. */
export function formatSort(sort: readonly SortKey[]): string {
  return sort.map((k) => (k.descending ? '-' : '') + k.field).join(',');
}

/**
 * A parsed query back to raw parameters, each by its row of the table: what API mode
 * sends (parsing them again gives the same query). Path-only parameters (campaignId)
 * are left to the caller, which puts them in the path.
 */
export function formatQuery(operation: Operation, query: ReportQuery | ItemsQuery | TrendQuery | TotalQuery): RawParams {
  const values = query as Record<string, unknown>;
  const raw: RawParams = {};
  for (const p of parameters(operation)) {
    const value = values[p.name];
    if (value === undefined || field(p, 'pathOnly')) continue;
    switch (p.kind) {
      case 'codes':
        raw[p.name] = (value as string[]).join(',');
        break;
      case 'sort':
        raw[p.name] = formatSort(value as SortKey[]);
        break;
      case 'switch':
        if (value === true) raw[p.name] = 'true';
        break;
      default:
        raw[p.name] = String(value);
    }
  }
  return raw;
}
