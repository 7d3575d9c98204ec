import type { ActivityResponse, ActivityTarget, Backend, DataCoverage, DateRange, ContactReport, IdMatch, IdResolution, KnownSource, LookupKind, LookupOptions, OrderDiagnosis, OrderLookup, RowStream, TextChunk, TextRequest } from '../backend.js';
import type { ValidateResponse } from '../model/validation.js';
import type { RenderLimits } from '../validation/limits.js';
import { DataError, NoOrdersError } from '../errors.js';
import { timed } from '../timings.js';
import {
  ATTRIBUTION_MODEL,
  WINDOW_DAYS,
  type AggregateRow,
  type BreakdownRow,
  type ComparedAggregateRow,
  type ConversionRecord,
  type Page,
  type PageRequest,
  type PeriodFigures,
  type SourceType,
  type TimeframesResponse,
  type TotalResponse,
  type TrendBucket,
} from '../model/types.js';
import type { ItemsQuery, ReportQuery, TotalQuery, TrendQuery } from '../model/query.js';
import type { ConvReads, Period, Scope } from './attribution.js';
import { UTC, utcDaysOf } from '../model/period.js';
import { mapInTurns, type Database, type Row } from './db.js';
import { lookupValues } from './lookups.js';
import { contactReport, diagnoseOrder, findOrder, knownSources, sourceActivity } from './diagnose.js';
import { contactsCarryingKey, resolveId } from './resolve.js';
import { EXACT_AMOUNT_LIMIT, itemLine, textGuard } from './text.js';
import { comparisonOf, otherPeriod, type ComparedFigure } from '../model/compare.js';
import type { CompareTo } from '../model/parameters.js';
import { COMPARED_FIGURES } from '../model/shapes.js';
import { comparedColumn, comparedReportSelect, detailQueryOf, filteredColumns, ITEMS_TIE_BREAK, itemsSelect, orderBy, partCount, REPORT_TIE_BREAK, reportFilter, reportSelect, sortRows, transactionFilters, type Filter, type QueryTables, type Selection } from './queries.js';
import { EMPTY, join, list, sql, trusted, type Sql } from './sql.js';
import { activityUrlOf, detailUrlOf } from './models/links.js';
import { totalSelect, trendSelect } from './series.js';
import { FIGURE_COLUMNS } from './models/attribution.js';


/**
 * Local mode's answers: the named queries of queries.ts over a Scope's attributed
 * tables, paged or streamed, and the rows mapped to the interface's records.
 */
/** How many rows a selection holds (n). */
const countOf = (selection: Selection): Sql => sql`SELECT count(*) AS n FROM (${selection.select})`;

export class LocalBackend implements Backend {
  /**
   * db: the connection to query on; closing the backend closes it, then calls onClose. renderLimits: of validateEmail.
   * dataVersion: the version of the data (open.ts, dataVersion), which every page and stream names in its paging.
   */
  constructor(
    readonly scope: Scope,
    private readonly db: Database,
    private readonly onClose?: () => void,
    private readonly renderLimits?: RenderLimits,
    readonly dataVersion?: string,
  ) {}

  /** paging.dataVersion, when the backend knows the version. */
  private versioned(): { dataVersion?: string } {
    return this.dataVersion === undefined ? {} : { dataVersion: this.dataVersion };
  }

  get referenceCurrency(): string {
    return this.scope.referenceCurrency;
  }

  /** Findings about the dataset that do not stop a report (docs/reporting.md, Transactions), one line each. */
  warnings(): string[] {
    return this.scope.dataset.warnings();
  }

  /** A dataset without orders or touches cannot report, nor say what an id names: NoOrdersError. */
  private requireReports(): void {
    if (!this.scope.reports) {
      throw new NoOrdersError(`the dataset at ${this.scope.dataset.name} holds no orders (or no touches), so it cannot report conversions`);
    }
  }

  private conv(): Sql {
    this.requireReports();
    return this.scope.relation('conv');
  }

  /**
   * The tables a query reads, attributed for (at least) the query's period: the UTC days that hold
   * its zone's days; `reads` 'figures' where the query reads its transactions' figures alone (figuresOf).
   */
  private async tables(period: ZonedPeriod, reads: ConvReads = 'records'): Promise<QueryTables> {
    const conv = this.conv();
    await this.scope.attribute(utcDays(period), reads);
    return {
      conv,
      sourceInfo: this.scope.relation('source_info'),
      referenceCurrency: this.referenceCurrency,
      ...(this.scope.summarised ? { daily: { sums: this.scope.relation('report_day'), contacts: this.scope.relation('contact_day'), pluginContacts: this.scope.relation('plugin_contact_day'), days: this.scope.relation('plugin_day') } } : {}),
    };
  }

  /** The tables of a query of figures and, with compareTo, its other period: attributed over both periods then. */
  private async comparedTables(operation: 'report' | 'trend' | 'total', query: (ReportQuery | TrendQuery | TotalQuery) & { compareTo?: CompareTo | undefined }): Promise<{ other: Period | undefined; tables: QueryTables }> {
    const other = query.compareTo === undefined ? undefined : otherPeriod(query, query.compareTo);
    return { other, tables: await this.tables(other ? { ...query, dateFrom: other.dateFrom } : query, figuresOf(operation, query)) };
  }

  /** A data error for transactions in scope that have no usable exchange rate (docs/reporting.md, Money). */
  private async assertRates({ from, where }: Filter, zoned: ZonedPeriod): Promise<void> {
    // Where the scope knows the days without a rate (usually none), a period without one needs no look.
    const unpriced = this.scope.unpricedDays;
    const period = utcDays(zoned);
    if (unpriced && period && !unpriced.some((day) => day >= period.dateFrom && day <= period.dateTo)) return;
    await timed('check missing rates', () => this.missingRates({ from, where }));
  }

  /** The data error of transactions in scope without a usable exchange rate, if there are any (assertRates). */
  private async missingRates({ from, where }: Filter): Promise<void> {
    const unpricedTx = sql`SELECT currency, day, any_value(fx_date) AS fx_date, count(*) AS n FROM ${from} WHERE ${where} AND ref_w IS NULL`;
    // Per currency: its days without a rate and their transactions (one row each, however long the period).
    const currencies = await this.db.all<CurrencyMissing>(
      sql`SELECT currency, count(*) AS days, sum(n) AS n, min(day) AS first_day, max(day) AS last_day
       FROM (${unpricedTx} GROUP BY currency, day) GROUP BY currency ORDER BY first_day, currency`,
    );
    if (currencies.length === 0) return;
    // An fx table of rates to other reference currencies only is one fact, not a list of days.
    const rated = new Set<string>();
    const hasFx = this.scope.dataset.has('fx');
    if (hasFx) {
      const held = await this.db.all<{ v: string | null }>(sql`SELECT DISTINCT reference_currency AS v FROM ${this.scope.relation('fx')} ORDER BY 1`);
      const others = held.map((r) => r.v).filter((v): v is string => v !== null);
      if (others.length && others.length === held.length && !others.includes(this.referenceCurrency)) {
        const to = this.referenceCurrency;
        throw new DataError(
          `fx holds rates to ${others.join(', ')} only; no rates to ${to}: pass --reference-currency ${others.length === 1 ? others[0] : `with one of them`}, or add fx rows with reference_currency ${to}`,
        );
      }
      const rows = await this.db.all<{ currency: string }>(
        sql`SELECT DISTINCT currency FROM ${this.scope.relation('fx')} WHERE currency IN ${list(currencies.map((c) => c.currency))} AND (reference_currency IS NULL OR reference_currency = ${this.referenceCurrency})`,
      );
      for (const row of rows) rated.add(row.currency);
    }
    // The days of the currencies fx has rates of, the first ones only.
    const days = rated.size
      ? await this.db.all<DayMissing>(sql`${unpricedTx} AND currency IN ${list([...rated])} GROUP BY currency, day ORDER BY day, currency LIMIT ${MISSING_RATE_LINES}`)
      : [];
    throw new DataError(`cannot convert to ${this.referenceCurrency}: exchange rates are missing`, missingRateLines(currencies, days, rated, { to: this.referenceCurrency, hasFx }));
  }

  async items(query: ItemsQuery): Promise<Page<ConversionRecord>> {
    return this.itemsFromOrderIndex(query) ?? this.page(itemsSelect(await this.tables(query), query, 'js'), query, ITEMS_TIE_BREAK, toRecord(detailQueryOf(query)));
  }

  /**
   * A served scope's look-up of an order answered from the order index it holds (order-index.ts):
   * the page the SQL's fewRows way gives, where the query filters only by the order id and the
   * period, in UTC days; undefined otherwise, and where a row lacks its reference amount (the SQL
   * way's rate check says what is missing) or the order has more than FEW_ROWS rows in the period.
   */
  private itemsFromOrderIndex(query: ItemsQuery): Page<ConversionRecord> | undefined {
    if (query.orderId === undefined || query.timeZone !== undefined) return undefined;
    const { where, byOrder } = transactionFilters('items', query, this.conv());
    if (!byOrder || where.length > 0) return undefined;
    const index = this.scope.orderIndex;
    if (!index) {
      // a server loads the index on the first look-up that could use it; this one takes the SQL way
      this.scope.wantOrderIndex?.();
      return undefined;
    }
    const read = index.rowsOf(query.orderId, query, this.referenceCurrency, query.sort.some((k) => k.field === 'activityUrl'));
    if (!read || read.length > FEW_ROWS) return undefined;
    return this.fewRowsPage(read, query, ITEMS_TIE_BREAK, toRecord(detailQueryOf(query)));
  }

  /** A page of rows read whole, sorted and paged here (sortRows orders them as orderBy does). */
  private fewRowsPage<T>(read: Row[], ...[query, tieBreak, map]: Tail<Reading<T>>): Page<T> {
    const all = sortRows(read, query.sort, tieBreak);
    const rows = all.slice(query.offset, query.offset + query.limit);
    return { rows: rows.map(map), paging: { start: query.offset, count: rows.length, totalCount: all.length, ...this.versioned() } };
  }

  async allItems(query: ItemsQuery): Promise<RowStream<ConversionRecord>> {
    const tables = await this.tables(query);
    const selection = itemsSelect(tables, query);
    const stream = await this.streamAll(selection, query, ITEMS_TIE_BREAK, toRecord(detailQueryOf(query)));
    return { ...stream, text: (request) => this.itemLines(tables, query, request, stream.totalCount) };
  }

  private async page<T>(...[selection, query, tieBreak, map]: Reading<T>): Promise<Page<T>> {
    await this.assertRates(selection.filter, query);
    if (selection.fewRows) {
      // an order's rows: read whole, sorted and paged here (sortRows orders them as orderBy does);
      // an id of more rows than FEW_ROWS (odd data) is sorted and paged by DuckDB as any other
      const read = await this.db.all(sql`${selection.select} LIMIT ${FEW_ROWS + 1}`);
      if (read.length <= FEW_ROWS) return this.fewRowsPage(read, query, tieBreak, map);
    }
    const { rows, totalCount } = await timed('read the rows', () => this.rowsAndTotal(selection, query, tieBreak, query.limit));
    return { rows: rows.map(map), paging: { start: query.offset, count: rows.length, totalCount, ...this.versioned() } };
  }

  /**
   * The selection's rows in order from query.offset (at most limit of them) and the count of all,
   * in one statement; a count of its own only where no row lies past the offset. An items page is
   * chosen on its sort keys and row ids alone, and only its rows get every column (a page of a
   * period of 500,000 transactions: 0.8-1.0 -> 0.26-0.31 s, its statement 0.5-0.7 -> 0.1-0.14 s);
   * a count over the window would make every row whole first.
   */
  private async rowsAndTotal(selection: Selection, query: PageRequest, tieBreak: readonly string[], limit?: number): Promise<{ rows: Row[]; totalCount: number }> {
    const order = orderBy(query.sort, tieBreak);
    const rows = await this.db.all(
      selection.ofRowIds && limit !== undefined
        ? sql`SELECT *, (${countOf(selection)}) AS total
           FROM (${selection.ofRowIds(sql`SELECT row_id FROM (${selection.sortKeys ?? selection.select}) ORDER BY ${order} LIMIT ${limit} OFFSET ${query.offset}`)})
           ORDER BY ${order}`
        : sql`SELECT *, count(*) OVER () AS total FROM (${selection.select})
           ORDER BY ${order} ${limit === undefined ? EMPTY : sql`LIMIT ${limit}`} OFFSET ${query.offset}`,
    );
    // No row from the first one means no rows at all: no count to run then.
    const totalCount = rows.length ? Number(rows[0]!.total) : query.offset === 0 ? 0 : await this.count(selection);
    return { rows, totalCount };
  }

  private async streamAll<T>(...[selection, query, tieBreak, map]: Reading<T>): Promise<RowStream<T>> {
    await this.assertRates(selection.filter, query);
    const totalCount = await this.count(selection);
    const stream = this.db.stream(
      sql`SELECT * FROM (${selection.select}) ORDER BY ${orderBy(query.sort, tieBreak)} OFFSET ${query.offset}`,
    );
    return { totalCount, ...this.versioned(), rows: mapRows(stream, map) };
  }

  /**
   * The items as csv/tsv lines made by DuckDB (text.ts), streamed chunk by chunk; undefined
   * when a column has no SQL form or an amount is too large for the SQL text to equal JavaScript's.
   */
  private async itemLines(tables: QueryTables, query: ItemsQuery, request: TextRequest, count: number): Promise<AsyncIterable<TextChunk> | undefined> {
    const line = itemLine(request);
    if (!line) return undefined;
    const rows = await this.linesParts(tables, query, count);
    const guard = await this.db.one<{ a: unknown; r: unknown; odd: boolean | null }>(
      sql`SELECT CAST(max(abs(amount_w_tax_exact)) AS DOUBLE) AS a, CAST(max(abs(ref_w_exact)) AS DOUBLE) AS r,
              bool_or(${textGuard(request)}) AS odd
       FROM (${rows})`,
    );
    if (Number(guard?.a ?? 0) >= EXACT_AMOUNT_LIMIT || Number(guard?.r ?? 0) >= EXACT_AMOUNT_LIMIT || guard?.odd) return undefined;
    // The lines' UTF-8 bytes (encode), written out as they come (streamBytes).
    return this.db.streamBytes(sql`SELECT encode(${line}) AS line FROM (${rows}) ORDER BY ${orderBy(query.sort, ITEMS_TIE_BREAK)} OFFSET ${query.offset}`);
  }

  /**
   * The items' rows for the lines' statements, as a UNION ALL of disjoint parts when that gives
   * DuckDB's threads more to share (partCount). DuckDB scans a table one row group (122,880 rows) per thread,
   * and a period's conversions are often one row group: the whole text of the lines (most of the
   * statement's time) was then made on one thread. Each part is a pipeline of its own, so the
   * parts are made side by side (a year of the mid data, 2 threads: the lines' statement about
   * 0.5 → 0.3 s). The ORDER BY above them orders the lines as before.
   */
  private async linesParts(tables: QueryTables, query: ItemsQuery, rows: number): Promise<Sql> {
    const of = partCount(await this.db.threads(), rows);
    if (of === 1) return itemsSelect(tables, query).select;
    return join(Array.from({ length: of }, (_, index) => itemsSelect(tables, query, 'sql', { index, of }).select), trusted(' UNION ALL '));
  }

  private async count(selection: Selection): Promise<number> {
    const row = await this.db.one<{ n: bigint }>(countOf(selection));
    return Number(row?.n ?? 0);
  }

  async report(query: ReportQuery): Promise<Page<AggregateRow>> {
    const summed = await this.reportFromDaySums(query);
    if (summed) return summed;
    const { selection, map } = await this.reportReading(query);
    return this.page(selection, query, REPORT_TIE_BREAK, map);
  }

  /**
   * A served scope's report summed in JavaScript from the per-day sums it holds (day-sums.ts): the
   * page the SQL gives, where the SQL would read the per-day sums too (no transaction filter, UTC
   * days) and no name is searched (q) or period compared; undefined otherwise.
   */
  private async reportFromDaySums(query: ReportQuery): Promise<Page<AggregateRow> | undefined> {
    const sums = this.scope.daySums;
    if (!sums || query.q !== undefined || query.compareTo !== undefined) return undefined;
    const { filter, fromDays } = reportFilter(await this.tables(query, figuresOf('report', query)), query);
    if (!fromDays) return undefined;
    await this.assertRates(filter, query);
    const { rows, totalCount } = sums.page(query, this.referenceCurrency);
    const detailQuery = detailQueryOf(query);
    return { rows: rows.map((row) => toAggregate(row, detailQuery)), paging: { start: query.offset, count: rows.length, totalCount, ...this.versioned() } };
  }

  /**
   * Every row of a report from the offset: read with their count in one statement (a report holds
   * a row per source, few enough to hold at once), where a stream would run the report twice, for
   * its count first and then for its rows.
   */
  async allReport(query: ReportQuery): Promise<RowStream<AggregateRow>> {
    const { selection, map } = await this.reportReading(query);
    await this.assertRates(selection.filter, query);
    const { rows, totalCount } = await timed('read the rows', () => this.rowsAndTotal(selection, query, REPORT_TIE_BREAK));
    return { totalCount, ...this.versioned(), rows: mapRows(rows, map) };
  }

  /** A report's rows and their shape; with compareTo, the rows of both periods, each with its comparison (queries.ts, comparedReportSelect). */
  private async reportReading(query: ReportQuery): Promise<{ selection: Selection; map: (row: Row) => AggregateRow }> {
    const { other, tables } = await this.comparedTables('report', query);
    if (!other) {
      const detailQuery = detailQueryOf(query);
      return { selection: reportSelect(tables, query, 'js'), map: (row) => toAggregate(row, detailQuery) };
    }
    const { filter, select, otherFilter } = comparedReportSelect(tables, query, { ...query, ...other }, COMPARED_FIGURES);
    await this.assertRates(otherFilter, other);
    const map = (row: Row): ComparedAggregateRow => {
      const aggregate = toAggregate(row);
      const past = row.cmp_found ? (Object.fromEntries(COMPARED_FIGURES.map((f) => [f, row[comparedColumn(f)] as number])) as Record<ComparedFigure, number>) : undefined;
      return { ...aggregate, comparison: comparisonOf(other, aggregate, past) };
    };
    return { selection: { filter, select }, map };
  }

  /** A series of the period (series.ts): every bucket, per source with perSource; with compareTo, bucket i beside bucket i of the other period. */
  async trend(query: TrendQuery): Promise<TimeframesResponse> {
    const timeZone = zoneOf(query);
    const { other, tables } = await this.comparedTables('trend', query);
    const bucketsOf = async (q: TrendQuery, rankedBy?: TrendQuery) => {
      const { filter, select } = trendSelect(tables, q, timeZone, rankedBy);
      await this.assertRates(filter, q);
      return mapInTurns(await this.db.all(select), toBucket);
    };
    const buckets = await bucketsOf(query);
    const response = { dateFrom: query.dateFrom, dateTo: query.dateTo, timeZone, interval: query.interval };
    if (!other) return { ...response, buckets };
    // per source, the other period's series are the current period's top sources and the rest
    return { ...response, buckets: await lineUp(buckets, await bucketsOf({ ...query, ...other }, query), other, query.compareTo!) };
  }

  /** The period's figures over every source (series.ts); with compareTo, beside the other period's. */
  async total(query: TotalQuery): Promise<TotalResponse> {
    const { other, tables } = await this.comparedTables('total', query);
    const figuresOf = async (q: TotalQuery) => {
      const { filter, select } = totalSelect(tables, q);
      await this.assertRates(filter, q);
      return toFigures((await this.db.one(select))!);
    };
    const total = await figuresOf(query);
    const response = { dateFrom: query.dateFrom, dateTo: query.dateTo, timeZone: zoneOf(query), total };
    return other ? { ...response, comparison: comparisonOf(other, total, await figuresOf({ ...query, ...other })) } : response;
  }

  async validateEmail(request: unknown, renderLimits: RenderLimits | undefined = this.renderLimits): Promise<ValidateResponse> {
    const { validateDelivery } = await import('./validate.js');
    return validateDelivery(this.scope, this.db, request, renderLimits);
  }

  /** Says why an order is not among the conversions of a period. */
  async diagnoseOrder(orderId: string, period?: { dateFrom: string; dateTo: string }): Promise<OrderDiagnosis> {
    return diagnoseOrder(this.scope, this.db, orderId, period);
  }

  /** The order by id over every date (diagnose.ts). */
  async findOrder(orderId: string): Promise<OrderLookup | undefined> {
    return findOrder(this.scope, this.db, orderId, (q) => this.items(q));
  }

  /** A contact's conversions and clicks (diagnose.ts). */
  async contact(key: string): Promise<ContactReport | undefined> {
    return contactReport(this.scope, this.db, key, (q) => this.items(q));
  }

  /** A contact's touches of one source: what an activityUrl answers (diagnose.ts). */
  async activity(target: ActivityTarget, contactId: string): Promise<ActivityResponse | undefined> {
    return sourceActivity(this.scope, this.db, target, contactId);
  }

  /** What an id names, else the ids nearest it (resolve.ts). */
  async resolve(id: string): Promise<IdResolution> {
    this.requireReports();
    return resolveId(this.scope, this.db, id);
  }

  /** The contacts a key is the e-mail or client contact id of, from the contacts alone (resolve.ts). */
  async contactsCarrying(key: string, by: 'email' | 'clientContactId'): Promise<IdMatch[]> {
    this.requireReports();
    return contactsCarryingKey(this.scope, this.db, key, by);
  }

  async knownSources(): Promise<KnownSource[]> {
    return knownSources(this.scope, this.db);
  }

  /** The first and last datetime of the plugin's orders and touches (an imported file's too: the scope's views). */
  async coverage(): Promise<DataCoverage> {
    const range = async (table: 'orders' | 'touches'): Promise<DateRange | null> => {
      if (!this.scope.dataset.has(table)) return null;
      const row = await this.db.one<{ a: string | null; b: string | null }>(
        sql`SELECT strftime(min(datetime), '%Y-%m-%dT%H:%M:%SZ') AS a, strftime(max(datetime), '%Y-%m-%dT%H:%M:%SZ') AS b
         FROM ${this.scope.relation(table)}`,
      );
      return row?.a && row.b ? { from: row.a, to: row.b } : null;
    };
    return { orders: await range('orders'), touches: await range('touches') };
  }

  /** The values of a kind in the scope's tables (lookups.ts). */
  lookup(kind: LookupKind, options?: LookupOptions): Promise<string[]> {
    return lookupValues(this.db, (name) => (this.scope.dataset.has(name) ? this.scope.relation(name) : undefined), kind, options);
  }

  async close(): Promise<void> {
    this.db.close();
    this.onClose?.();
  }
}

/** A period of a query: its days, of its zone (absent: UTC). */
type ZonedPeriod = Period & { timeZone?: string };

/**
 * The UTC days that hold a period's days: the days of a UTC period, one more on a side where the
 * zone's days reach into another UTC day; undefined (every day) where that day is past the four-digit years.
 */
function utcDays({ dateFrom, dateTo, timeZone }: ZonedPeriod): Period | undefined {
  return timeZone === undefined ? { dateFrom, dateTo } : utcDaysOf(dateFrom, dateTo, timeZone);
}

/** The most rows of one order id a look-up reads whole to sort and page in JavaScript (Selection.fewRows). */
export const FEW_ROWS = 1000;

/** What a page or a stream of rows reads: the rows selected, the page asked, the sort's tie-break, the row's shape. */
type Reading<T> = [selection: Selection, query: PageRequest & ZonedPeriod, tieBreak: readonly string[], map: (row: Row) => T];
type Tail<T extends unknown[]> = T extends [unknown, ...infer Rest] ? Rest : never;

async function* mapRows<T>(rows: Iterable<Row> | AsyncIterable<Row>, map: (row: Row) => T): AsyncGenerator<T> {
  for await (const row of rows) yield map(row);
}

function str(value: unknown): string {
  return String(value);
}

function nullable(value: unknown): string | null {
  return value === null || value === undefined ? null : String(value);
}

/** A row's source; detailUrl: the row's column, or built from its columns (see toRecord). */
function sourceOf(row: Row, id: unknown, name: unknown, detailUrl: unknown = row.detail_url) {
  return {
    type: row.source_type as SourceType,
    id: str(id),
    name: str(name),
    campaignId: str(row.campaign_id),
    smartflowId: nullable(row.smartflow_id),
    smartflowName: nullable(row.smartflow_name),
    deliveryId: nullable(row.delivery_id),
    deliveryName: nullable(row.delivery_name),
    detailUrl: str(detailUrl),
  };
}

/** The columns of a row the links read (the source's and contact's ids by their names in the row). */
const linkValues = (row: Row, sourceId: unknown, contactId?: unknown) => ({
  source_type: row.source_type, source_id: sourceId, campaign_id: row.campaign_id,
  smartflow_id: row.smartflow_id, delivery_id: row.delivery_id, contact_id: contactId,
});

/**
 * A record from its row; its links from the row's columns where the select holds them, else
 * built here from the same columns (itemsSelect, links 'js'); detailQuery: their constant tail.
 */
const toRecord = (detailQuery: string) => (row: Row): ConversionRecord => {
  const built = !('detail_url' in row);
  const values = built ? linkValues(row, row.source_id, row.contactId) : {};
  const detailUrl = built ? detailUrlOf(values, detailQuery) : row.detail_url;
  const activityUrl = 'activityUrl' in row ? row.activityUrl : activityUrlOf(values);
  return {
    contactId: str(row.contactId),
    clientContactId: nullable(row.clientContactId),
    datetime: str(row.datetime),
    orderId: str(row.orderId),
    firstName: nullable(row.firstName),
    surname: nullable(row.surname),
    conversionsAmount: row.conversionsAmount as number,
    conversionsCurrency: str(row.conversionsCurrency),
    conversionsReferenceAmount: row.conversionsReferenceAmount as number,
    referenceCurrency: str(row.referenceCurrency),
    country: nullable(row.country),
    isRefund: row.isRefund as boolean,
    attribution: {
      touch: 'click',
      datetime: str(row.touch_datetime),
      hoursToConversion: row.hours as number,
      model: ATTRIBUTION_MODEL,
      windowDays: WINDOW_DAYS,
    },
    source: sourceOf(row, row.source_id, row.name, detailUrl),
    activityUrl: str(activityUrl),
  };
};

/** The time zone of a query's days and buckets (the parser leaves UTC out). */
function zoneOf(query: { timeZone?: string | undefined }): string {
  return query.timeZone ?? UTC;
}

/** A report's row; its detailUrl from its column, else built from its columns and detailQuery (reportSelect, links 'js'). */
function toAggregate(row: Row, detailQuery = ''): AggregateRow {
  const detailUrl = 'detail_url' in row ? row.detail_url : detailUrlOf(linkValues(row, row.id), detailQuery);
  return {
    id: str(row.id),
    name: str(row.name),
    source: sourceOf(row, row.id, row.name, detailUrl),
    sourceStartedAt: nullable(row.sourceStartedAt),
    ...toFigures(row),
  };
}

const MISSING_RATE_LINES = 20;

/**
 * The lines of a missing-rates error, 20 at most and then how many more: a currency fx holds no
 * rate of at all (to the reference currency), or any currency where there is no fx table, in one
 * line with its days and transactions counted; then the days of the currencies fx has rates of, one
 * line each in day order. `currencies`: every currency's days without a rate; `days`: the first such
 * days of the rated ones.
 */
function missingRateLines(currencies: CurrencyMissing[], days: DayMissing[], rated: ReadonlySet<string>, { to, hasFx }: { to: string; hasFx: boolean }): string[] {
  const date = (d: Date) => d.toISOString().slice(0, 10);
  const transactions = (n: bigint) => `${n} transaction${n === 1n ? '' : 's'}`;
  const needs = (n: bigint) => (n === 1n ? 'needs' : 'need');
  const sum = (rows: { n: bigint }[]) => rows.reduce((total, r) => total + r.n, 0n);
  const lines: string[] = [];
  const unrated = currencies.filter((c) => !rated.has(c.currency));
  for (const c of unrated.slice(0, MISSING_RATE_LINES)) {
    const span = c.days === 1n ? `on ${date(c.first_day)}` : `on ${c.days} days from ${date(c.first_day)} to ${date(c.last_day)}`;
    const why = hasFx ? `fx has no rate of ${c.currency} to ${to} at all` : 'the dataset has no fx table';
    lines.push(`${c.currency}: ${why}; ${transactions(c.n)} ${span} ${needs(c.n)} ${hasFx ? 'one' : `a rate to ${to}`}`);
  }
  const more = unrated.slice(MISSING_RATE_LINES);
  if (more.length) lines.push(`… and ${more.length} more currenc${more.length === 1 ? 'y' : 'ies'} without a rate (${transactions(sum(more))})`);
  const shown = days.slice(0, Math.max(0, MISSING_RATE_LINES - lines.length));
  for (const m of shown) {
    const latest = m.fx_date ? `the latest earlier rate is from ${date(m.fx_date)}, more than 7 days back` : 'there is no earlier rate';
    lines.push(`${m.currency} on ${date(m.day)}: no rate in fx for that day or the 7 days before (${latest}); ${transactions(m.n)} ${needs(m.n)} it`);
  }
  const ratedMissing = currencies.filter((c) => rated.has(c.currency));
  const restDays = ratedMissing.reduce((total, c) => total + c.days, 0n) - BigInt(shown.length);
  if (restDays > 0n) lines.push(`… and ${restDays} more day${restDays === 1n ? '' : 's'} (${transactions(sum(ratedMissing) - sum(shown))})`);
  return lines;
}

/** A currency's days without a usable rate in the period (assertRates), and one such day. */
interface CurrencyMissing {
  currency: string;
  days: bigint;
  n: bigint;
  first_day: Date;
  last_day: Date;
}
interface DayMissing {
  currency: string;
  day: Date;
  fx_date: Date | null;
  n: bigint;
}

/**
 * A series beside another period's (convx trend --compare), the same series there. With `year`, a
 * bucket beside the one of the same label a year before, as the period's dates are (the same day,
 * hour, ISO week or month: `2025-03-01` beside `2024-03-01` whatever February 29 in between; 29
 * February beside the 28th), an hour the clocks repeat by its turn; with `previous`, bucket i (in time
 * order, by their starts: an hour the clocks repeat is two buckets of one label) beside bucket i there.
 * A bucket without one has its comparison empty.
 */
async function lineUp(buckets: TrendBucket[], past: TrendBucket[], other: Period, compareTo: CompareTo): Promise<TrendBucket[]> {
  const keyed = (rows: TrendBucket[], side: 'current' | 'other') => {
    // A bucket's place: its label as a date of the current period ('' for previous) and its turn among the buckets of that label.
    const turns = new Map<string, Map<string, number>>();
    return rows.map((b) => {
      const label = compareTo === 'year' ? b.bucket : '';
      const starts = turns.get(label) ?? turns.set(label, new Map()).get(label)!;
      const turn = starts.get(b.start) ?? starts.set(b.start, starts.size).get(b.start)!;
      const place = compareTo !== 'year' ? '' : side === 'other' ? nextYear(label) : label.replace(/^(\d{4}-02-)29/, '$128');
      return `${place}|${turn}|${b.series ?? ''}`;
    });
  };
  const pastKeys = keyed(past, 'other');
  const byKey = new Map(past.map((b, i) => [pastKeys[i]!, b]));
  // a slice of the buckets at a turn (mapInTurns): 42,000 comparisons take some 170 ms
  return mapInTurns(keyed(buckets, 'current'), (key, i) => {
    const there = byKey.get(key);
    return { ...buckets[i]!, comparison: comparisonOf(other, buckets[i]!, there, there?.bucket ?? null) };
  });
}

/** A bucket's label with its (four-digit; ISO for weeks) year one later: 2024-03 → 2025-03. */
function nextYear(label: string): string {
  return `${String(Number(label.slice(0, 4)) + 1).padStart(4, '0')}${label.slice(4)}`;
}

function toBucket(row: Row): TrendBucket {
  const series = row.series === null || row.series === undefined ? {} : { series: str(row.series), seriesName: str(row.seriesName) };
  return { bucket: str(row.bucket), start: str(row.start), end: str(row.end), ...series, ...toFigures(row) };
}

/** The figures of a row (queries.ts, PERIOD_FIGURES), in the interface's field order. */
function toFigures(row: Row): PeriodFigures {
  return {
    firstConversionAt: nullable(row.firstConversionAt),
    lastConversionAt: nullable(row.lastConversionAt),
    conversionsAmountWoTax: row.conversionsAmountWoTax as number,
    conversionsAmountWTax: row.conversionsAmountWTax as number,
    conversionsNumber: row.conversionsNumber as number,
    referenceCurrency: str(row.referenceCurrency),
    uniqueContacts: row.uniqueContacts as number,
    averageConversion: row.averageConversion as number,
    averageUniqueConversion: row.averageUniqueConversion as number,
    refundsAmountWoTax: row.refundsAmountWoTax as number,
    refundsAmountWTax: row.refundsAmountWTax as number,
    refundsNumber: row.refundsNumber as number,
    grossConversionsAmountWoTax: row.grossConversionsAmountWoTax as number,
    grossConversionsAmountWTax: row.grossConversionsAmountWTax as number,
    grossConversionsNumber: row.grossConversionsNumber as number,
    breakdown: (row.breakdown as Record<string, unknown>[]).map((b) => ({ ...b }) as unknown as BreakdownRow),
  };
}

/** What a report, series or total reads of conv: its figures alone, unless a filter compares a column that only whole records hold (country, a campaign id). */
function figuresOf(operation: 'report' | 'trend' | 'total', query: ReportQuery | TrendQuery | TotalQuery): ConvReads {
  return filteredColumns(operation, query).every((column) => FIGURE_COLUMNS.includes(column)) ? 'figures' : 'records';
}
