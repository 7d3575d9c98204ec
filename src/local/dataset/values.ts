/**
 * The column types of a dataset, one row each: how a raw value is checked against the type
 * (SQL true where it cannot be read as one), how a checked value is cast to it, and what a bad
 * value is told. A new type, or a new way to spell a value, is one row here.
 */
import { TYPE_DESCRIPTIONS, type ColumnSpec, type ColumnType } from '../schema.js';
import { ident, int, join, literal, sql, trusted, type Sql } from '../sql.js';
import { describeValue } from './problems.js';
import type { SourceColumn } from './types.js';

const NUMERIC_TYPE = /^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|UHUGEINT|FLOAT|DOUBLE|DECIMAL.*)$/;
const INTEGER_TYPE = /^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|UHUGEINT)$/;
/** A typed time of a file: a timestamp of any precision, or a date. */
export const TIME_TYPE = /^(TIMESTAMP.*|DATE)$/;

/** A raw column DuckDB typed as JSON (a JSON file whose records disagree on the value's kind). */
const isJson = (column: SourceColumn) => column.rawType === 'JSON';
/** A raw column of nested values only (every record holds an object or a list there). */
const isNested = (column: SourceColumn) => /^(STRUCT|MAP|UNION)\b|\]$/.test(column.rawType);
/** A raw DECIMAL column: its values reach JavaScript as doubles (123456789012345.123456 as …12), so an example shows its text. */
const isDecimal = (column: SourceColumn) => /^DECIMAL\(/.test(column.rawType);
/** A raw column that DuckDB holds as numbers. */
export const isNumeric = (column: SourceColumn) => NUMERIC_TYPE.test(column.rawType);

/** A raw column as a type's check and cast see it. */
export interface Raw {
  column: SourceColumn;
  /** The raw value as SQL: the column itself, or for a JSON column its text. */
  value: Sql;
  /** Read as text: a text column, or a JSON one. */
  text: boolean;
  /** The condition, held only by a scalar of a JSON column (an object or an array is the nested check's). */
  scalar(condition: Sql): Sql;
}

/**
 * The raw value as SQL: the column itself, or for a JSON column its text (a JSON string unquoted,
 * a number or boolean as written), so that it is checked and typed as text.
 */
export function rawValue(column: SourceColumn): Sql {
  const v = ident(column.name);
  return isJson(column) ? sql`CASE WHEN json_type(${v}) = 'VARCHAR' THEN ${v} ->> '$' ELSE CAST(${v} AS VARCHAR) END` : v;
}

function raw(column: SourceColumn): Raw {
  const json = isJson(column);
  return {
    column,
    value: rawValue(column),
    text: column.rawType === 'VARCHAR' || json,
    scalar: (condition) => (json ? sql`json_type(${ident(column.name)}) NOT IN ('OBJECT', 'ARRAY') AND (${condition})` : condition),
  };
}

/** One column type: its check, its cast and its words. */
export interface ValueType {
  /** DuckDB's type of the typed column. */
  sqlType: Sql;
  /** SQL true where a non-null raw value cannot be read as this type; undefined when every value reads. */
  check(raw: Raw): Sql | undefined;
  /**
   * The same count as `check` (given as `condition`), as disjoint parts: a cheap filter first, or
   * plain comparisons that Parquet statistics can refute; undefined to count `condition` itself.
   */
  counts?(raw: Raw, condition: Sql): Sql[] | undefined;
  /** SQL that reads a checked raw value as this type. */
  cast(raw: Raw): Sql;
  /** What is wrong with a value the check found (shown as TypeCheck's `value` gives it), in a raw column as `raw` says. */
  message(value: unknown, raw: Raw): string;
}

/** "… is not <the type's description>". */
const notA = (type: ColumnType) => (value: unknown) => `${describeValue(value)} is not ${TYPE_DESCRIPTIONS[type]}`;

/** True for every value: a raw type that cannot hold the type's values. */
const ALWAYS = sql`true`;

const DECIMAL_PLACES = { amount: 4, rate: 10 } as const;

/** A decimal that fits the column's DECIMAL(18, places): at most 18 - places digits before the point (leading zeros aside). */
const boundedDecimalPattern = (places: number) =>
  `^\\s*[+-]?(0*\\d{1,${18 - places}}(\\.\\d{0,${places}})?|\\.\\d{1,${places}})\\s*$`;

/** How many digits an integer or decimal raw type may hold before the point. */
function integerDigits(rawType: string): number {
  const decimal = /^DECIMAL\((\d+),\s*(\d+)\)$/.exec(rawType);
  if (decimal) return Number(decimal[1]) - Number(decimal[2]);
  const digits: Record<string, number> = { TINYINT: 3, SMALLINT: 5, INTEGER: 10, UTINYINT: 3, USMALLINT: 5, UINTEGER: 10 };
  return digits[rawType] ?? Infinity;
}

/** How many digits an integer or decimal raw type may hold after the point (a floating-point type: any number). */
function fractionDigits(rawType: string): number {
  const decimal = /^DECIMAL\((\d+),\s*(\d+)\)$/.exec(rawType);
  if (decimal) return Number(decimal[2]);
  return INTEGER_TYPE.test(rawType) ? 0 : Infinity;
}

/**
 * For a numeric raw amount or rate: disjoint conditions whose union is a bad value (out of the
 * column's range; a rate not positive; an amount of more than 4 decimals, which DESIGN's rule
 * makes a data error as in text, where a cast to DECIMAL(18,4) would round it), each but the last
 * a plain comparison that Parquet statistics can refute.
 */
function numericBadParts(type: 'amount' | 'rate', column: SourceColumn): Sql[] {
  const v = ident(column.name);
  const digits = 18 - DECIMAL_PLACES[type];
  const limit = int(10 ** digits);
  const range = integerDigits(column.rawType) > digits;
  if (type === 'rate') return [...(range ? [sql`${v} >= ${limit}`] : []), sql`${v} <= 0`];
  const parts = range ? [sql`${v} >= ${limit}`, sql`${v} <= -${limit}`] : [];
  if (fractionDigits(column.rawType) > DECIMAL_PLACES.amount) {
    // Within the range, a value the column's DECIMAL would round: 1.00495, or a double's 0.30000000000000004, or one the
    // rounding takes past the range (99999999999999.99999, whose TRY_CAST is NULL: IS DISTINCT FROM counts it). The guard keeps
    // the parts disjoint, so a value both out of range and of more decimals counts once (test/malformed-files.test.ts pins both).
    const within = range ? sql`${v} < ${limit} AND ${v} > -${limit} AND ` : sql``;
    parts.push(sql`${within}TRY_CAST(${v} AS DECIMAL(18,4)) IS DISTINCT FROM ${v}`);
  }
  return parts;
}

/**
 * A bad amount or rate: out of the column's range when its digits before the point are too many, else not a number. A
 * typed number's (a double, or a DECIMAL's exact text) whatever its decimals; a text's when its decimals are not too many.
 */
function decimalMessage(type: 'amount' | 'rate') {
  const places = DECIMAL_PLACES[type];
  const digits = 18 - places;
  return (value: unknown, raw: Raw): string => {
    const text = value === null || value === undefined ? '' : String(value).trim();
    const form = /^[+-]?0*(\d*)(?:\.(\d*))?$/.exec(text);
    let tooLarge: boolean;
    if (typeof value === 'number' || typeof value === 'bigint') tooLarge = Math.abs(Number(value)) >= 10 ** digits;
    else tooLarge = form !== null && (isNumeric(raw.column) || (form[2] ?? '').length <= places) && form[1]!.length > digits;
    if (!tooLarge) return notA(type)(value);
    return `${describeValue(value)} is out of range: ${type === 'amount' ? 'an amount' : 'a rate'} has at most ${digits} digits before the point and ${places} after (DECIMAL(18,${places}): up to ${'9'.repeat(digits)}.${'9'.repeat(places)})`;
  };
}

/** An amount (DECIMAL(18,4)) or a rate (DECIMAL(18,10), above zero). */
function decimal(type: 'amount' | 'rate', sqlType: Sql): ValueType {
  const pattern = literal(boundedDecimalPattern(DECIMAL_PLACES[type]));
  return {
    sqlType,
    check: (r) => {
      const positive = type === 'rate' ? sql` OR TRY_CAST(${r.value} AS DOUBLE) <= 0` : sql``;
      // One pattern checks the form and the range (the digits before the point): the message tells them apart.
      if (r.text) return r.scalar(sql`NOT regexp_matches(${r.value}, ${pattern})${positive}`);
      if (!isNumeric(r.column)) return ALWAYS;
      const parts = numericBadParts(type, r.column);
      return parts.length ? join(parts, sql` OR `) : undefined;
    },
    counts: (r) => (isNumeric(r.column) ? numericBadParts(type, r.column) : undefined),
    cast: (r) => (r.text ? sql`CAST(trim(${r.value}) AS ${sqlType})` : sql`CAST(${r.value} AS ${sqlType})`),
    message: decimalMessage(type),
  };
}

/**
 * An ISO 8601 date, or date and time (to the minute, second or a fraction of it), with Z, an offset
 * or nothing (UTC); and UTC or GMT written out, as BigQuery's CSV exports write it (2024-03-01 10:00:00 UTC).
 */
const ISO_TIMESTAMP = '\\d{4}-\\d{2}-\\d{2}([T ]\\d{2}:\\d{2}(:\\d{2}([.,]\\d+)?)?)? ?(Z|UTC|GMT|[+-]\\d{2}(:?\\d{2}(:?\\d{2})?)?)?';

/** A timestamp or a date: a raw time type reads as it is; any other typed raw column cannot. */
const timeCheck = (r: Raw) => (TIME_TYPE.test(r.column.rawType) ? undefined : ALWAYS);

export const VALUE_TYPES: Record<ColumnType, ValueType> = {
  string: {
    sqlType: trusted('VARCHAR'),
    check: () => undefined,
    cast: (r) => (r.text ? r.value : sql`CAST(${r.value} AS VARCHAR)`),
    message: notA('string'),
  },
  // A currency code in any case, blanks around it or not, is that currency (as --currency and --reference-currency
  // take it): 'eur' converts at 1 where EUR is the reference, and is one breakdown row with EUR.
  currency: {
    sqlType: trusted('VARCHAR'),
    check: () => undefined,
    cast: (r) => sql`upper(trim(${r.text ? r.value : sql`CAST(${r.value} AS VARCHAR)`}))`,
    message: notA('currency'),
  },
  timestamp: {
    sqlType: trusted('TIMESTAMP'),
    // ISO 8601 only: DuckDB's cast also takes a zone's name ("2024-03-02 10:00:00 America/New_York", "BST" as
    // Bangladesh's), and a value with one shifts the zone-less values read after it.
    check: (r) =>
      r.text ? r.scalar(sql`NOT regexp_full_match(trim(${r.value}), ${literal(ISO_TIMESTAMP)}) OR TRY_CAST(${r.value} AS TIMESTAMPTZ) IS NULL`) : timeCheck(r),
    // To the millisecond, as every answer prints a time and as attribution compares times (docs/reporting.md): digits
    // past it (BigQuery's microseconds) are dropped, so that a click 0.4 ms after an order in the same millisecond is
    // at its instant, not after it, and an order's first row is told apart from another of that millisecond by file
    // order, as the printed times would tell. Truncated (toward the past), so that no time crosses a day's bound.
    cast: (r) => sql`date_trunc('millisecond', ${r.text ? sql`CAST(CAST(${r.value} AS TIMESTAMPTZ) AS TIMESTAMP)` : sql`CAST(${r.value} AS TIMESTAMP)`})`,
    message: notA('timestamp'),
  },
  date: {
    sqlType: trusted('DATE'),
    check: (r) => {
      if (r.text) return r.scalar(sql`NOT regexp_full_match(trim(${r.value}), '\\d{4}-\\d{2}-\\d{2}') OR TRY_CAST(trim(${r.value}) AS DATE) IS NULL`);
      // A timestamp with a time of day is not a date (its cast would drop the time), as in text.
      if (/^TIMESTAMP/.test(r.column.rawType)) return sql`CAST(${r.value} AS TIMESTAMP) <> CAST(CAST(${r.value} AS DATE) AS TIMESTAMP)`;
      return timeCheck(r);
    },
    cast: (r) => (r.text ? sql`CAST(trim(${r.value}) AS DATE)` : sql`CAST(${r.value} AS DATE)`),
    message: notA('date'),
  },
  amount: decimal('amount', trusted('DECIMAL(18,4)')),
  rate: decimal('rate', trusted('DECIMAL(18,10)')),
  boolean: {
    sqlType: trusted('BOOLEAN'),
    check: (r) => {
      if (r.text) return r.scalar(sql`lower(trim(${r.value})) NOT IN ('true', 'false', '1', '0')`);
      if (r.column.rawType === 'BOOLEAN') return undefined;
      return INTEGER_TYPE.test(r.column.rawType) ? sql`${r.value} NOT IN (0, 1)` : ALWAYS;
    },
    cast: (r) => {
      if (r.text) return sql`lower(trim(${r.value})) IN ('true', '1')`;
      return r.column.rawType === 'BOOLEAN' ? r.value : sql`${r.value} = 1`;
    },
    message: notA('boolean'),
  },
  sourceType: {
    sqlType: trusted('VARCHAR'),
    check: (r) => r.scalar(sql`lower(trim(CAST(${r.value} AS VARCHAR))) NOT IN ('campaign', 'automation', 'smartflow')`),
    // A value spelled exactly as expected is good whatever the rest says: a cheap filter first.
    counts: (r, condition) =>
      r.column.rawType === 'VARCHAR' ? [sql`${r.value} NOT IN ('campaign', 'automation', 'smartflow') AND ${condition}`] : undefined,
    cast: (r) => sql`lower(trim(CAST(${r.value} AS VARCHAR)))`,
    message: notA('sourceType'),
  },
};

/** SQL that is true where a raw value is an object or an array (JSON files). */
export function nestedCondition(column: SourceColumn): Sql | undefined {
  if (isNested(column)) return sql`${ident(column.name)} IS NOT NULL`;
  if (isJson(column)) return sql`json_type(${ident(column.name)}) IN ('OBJECT', 'ARRAY')`;
  return undefined;
}

/** A check of a column's values against its type: the condition of a bad one, its count's parts, the value an example shows and its message. */
export interface TypeCheck {
  condition: Sql;
  counts?: Sql[];
  value: Sql;
  message: (value: unknown) => string;
}

/**
 * A DECIMAL's text as DuckDB writes it, every digit of its scale (10.000000, .500), as a number is
 * written (10, 0.5): the value exactly, 123456789012345.123456 too, as a double's shortest text is.
 */
function decimalText(text: string): string {
  const trimmed = text.includes('.') ? text.replace(/0+$/, '').replace(/\.$/, '') : text;
  return trimmed.replace(/^(-?)\./, (_, sign: string) => `${sign}0.`);
}

/** The check of a column's non-blank values against its type; undefined when every value reads (or the nested check says it). */
export function typeCheck(spec: ColumnSpec, column: SourceColumn): TypeCheck | undefined {
  if (isNested(column)) return undefined; // nestedCondition says it
  const type = VALUE_TYPES[spec.type];
  const r = raw(column);
  const bad = type.check(r);
  if (!bad) return undefined;
  const v = r.value;
  const condition = sql`${v} IS NOT NULL AND trim(CAST(${v} AS VARCHAR)) <> '' AND (${bad})`;
  const counts = type.counts?.(r, condition);
  const decimal = isDecimal(column);
  return {
    condition,
    ...(counts ? { counts } : {}),
    value: decimal ? sql`CAST(${v} AS VARCHAR)` : v,
    message: (value) => type.message(decimal && typeof value === 'string' ? decimalText(value) : value, r),
  };
}

/** SQL that reads a checked raw value as the column's type (NULL of the type when the file has no such column). */
export function typedValue(spec: ColumnSpec, column: SourceColumn | undefined, { wholeMilliseconds = false } = {}): Sql {
  const type = VALUE_TYPES[spec.type];
  if (!column) return sql`CAST(NULL AS ${type.sqlType})`;
  // Known to need no truncation (typing.ts, subMillisecondTimes): read as it is, so that Parquet statistics still prune a
  // period's rows, which they cannot through date_trunc.
  if (wholeMilliseconds && spec.type === 'timestamp' && TIME_TYPE.test(column.rawType)) return sql`CAST(${ident(column.name)} AS TIMESTAMP)`;
  return type.cast(raw(column));
}

/** A typed timestamp of a file that may hold digits past the millisecond (TIMESTAMP_MS, TIMESTAMP_S and DATE cannot). */
export const TYPED_TIMESTAMP = /^TIMESTAMP( WITH TIME ZONE|_NS)?$/;


/** SQL that is true where a raw amount is below zero (NULL where it cannot tell). */
export function negativeCondition(column: SourceColumn | undefined): Sql | undefined {
  if (!column) return undefined;
  const v = ident(column.name);
  if (column.rawType === 'VARCHAR') return sql`(ltrim(${v}) LIKE '-%' AND TRY_CAST(trim(${v}) AS DOUBLE) < 0)`;
  return isNumeric(column) ? sql`${v} < 0` : undefined;
}

/** SQL that is true where a raw is_refund reads as true (absent and empty mean false). */
export function refundCondition(column: SourceColumn | undefined): Sql {
  if (!column) return sql`false`;
  const v = ident(column.name);
  if (column.rawType === 'VARCHAR') return sql`coalesce(lower(trim(${v})) IN ('true', '1'), false)`;
  if (column.rawType === 'BOOLEAN') return sql`coalesce(${v}, false)`;
  return INTEGER_TYPE.test(column.rawType) ? sql`coalesce(${v} = 1, false)` : sql`false`;
}
