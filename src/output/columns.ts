/** The flat (dotted) columns of each kind of record, in the interface's field order. */
import { AGGREGATE_FIELDS, BREAKDOWN_FIELDS, flatFields, RECORD_FIELDS } from '../model/fields.js';
import type { AggregateRow, BreakdownRow } from '../model/types.js';

export const ITEM_COLUMNS = flatFields(RECORD_FIELDS);
export const REPORT_COLUMNS = flatFields(AGGREGATE_FIELDS);
export const BREAKDOWN_COLUMNS = BREAKDOWN_FIELDS.map((c) => `breakdown.${c}`);

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

export const REPORT_TABLE_COLUMNS = [
  'name',
  'source.type',
  'conversionsNumber',
  'conversionsAmountWTax',
  'refundsNumber',
  'refundsAmountWTax',
  'grossConversionsAmountWTax',
  'uniqueContacts',
  'averageConversion',
];

export const BREAKDOWN_TABLE_COLUMNS = [
  'name',
  'source.type',
  'breakdown.currency',
  'breakdown.conversionsNumber',
  'breakdown.conversionsAmountWTax',
  'breakdown.refundsAmountWTax',
  'breakdown.conversionAmountWTaxReference',
];

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
};

/** Money columns: shown with two decimals in a table. */
export function isAmountColumn(column: string): boolean {
  return /Amount|averageConversion|averageUniqueConversion|Reference$/.test(column) && !column.endsWith('Number');
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
