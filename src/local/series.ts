/**
 * The named queries of a series and of a period's total (convx trend and total, GET
 * /v1/conversions/timeframes, /daily and /total): the period's transactions as a report selects
 * them (queries.ts: its filters, its sums per currency, its figures), grouped by bucket of a time
 * zone and, per source, by series; every bucket of the period is present, zeros where nothing
 * converted.
 */
import type { Interval } from '../model/parameters.js';
import type { TotalQuery, TrendQuery } from '../model/query.js';
import { allOf, nameHolds, PER_CURRENCY_FROM_DAYS, PER_SOURCE, PERIOD_FIGURES, periodFilter, sumsFromTransactions, transactionFilters, TS, type Filter, type QueryTables } from './queries.js';
import { ident, int, sql, trusted, type Sql } from './sql.js';

/** An interval's bucket: the part date_trunc takes, its step, and its label (ISO weeks: 2025-W01). */
const BUCKETS: Readonly<Record<Interval, { part: string; step: Sql; label: string }>> = {
  hour: { part: 'hour', step: trusted('INTERVAL 1 HOUR'), label: '%Y-%m-%dT%H' },
  day: { part: 'day', step: trusted('INTERVAL 1 DAY'), label: '%Y-%m-%d' },
  week: { part: 'week', step: trusted('INTERVAL 7 DAY'), label: '%G-W%V' },
  month: { part: 'month', step: trusted('INTERVAL 1 MONTH'), label: '%Y-%m' },
};

/** A UTC instant (TIMESTAMP) as the wall-clock time of a time zone (an IANA name). */
function wallClock(zone: string, instant: Sql): Sql {
  return zone === 'UTC' ? instant : sql`timezone(${zone}, timezone('UTC', ${instant}))`;
}

/**
 * A wall-clock time of a time zone as its UTC instant (TIMESTAMP), as model/period.ts takes it: a
 * time the clocks pass twice (set back over it: midnight in America/Havana on 2024-11-03) is its
 * first instant, where DuckDB's cast gives the second; the instants the clocks can be set back by
 * (30 minutes, an hour, two, three: Antarctica/Casey on 2023-03-09) are tried before it. A time the clocks skip is the first instant after
 * the jump, as DuckDB gives it.
 */
function instantOf(zone: string, wall: Sql): Sql {
  if (zone === 'UTC') return wall;
  const cast = sql`timezone('UTC', timezone(${zone}, ${wall}))`;
  const earlier = sql`[${cast} - INTERVAL 3 HOUR, ${cast} - INTERVAL 2 HOUR, ${cast} - INTERVAL 1 HOUR, ${cast} - INTERVAL 30 MINUTE]`;
  return sql`coalesce(list_min(list_filter(${earlier}, lambda t: ${wallClock(zone, sql`t`)} = ${wall})), ${cast})`;
}

/**
 * The start of a transaction's hour in the zone, as an instant: the instant less the minutes and
 * seconds its wall-clock time is past the hour. Hours are buckets of instants so that a day of 23
 * or 25 hours has as many buckets (a wall-clock hour that repeats is two), and the zone's own
 * hours, so that in a zone 45 minutes off the hour (Asia/Kathmandu) a bucket is 05:00 to 06:00 there.
 */
function zoneHourOf(zone: string, instant: Sql): Sql {
  const wall = wallClock(zone, instant);
  return sql`(${instant} - (${wall} - date_trunc('hour', ${wall})))`;
}

/** The bucket of a transaction: its datetime cut to the interval (days, weeks and months in the zone's wall-clock time). */
function bucketOf(interval: Interval, zone: string, datetime: Sql): Sql {
  if (interval === 'hour') return zone === 'UTC' ? sql`date_trunc('hour', ${datetime})` : zoneHourOf(zone, datetime);
  return sql`date_trunc(${BUCKETS[interval].part}, ${wallClock(zone, datetime)})`;
}

/**
 * The buckets of a period in a zone (CTE buckets): each bucket's key (as bucketOf cuts a
 * transaction's datetime), its label, and the instants of its part within the period (a week or
 * month cut by the period starts or ends with it), from the period's first instant (dateFrom
 * 00:00 in the zone) to the first after it.
 */
function bucketsOf(interval: Interval, zone: string, period: { dateFrom: string; dateTo: string }): Sql {
  const { part, step, label } = BUCKETS[interval];
  if (interval === 'hour' && zone !== 'UTC') return zoneHoursOf(zone, period);
  // wall-clock time of the zone (for hours: UTC, where wall-clock time is the instant)
  return sql`bounds AS (
      SELECT CAST(${period.dateFrom} AS TIMESTAMP) AS lo, CAST(${period.dateTo} AS TIMESTAMP) + INTERVAL 1 DAY AS hi),
    buckets AS (
      SELECT bucket, strftime(bucket, ${label}) AS label, ${instantOf(zone, sql`greatest(bucket, lo)`)} AS start_at, ${instantOf(zone, sql`least(bucket + ${step}, hi)`)} AS end_at
      FROM (SELECT unnest(range(date_trunc(${part}, lo), hi, ${step})) AS bucket, lo, hi FROM bounds))`;
}

/**
 * The hours of a period in a zone other than UTC: the zone hours (zoneHourOf) of instants every 15
 * minutes from its first instant (every offset and every change of one falls on a quarter hour, so
 * each hour holds one), each from the first of its instants to the first of the next hour's;
 * labelled with the zone's wall-clock hour at its first instant (a repeated hour, when summer time
 * ends, twice; in Australia/Lord_Howe the half hour after the clocks jump to 02:30 is 02).
 */
function zoneHoursOf(zone: string, period: { dateFrom: string; dateTo: string }): Sql {
  return sql`bounds AS (
      SELECT ${instantOf(zone, sql`CAST(${period.dateFrom} AS TIMESTAMP)`)} AS lo, ${instantOf(zone, sql`CAST(${period.dateTo} AS TIMESTAMP) + INTERVAL 1 DAY`)} AS hi),
    hours AS (
      SELECT ${zoneHourOf(zone, sql`t`)} AS bucket, min(t) AS start_at
      FROM (SELECT unnest(range(lo, hi, INTERVAL 15 MINUTE)) AS t FROM bounds) GROUP BY ALL),
    buckets AS (
      SELECT bucket, strftime(${wallClock(zone, sql`start_at`)}, ${BUCKETS.hour.label}) AS label,
        start_at, coalesce(lead(start_at) OVER (ORDER BY start_at), hi) AS end_at
      FROM hours, bounds)`;
}

/** How the transactions are grouped: by bucket (a series; none: a total) and by source (the top ones apart). */
interface Grouping {
  buckets?: { interval: Interval; zone: string };
  /** Per source: this many sources by the period's conversionsAmountWTax, the rest as one `other` series. */
  top?: number;
  /** Per source: the sources ranked by this query's transactions instead (a comparison's other period has the current period's series). */
  rankedBy?: TrendQuery;
}

/** The query's transactions (period_tx before grouping), q included: the sources whose name holds it. */
function matchedTransactions(tables: QueryTables, query: TrendQuery | TotalQuery, operation: 'trend' | 'total', name = 'matched'): { filter: Filter; matched: Sql } {
  const { from, where } = transactionFilters(operation, query, tables.conv);
  const filter: Filter = { from, where: allOf([periodFilter(query), ...where]) };
  const q = query.q?.toLowerCase();
  const named =
    q === undefined
      ? sql``
      : sql` AND EXISTS (SELECT 1 FROM ${tables.sourceInfo} i WHERE i.source_type = t.source_type AND i.source_id = t.source_id AND (${nameHolds(q)}))`;
  return { filter, matched: sql`${ident(name)} AS (SELECT * FROM ${filter.from} t WHERE ${filter.where}${named})` };
}

/**
 * The series (CTE series: series_rank, series, series_name) and the rank of each transaction's
 * series (the period_tx select): one series over every source, or per source the top ones by the
 * period's conversionsAmountWTax (ties by type and id; the transactions of `rankFrom`, by default
 * the period's) and, past them, `other`.
 */
function seriesOf(tables: QueryTables, top: number | undefined, bucket: Sql, rankFrom: Sql = sql`matched`): { ctes: Sql; periodTx: Sql } {
  if (top === undefined) {
    return {
      ctes: sql`series AS (SELECT 0 AS series_rank, CAST(NULL AS VARCHAR) AS series, CAST(NULL AS VARCHAR) AS series_name)`,
      periodTx: sql`SELECT *, ${bucket} AS bucket, 0 AS series_rank FROM matched`,
    };
  }
  const ctes = sql`ranked AS (
      SELECT source_type, source_id,
        row_number() OVER (ORDER BY coalesce(sum(ref_w) FILTER (WHERE NOT is_refund), 0) DESC, source_type, source_id) AS r
      FROM ${rankFrom} GROUP BY source_type, source_id),
    series AS (
      SELECT DISTINCT least(k.r, ${int(top + 1)}) AS series_rank,
        CASE WHEN k.r <= ${int(top)} THEN k.source_type || ':' || k.source_id ELSE 'other' END AS series,
        CASE WHEN k.r <= ${int(top)} THEN i.name ELSE 'other' END AS series_name
      FROM ranked k JOIN ${tables.sourceInfo} i ON i.source_type = k.source_type AND i.source_id = k.source_id)`;
  // a source the ranking did not see (ranked by another period's transactions) is among the rest
  const periodTx = sql`SELECT t.*, ${bucket} AS bucket, least(coalesce(k.r, ${int(top + 1)}), ${int(top + 1)}) AS series_rank
      FROM matched t LEFT JOIN ranked k ON k.source_type = t.source_type AND k.source_id = t.source_id`;
  return { ctes, periodTx };
}

/**
 * The sums per bucket and series (per_source, contacts_and_times keyed by bucket, series_rank)
 * and the CTEs they need, from the query's transactions. The rate check's filter beside them.
 */
function sumsOfTransactions(tables: QueryTables, query: TrendQuery | TotalQuery, operation: 'trend' | 'total', grouping: Grouping): { filter: Filter; ctes: Sql } {
  const { filter, matched } = matchedTransactions(tables, query, operation);
  const b = grouping.buckets;
  const bucket = b ? bucketOf(b.interval, b.zone, sql`datetime`) : sql`CAST(NULL AS TIMESTAMP)`;
  const rank = grouping.rankedBy && matchedTransactions(tables, grouping.rankedBy, operation, 'rank_matched');
  const series = seriesOf(tables, grouping.top, bucket, rank ? sql`rank_matched` : undefined);
  const ctes = sql`${matched}, ${rank ? sql`${rank.matched}, ` : sql``}${series.ctes},
      ${sumsFromTransactions(series.periodTx, sql`bucket, series_rank`)}`;
  return { filter, ctes };
}

/**
 * The same sums from the per-day sums (models/daily.ts), where they can answer: a query that
 * filters no transactions, over every source as one series, of UTC days, weeks or months (or a
 * total). A series by day reads plugin_day, each day's figures as shown; weeks, months and a
 * total add up report_day, and count as unique contacts plugin_contact_day's rows of the bucket
 * whose previous day lies before the bucket's first day in the period. Undefined where the sums
 * cannot answer.
 */
function sumsOfDays(tables: QueryTables, query: TrendQuery | TotalQuery, operation: 'trend' | 'total', grouping: Grouping): Sql | undefined {
  const daily = tables.daily;
  const b = grouping.buckets;
  if (!daily || grouping.top !== undefined || query.q !== undefined || (b && (b.zone !== 'UTC' || b.interval === 'hour'))) return undefined;
  const { where, byOrder } = transactionFilters(operation, query, tables.conv);
  if (where.length || byOrder || query.timeZone !== undefined) return undefined;
  const period = periodFilter(query);
  const series = sql`series AS (SELECT 0 AS series_rank, CAST(NULL AS VARCHAR) AS series, CAST(NULL AS VARCHAR) AS series_name)`;
  // by day: plugin_day holds each day's figures as they are shown
  if (b?.interval === 'day') {
    const day = sql`SELECT CAST(day AS TIMESTAMP) AS bucket, 0 AS series_rank`;
    return sql`${series},
      per_source AS (${day}, n, wo, w, rn, rwo, rw, breakdown FROM ${daily.days} WHERE ${period}),
      contacts_and_times AS (${day}, uc, first_at, last_at FROM ${daily.days} WHERE ${period})`;
  }
  const bucket = b ? sql`date_trunc(${BUCKETS[b.interval].part}, CAST(day AS TIMESTAMP))` : sql`CAST(NULL AS TIMESTAMP)`;
  const from = sql`CAST(${query.dateFrom} AS DATE)`;
  // a contact's row counts where no earlier day of it lies in the bucket's part of the period
  return sql`${series},
      per_currency AS (${PER_CURRENCY_FROM_DAYS(daily.sums, period, sql`${bucket} AS bucket, 0 AS series_rank`)}),
      ${PER_SOURCE(sql`bucket, series_rank`, sql` min(first_at) AS first_at, max(last_at) AS last_at,`)},
      unique_contacts AS (
        SELECT ${bucket} AS bucket, count(*) AS uc FROM ${daily.pluginContacts}
        WHERE ${period} AND coalesce(prev_day, DATE '0001-01-01') < ${b ? sql`greatest(CAST(${bucket} AS DATE), ${from})` : from}
        GROUP BY ALL),
      contacts_and_times AS (
        SELECT g.bucket, g.series_rank, coalesce(u.uc, 0) AS uc, g.first_at, g.last_at
        FROM per_source g LEFT JOIN unique_contacts u ON u.bucket IS NOT DISTINCT FROM g.bucket)`;
}

/**
 * The figures per bucket and series (or of the whole period), every bucket and series present:
 * the sums of a report (queries.ts) grouped by (bucket, series_rank), LEFT JOINed to the grid of
 * buckets and series, zeros (and null first and last conversions, an empty breakdown) where no
 * transaction falls.
 */
function groupedSelect(tables: QueryTables, query: TrendQuery | TotalQuery, operation: 'trend' | 'total', grouping: Grouping): { filter: Filter; select: Sql } {
  const fromTransactions = sumsOfTransactions(tables, query, operation, grouping);
  const sums = sumsOfDays(tables, query, operation, grouping) ?? fromTransactions.ctes;
  const b = grouping.buckets;
  const buckets = b ? bucketsOf(b.interval, b.zone, query) : sql`buckets AS (SELECT CAST(NULL AS TIMESTAMP) AS bucket)`;
  const labels = b ? sql`x.label AS "bucket", ${TS(sql`x.start_at`)} AS "start", ${TS(sql`x.end_at`)} AS "end",` : sql``;
  const select = sql`
    WITH ${sums},
      ${buckets},
      filled AS (
        SELECT x.*, s.series_rank, s.series, s.series_name,
          coalesce(p.n, 0) AS n, coalesce(p.wo, 0) AS wo, coalesce(p.w, 0) AS w,
          coalesce(p.rn, 0) AS rn, coalesce(p.rwo, 0) AS rwo, coalesce(p.rw, 0) AS rw,
          coalesce(p.breakdown, []) AS breakdown, coalesce(c.uc, 0) AS uc, c.first_at, c.last_at
        FROM buckets x CROSS JOIN series s
          LEFT JOIN per_source p ON p.bucket IS NOT DISTINCT FROM x.bucket AND p.series_rank = s.series_rank
          LEFT JOIN contacts_and_times c ON c.bucket IS NOT DISTINCT FROM x.bucket AND c.series_rank = s.series_rank)
    SELECT ${labels} x.series, x.series_name AS "seriesName", ${PERIOD_FIGURES(tables.referenceCurrency, sql`x`, sql`x`)}
    FROM filled x
    ORDER BY x.bucket, x.series_rank`;
  return { filter: fromTransactions.filter, select };
}

/** A series of a query (convx trend): one row per bucket, per source with perSource, in bucket then series order. */
export function trendSelect(tables: QueryTables, query: TrendQuery, zone: string, rankedBy?: TrendQuery): { filter: Filter; select: Sql } {
  return groupedSelect(tables, query, 'trend', {
    buckets: { interval: query.interval, zone },
    ...(query.perSource ? { top: query.top, ...(rankedBy ? { rankedBy } : {}) } : {}),
  });
}

/** The total of a query's period over every source (convx total): one row. */
export function totalSelect(tables: QueryTables, query: TotalQuery): { filter: Filter; select: Sql } {
  return groupedSelect(tables, query, 'total', {});
}
