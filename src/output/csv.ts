/** CSV rows (csv-stringify is loaded only when CSV is written). */
import { stringify } from 'csv-stringify/sync';
import { getPath } from './columns.js';
import { cellText } from './format.js';

export function csvHeader(columns: string[]): string {
  return stringify([columns]);
}

export function csvRow(record: unknown, columns: string[]): string {
  return stringify([columns.map((c) => cellText(getPath(record, c)))]);
}
