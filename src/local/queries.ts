/**
 * The named query builders of local mode: SQL over the attributed tables of a
 * Scope (attribution.ts, models/), before sorting and paging. Each returns the rows'
 * SELECT and, apart, the filter that picks its transactions (for the rate check).
 */
import { field, parameters, type Operation } from '../model/parameters.js';
import { periodInstants, timestampText } from '../model/period.js';
import type { ItemsQuery, ReportQuery, TotalQuery, TrendQuery } from '../model/query.js';
import type { SortKey } from '../model/types.js';
import { activityUrlSql, column, detailPathSql, type Qualifier } from './models/links.js';
import { ident, int, join, list, literal, sql, trusted, type Sql } from './sql.js';

/** Where a query reads: the attributed transactions, the source identities, and the reference currency. */
export interface QueryTables {
  conv: Sql;
  sourceInfo: Sql;
  referenceCurrency: string;
  /**
   * The per-day sums of conv (models/daily.ts), where every transaction is attributed (a served
   * dataset, an imported file): a report that filters no transactions (only the period) reads these.
   */
  daily?: DailySums;
}

/** The per-day sums (models/daily.ts): report_day, contact_day, plugin_contact_day and plugin_day. */
interface DailySums {
  sums: Sql;
  contacts: Sql;
  pluginContacts: Sql;
  days: Sql;
}

export const TS = (column: Sql) => sql`strftime(${column}, '%Y-%m-%dT%H:%M:%S.%gZ')`;
/** Rounds a/b half away from zero to a whole number (exact integer arithmetic). */
const ROUND_DIV = (a: Sql, b: Sql) => sql`(sign(${a}) * ((2 * abs(${a}) + ${b}) // (2 * ${b})))`;
/**
 * An average to 2 decimals as an exact double: amount (DECIMAL) / count, rounded half away from
 * zero to whole hundredths. Below 10^11 (every amount but the very largest) in 64-bit integers:
 * DuckDB divides HUGEINTs in software, about 2 microseconds each, which was a third of a served
 * report's time; the quotient is then under 2^53, so its double is the same either way.
 */
const AVERAGE = (amount: Sql, count: Sql) =>
  sql`CASE WHEN ${count} = 0 THEN 0.0
    WHEN abs(${amount}) < 100000000000 THEN CAST(sign(${amount}) * ((2 * CAST(abs(${amount}) * 10000 AS BIGINT) + 100 * CAST(${count} AS BIGINT)) // (200 * CAST(${count} AS BIGINT))) AS DOUBLE) / 100
    ELSE CAST(${ROUND_DIV(sql`CAST(${amount} * 10000 AS HUGEINT)`, sql`(100 * CAST(${count} AS HUGEINT))`)} AS DOUBLE) / 100 END`;
const D = (expr: Sql) => sql`CAST(${expr} AS DOUBLE)`;

/** The transactions a query covers: a relation over conv and a condition on it. */
export interface Filter {
  from: Sql;
  where: Sql;
}

/** A query's rows before sorting and paging, with the filter alone for the rate check. */
export interface Selection {
  filter: Filter;
  select: Sql;
  /**
   * The rows are those of one order id, found by the index (a look-up): so few that they are
   * read whole and sorted and paged in JavaScript (sortRows), one smaller statement to plan.
   */
  fewRows?: boolean;
  /**
   * The same rows restricted to those whose row_id `ids` selects (an items page): a page is chosen
   * on its sort keys and row ids alone, then only its rows get every column (backend.ts, rowsAndTotal).
   * A row_id names one transaction: conv holds one row per order row, numbered by the typed tables
   * (an append numbers on after the stored rows), never NULL.
   */
  ofRowIds?: (ids: Sql) => Sql;
  /**
   * The selection's row ids and sort keys, each key a column that sorts as the selection's own
   * does, cheaper: where a page is chosen (ofRowIds). An items page's `datetime` is there the
   * instant to the millisecond rather than its text (four times the sort's work on 200,000 rows):
   * the text sorts as the instant wherever every year has four digits, which itemsSelect makes
   * sure of before it offers one (instantsSortAsText).
   */
  sortKeys?: Sql;
}

/** The columns that order rows equal on every sort key, ascending: a report's sources, an items page's transactions (orderBy, sortRows). */
export const REPORT_TIE_BREAK: readonly string[] = ['source_type', 'id'];
export const ITEMS_TIE_BREAK: readonly string[] = ['row_id'];

/**
 * The period's condition on conv: its UTC days (`day`), or, in another zone, the instants from
 * the zone's start of dateFrom to its end of dateTo (model/period.ts), [start, end).
 */
export function periodFilter(period: { dateFrom: string; dateTo: string; timeZone?: string }): Sql {
  if (period.timeZone === undefined) return sql`day BETWEEN CAST(${period.dateFrom} AS DATE) AND CAST(${period.dateTo} AS DATE)`;
  const { start, end } = periodInstants(period.dateFrom, period.dateTo, period.timeZone);
  return sql`datetime >= CAST(${timestampText(start)} AS TIMESTAMP) AND datetime < CAST(${timestampText(end)} AS TIMESTAMP)`;
}

/**
 * The parameters a detailUrl carries beside the source and the period: the report's filters of
 * the transactions (country, currency), from the table. Its records are then exactly the row's.
 */
const DETAIL_FILTERS = parameters('report').filter((p) => field(p, 'column') !== undefined && !field(p, 'source'));

/**
 * A row's detailUrl (docs/reporting.md, rule 7): the per-source path (models/links.ts) and a query
 * string naming the source (sourceType, sourceId: the path alone is not exact, a smartflow node
 * without a delivery shares its path with its smartflow, a campaign its id with an automation's
 * campaign), the query's period and its filters of the transactions, percent-encoded. Followed as
 * it is, it answers exactly the row's records. The constant part goes in as a parameter.
 */
function detailUrlWithQuery(query: ReportQuery | ItemsQuery, qualifier: Qualifier = ''): Sql {
  return sql`${detailPathSql(qualifier)} || '?sourceType=' || url_encode(${column(qualifier, 'source_type')}) || '&sourceId=' || url_encode(${column(qualifier, 'source_id')}) || ${detailQueryOf(query)}`;
}

/** The constant tail of a query's detailUrls: the period and the filters, percent-encoded. */
export function detailQueryOf(query: ReportQuery | ItemsQuery): string {
  const values = query as Record<string, unknown>;
  const pairs: [string, string][] = [
    ['dateFrom', query.dateFrom],
    ['dateTo', query.dateTo],
    // the zone of the period's days, where it is not UTC (a UTC detailUrl stays as it was)
    ...(query.timeZone !== undefined ? [['timeZone', query.timeZone] as [string, string]] : []),
  ];
  for (const p of DETAIL_FILTERS) {
    const value = values[p.name];
    if (value !== undefined) pairs.push([p.name, Array.isArray(value) ? value.join(',') : String(value)]);
  }
  return pairs.map(([k, v]) => `&${k}=${encodeURIComponent(v)}`).join('');
}

/** Text in code point order (UTF-8's bytes, as DuckDB compares VARCHAR), not UTF-16's. */
export function compareText(a: string, b: string): number {
  for (let i = 0, j = 0; i < a.length && j < b.length; ) {
    const x = a.codePointAt(i)!;
    const y = b.codePointAt(j)!;
    if (x !== y) return x < y ? -1 : 1;
    i += x > 0xffff ? 2 : 1;
    j += y > 0xffff ? 2 : 1;
  }
  // one holds the other's code points, in the same code units: the shorter first
  return Math.sign(a.length - b.length);
}

/** Two values of one column as DuckDB's ORDER BY compares them (text, numbers, booleans); null is handled by the caller. */
function compareValues(a: unknown, b: unknown): number {
  if (typeof a === 'string' && typeof b === 'string') return compareText(a, b);
  const x = typeof a === 'boolean' ? Number(a) : (a as number | bigint);
  const y = typeof b === 'boolean' ? Number(b) : (b as number | bigint);
  return x < y ? -1 : x > y ? 1 : 0;
}

/**
 * Sorts rows as orderBy orders them in SQL (each key NULLS LAST, then the tie break's columns): the
 * rows of a look-up (Selection.fewRows), read whole, and a report summed in JavaScript (day-sums.ts).
 */
export function sortRows<T extends Record<string, unknown>>(rows: T[], sort: SortKey[], tieBreak: readonly string[]): T[] {
  const keys = [...sort, ...tieBreak.map((field) => ({ field, descending: false }))];
  return [...rows].sort((r, s) => {
    for (const { field, descending } of keys) {
      const a = r[field];
      const b = s[field];
      if (a === b) continue;
      if (a === null || a === undefined) return 1;
      if (b === null || b === undefined) return -1;
      const c = compareValues(a, b);
      if (c !== 0) return descending ? -c : c;
    }
    return 0;
  });
}

export function orderBy(sort: SortKey[], tieBreak: readonly string[]): Sql {
  // Field names come from the fixed lists of model/query.ts; they are quoted as identifiers.
  const keys = sort.map((k) => sql`${ident(k.field)} ${k.descending ? trusted('DESC') : trusted('ASC')} NULLS LAST`);
  return join([...keys, ...tieBreak.map((field) => ident(field))]);
}

/**
 * The conditions of a query's parameters that filter transactions, each from its row of the
 * table (model/parameters.ts: the column it compares, by its kind). Values go in as parameters.
 * Codes asked come upper-cased (query.ts); the data's are compared upper-cased too, so a file
 * that writes `cz` matches `--country CZ`. An order id is answered first, alone in its scan, so
 * that the index on order_id (an imported file's) finds its few rows; `from` is then that scan.
 */
export function transactionFilters(operation: Operation, query: ReportQuery | ItemsQuery | TrendQuery | TotalQuery, conv: Sql): { from: Sql; where: Sql[]; byOrder: boolean } {
  const values = query as Record<string, unknown>;
  const where: Sql[] = [];
  let from = conv;
  let byOrder = false;
  for (const p of parameters(operation)) {
    const column = field(p, 'column');
    const value = values[p.name];
    if (column === undefined || value === undefined) continue;
    if (Array.isArray(value)) {
      // codes: among the list
      where.push(sql`upper(${ident(column)}) IN ${list(value as string[])}`);
      continue;
    }
    if (typeof value !== 'string') throw new Error(`no SQL filter for a ${p.kind} value (${p.name})`);
    const condition = sql`${ident(column)} = ${value}`;
    const types = field(p, 'ofTypes');
    if (p.name === 'orderId') {
      from = sql`(SELECT * FROM ${conv} WHERE ${condition} OFFSET 0)`;
      byOrder = true;
    } else where.push(types ? sql`${condition} AND source_type IN (${join(types.map(literal))})` : condition);
  }
  return { from, where, byOrder };
}

/** The conv columns a query's filters compare (model/parameters.ts), the values it gives. */
export function filteredColumns(operation: Operation, query: ReportQuery | ItemsQuery | TrendQuery | TotalQuery): string[] {
  const values = query as Record<string, unknown>;
  return parameters(operation).flatMap((p) => {
    const column = field(p, 'column');
    return column !== undefined && values[p.name] !== undefined ? [column] : [];
  });
}

/** The period's condition and the filters' conditions, joined with AND. */
export const allOf = (conditions: Sql[]) => join(conditions, trusted(' AND '));

export function itemsFilter(conv: Sql, query: ItemsQuery): Filter & { byOrder: boolean } {
  const period = periodFilter(query);
  const { from, where, byOrder } = transactionFilters('items', query, conv);
  return { from, where: allOf([period, ...where]), byOrder };
}

/**
 * True when every transaction of the query's period has a year of four digits (0000 to 9999): its
 * time's text (TS: fixed width, to the millisecond) then sorts as the instant truncated to the
 * millisecond, ties included. A UTC period is of whole days of such years (dates have four digits);
 * a zone's may begin or end a day past them.
 */
function instantsSortAsText(period: { dateFrom: string; dateTo: string; timeZone?: string }): boolean {
  if (period.timeZone === undefined) return true;
  const { start, end } = periodInstants(period.dateFrom, period.dateTo, period.timeZone);
  return start.getTime() >= YEAR_0000 && end.getTime() <= YEAR_10000;
}

const YEAR_0000 = Date.parse('0000-01-01T00:00:00.000Z');
const YEAR_10000 = Date.parse('+010000-01-01T00:00:00.000Z');

/** One of `of` disjoint parts of a table's rows, by the hash of their row_id (never NULL: a NULL row_id hashes too). */
export interface Part {
  index: number;
  of: number;
}

const partOf = ({ index, of }: Part): Sql => sql`hash(row_id) % ${int(of)} = ${int(index)}`;

/** The rows of a row group of DuckDB's tables (its default row_group_size): a table scan gives each thread one. */
const ROW_GROUP_ROWS = 122_880;
/** The fewest rows a part takes (one vector of DuckDB's): fewer are not worth a thread. */
const MIN_PART_ROWS = 2048;
/** The most parts (each scans the table for its rows). */
const MAX_PARTS = 16;

/**
 * Into how many parts (see Part) to split a table of `rows` rows so that DuckDB's `threads` share
 * the work on its rows: a table scan gives each thread a row group, so a table of fewer row groups
 * than threads leaves threads idle, whatever each row costs. 1: no split. The row groups are an
 * estimate from the rows (a part too many costs one more filtered scan of the table).
 */
export function partCount(threads: number, rows: number): number {
  const rowGroups = Math.max(1, Math.ceil(rows / ROW_GROUP_ROWS));
  return Math.max(1, Math.min(MAX_PARTS, Math.ceil(threads / rowGroups), Math.floor(rows / MIN_PART_ROWS)));
}

/**
 * The items of a query: one row per attributed transaction, with the columns a ConversionRecord needs.
 * links 'js': without the detailUrl and activityUrl columns (unless the rows are sorted by
 * activityUrl), which the record then builds in JavaScript, the same bytes for less SQL to plan
 * on every request (models/links.ts); 'sql': with them, for the lines DuckDB writes (text.ts).
 * part: only the rows of that part (the lines' statement reads the parts side by side).
 */
export function itemsSelect(tables: QueryTables, query: ItemsQuery, links: 'sql' | 'js' = 'sql', part?: Part): Selection {
  const filter = itemsFilter(tables.conv, query);
  if (part) filter.where = allOf([filter.where, partOf(part)]);
  const linkColumns =
    links === 'js' && !query.sort.some((k) => k.field === 'activityUrl')
      ? sql``
      : sql`, ${detailUrlWithQuery(query)} AS detail_url, ${activityUrlSql()} AS "activityUrl"`;
  const selectWhere = (where: Sql, datetime = TS(sql`datetime`)) => sql`
    SELECT row_id,
      contact_id AS "contactId", client_contact_id AS "clientContactId", ${datetime} AS "datetime",
      order_id AS "orderId", first_name AS "firstName", surname AS "surname",
      ${D(sql`amount_w_tax`)} AS "conversionsAmount", currency AS "conversionsCurrency",
      ${D(sql`ref_w`)} AS "conversionsReferenceAmount", CAST(${tables.referenceCurrency} AS VARCHAR) AS "referenceCurrency",
      country AS "country", is_refund AS "isRefund",
      ${TS(sql`touch_datetime`)} AS touch_datetime, CAST(centi_hours AS DOUBLE) / 100 AS hours,
      -- the exact values behind the doubles, for the lines text.ts writes
      amount_w_tax AS amount_w_tax_exact, ref_w AS ref_w_exact, centi_hours,
      source_type, source_id, name, campaign_id, smartflow_id, smartflow_name, delivery_id, delivery_name${linkColumns}
    FROM ${filter.from} WHERE ${where}`;
  return {
    filter: { from: filter.from, where: filter.where },
    select: selectWhere(filter.where),
    ofRowIds: (ids) => selectWhere(allOf([filter.where, sql`row_id IN (${ids})`])),
    ...(instantsSortAsText(query) ? { sortKeys: selectWhere(filter.where, sql`date_trunc('millisecond', datetime)`) } : {}),
    ...(filter.byOrder ? { fewRows: true } : {}),
  };
}

/** Per source (by its key columns: or a bucket and series): the totals in the reference currency, and the breakdown per order currency. */
export const PER_SOURCE = (key: Sql, extra: Sql = sql``) => sql`per_source AS (
      SELECT ${key},${extra}
        sum(n) AS n, sum(ref_wo) AS wo, sum(ref_w) AS w, sum(rn) AS rn, sum(ref_rwo) AS rwo, sum(ref_rw) AS rw,
        -- in currency order: structs sort by their first field (list_sort is cheaper than an ordered aggregate)
        list_sort(list(struct_pack(
          currency := currency,
          conversionsAmountWoTax := ${D(sql`wo`)}, conversionsAmountWTax := ${D(sql`w`)},
          conversionsNumber := CAST(n AS INTEGER), averageConversion := ${AVERAGE(sql`w`, sql`n`)},
          refundsAmountWoTax := ${D(sql`rwo`)}, refundsAmountWTax := ${D(sql`rw`)}, refundsNumber := CAST(rn AS INTEGER),
          grossConversionsAmountWoTax := ${D(sql`wo + rwo`)}, grossConversionsAmountWTax := ${D(sql`w + rw`)},
          grossConversionsNumber := CAST(n + rn AS INTEGER),
          conversionAmountWoTaxReference := ${D(sql`ref_wo`)}, conversionAmountWTaxReference := ${D(sql`ref_w`)}
        )), 'ASC', 'NULLS LAST') AS breakdown
      FROM per_currency GROUP BY ${key})`;

/**
 * The sums of one group (by its key columns: a source, a bucket and series) and order currency,
 * from the period's transactions (conv path, period_tx).
 */
const perCurrencyFromTransactions = (key: Sql) => sql`
      SELECT ${key}, currency,
        count(*) FILTER (WHERE NOT is_refund) AS n,
        coalesce(sum(amount_wo_tax) FILTER (WHERE NOT is_refund), 0) AS wo,
        coalesce(sum(amount_w_tax) FILTER (WHERE NOT is_refund), 0) AS w,
        count(*) FILTER (WHERE is_refund) AS rn,
        coalesce(sum(amount_wo_tax) FILTER (WHERE is_refund), 0) AS rwo,
        coalesce(sum(amount_w_tax) FILTER (WHERE is_refund), 0) AS rw,
        coalesce(sum(ref_wo) FILTER (WHERE NOT is_refund), 0) AS ref_wo,
        coalesce(sum(ref_w) FILTER (WHERE NOT is_refund), 0) AS ref_w,
        coalesce(sum(ref_wo) FILTER (WHERE is_refund), 0) AS ref_rwo,
        coalesce(sum(ref_w) FILTER (WHERE is_refund), 0) AS ref_rw
      FROM period_tx GROUP BY ${key}, currency`;

/**
 * The same sums from the per-day sums (models/daily.ts, report_day), with the first and last
 * conversion: sums of exact decimals and counts, so the same values as from the transactions.
 */
export const PER_CURRENCY_FROM_DAYS = (sums: Sql, where: Sql, key: Sql = sql`source_key`) => sql`
      SELECT ${key}, currency,
        sum(n) AS n, coalesce(sum(wo), 0) AS wo, coalesce(sum(w), 0) AS w,
        sum(rn) AS rn, coalesce(sum(rwo), 0) AS rwo, coalesce(sum(rw), 0) AS rw,
        coalesce(sum(ref_wo), 0) AS ref_wo, coalesce(sum(ref_w), 0) AS ref_w,
        coalesce(sum(ref_rwo), 0) AS ref_rwo, coalesce(sum(ref_rw), 0) AS ref_rw,
        min(first_at) AS first_at, max(last_at) AS last_at
      FROM ${sums} WHERE ${where} GROUP BY ALL`;

/**
 * The figures of a group (model/shapes.ts, PERIOD_FIGURES) from per_source (g: sums, breakdown) and
 * contacts_and_times (u: unique contacts, first and last conversion), in the reference currency.
 */
export const PERIOD_FIGURES = (referenceCurrency: string, g: Sql = sql`g`, u: Sql = sql`u`) => sql`${TS(sql`${u}.first_at`)} AS "firstConversionAt", ${TS(sql`${u}.last_at`)} AS "lastConversionAt",
      ${D(sql`${g}.wo`)} AS "conversionsAmountWoTax", ${D(sql`${g}.w`)} AS "conversionsAmountWTax",
      CAST(${g}.n AS INTEGER) AS "conversionsNumber", CAST(${referenceCurrency} AS VARCHAR) AS "referenceCurrency",
      CAST(${u}.uc AS INTEGER) AS "uniqueContacts",
      ${AVERAGE(sql`${g}.w`, sql`${g}.n`)} AS "averageConversion", ${AVERAGE(sql`${g}.w`, sql`${u}.uc`)} AS "averageUniqueConversion",
      ${D(sql`${g}.rwo`)} AS "refundsAmountWoTax", ${D(sql`${g}.rw`)} AS "refundsAmountWTax", CAST(${g}.rn AS INTEGER) AS "refundsNumber",
      ${D(sql`${g}.wo + ${g}.rwo`)} AS "grossConversionsAmountWoTax", ${D(sql`${g}.w + ${g}.rw`)} AS "grossConversionsAmountWTax",
      CAST(${g}.n + ${g}.rn AS INTEGER) AS "grossConversionsNumber",
      ${g}.breakdown`;

/** A report's sums per source from the per-day sums: per_source and contacts_and_times, keyed by source_key. */
function sumsFromDays(daily: DailySums, where: Sql, query: ReportQuery): Sql {
  return sql`per_currency AS (${PER_CURRENCY_FROM_DAYS(daily.sums, where)}),
    ${PER_SOURCE(sql`source_key`, sql` min(first_at) AS first_at, max(last_at) AS last_at,`)},
    -- a contact counts once per source: on its first day of the period (no earlier day of it in the period)
    unique_contacts AS (
      SELECT source_key, count(*) AS uc FROM ${daily.contacts}
      WHERE ${where} AND coalesce(prev_day, DATE '0001-01-01') < CAST(${query.dateFrom} AS DATE)
      GROUP BY source_key),
    contacts_and_times AS (
      SELECT g.source_key, coalesce(u.uc, 0) AS uc, g.first_at, g.last_at
      FROM per_source g LEFT JOIN unique_contacts u USING (source_key))`;
}

/**
 * Sums per group (its key columns: a source; a bucket and series) from the period's transactions,
 * period_tx, as `periodTx` selects them: per_source and contacts_and_times, keyed by the group.
 */
export function sumsFromTransactions(periodTx: Sql, key: Sql): Sql {
  return sql`period_tx AS (${periodTx}),
    per_currency AS (${perCurrencyFromTransactions(key)}),
    ${PER_SOURCE(key)},
    contacts_and_times AS (
      SELECT ${key},
        count(DISTINCT contact_id) FILTER (WHERE NOT is_refund) AS uc,
        min(datetime) FILTER (WHERE NOT is_refund) AS first_at,
        max(datetime) FILTER (WHERE NOT is_refund) AS last_at
      FROM period_tx GROUP BY ${key})`;
}

/** q (lower-cased): the source (source_info, as i) whose name or smartflow name holds the text. */
export const nameHolds = (q: string) => sql`contains(lower(i.name), ${q}) OR contains(lower(coalesce(i.smartflow_name, '')), ${q})`;

/**
 * The report of a query: one row per attributing source, with its breakdown per order currency.
 * Two ways to the same rows: from the period's transactions, or, without country or currency
 * filters and where they exist, from the per-day sums (a few thousand rows for a month instead
 * of every transaction, and unique contacts counted without a DISTINCT: see contact_day).
 */
/** links 'js': without the detailUrl column, which the row then builds in JavaScript (see itemsSelect). */
export function reportSelect(tables: QueryTables, query: ReportQuery, links: 'sql' | 'js' = 'sql'): Selection {
  const { filter, fromDays } = reportFilter(tables, query);
  const daily = fromDays ? tables.daily : undefined;
  const sums = daily
    ? sumsFromDays(daily, filter.where, query)
    : sumsFromTransactions(sql`SELECT * FROM ${filter.from} WHERE ${filter.where}`, sql`source_type, source_id`);
  // The per-day sums are keyed by source_key (source_info's number for a source).
  const onSource = daily ? sql`USING (source_key)
    JOIN ${tables.sourceInfo} i ON i.source_key = g.source_key` : sql`USING (source_type, source_id)
    JOIN ${tables.sourceInfo} i ON i.source_type = g.source_type AND i.source_id = g.source_id`;
  const q = query.q?.toLowerCase();
  const nameFilter = q === undefined ? sql`` : sql`WHERE ${nameHolds(q)}`;
  const select = sql`
    WITH ${sums}
    SELECT ${sourceColumns(query, links)}, ${PERIOD_FIGURES(tables.referenceCurrency)}
    FROM per_source g JOIN contacts_and_times u ${onSource}
    ${nameFilter}`;
  return { filter, select };
}

/**
 * The transactions a report covers, and whether it reads the per-day sums (fromDays): where they
 * exist, for the period alone in UTC days (any filter of the transactions, or another zone's days,
 * reads the transactions).
 */
export function reportFilter(tables: QueryTables, query: ReportQuery): { filter: Filter; fromDays: boolean } {
  const { from, where, byOrder } = transactionFilters('report', query, tables.conv);
  const fromDays = tables.daily !== undefined && where.length === 0 && !byOrder && query.timeZone === undefined;
  return { filter: { from, where: allOf([periodFilter(query), ...where]) }, fromDays };
}

/** A report row's source (source_info as i), its detailUrl naming the query's period and filters. */
const sourceColumns = (query: ReportQuery, links: 'sql' | 'js' = 'sql') => sql`i.source_type, i.source_id AS "id", i.name AS "name",
      i.campaign_id, i.smartflow_id, i.smartflow_name, i.delivery_id, i.delivery_name,
      ${links === 'sql' ? sql`${detailUrlWithQuery(query, 'i.')} AS detail_url,` : sql``}
      ${TS(sql`i.started_at`)} AS "sourceStartedAt"`;

/** The sums of a group without transactions (a source only in the other period of a comparison), as per_source and contacts_and_times name them. */
const NO_SUMS = sql`SELECT 0 AS wo, 0 AS w, 0 AS n, 0 AS rn, 0 AS rwo, 0 AS rw, [] AS breakdown, 0 AS uc, CAST(NULL AS TIMESTAMP) AS first_at, CAST(NULL AS TIMESTAMP) AS last_at`;

/** The column of a compared figure of the other period, beside a report row (cmp_found: the source has a row there). */
export const comparedColumn = (figure: string) => `cmp_${figure}`;

/**
 * A report compared with another period (--compare): the rows of the sources of both periods,
 * the current period's figures (zeros, null first and last conversion and an empty breakdown for
 * a source only in the other period, with a detailUrl of the current period), and beside each
 * the other period's figures (cmp_*, cmp_found) from the same report of that period.
 */
export function comparedReportSelect(tables: QueryTables, query: ReportQuery, other: ReportQuery, figures: readonly string[]): Selection & { otherFilter: Filter } {
  const current = reportSelect(tables, query);
  const past = reportSelect(tables, other);
  const compared = figures.map((f) => sql`o.${ident(f)} AS ${ident(comparedColumn(f))}`);
  const select = sql`
    WITH cur AS MATERIALIZED (${current.select}), oth AS MATERIALIZED (${past.select}),
      all_rows AS (
        SELECT * FROM cur
        UNION ALL BY NAME
        SELECT ${sourceColumns(query)}, ${PERIOD_FIGURES(tables.referenceCurrency, sql`z`, sql`z`)}
        FROM oth o JOIN ${tables.sourceInfo} i ON i.source_type = o.source_type AND i.source_id = o."id" CROSS JOIN (${NO_SUMS}) z
        WHERE NOT EXISTS (SELECT 1 FROM cur c WHERE c.source_type = o.source_type AND c."id" = o."id"))
    SELECT r.*, o.source_type IS NOT NULL AS cmp_found, ${join(compared)}
    FROM all_rows r LEFT JOIN oth o ON o.source_type = r.source_type AND o."id" = r."id"`;
  return { filter: current.filter, select, otherFilter: past.filter };
}
