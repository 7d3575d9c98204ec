/** The flat (dotted) columns of each kind of record, in the interface's field order. */
import { AGGREGATE_FIELDS, BREAKDOWN_FIELDS, flatFields, PERIOD_FIGURE_FIELDS, RECORD_FIELDS, TREND_FIELDS } from '../model/fields.js';
import { COMPARED_FIGURES } from '../model/shapes.js';
import type { AggregateRow, BreakdownRow } from '../model/types.js';

export const ITEM_COLUMNS = flatFields(RECORD_FIELDS);
export const REPORT_COLUMNS = flatFields(AGGREGATE_FIELDS);
export const BREAKDOWN_COLUMNS = BREAKDOWN_FIELDS.map((c) => `breakdown.${c}`);
/** A series' buckets (convx trend); without --per-source, no series columns. */
export const TREND_SERIES_COLUMNS = flatFields(TREND_FIELDS);
export const TREND_COLUMNS = TREND_SERIES_COLUMNS.filter((c) => c !== 'series' && c !== 'seriesName');
/** A period's total (convx total): its period and zone, then its figures. */
export const TOTAL_COLUMNS = ['dateFrom', 'dateTo', 'timeZone', ...flatFields(PERIOD_FIGURE_FIELDS)];

/**
 * The columns of a comparison (--compare), after a row's own: the other period, in a series the
 * bucket it lines up with, and per compared figure its other value and its change.
 */
export function comparisonColumns(bucket: boolean): string[] {
  const figures = COMPARED_FIGURES.flatMap((f) => [`comparison.figures.${f}`, `comparison.change.${f}.absolute`, `comparison.change.${f}.relative`]);
  return ['comparison.dateFrom', 'comparison.dateTo', ...(bucket ? ['comparison.bucket'] : []), ...figures];
}

/** The headline figures a compared table shows with their change beside them. */
const HEADLINE_FIGURES: readonly string[] = ['conversionsNumber', 'conversionsAmountWTax', 'uniqueContacts'];

/** A table's columns with a change column (comparison.change.FIGURE, drawn as an arrow) after each headline figure. */
export function withChangeColumns(tableColumns: string[]): string[] {
  return tableColumns.flatMap((c) => (HEADLINE_FIGURES.includes(c) ? [c, changeColumn(c)] : [c]));
}

const changeColumn = (figure: string) => `comparison.change.${figure}`;

/** The figure of a table's change column (undefined: not one). */
export function changeFigure(column: string): string | undefined {
  return /^comparison\.change\.([A-Za-z]+)$/.exec(column)?.[1];
}

/** Columns of a bucket or a total that say which it is (a --breakdown line repeats them), not what it sums. */
export function isPeriodColumn(column: string): boolean {
  return ['bucket', 'start', 'end', 'series', 'seriesName', 'dateFrom', 'dateTo', 'timeZone', 'referenceCurrency'].includes(column);
}

/**
 * Columns of an aggregate row that describe its source rather than sum it up: the ones a
 * --breakdown line (one per source and currency) repeats. The source's totals (amounts,
 * counts, averages, first and last conversion) are left out of those lines.
 */
export function isSourceColumn(column: string): boolean {
  return column === 'id' || column === 'name' || column.startsWith('source.') || column === 'sourceStartedAt' || column === 'referenceCurrency';
}

/** The columns shown in a terminal table when --fields is not given. */
export const ITEM_TABLE_COLUMNS = [
  'datetime',
  'orderId',
  'contactId',
  'isRefund',
  'conversionsAmount',
  'conversionsCurrency',
  'conversionsReferenceAmount',
  'source.type',
  'source.name',
  'attribution.hoursToConversion',
];

/**
 * The columns of a records table left out first when it does not fit the terminal, in this order:
 * the millisecond timestamp, then the figures, before what identifies a conversion (its order, its
 * source, its amount and currency), which leave last (from the right).
 */
export const ITEM_TABLE_DROP_FIRST = ['datetime', 'attribution.hoursToConversion', 'conversionsReferenceAmount', 'isRefund', 'contactId', 'source.type'];

/** The figures a terminal table shows of a source, a bucket or a total. */
const FIGURE_TABLE_COLUMNS = [
  'conversionsNumber',
  'conversionsAmountWTax',
  'refundsNumber',
  'refundsAmountWTax',
  'grossConversionsAmountWTax',
  'uniqueContacts',
  'averageConversion',
];
export const REPORT_TABLE_COLUMNS = ['name', 'source.type', ...FIGURE_TABLE_COLUMNS];
export const TREND_TABLE_COLUMNS = ['bucket', ...FIGURE_TABLE_COLUMNS];
export const TREND_SERIES_TABLE_COLUMNS = ['bucket', 'seriesName', ...FIGURE_TABLE_COLUMNS];
export const TOTAL_TABLE_COLUMNS = ['dateFrom', 'dateTo', ...FIGURE_TABLE_COLUMNS];
/** --breakdown of a series or a total: one line per currency. */
const FIGURE_BREAKDOWN_TABLE_COLUMNS = [
  'breakdown.currency',
  'breakdown.conversionsNumber',
  'breakdown.conversionsAmountWTax',
  'breakdown.refundsAmountWTax',
  'breakdown.conversionAmountWTaxReference',
];
export const BREAKDOWN_TABLE_COLUMNS = ['name', 'source.type', ...FIGURE_BREAKDOWN_TABLE_COLUMNS];
export const TREND_BREAKDOWN_TABLE_COLUMNS = ['bucket', ...FIGURE_BREAKDOWN_TABLE_COLUMNS];
export const TREND_SERIES_BREAKDOWN_TABLE_COLUMNS = ['bucket', 'seriesName', ...FIGURE_BREAKDOWN_TABLE_COLUMNS];
export const TOTAL_BREAKDOWN_TABLE_COLUMNS = ['dateFrom', 'dateTo', ...FIGURE_BREAKDOWN_TABLE_COLUMNS];

export const COLUMN_TITLES: Record<string, string> = {
  datetime: 'Date (UTC)',
  orderId: 'Order',
  contactId: 'Contact',
  isRefund: 'Refund',
  conversionsAmount: 'Amount',
  conversionsCurrency: 'Cur',
  conversionsReferenceAmount: 'Ref. amount',
  'source.type': 'Type',
  'source.name': 'Source',
  'attribution.hoursToConversion': 'Hours',
  name: 'Source',
  conversionsNumber: 'Orders',
  conversionsAmountWTax: 'Revenue',
  refundsNumber: 'Refunds',
  refundsAmountWTax: 'Refunded',
  grossConversionsAmountWTax: 'Gross',
  uniqueContacts: 'Contacts',
  averageConversion: 'Avg order',
  'breakdown.currency': 'Cur',
  'breakdown.conversionsNumber': 'Orders',
  'breakdown.conversionsAmountWTax': 'Revenue',
  'breakdown.refundsAmountWTax': 'Refunded',
  'breakdown.conversionAmountWTaxReference': 'Revenue (ref.)',
  bucket: 'Bucket',
  seriesName: 'Series',
  dateFrom: 'From',
  dateTo: 'To',
  'comparison.bucket': 'Against',
  [changeColumn('conversionsNumber')]: 'Δ Orders',
  [changeColumn('conversionsAmountWTax')]: 'Δ Revenue',
  [changeColumn('uniqueContacts')]: 'Δ Contacts',
};

/** Money columns: shown with two decimals in a table. */
export function isAmountColumn(column: string): boolean {
  return /Amount|averageConversion|averageUniqueConversion|Reference$/.test(column) && !column.endsWith('Number') && changeFigure(column) === undefined;
}

/** record["a"]["b"] for "a.b"; called for every cell of every row, so it avoids split(). */
export function getPath(record: unknown, path: string): unknown {
  if (record === null || typeof record !== 'object') return undefined;
  const dot = path.indexOf('.');
  if (dot === -1) return (record as Record<string, unknown>)[path];
  return getPath((record as Record<string, unknown>)[path.slice(0, dot)], path.slice(dot + 1));
}

/** One flat row per aggregate and breakdown currency (the --breakdown view). */
export function breakdownRows(row: AggregateRow): Record<string, unknown>[] {
  return row.breakdown.map((b: BreakdownRow) => ({ ...row, breakdown: b }));
}

/**
 * The column that names the currency of a money column: amounts of a breakdown line are in
 * its order currency, an item's amount in its own currency, everything else (the rows'
 * totals, averages and every ...Reference amount) in the reference currency.
 */
export function currencyColumn(column: string): string | undefined {
  if (!isAmountColumn(column)) return undefined;
  if (column.endsWith('Reference')) return 'referenceCurrency';
  if (column.startsWith('breakdown.')) return 'breakdown.currency';
  if (column === 'conversionsAmount') return 'conversionsCurrency';
  return 'referenceCurrency';
}

/** Columns that add up over rows (a totals row sums them); counts of contacts and averages do not. */
export function isAdditiveColumn(column: string): boolean {
  const field = column.startsWith('breakdown.') ? column.slice('breakdown.'.length) : column;
  return /^(conversions|refunds|grossConversions)(AmountWoTax|AmountWTax|Number)$|^conversionAmountW(o)?TaxReference$/.test(field);
}

/**
 * Text columns a terminal table may shorten with an ellipsis to fit: names and links. Dates,
 * codes, ids and types keep their whole text (a cut id is worse than a hidden column).
 */
export function isShrinkableColumn(column: string): boolean {
  return /(^|\.)name$|Name$|Url$/.test(column);
}
