/** Pure formatters: records in, text out. */
import { getPath, isAmountColumn } from './columns.js';

export function jsonDocument(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

export function jsonLine(value: unknown): string {
  return `${JSON.stringify(value)}\n`;
}

/** The opening of {"conversions": [...], "paging": ...} as JSON.stringify(value, null, 2) writes it. */
export const JSON_LIST_OPEN = '{\n  "conversions": [';

/** One element of the conversions array, indented as in the whole document. */
export function jsonListItem(record: unknown, first: boolean): string {
  const body = JSON.stringify(record, null, 2).replaceAll('\n', '\n    ');
  return `${first ? '' : ','}\n    ${body}`;
}

export function jsonListClose(paging: unknown, empty: boolean): string {
  const pagingText = JSON.stringify(paging, null, 2).replaceAll('\n', '\n  ');
  return `${empty ? ']' : '\n  ]'},\n  "paging": ${pagingText}\n}\n`;
}

/**
 * Text that a spreadsheet would read as a formula: a string (never a number, whatever
 * its sign) that begins with =, +, -, @, a tab or a carriage return (OWASP, CSV injection).
 * Decided on the value's type before it becomes text, so -12.5 the number is data.
 */
export function isFormulaText(value: unknown): value is string {
  if (typeof value !== 'string' || value === '') return false;
  const first = value.charCodeAt(0);
  // = + - @ \t \r
  return first === 61 || first === 43 || first === 45 || first === 64 || first === 9 || first === 13;
}

/** The text of one csv/tsv cell; with formulaEscape, formula text gets a leading single quote. */
export function cellText(value: unknown, formulaEscape = false): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return formulaEscape && isFormulaText(value) ? `'${value}` : value;
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

const TSV_SPECIAL = /[\\\t\n\r]/;

function tsvCell(text: string): string {
  if (!TSV_SPECIAL.test(text)) return text;
  return text.replace(/[\\\t\n\r]/g, (ch) => ({ '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' })[ch]!);
}

export function tsvHeader(columns: string[]): string {
  return `${columns.map(tsvCell).join('\t')}\n`;
}

/** One TSV line; formulaEscape (the default) defuses formula text as cellText does. */
export function tsvRow(record: unknown, columns: string[], formulaEscape = true): string {
  return `${columns.map((c) => tsvCell(cellText(getPath(record, c), formulaEscape))).join('\t')}\n`;
}

/** Keeps only the named (dotted) paths of a record, nested as they were. */
export function project(record: unknown, fields: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const field of fields) {
    const parts = field.split('.');
    let target = out;
    parts.slice(0, -1).forEach((part) => {
      target[part] ??= {};
      target = target[part] as Record<string, unknown>;
    });
    target[parts.at(-1)!] = getPath(record, field) ?? null;
  }
  return out;
}

/** Number formats, made on first use: ICU's set-up costs a start-up that only prints help 10-15 ms. */
let numberFormats: { money: Intl.NumberFormat; number: Intl.NumberFormat } | undefined;
function formats() {
  return (numberFormats ??= {
    money: new Intl.NumberFormat('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 }),
    number: new Intl.NumberFormat('en-US', { maximumFractionDigits: 20 }),
  });
}

/** Columns a table shows with two decimals, as money: amounts, and the hours to a conversion (rounded to 2 decimals). */
const twoDecimals = (column: string) => isAmountColumn(column) || column.endsWith('hoursToConversion');

export function tableCell(value: unknown, column: string): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'number') return twoDecimals(column) ? formats().money.format(value) : formats().number.format(value);
  if (typeof value === 'boolean') return value ? 'yes' : '';
  return cellText(value);
}
