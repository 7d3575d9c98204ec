import type { Backend, OrderDiagnosis, RowStream } from '../backend.js';
import type { ValidateResponse } from '../model/validation.js';
import type { RenderLimits } from '../validation/limits.js';
import { DataError } from '../errors.js';
import {
  ATTRIBUTION_MODEL,
  WINDOW_DAYS,
  type AggregateRow,
  type BreakdownRow,
  type ConversionRecord,
  type ItemsQuery,
  type Page,
  type PageRequest,
  type ReportQuery,
  type SortKey,
  type SourceType,
} from '../model/types.js';
import { Database, ident, inList, type Row, type SqlParams } from './db.js';
import { Dataset } from './dataset.js';
import { activityUrlSql, choosePlugin, detailUrlSql, Scope, type OpenOptions } from './engine.js';
import { CANCELLED_STATUSES } from './schema.js';

const TS = (column: string) => `strftime(${column}, '%Y-%m-%dT%H:%M:%S.%gZ')`;
/** Rounds a/b half away from zero to a whole number (exact integer arithmetic). */
const ROUND_DIV = (a: string, b: string) => `(sign(${a}) * ((2 * abs(${a}) + ${b}) // (2 * ${b})))`;
/** An average to 2 decimals as an exact double: amount (DECIMAL) / count. */
const AVERAGE = (amount: string, count: string) =>
  `CASE WHEN ${count} = 0 THEN 0.0 ELSE CAST(${ROUND_DIV(`CAST(${amount} * 10000 AS HUGEINT)`, `(100 * CAST(${count} AS HUGEINT))`)} AS DOUBLE) / 100 END`;
const D = (expr: string) => `CAST(${expr} AS DOUBLE)`;

interface Filter {
  where: string;
  params: SqlParams;
}

/** A query's rows before sorting and paging, with the filter alone for the rate check. */
interface Selection {
  filter: Filter;
  select: string;
  params: SqlParams;
}

const REPORT_TIE_BREAK = ['source_type', '"id"'];

export interface LocalOpenOptions extends OpenOptions {
  /** Needed for reporting; validation only needs contacts. */
  require?: readonly ('orders' | 'touches' | 'contacts')[];
}

/** Opens, checks and types a dataset, failing with a DataError that names every problem. */
export async function openDataset(dir: string, require: LocalOpenOptions['require'] = ['orders', 'touches']): Promise<Dataset> {
  const db = await Database.open();
  try {
    const dataset = await Dataset.open(dir, db);
    for (const table of require) {
      if (!dataset.has(table)) {
        throw new DataError(
          `the dataset at ${dir} has no ${table} table: expected ${table}.csv, ${table}.csv.gz, ${table}.parquet, ${table}.json(l) or a folder ${table}/`,
        );
      }
    }
    await dataset.validate();
    await dataset.createTypedTables();
    return dataset;
  } catch (error) {
    db.close();
    throw error;
  }
}

/** Local mode of the CLI: one dataset, one plugin. */
export async function openLocalBackend(dir: string, options: LocalOpenOptions = {}): Promise<LocalBackend> {
  const dataset = await openDataset(dir, options.require);
  try {
    const plugin = await choosePlugin(dataset, options.plugin);
    const scope = await Scope.build(dataset, 'scope_0', plugin, options);
    return new LocalBackend(scope, scope.db);
  } catch (error) {
    dataset.db.close();
    throw error;
  }
}

function periodFilter(params: SqlParams, period: { dateFrom: string; dateTo: string }): string {
  params.dayFrom = period.dateFrom;
  params.dayTo = period.dateTo;
  return `day BETWEEN CAST($dayFrom AS DATE) AND CAST($dayTo AS DATE)`;
}

function orderBy(sort: SortKey[], tieBreak: string[]): string {
  // Field names come from the fixed lists of model/query.ts; they are quoted as identifiers.
  const keys = sort.map((k) => `${ident(k.field)} ${k.descending ? 'DESC' : 'ASC'} NULLS LAST`);
  return [...keys, ...tieBreak].join(', ');
}

export class LocalBackend implements Backend {
  /** db: the connection to query on; closing the backend closes it, then calls onClose. renderLimits: of validateEmail. */
  constructor(
    readonly scope: Scope,
    private readonly db: Database,
    private readonly onClose?: () => void,
    private readonly renderLimits?: RenderLimits,
  ) {}

  get referenceCurrency(): string {
    return this.scope.referenceCurrency;
  }

  /** Findings about the dataset that do not stop a report (DESIGN.md 4.14), one line each. */
  warnings(): string[] {
    return this.scope.dataset.warnings();
  }

  private conv(): string {
    if (!this.scope.reports) {
      throw new DataError(`the dataset at ${this.scope.dataset.dir} has no orders or no touches, so it cannot report conversions`);
    }
    return this.scope.table('conv');
  }

  /** A data error for transactions in scope that have no usable exchange rate (DESIGN.md 4.6). */
  private async assertRates({ where, params }: Filter): Promise<void> {
    const missing = await this.db.all<{ currency: string; day: Date; fx_date: Date | null; n: bigint }>(
      `SELECT currency, day, any_value(fx_date) AS fx_date, count(*) AS n FROM ${this.conv()}
       WHERE ${where} AND ref_w IS NULL GROUP BY currency, day ORDER BY day, currency LIMIT 21`,
      params,
    );
    if (missing.length === 0) return;
    const lines = missing.slice(0, 20).map((m) => {
      const day = m.day.toISOString().slice(0, 10);
      const latest = m.fx_date
        ? `the latest earlier rate is from ${m.fx_date.toISOString().slice(0, 10)}, more than 7 days back`
        : 'there is no earlier rate';
      return `${m.currency} on ${day}: no rate in fx for that day or the 7 days before (${latest}); ${m.n} transaction${m.n === 1n ? ' needs' : 's need'} it`;
    });
    if (missing.length > 20) lines.push('… and more days');
    throw new DataError(`cannot convert to ${this.referenceCurrency}: exchange rates are missing`, lines);
  }

  private itemsFilter(query: ItemsQuery): Filter {
    const params: SqlParams = {};
    const where = [periodFilter(params, query)];
    const eq = (column: string, key: keyof ItemsQuery) => {
      const value = query[key];
      if (typeof value === 'string') {
        params[key] = value;
        where.push(`${column} = $${key}`);
      }
    };
    eq('source_id', 'sourceId');
    eq('source_type', 'sourceType');
    eq('smartflow_id', 'smartflowId');
    eq('delivery_id', 'deliveryId');
    eq('contact_id', 'contactId');
    eq('order_id', 'orderId');
    if (query.campaignId !== undefined) {
      params.campaignId = query.campaignId;
      where.push(`campaign_id = $campaignId AND source_type IN ('campaign', 'automation')`);
    }
    if (query.country) where.push(`country IN ${inList(params, 'country', query.country)}`);
    if (query.currency) where.push(`currency IN ${inList(params, 'currency', query.currency)}`);
    return { where: where.join(' AND '), params };
  }

  private itemsSelect(query: ItemsQuery): Selection {
    const filter = this.itemsFilter(query);
    const select = `
      SELECT row_id,
        contact_id AS "contactId", client_contact_id AS "clientContactId", ${TS('datetime')} AS "datetime",
        order_id AS "orderId", first_name AS "firstName", surname AS "surname",
        ${D('amount_w_tax')} AS "conversionsAmount", currency AS "conversionsCurrency",
        ${D('ref_w')} AS "conversionsReferenceAmount", CAST($reference AS VARCHAR) AS "referenceCurrency",
        country AS "country", is_refund AS "isRefund",
        ${TS('touch_datetime')} AS touch_datetime, CAST(centi_hours AS DOUBLE) / 100 AS hours,
        source_type, source_id, name, campaign_id, smartflow_id, smartflow_name, delivery_id, delivery_name,
        ${detailUrlSql()} AS detail_url, ${activityUrlSql()} AS "activityUrl"
      FROM ${this.conv()} WHERE ${filter.where}`;
    return { filter, select, params: { ...filter.params, reference: this.referenceCurrency } };
  }

  async items(query: ItemsQuery): Promise<Page<ConversionRecord>> {
    return this.page(this.itemsSelect(query), query, ['row_id'], toRecord);
  }

  async allItems(query: ItemsQuery): Promise<RowStream<ConversionRecord>> {
    return this.streamAll(this.itemsSelect(query), query, ['row_id'], toRecord);
  }

  private async page<T>(
    selection: Selection,
    query: PageRequest,
    tieBreak: string[],
    map: (row: Row) => T,
  ): Promise<Page<T>> {
    await this.assertRates(selection.filter);
    const rows = await this.db.all(
      `SELECT *, count(*) OVER () AS total FROM (${selection.select})
       ORDER BY ${orderBy(query.sort, tieBreak)} LIMIT $limit OFFSET $offset`,
      { ...selection.params, limit: query.limit, offset: query.offset },
    );
    const totalCount = rows.length ? Number(rows[0]!.total) : await this.count(selection);
    return { rows: rows.map(map), paging: { start: query.offset, count: rows.length, totalCount } };
  }

  private async streamAll<T>(
    selection: Selection,
    query: PageRequest,
    tieBreak: string[],
    map: (row: Row) => T,
  ): Promise<RowStream<T>> {
    await this.assertRates(selection.filter);
    const totalCount = await this.count(selection);
    const stream = this.db.stream(
      `SELECT * FROM (${selection.select}) ORDER BY ${orderBy(query.sort, tieBreak)} OFFSET $offset`,
      { ...selection.params, offset: query.offset },
    );
    return { totalCount, rows: mapRows(stream, map) };
  }

  private async count(selection: Selection): Promise<number> {
    const row = await this.db.one<{ n: bigint }>(`SELECT count(*) AS n FROM (${selection.select})`, selection.params);
    return Number(row?.n ?? 0);
  }

  private reportSelect(query: ReportQuery): Selection {
    const filterParams: SqlParams = {};
    const where = [periodFilter(filterParams, query)];
    if (query.country) where.push(`country IN ${inList(filterParams, 'country', query.country)}`);
    if (query.currency) where.push(`currency IN ${inList(filterParams, 'currency', query.currency)}`);
    const filter: Filter = { where: where.join(' AND '), params: filterParams };
    const params: SqlParams = { ...filterParams, reference: this.referenceCurrency };
    let nameFilter = '';
    if (query.q !== undefined) {
      params.q = query.q.toLowerCase();
      nameFilter = `WHERE contains(lower(i.name), $q) OR contains(lower(coalesce(i.smartflow_name, '')), $q)`;
    }
    const select = `
      WITH t AS (SELECT * FROM ${this.conv()} WHERE ${filter.where}),
      bc AS (
        SELECT source_type, source_id, currency,
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
        FROM t GROUP BY source_type, source_id, currency),
      g AS (
        SELECT source_type, source_id,
          sum(n) AS n, sum(ref_wo) AS wo, sum(ref_w) AS w, sum(rn) AS rn, sum(ref_rwo) AS rwo, sum(ref_rw) AS rw,
          list(struct_pack(
            currency := currency,
            conversionsAmountWoTax := ${D('wo')}, conversionsAmountWTax := ${D('w')},
            conversionsNumber := CAST(n AS INTEGER), averageConversion := ${AVERAGE('w', 'n')},
            refundsAmountWoTax := ${D('rwo')}, refundsAmountWTax := ${D('rw')}, refundsNumber := CAST(rn AS INTEGER),
            grossConversionsAmountWoTax := ${D('wo + rwo')}, grossConversionsAmountWTax := ${D('w + rw')},
            grossConversionsNumber := CAST(n + rn AS INTEGER),
            conversionAmountWoTaxReference := ${D('ref_wo')}, conversionAmountWTaxReference := ${D('ref_w')}
          ) ORDER BY currency) AS breakdown
        FROM bc GROUP BY source_type, source_id),
      u AS (
        SELECT source_type, source_id,
          count(DISTINCT contact_id) FILTER (WHERE NOT is_refund) AS uc,
          min(datetime) FILTER (WHERE NOT is_refund) AS first_at,
          max(datetime) FILTER (WHERE NOT is_refund) AS last_at
        FROM t GROUP BY source_type, source_id)
      SELECT g.source_type, i.source_id AS "id", i.name AS "name",
        i.campaign_id, i.smartflow_id, i.smartflow_name, i.delivery_id, i.delivery_name,
        ${detailUrlSql('i.')} AS detail_url,
        ${TS('i.started_at')} AS "sourceStartedAt", ${TS('u.first_at')} AS "firstConversionAt", ${TS('u.last_at')} AS "lastConversionAt",
        ${D('g.wo')} AS "conversionsAmountWoTax", ${D('g.w')} AS "conversionsAmountWTax",
        CAST(g.n AS INTEGER) AS "conversionsNumber", CAST($reference AS VARCHAR) AS "referenceCurrency",
        CAST(u.uc AS INTEGER) AS "uniqueContacts",
        ${AVERAGE('g.w', 'g.n')} AS "averageConversion", ${AVERAGE('g.w', 'u.uc')} AS "averageUniqueConversion",
        ${D('g.rwo')} AS "refundsAmountWoTax", ${D('g.rw')} AS "refundsAmountWTax", CAST(g.rn AS INTEGER) AS "refundsNumber",
        ${D('g.wo + g.rwo')} AS "grossConversionsAmountWoTax", ${D('g.w + g.rw')} AS "grossConversionsAmountWTax",
        CAST(g.n + g.rn AS INTEGER) AS "grossConversionsNumber",
        g.breakdown
      FROM g JOIN u USING (source_type, source_id)
      JOIN ${this.scope.table('source_info')} i ON i.source_type = g.source_type AND i.source_id = g.source_id
      ${nameFilter}`;
    return { filter, select, params };
  }

  async report(query: ReportQuery): Promise<Page<AggregateRow>> {
    return this.page(this.reportSelect(query), query, REPORT_TIE_BREAK, toAggregate);
  }

  async allReport(query: ReportQuery): Promise<RowStream<AggregateRow>> {
    return this.streamAll(this.reportSelect(query), query, REPORT_TIE_BREAK, toAggregate);
  }

  async validateEmail(request: unknown, renderLimits: RenderLimits | undefined = this.renderLimits): Promise<ValidateResponse> {
    const { validateDelivery } = await import('./validate.js');
    return validateDelivery(this.scope, this.db, request, renderLimits);
  }

  /** Says why an order is not among the conversions of a period. */
  async diagnoseOrder(orderId: string, period?: { dateFrom: string; dateTo: string }): Promise<OrderDiagnosis> {
    const t = (name: string) => this.scope.table(name);
    const rows = await this.db.all<{ is_refund: boolean; n: bigint }>(
      `SELECT coalesce(is_refund, false) AS is_refund, count(*) AS n FROM ${t('orders')} WHERE order_id = $orderId GROUP BY 1`,
      { orderId },
    );
    if (rows.length === 0) return { orderId, found: false, reasons: [] };
    const head = await this.db.one<{ contact_id: string; datetime: Date; amount_wo_tax: unknown; status: string | null }>(
      `SELECT contact_id, datetime, amount_wo_tax, status FROM ${t('order_head')} WHERE order_id = $orderId`,
      { orderId },
    );
    const reasons: string[] = [];
    if (!head) {
      reasons.push('the dataset holds only refunds for this order id, no order row, so there is nothing to attribute them to');
      return { orderId, found: true, reasons };
    }
    const status = (head.status ?? '').trim().toLowerCase();
    if (CANCELLED_STATUSES.includes(status)) reasons.push(`the order is cancelled (status "${head.status}"), so neither it nor its refunds count`);
    if (Number(String(head.amount_wo_tax)) === 0) reasons.push('the order has zero net revenue (amount_wo_tax = 0), which is not a conversion');
    const click = await this.db.one<{ datetime: Date; source_type: string; source_id: string }>(
      `SELECT datetime, source_type, source_id FROM ${t('clicks')}
       WHERE contact_id = $contact AND datetime <= CAST($at AS TIMESTAMP)
       ORDER BY datetime DESC, source_type DESC, source_id DESC LIMIT 1`,
      { contact: head.contact_id, at: head.datetime.toISOString() },
    );
    const orderAt = head.datetime.toISOString();
    if (!click) {
      reasons.push(`contact ${head.contact_id} has no click at or before the order (${orderAt}), so no source can be credited`);
    } else {
      const days = (head.datetime.getTime() - click.datetime.getTime()) / 86_400_000;
      if (days > WINDOW_DAYS) {
        reasons.push(
          `the contact's last click before the order was ${click.datetime.toISOString()} on ${click.source_type} ${click.source_id}, ${days.toFixed(1)} days earlier: outside the ${WINDOW_DAYS}-day window`,
        );
      }
    }
    if (reasons.length === 0 && period) {
      reasons.push(
        `the order is a conversion, but none of its transactions falls within ${period.dateFrom}..${period.dateTo} (the order is from ${orderAt.slice(0, 10)})`,
      );
    }
    return { orderId, found: true, reasons };
  }

  async close(): Promise<void> {
    this.db.close();
    this.onClose?.();
  }
}

async function* mapRows<T>(rows: AsyncIterable<Row>, map: (row: Row) => T): AsyncGenerator<T> {
  for await (const row of rows) yield map(row);
}

function str(value: unknown): string {
  return String(value);
}

function nullable(value: unknown): string | null {
  return value === null || value === undefined ? null : String(value);
}

function sourceOf(row: Row, id: unknown, name: unknown) {
  return {
    type: row.source_type as SourceType,
    id: str(id),
    name: str(name),
    campaignId: str(row.campaign_id),
    smartflowId: nullable(row.smartflow_id),
    smartflowName: nullable(row.smartflow_name),
    deliveryId: nullable(row.delivery_id),
    deliveryName: nullable(row.delivery_name),
    detailUrl: str(row.detail_url),
  };
}

function toRecord(row: Row): ConversionRecord {
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
    source: sourceOf(row, row.source_id, row.name),
    activityUrl: str(row.activityUrl),
  };
}

function toAggregate(row: Row): AggregateRow {
  return {
    id: str(row.id),
    name: str(row.name),
    source: sourceOf(row, row.id, row.name),
    sourceStartedAt: nullable(row.sourceStartedAt),
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

