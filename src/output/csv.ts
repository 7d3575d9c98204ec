/** CSV rows (csv-stringify is loaded only when CSV is written). */
import { stringify } from 'csv-stringify/sync';
import { getPath } from './columns.js';
import { cellText } from './format.js';

export function csvHeader(columns: string[]): string {
  return stringify([columns]);
}

export function csvRow(record: unknown, columns: string[]): string {
  return csvRows([record], columns);
}

/** Many rows in one call: csv-stringify's cost is mostly per call, not per row. */
export function csvRows(records: unknown[], columns: string[]): string {
  return stringify(records.map((record) => columns.map((c) => cellText(getPath(record, c)))));
}
