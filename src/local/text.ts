/**
 * Output lines written by DuckDB: the csv and tsv text of item records, made in
 * SQL per row so that `--all` streams the engine's chunks without a JavaScript
 * object per row. Each cell is what the formatters (output/format.ts, csv.ts)
 * write for the record toRecord (backend.ts) would build, byte for byte (the
 * constant cells too, written by the same SQL: local/ imports no formatter):
 * csv-stringify's quoting (a cell with , " CR or LF is quoted, quotes doubled),
 * tsv's escapes, the formula escaping of text cells, and numbers as JavaScript
 * prints the doubles the records hold (see numberText).
 */
import type { TextRequest } from '../backend.js';
import { ATTRIBUTION_MODEL, WINDOW_DAYS } from '../model/types.js';
import { ident, join, literal, sql, type Sql } from './sql.js';

type Cell =
  /** A text column; `str`: the record holds String(value), so NULL is the text "null". */
  | { kind: 'text'; column: string; str?: boolean }
  /** A DECIMAL column of the conversion table, held as a double in the record. */
  | { kind: 'decimal'; column: string }
  /** Hundredths of an hour (a non-negative integer), held as centi / 100. */
  | { kind: 'centi'; column: string }
  | { kind: 'boolean'; column: string }
  | { kind: 'const'; value: string | number };

/** The flat columns of a ConversionRecord and the column of itemsSelect (queries.ts) that holds each. */
const ITEM_CELLS: Record<string, Cell> = {
  contactId: { kind: 'text', column: 'contactId', str: true },
  clientContactId: { kind: 'text', column: 'clientContactId' },
  datetime: { kind: 'text', column: 'datetime', str: true },
  orderId: { kind: 'text', column: 'orderId', str: true },
  firstName: { kind: 'text', column: 'firstName' },
  surname: { kind: 'text', column: 'surname' },
  conversionsAmount: { kind: 'decimal', column: 'amount_w_tax_exact' },
  conversionsCurrency: { kind: 'text', column: 'conversionsCurrency', str: true },
  conversionsReferenceAmount: { kind: 'decimal', column: 'ref_w_exact' },
  referenceCurrency: { kind: 'text', column: 'referenceCurrency', str: true },
  country: { kind: 'text', column: 'country' },
  isRefund: { kind: 'boolean', column: 'isRefund' },
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
  activityUrl: { kind: 'text', column: 'activityUrl', str: true },
};

/**
 * The largest amount whose text the SQL writes as JavaScript would: a DECIMAL of
 * at most 15 significant digits (11 before the point, scale 4) converts to the
 * double nearest to it, whose shortest round-trip text is the decimal itself.
 */
export const EXACT_AMOUNT_LIMIT = 1e11;

/** tsv's escapes, in the order they apply: each special character and its escape. */
const TSV_ESCAPES: [Sql, Sql][] = [
  [literal('\\'), literal('\\\\')],
  [sql`chr(9)`, literal('\\t')],
  [sql`chr(10)`, literal('\\n')],
  [sql`chr(13)`, literal('\\r')],
];

/** The cell of a text value v (a VARCHAR expression): csv's quoting or tsv's escapes, and the formula escaping. */
function textCell(v: Sql, request: TextRequest): Sql {
  // The first code point (what left(v, 1) takes; -1 for '') among = + - @ tab CR: a number to compare, not a string cut per value.
  const formula = request.formulaEscape ? sql`unicode(${v}) IN (61, 43, 45, 64, 9, 13)` : sql`false`;
  if (request.format === 'csv') {
    const quoted = (x: Sql) => sql`'"' || replace(${x}, '"', '""') || '"'`;
    return sql`CASE WHEN ${v} IS NULL THEN ''
      WHEN ${formula} THEN ${quoted(sql`'''' || ${v}`)}
      WHEN contains(${v}, ',') OR contains(${v}, '"') OR contains(${v}, chr(10)) OR contains(${v}, chr(13)) THEN ${quoted(v)}
      ELSE ${v} END`;
  }
  const escaped = TSV_ESCAPES.reduce((x, [from, to]) => sql`replace(${x}, ${from}, ${to})`, sql`CASE WHEN ${formula} THEN '''' || ${v} ELSE ${v} END`);
  return sql`CASE WHEN ${v} IS NULL THEN '' ELSE ${escaped} END`;
}

/** A text column as VARCHAR; `str`: as String(value) writes it, NULL the text "null". */
function textValue(cell: { column: string; str?: boolean }): Sql {
  return cell.str ? sql`coalesce(CAST(${ident(cell.column)} AS VARCHAR), 'null')` : sql`CAST(${ident(cell.column)} AS VARCHAR)`;
}

/**
 * The text cells the engine makes from values it formats or percent-encodes (strftime's digits and
 * punctuation; url_encode and encodeURIComponent around constant paths): never a U+FEFF or a
 * control character, so the guard need not build them (the URLs and timestamps were most of its
 * work). The URLs, which begin with a slash and hold no comma, quote or escape, are written as
 * they stand (a timestamp before the year 1 would begin with a minus: a formula to escape).
 */
const MADE_CLEAN: ReadonlySet<string> = new Set(['datetime', 'attribution.datetime', 'source.detailUrl', 'activityUrl']);
const AS_THEY_STAND: ReadonlySet<string> = new Set(['source.detailUrl', 'activityUrl']);

/** The text JavaScript prints for the double a decimal or centi column holds; `missing` for NULL. */
function numberText(cell: { kind: 'decimal' | 'centi'; column: string }, missing: Sql): Sql {
  const c = ident(cell.column);
  if (cell.kind === 'decimal') {
    // '12.3400' -> '12.34', '100.0000' -> '100', '0.0000' -> '0': the shortest text of the double.
    return sql`coalesce(rtrim(rtrim(CAST(${c} AS VARCHAR), '0'), '.'), ${missing})`;
  }
  return sql`coalesce(CAST(${c} // 100 AS VARCHAR) || CASE WHEN ${c} % 100 = 0 THEN ''
        WHEN ${c} % 10 = 0 THEN '.' || CAST(${c} % 100 // 10 AS VARCHAR)
        ELSE '.' || lpad(CAST(${c} % 100 AS VARCHAR), 2, '0') END, ${missing})`;
}

/** A cell's SQL: its text as csv or tsv writes it (a URL as it stands: nothing to quote, escape or guard against formulas). */
function cellSql(name: string, cell: Cell, request: TextRequest): Sql {
  switch (cell.kind) {
    case 'text':
      return AS_THEY_STAND.has(name) ? textValue(cell) : textCell(textValue(cell), request);
    case 'decimal':
    case 'centi':
      return numberText(cell, sql`''`);
    case 'boolean':
      return sql`CASE WHEN ${ident(cell.column)} IS NULL THEN '' WHEN ${ident(cell.column)} THEN 'true' ELSE 'false' END`;
    case 'const':
      // A number is written as String(value), never escaped; a text as any text cell.
      return typeof cell.value === 'number' ? literal(String(cell.value)) : textCell(literal(cell.value), request);
  }
}

/** A record's value of a cell as a SQL value that to_json writes as JSON.stringify does (see textGuard for the exceptions). */
function jsonValueSql(cell: Cell): Sql {
  switch (cell.kind) {
    case 'text':
      return textValue(cell);
    case 'decimal':
    case 'centi':
      // The number's text as csv writes it, taken by to_json as it stands (NULL is null).
      return sql`CAST(${numberText(cell, sql`NULL`)} AS JSON)`;
    case 'boolean':
      return sql`CAST(${ident(cell.column)} AS BOOLEAN)`;
    case 'const':
      return typeof cell.value === 'number' ? sql`CAST(${literal(JSON.stringify(cell.value))} AS JSON)` : literal(cell.value);
  }
}

/**
 * A JSON line of the whole record (jsonl without --fields): the keys of toRecord
 * (backend.ts), nested as there, in its order. One to_json of a struct per row:
 * the engine writes the object in one go instead of concatenating a text per cell.
 */
export function itemJson(): Sql {
  const groups: [string | undefined, string[]][] = [];
  for (const column of Object.keys(ITEM_CELLS)) {
    const dot = column.indexOf('.');
    const group = dot === -1 ? undefined : column.slice(0, dot);
    const last = groups.at(-1);
    if (last && last[0] === group && group !== undefined) last[1].push(column);
    else groups.push([group, [column]]);
  }
  const members: Sql[] = [];
  for (const [group, columns] of groups) {
    const values = columns.map((c) => sql`${ident(group === undefined ? c : c.slice(group.length + 1))} := ${jsonValueSql(ITEM_CELLS[c]!)}`);
    if (group === undefined) members.push(...values);
    else members.push(sql`${ident(group)} := struct_pack(${join(values)})`);
  }
  return sql`CAST(to_json(struct_pack(${join(members)})) AS VARCHAR) || chr(10)`;
}

/**
 * SQL true for a row whose text the engine cannot write as the row path does, so
 * the command takes the row path: a value with U+FEFF (the driver's decoder drops
 * a leading one from each value it reads), and for JSON a control character that
 * DuckDB escapes with upper-case hex where JSON.stringify writes lower-case.
 */
export function textGuard(request: TextRequest): Sql {
  const columns = Object.entries(ITEM_CELLS)
    .filter(([name, cell]) => cell.kind === 'text' && !MADE_CLEAN.has(name) && (request.format === 'jsonl' || request.columns.includes(name)))
    .map(([, cell]) => (cell as { column: string }).column);
  const pattern = literal(request.format === 'jsonl' ? '[\\x{FEFF}\\x{0B}\\x{0E}-\\x{1F}]' : '\\x{FEFF}');
  // One match over the row's texts joined (concat skips NULLs) instead of one per column.
  return columns.length ? sql`regexp_matches(concat(${join(columns.map((c) => sql`CAST(${ident(c)} AS VARCHAR)`))}), ${pattern})` : sql`false`;
}

/** SQL of one item's output line (with its newline), or undefined when a column has no SQL form. */
export function itemLine(request: TextRequest): Sql | undefined {
  if (request.format === 'jsonl') return itemJson();
  const cells: Sql[] = [];
  for (const column of request.columns) {
    const cell = ITEM_CELLS[column];
    if (!cell) return undefined;
    cells.push(sql`(${cellSql(column, cell, request)})`);
  }
  if (cells.length === 0) return undefined;
  // One concat_ws of the cells rather than a || between each two: the engine builds each line once
  // instead of a longer string per cell (a quarter of the lines' time). No cell is NULL, so none is skipped.
  const separator = request.format === 'csv' ? sql`','` : sql`chr(9)`;
  return sql`concat_ws(${separator}, ${join(cells)}) || chr(10)`;
}
