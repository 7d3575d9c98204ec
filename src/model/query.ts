/**
 * Parsing and validation of query parameters, shared by the CLI and the server:
 * both build the raw parameter map with the interface's names and get either a
 * typed query or a UsageError naming every bad parameter.
 */
import { UsageError, type ParameterProblem } from '../errors.js';
import { AGGREGATE_FIELDS, RECORD_FIELDS, scalarFields } from './fields.js';
import { ITEM_ID_FILTERS } from './parameters.js';
import {
  SOURCE_TYPES,
  type ItemsQuery,
  type ReportQuery,
  type SortKey,
  type SourceType,
} from './types.js';

export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 1000;
export const DEFAULT_REPORT_DAYS = 30;

export const ITEMS_SORT_FIELDS = scalarFields(RECORD_FIELDS);
export const REPORT_SORT_FIELDS = scalarFields(AGGREGATE_FIELDS);

export const DEFAULT_ITEMS_SORT = '-datetime';
export const DEFAULT_REPORT_SORT = '-conversionsAmountWTax,name';

export type RawParams = Record<string, string | undefined>;

export const ITEMS_PARAMETERS = [
  'dateFrom',
  'dateTo',
  ...ITEM_ID_FILTERS.map((f) => f.name),
  'country',
  'currency',
  'limit',
  'offset',
  'sort',
] as const;

export const REPORT_PARAMETERS = [
  'dateFrom',
  'dateTo',
  'country',
  'currency',
  'limit',
  'offset',
  'q',
  'sort',
] as const;

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

/** Collects every problem before throwing, so one run names all of them. */
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
    const text = this.list.map((p) => `${p.parameter}: ${p.message}`).join('; ');
    throw new UsageError(`invalid parameter${this.list.length > 1 ? 's' : ''}: ${text}`, this.list);
  }
}

function nonEmpty(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  return value === '' ? undefined : value;
}

function parseDateParam(
  problems: Problems,
  raw: RawParams,
  name: 'dateFrom' | 'dateTo',
  required: boolean,
): string | undefined {
  const value = nonEmpty(raw[name]);
  if (value === undefined) {
    if (required) problems.add(name, 'is required (YYYY-MM-DD)');
    return undefined;
  }
  if (!isValidDate(value)) {
    problems.add(name, `"${value}" is not a date of the form YYYY-MM-DD`);
    return undefined;
  }
  return value;
}

function parseIntParam(
  problems: Problems,
  raw: RawParams,
  name: 'limit' | 'offset',
  fallback: number,
  min: number,
  max: number,
): number {
  const value = nonEmpty(raw[name]);
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) {
    problems.add(
      name,
      max === Number.MAX_SAFE_INTEGER
        ? `"${value}" must be a whole number >= ${min}`
        : `"${value}" must be a whole number from ${min} to ${max}`,
    );
    return fallback;
  }
  return Number(value);
}

function parseList(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  const items = value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  return items.length ? items : undefined;
}

/** What a code of a list parameter looks like: ISO 3166-1 alpha-2 countries, ISO 4217 currencies. */
const CODES = {
  country: { pattern: /^[A-Za-z]{2}$/, one: 'a two-letter country code', many: 'two-letter country codes', example: 'CZ' },
  currency: { pattern: /^[A-Za-z]{3}$/, one: 'a three-letter currency code', many: 'three-letter currency codes', example: 'EUR' },
} as const;

/**
 * A comma-separated list of country or currency codes, in any case: upper-cased,
 * each once, in the order given. A code of the wrong shape is a problem.
 */
function parseCodes(problems: Problems, raw: RawParams, name: keyof typeof CODES): string[] | undefined {
  const items = parseList(raw[name]);
  if (!items) return undefined;
  const rule = CODES[name];
  const bad = items.filter((code) => !rule.pattern.test(code));
  if (bad.length) {
    const quoted = bad.map((code) => `"${code}"`).join(', ');
    problems.add(name, `${quoted} ${bad.length === 1 ? `is not ${rule.one}` : `are not ${rule.many}`} (e.g. ${rule.example})`);
    return undefined;
  }
  return [...new Set(items.map((code) => code.toUpperCase()))];
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

function checkPeriod(problems: Problems, from?: string, to?: string): void {
  if (from && to && from > to) problems.add('dateFrom', `${from} is after dateTo ${to}`, `${from} is after --to ${to}`);
}

function rejectUnknown(problems: Problems, raw: RawParams, known: readonly string[]): void {
  for (const key of Object.keys(raw)) {
    if (raw[key] !== undefined && !known.includes(key)) problems.add(key, 'is not a parameter of this operation');
  }
}

export function parseItemsQuery(raw: RawParams, options: { allowCampaignId?: boolean } = {}): ItemsQuery {
  const problems = new Problems();
  rejectUnknown(problems, raw, options.allowCampaignId ? [...ITEMS_PARAMETERS, 'campaignId'] : ITEMS_PARAMETERS);
  const dateFrom = parseDateParam(problems, raw, 'dateFrom', true);
  const dateTo = parseDateParam(problems, raw, 'dateTo', true);
  checkPeriod(problems, dateFrom, dateTo);
  const limit = parseIntParam(problems, raw, 'limit', DEFAULT_LIMIT, 1, MAX_LIMIT);
  const offset = parseIntParam(problems, raw, 'offset', 0, 0, Number.MAX_SAFE_INTEGER);
  const sort = parseSort(problems, nonEmpty(raw.sort) ?? DEFAULT_ITEMS_SORT, ITEMS_SORT_FIELDS, false);
  const sourceType = nonEmpty(raw.sourceType);
  if (sourceType !== undefined && !(SOURCE_TYPES as readonly string[]).includes(sourceType)) {
    problems.add('sourceType', `"${sourceType}" is not one of ${SOURCE_TYPES.join(', ')}`);
  }
  const country = parseCodes(problems, raw, 'country');
  const currency = parseCodes(problems, raw, 'currency');
  problems.throwIfAny();
  const query: ItemsQuery = { dateFrom: dateFrom!, dateTo: dateTo!, limit, offset, sort };
  for (const { name } of ITEM_ID_FILTERS) {
    const value = nonEmpty(raw[name]);
    if (value === undefined) continue;
    if (name === 'sourceType') query.sourceType = value as SourceType;
    else query[name] = value;
  }
  const campaignId = nonEmpty(raw.campaignId);
  if (campaignId !== undefined) query.campaignId = campaignId;
  if (country) query.country = country;
  if (currency) query.currency = currency;
  return query;
}

/**
 * The default period of /conversions: the 30 days ending today; a lone bound
 * anchors the 30 days on its side. Bounds that are not valid dates are left
 * as they are for the parser to reject.
 */
export function defaultPeriod(
  dateFrom: string | undefined,
  dateTo: string | undefined,
  today: Date,
): { dateFrom: string | undefined; dateTo: string | undefined } {
  const span = DEFAULT_REPORT_DAYS - 1;
  if (dateFrom === undefined && dateTo === undefined) {
    const to = formatDate(today);
    return { dateFrom: addDays(to, -span), dateTo: to };
  }
  // A default end never leaves the four-digit years: the period is cut at the calendar's edge.
  const within = (date: string, edge: string) => (isValidDate(date) && date >= '0001-01-01' ? date : edge);
  if (dateFrom === undefined && isValidDate(dateTo!)) return { dateFrom: within(addDays(dateTo!, -span), '0001-01-01'), dateTo };
  if (dateTo === undefined && isValidDate(dateFrom!)) return { dateFrom, dateTo: within(addDays(dateFrom!, span), '9999-12-31') };
  return { dateFrom, dateTo };
}

export function parseReportQuery(raw: RawParams, today: Date): ReportQuery {
  const problems = new Problems();
  rejectUnknown(problems, raw, REPORT_PARAMETERS);
  let dateFrom = parseDateParam(problems, raw, 'dateFrom', false);
  let dateTo = parseDateParam(problems, raw, 'dateTo', false);
  const limit = parseIntParam(problems, raw, 'limit', DEFAULT_LIMIT, 1, MAX_LIMIT);
  const offset = parseIntParam(problems, raw, 'offset', 0, 0, Number.MAX_SAFE_INTEGER);
  const sort = parseSort(problems, nonEmpty(raw.sort) ?? DEFAULT_REPORT_SORT, REPORT_SORT_FIELDS, true);
  const country = parseCodes(problems, raw, 'country');
  const currency = parseCodes(problems, raw, 'currency');
  problems.throwIfAny();
  ({ dateFrom, dateTo } = defaultPeriod(dateFrom, dateTo, today));
  checkPeriod(problems, dateFrom, dateTo);
  problems.throwIfAny();
  const query: ReportQuery = { dateFrom: dateFrom!, dateTo: dateTo!, limit, offset, sort };
  if (country) query.country = country;
  if (currency) query.currency = currency;
  const q = nonEmpty(raw.q);
  if (q !== undefined) query.q = q;
  return query;
}
