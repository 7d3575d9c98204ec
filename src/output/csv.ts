/**
 * CSV rows (csv-stringify is loaded only when CSV is written, with `require`: its CommonJS build
 * loads in about 3 ms, its ES module build in about 8).
 */
import { createRequire } from 'node:module';
import type { CastReturnObject } from 'csv-stringify';
import type * as Sync from 'csv-stringify/sync';
import { getPath } from './columns.js';
import { cellText, isFormulaText } from './format.js';

const { stringify } = createRequire(import.meta.url)('csv-stringify/sync') as typeof Sync;
type Options = Sync.Options;

export function csvHeader(columns: string[]): string {
  return stringify([columns]);
}

export function csvRow(record: unknown, columns: string[], formulaEscape = true): string {
  return csvRows([record], columns, formulaEscape);
}

/**
 * Every cell reaches csv-stringify as text, except a defused formula: an object asking for
 * quotes, which this cast passes through (OWASP: prefix a single quote and quote the cell).
 */
const OPTIONS: Options = { cast: { object: (value) => value as unknown as CastReturnObject } };

function csvCell(value: unknown, formulaEscape: boolean): string | CastReturnObject {
  if (formulaEscape && isFormulaText(value)) return { value: `'${value}`, quoted: true };
  return cellText(value);
}

/** Many rows in one call: csv-stringify's cost is mostly per call, not per row. */
export function csvRows(records: unknown[], columns: string[], formulaEscape = true): string {
  return stringify(
    records.map((record) => columns.map((c) => csvCell(getPath(record, c), formulaEscape))),
    OPTIONS,
  );
}
