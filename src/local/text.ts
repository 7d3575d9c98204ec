/**
 * Output lines written by DuckDB: the csv and tsv text of item records, made in
 * SQL per row so that `--all` streams the engine's chunks without a JavaScript
 * object per row. Each cell is what the formatters (output/format.ts, csv.ts)
 * write for the record toRecord (backend.ts) would build, byte for byte:
 * csv-stringify's quoting (a cell with , " CR or LF is quoted, quotes doubled),
 * tsv's escapes, the formula escaping of text cells, and numbers as JavaScript
 * prints the doubles the records hold (see numberCell).
 */
import type { TextRequest } from '../backend.js';
import { ATTRIBUTION_MODEL, WINDOW_DAYS } from '../model/types.js';
import { sqlString } from './db.js';

type Cell =
  /** A text column; `str`: the record holds String(value), so NULL is the text "null". */
  | { kind: 'text'; column: string; str?: boolean }
  /** A DECIMAL column of the conversion table, held as a double in the record. */
  | { kind: 'decimal'; column: string }
  /** Hundredths of an hour (a non-negative integer), held as centi / 100. */
  | { kind: 'centi'; column: string }
  | { kind: 'boolean'; column: string }
  | { kind: 'const'; value: string | number };

/** The flat columns of a ConversionRecord and where itemsSelect (queries.ts) holds each. */
const ITEM_CELLS: Record<string, Cell> = {
  contactId: { kind: 'text', column: '"contactId"', str: true },
  clientContactId: { kind: 'text', column: '"clientContactId"' },
  datetime: { kind: 'text', column: '"datetime"', str: true },
  orderId: { kind: 'text', column: '"orderId"', str: true },
  firstName: { kind: 'text', column: '"firstName"' },
  surname: { kind: 'text', column: '"surname"' },
  conversionsAmount: { kind: 'decimal', column: 'amount_w_tax_exact' },
  conversionsCurrency: { kind: 'text', column: '"conversionsCurrency"', str: true },
  conversionsReferenceAmount: { kind: 'decimal', column: 'ref_w_exact' },
  referenceCurrency: { kind: 'text', column: '"referenceCurrency"', str: true },
  country: { kind: 'text', column: '"country"' },
  isRefund: { kind: 'boolean', column: '"isRefund"' },
  'attribution.touch': { kind: 'const', value: 'click' },
  'attribution.datetime': { kind: 'text', column: 'touch_datetime', str: true },
  'attribution.hoursToConversion': { kind: 'centi', column: 'centi_hours' },
  'attribution.model': { kind: 'const', value: ATTRIBUTION_MODEL },
  'attribution.windowDays': { kind: 'const', value: WINDOW_DAYS },
  'source.type': { kind: 'text', column: 'source_type', str: true },
  'source.id': { kind: 'text', column: 'source_id', str: true },
  'source.name': { kind: 'text', column: 'name', str: true },
  'source.campaignId': { kind: 'text', column: 'campaign_id', str: true },
  'source.smartflowId': { kind: 'text', column: 'smartflow_id' },
  'source.smartflowName': { kind: 'text', column: 'smartflow_name' },
  'source.deliveryId': { kind: 'text', column: 'delivery_id' },
  'source.deliveryName': { kind: 'text', column: 'delivery_name' },
  'source.detailUrl': { kind: 'text', column: 'detail_url', str: true },
  activityUrl: { kind: 'text', column: '"activityUrl"', str: true },
};

/**
 * The largest amount whose text the SQL writes as JavaScript would: a DECIMAL of
 * at most 15 significant digits (11 before the point, scale 4) converts to the
 * double nearest to it, whose shortest round-trip text is the decimal itself.
 */
export const EXACT_AMOUNT_LIMIT = 1e11;

const FORMULA_START = `left(%, 1) IN ('=', '+', '-', '@', chr(9), chr(13))`;

function textCell(v: string, request: TextRequest): string {
  const formula = request.formulaEscape ? FORMULA_START.replace('%', v) : 'false';
  if (request.format === 'csv') {
    const quoted = (x: string) => `'"' || replace(${x}, '"', '""') || '"'`;
    return `CASE WHEN ${v} IS NULL THEN ''
      WHEN ${formula} THEN ${quoted(`'''' || ${v}`)}
      WHEN contains(${v}, ',') OR contains(${v}, '"') OR contains(${v}, chr(10)) OR contains(${v}, chr(13)) THEN ${quoted(v)}
      ELSE ${v} END`;
  }
  const escaped = [
    ['\\', '\\\\'],
    ['\t', '\\t'],
    ['\n', '\\n'],
    ['\r', '\\r'],
  ].reduce((x, [from, to]) => `replace(${x}, ${from === '\\' ? sqlString(from) : `chr(${from!.charCodeAt(0)})`}, ${sqlString(to!)})`, `CASE WHEN ${formula} THEN '''' || ${v} ELSE ${v} END`);
  return `CASE WHEN ${v} IS NULL THEN '' ELSE ${escaped} END`;
}

/** A constant's cell, computed once by the formatters themselves. */
async function constCell(value: string | number, request: TextRequest): Promise<string> {
  if (request.format === 'csv') {
    const { csvRows } = await import('../output/csv.js');
    return csvRows([{ v: value }], ['v'], request.formulaEscape).slice(0, -1);
  }
  const { tsvRow } = await import('../output/format.js');
  return tsvRow({ v: value }, ['v'], request.formulaEscape).slice(0, -1);
}

function cellSql(cell: Cell, request: TextRequest, constant: string | undefined): string {
  switch (cell.kind) {
    case 'text':
      return textCell(cell.str ? `coalesce(CAST(${cell.column} AS VARCHAR), 'null')` : `CAST(${cell.column} AS VARCHAR)`, request);
    case 'decimal':
      // '12.3400' -> '12.34', '100.0000' -> '100', '0.0000' -> '0': the shortest text of the double.
      return `coalesce(rtrim(rtrim(CAST(${cell.column} AS VARCHAR), '0'), '.'), '')`;
    case 'centi':
      return `coalesce(CAST(${cell.column} // 100 AS VARCHAR) || CASE WHEN ${cell.column} % 100 = 0 THEN ''
        WHEN ${cell.column} % 10 = 0 THEN '.' || CAST(${cell.column} % 100 // 10 AS VARCHAR)
        ELSE '.' || lpad(CAST(${cell.column} % 100 AS VARCHAR), 2, '0') END, '')`;
    case 'boolean':
      return `CASE WHEN ${cell.column} IS NULL THEN '' WHEN ${cell.column} THEN 'true' ELSE 'false' END`;
    case 'const':
      return sqlString(constant!);
  }
}

/** A record's value of a cell as a SQL value that to_json writes as JSON.stringify does (see textGuardSql for the exceptions). */
function jsonValueSql(cell: Cell): string {
  switch (cell.kind) {
    case 'text':
      return cell.str ? `coalesce(CAST(${cell.column} AS VARCHAR), 'null')` : `CAST(${cell.column} AS VARCHAR)`;
    case 'decimal':
    case 'centi':
      // The number's text as csv writes it, taken by to_json as it stands (NULL is null).
      return `CAST(${cellSql(cell, { format: 'tsv', columns: [], formulaEscape: false }, undefined).replace(/, ''\)$/, ', NULL)')} AS JSON)`;
    case 'boolean':
      return `CAST(${cell.column} AS BOOLEAN)`;
    case 'const':
      return typeof cell.value === 'number' ? `CAST(${sqlString(JSON.stringify(cell.value))} AS JSON)` : sqlString(cell.value);
  }
}

/**
 * A JSON line of the whole record (jsonl without --fields): the keys of toRecord
 * (backend.ts), nested as there, in its order. One to_json of a struct per row:
 * the engine writes the object in one go instead of concatenating a text per cell.
 */
export function itemJsonSql(): string {
  const groups: [string | undefined, string[]][] = [];
  for (const column of Object.keys(ITEM_CELLS)) {
    const dot = column.indexOf('.');
    const group = dot === -1 ? undefined : column.slice(0, dot);
    const last = groups.at(-1);
    if (last && last[0] === group && group !== undefined) last[1].push(column);
    else groups.push([group, [column]]);
  }
  const key = (name: string) => `"${name.replaceAll('"', '""')}"`;
  const members: string[] = [];
  for (const [group, columns] of groups) {
    const values = columns.map((c) => `${key(group === undefined ? c : c.slice(group.length + 1))} := ${jsonValueSql(ITEM_CELLS[c]!)}`);
    if (group === undefined) members.push(...values);
    else members.push(`${key(group)} := struct_pack(${values.join(', ')})`);
  }
  return `CAST(to_json(struct_pack(${members.join(', ')})) AS VARCHAR) || chr(10)`;
}

/**
 * SQL true for a row whose text the engine cannot write as the row path does, so
 * the command takes the row path: a value with U+FEFF (the driver's decoder drops
 * a leading one from each value it reads), and for JSON a control character that
 * DuckDB escapes with upper-case hex where JSON.stringify writes lower-case.
 */
export function textGuardSql(request: TextRequest): string {
  const columns = Object.entries(ITEM_CELLS)
    .filter(([name, cell]) => cell.kind === 'text' && (request.format === 'jsonl' || request.columns.includes(name)))
    .map(([, cell]) => (cell as { column: string }).column);
  const pattern = request.format === 'jsonl' ? `'[\\x{FEFF}\\x{0B}\\x{0E}-\\x{1F}]'` : `'\\x{FEFF}'`;
  // One match over the row's texts joined (concat skips NULLs) instead of one per column.
  return columns.length ? `regexp_matches(concat(${columns.map((c) => `CAST(${c} AS VARCHAR)`).join(', ')}), ${pattern})` : 'false';
}

/** SQL of one item's output line (with its newline), or undefined when a column has no SQL form. */
export async function itemLineSql(request: TextRequest): Promise<string | undefined> {
  if (request.format === 'jsonl') return itemJsonSql();
  const cells: string[] = [];
  for (const column of request.columns) {
    const cell = ITEM_CELLS[column];
    if (!cell) return undefined;
    const constant = cell.kind === 'const' ? await constCell(cell.value, request) : undefined;
    cells.push(cellSql(cell, request, constant));
  }
  if (cells.length === 0) return undefined;
  const separator = request.format === 'csv' ? `','` : 'chr(9)';
  return `${cells.map((c) => `(${c})`).join(` || ${separator} || `)} || chr(10)`;
}
