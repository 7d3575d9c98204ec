/**
 * Finding a dataset's tables on disk, checking every value against the table's
 * column types, and loading typed tables into DuckDB (the README's Datasets section).
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { DataError } from '../errors.js';
import { plural } from '../words.js';
import { Database, ident, sqlString, type Row, type SqlParams } from './db.js';
import { csvRecordLines, firstLineEndingChange, jsonRecordLines } from './lines.js';
import {
  SQL_TYPES,
  TABLES,
  TABLE_NAMES,
  TYPE_DESCRIPTIONS,
  type ColumnSpec,
  type TableName,
} from './schema.js';

type FileFormat = 'csv' | 'parquet' | 'json';

export interface TableSource {
  table: TableName;
  /** A file path, or globs over a folder of files. */
  patterns: string[];
  /** How the table is named in messages: a path relative to the dataset. */
  display: string;
  /** The files themselves, in name order. */
  files: string[];
  format: FileFormat;
  /** JSON arrays have no line numbers; JSON Lines and CSV do. */
  jsonLines: boolean;
  hive: boolean;
  multiFile: boolean;
}

export interface SourceColumn {
  /** The name as it stands in the file. */
  name: string;
  /** DuckDB's type of the raw column (VARCHAR for CSV). */
  rawType: string;
}

export interface LoadedTable {
  source: TableSource;
  /** Raw columns by lower-cased name. */
  columns: Map<string, SourceColumn>;
  hasPluginId: boolean;
}

/**
 * Something in the data that is not an error but deserves a look: found while typing the tables
 * (negative_amount) or by `convx data check` across tables (the rest). Not a delivery validation
 * Finding (model/validation.ts), which is about an e-mail.
 */
export interface DataIssue {
  code:
    | 'missing_table'
    | 'duplicate_order'
    | 'refund_without_order'
    | 'negative_amount'
    | 'unknown_source'
    | 'currency_without_fx'
    | 'fx_gap';
  message: string;
  count: number;
  /** Which and where, e.g. "order o7 (orders.csv, line 5)"; the first few in file order. */
  examples: string[];
}

export interface FileProblem {
  table: TableName;
  file: string;
  column?: string;
  line?: string;
  message: string;
}

export function formatFileProblem(p: FileProblem): string {
  const where = [p.file, p.line, p.column ? `column ${p.column}` : undefined].filter(Boolean).join(', ');
  return `${where}: ${p.message}`;
}

const EXTENSIONS: { suffix: string; format: FileFormat; jsonLines: boolean }[] = [
  { suffix: '.csv', format: 'csv', jsonLines: false },
  { suffix: '.csv.gz', format: 'csv', jsonLines: false },
  { suffix: '.tsv', format: 'csv', jsonLines: false },
  { suffix: '.parquet', format: 'parquet', jsonLines: false },
  { suffix: '.json', format: 'json', jsonLines: false },
  { suffix: '.jsonl', format: 'json', jsonLines: true },
  { suffix: '.ndjson', format: 'json', jsonLines: true },
];

function matchExtension(file: string) {
  return EXTENSIONS.find((e) => file.toLowerCase().endsWith(e.suffix));
}

function listFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name.startsWith('.')) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...listFiles(path));
    else if (entry.isFile()) out.push(path);
  }
  return out;
}

/** Finds each table by base name: NAME.csv, NAME.csv.gz, NAME.parquet, NAME.json(l), NAME.ndjson or a folder NAME/. */
export function discoverTables(dir: string): Map<TableName, TableSource> {
  if (!existsSync(dir)) throw new DataError(`not found: ${dir}`);
  if (!statSync(dir).isDirectory()) throw new DataError(`${dir} is not a directory of dataset files`);
  const entries = readdirSync(dir, { withFileTypes: true });
  const found = new Map<TableName, TableSource>();
  const problems: string[] = [];
  for (const table of TABLE_NAMES) {
    const candidates: TableSource[] = [];
    for (const entry of entries) {
      const path = join(dir, entry.name);
      if (entry.isDirectory() && entry.name === table) {
        const files = listFiles(path).filter((f) => matchExtension(f));
        if (files.length === 0) {
          problems.push(`${table}/: the folder holds no .csv, .csv.gz, .parquet, .json, .jsonl or .ndjson files`);
          continue;
        }
        const kinds = new Set(files.map((f) => matchExtension(f)!.format));
        if (kinds.size > 1) {
          problems.push(`${table}/: the folder mixes file formats (${[...kinds].join(', ')}); use one`);
          continue;
        }
        const ext = matchExtension(files[0]!)!;
        const format = ext.format;
        const suffixes = [...new Set(files.map((f) => matchExtension(f)!.suffix))];
        candidates.push({
          table,
          patterns: suffixes.map((suffix) => join(path, '**', `*${suffix}`)),
          display: `${table}/`,
          files: files.sort(),
          format,
          jsonLines: files.every((f) => matchExtension(f)!.jsonLines),
          hive: files.some((f) => relative(path, f).split(/[\\/]/).some((seg) => seg.includes('='))),
          multiFile: true,
        });
      } else if (entry.isFile()) {
        const ext = matchExtension(entry.name);
        if (ext && entry.name.slice(0, -ext.suffix.length) === table) {
          candidates.push({
            table,
            patterns: [path],
            display: entry.name,
            files: [path],
            format: ext.format,
            jsonLines: ext.jsonLines,
            hive: false,
            multiFile: false,
          });
        }
      }
    }
    if (candidates.length > 1) {
      problems.push(`${table}: found ${candidates.map((c) => c.display).join(' and ')}; keep one of them`);
    } else if (candidates[0]) {
      found.set(table, candidates[0]);
    }
  }
  if (problems.length) throw new DataError(`the dataset at ${dir} is ambiguous or incomplete:`, problems);
  return found;
}

/**
 * How read_csv is told the dialect of a file. CSV: RFC 4180's double quote (sniffed, it would be
 * "none" for a file whose first quoted value lies past the sniffer's sample). TSV: the tab, with
 * quoting as sniffed, since TSV rarely quotes and a cell may well begin with a bare quote.
 */
function csvDialect(files: readonly string[]): string {
  return files.every((f) => f.toLowerCase().endsWith('.tsv')) ? `delim = '\t'` : `quote = '"'`;
}

/** The table function that reads a source with every column as found, plus the file name. */
export function readExpression(source: TableSource): string {
  const path = `[${source.patterns.map(sqlString).join(', ')}]`;
  const hive = source.hive ? ', hive_partitioning = true' : '';
  switch (source.format) {
    case 'csv':
      return `read_csv(${path}, header = true, all_varchar = true, ${csvDialect(source.patterns)}, filename = '__file'${hive})`;
    case 'parquet':
      return `read_parquet(${path}, filename = '__file'${hive})`;
    case 'json':
      return `read_json(${path}, format = 'auto', filename = '__file'${hive})`;
  }
}

const NUMERIC_TYPE = /^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|UHUGEINT|FLOAT|DOUBLE|DECIMAL.*)$/;
const INTEGER_TYPE = /^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|UHUGEINT)$/;
const TIME_TYPE = /^(TIMESTAMP.*|DATE)$/;

const decimalPattern = (places: number) => `^\\s*[+-]?(\\d+(\\.\\d{0,${places}})?|\\.\\d{1,${places}})\\s*$`;

/** SQL that is true where a non-null raw value cannot be read as the column's type. */
function badValueCondition(spec: ColumnSpec, column: SourceColumn): string | undefined {
  const v = ident(column.name);
  const isText = column.rawType === 'VARCHAR';
  switch (spec.type) {
    case 'string':
      return undefined;
    case 'timestamp':
      if (isText) return `TRY_CAST(${v} AS TIMESTAMPTZ) IS NULL`;
      return TIME_TYPE.test(column.rawType) ? undefined : 'true';
    case 'date':
      if (isText) return `NOT regexp_full_match(trim(${v}), '\\d{4}-\\d{2}-\\d{2}') OR TRY_CAST(trim(${v}) AS DATE) IS NULL`;
      return TIME_TYPE.test(column.rawType) ? undefined : 'true';
    case 'amount':
    case 'rate': {
      const places = spec.type === 'amount' ? 4 : 10;
      const positive = spec.type === 'rate' ? ` OR TRY_CAST(${v} AS DOUBLE) <= 0` : '';
      if (isText) return `NOT regexp_matches(${v}, '${decimalPattern(places)}')${positive}`;
      if (NUMERIC_TYPE.test(column.rawType)) return spec.type === 'rate' ? `${v} <= 0` : undefined;
      return 'true';
    }
    case 'boolean':
      if (isText) return `lower(trim(${v})) NOT IN ('true', 'false', '1', '0')`;
      if (column.rawType === 'BOOLEAN') return undefined;
      return INTEGER_TYPE.test(column.rawType) ? `${v} NOT IN (0, 1)` : 'true';
    case 'sourceType':
      return `lower(trim(CAST(${v} AS VARCHAR))) NOT IN ('campaign', 'automation', 'smartflow')`;
  }
}

/** SQL that reads a checked raw value as the column's type. */
function typedValue(spec: ColumnSpec, column: SourceColumn | undefined): string {
  if (!column) return `CAST(NULL AS ${SQL_TYPES[spec.type]})`;
  const v = ident(column.name);
  const isText = column.rawType === 'VARCHAR';
  switch (spec.type) {
    case 'string':
      return isText ? v : `CAST(${v} AS VARCHAR)`;
    case 'timestamp':
      if (isText) return `CAST(CAST(${v} AS TIMESTAMPTZ) AS TIMESTAMP)`;
      return `CAST(${v} AS TIMESTAMP)`;
    case 'date':
      return isText ? `CAST(trim(${v}) AS DATE)` : `CAST(${v} AS DATE)`;
    case 'amount':
    case 'rate':
      return isText ? `CAST(trim(${v}) AS ${SQL_TYPES[spec.type]})` : `CAST(${v} AS ${SQL_TYPES[spec.type]})`;
    case 'boolean':
      if (isText) return `lower(trim(${v})) IN ('true', '1')`;
      return column.rawType === 'BOOLEAN' ? v : `${v} = 1`;
    case 'sourceType':
      return `lower(trim(CAST(${v} AS VARCHAR)))`;
  }
}

/** SQL that is true where a raw amount is below zero (NULL where it cannot tell). */
function negativeCondition(column: SourceColumn | undefined): string | undefined {
  if (!column) return undefined;
  const v = ident(column.name);
  if (column.rawType === 'VARCHAR') return `(ltrim(${v}) LIKE '-%' AND TRY_CAST(trim(${v}) AS DOUBLE) < 0)`;
  return NUMERIC_TYPE.test(column.rawType) ? `${v} < 0` : undefined;
}

/** SQL that is true where a raw is_refund reads as true (absent and empty mean false). */
function refundCondition(column: SourceColumn | undefined): string {
  if (!column) return 'false';
  const v = ident(column.name);
  if (column.rawType === 'VARCHAR') return `coalesce(lower(trim(${v})) IN ('true', '1'), false)`;
  if (column.rawType === 'BOOLEAN') return `coalesce(${v}, false)`;
  return INTEGER_TYPE.test(column.rawType) ? `coalesce(${v} = 1, false)` : 'false';
}

/** Line breaks in a text value as SQL: CRLF, LF and a lone CR count once each. */
const lineBreaks = (v: string) => `coalesce(len(regexp_extract_all(${v}, '\\r\\n|\\r|\\n')), 0)`;
const countBreaks = (text: string) => text.match(/\r\n|\r|\n/g)?.length ?? 0;

/** A record as DuckDB read it: its file and its 0-based position in the table (rowid) or the file (Parquet). */
interface Located {
  file: string;
  position: number;
}

const locationKey = (file: string, position: number) => `${file}\n${position}`;

function fileLabel(datasetDir: string, source: TableSource, file: unknown): string {
  if (!source.multiFile || typeof file !== 'string') return source.display;
  return relative(datasetDir, file);
}

function describeValue(value: unknown): string {
  if (value === null || value === undefined) return 'empty';
  const text = String(value);
  return JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text);
}

/**
 * A dataset read into DuckDB: raw views over the files, then typed tables
 * t_<name> with plugin_id (NULL where the file has none).
 */
export class Dataset {
  readonly tables = new Map<TableName, LoadedTable>();
  /** Findings about the data that are not errors, known once createTypedTables() has run. */
  readonly findings: DataIssue[] = [];
  /**
   * A convx .duckdb file written by `convx data import` (imported.ts): its typed tables were
   * checked when imported, so there is nothing to check or type again.
   */
  imported = false;

  private constructor(
    readonly dir: string,
    readonly db: Database,
  ) {}

  /** A dataset whose typed tables t_<name> already exist (an imported file): no files to read or check. */
  static typed(dir: string, db: Database, tables: Iterable<[TableName, LoadedTable]>, findings: DataIssue[]): Dataset {
    const dataset = new Dataset(dir, db);
    for (const [name, loaded] of tables) dataset.tables.set(name, loaded);
    dataset.findings.push(...findings);
    dataset.imported = true;
    return dataset;
  }

  static async open(dir: string, db: Database): Promise<Dataset> {
    const dataset = new Dataset(dir, db);
    for (const [name, source] of discoverTables(dir)) {
      dataset.tables.set(name, await dataset.describe(source));
    }
    return dataset;
  }

  has(table: TableName): boolean {
    return this.tables.has(table);
  }

  /** The findings as one line each, for a warning on stderr. */
  warnings(): string[] {
    return this.findings.map(
      (f) => `${f.message}: ${f.examples.join('; ')}${f.count > f.examples.length ? `; … (run \`convx data check ${this.dir}\` for more)` : ''}`,
    );
  }

  private async describe(source: TableSource): Promise<LoadedTable> {
    let rows: Row[];
    try {
      // Text formats are parsed once into a table; Parquet is cheap to scan again, so it stays a view.
      // A table keeps the files' order (DuckDB preserves insertion order), so its rowid is the record's place.
      const kind = source.format === 'parquet' ? 'VIEW' : 'TABLE';
      await this.db.exec(`CREATE OR REPLACE ${kind} ${ident(`raw_${source.table}`)} AS SELECT * FROM ${readExpression(source)}`);
      rows = await this.db.all(`DESCRIBE SELECT * FROM ${ident(`raw_${source.table}`)}`);
    } catch (error) {
      if (source.format === 'csv') await this.rejectMixedLineEndings(source);
      throw new DataError(`cannot read ${source.display}: ${firstLine(error)}`);
    }
    const columns = new Map<string, SourceColumn>();
    for (const row of rows) {
      const name = String(row.column_name);
      if (name === '__file') continue;
      columns.set(name.toLowerCase(), { name, rawType: String(row.column_type) });
    }
    return { source, columns, hasPluginId: columns.has('plugin_id') };
  }

  /**
   * DuckDB's CSV reader cannot read a file whose lines end partly in CRLF and
   * partly in LF (its sniffer gives up). Reading it leniently (strict_mode off)
   * would silently drop surplus fields of malformed rows, so such a file is
   * refused with the line where the ending changes.
   */
  private async rejectMixedLineEndings(source: TableSource): Promise<void> {
    for (const file of source.files) {
      let change: Awaited<ReturnType<typeof firstLineEndingChange>>;
      try {
        change = await firstLineEndingChange(file);
      } catch {
        continue;
      }
      if (!change) continue;
      throw new DataError(
        `cannot read ${fileLabel(this.dir, source, file)}: it mixes line endings, and the CSV reader needs one kind:`,
        [
          `${fileLabel(this.dir, source, file)}, line ${change.line}: this line ends in ${change.to}, the lines before it in ${change.from}`,
          `convert the file to one kind of line ending (for example \`dos2unix\` for LF) and run the command again`,
        ],
      );
    }
  }

  /** Every problem of every loaded table: missing columns, values of the wrong type, empty required values. */
  async problems(): Promise<FileProblem[]> {
    const problems: FileProblem[] = [];
    if (this.imported) return problems;
    for (const loaded of this.tables.values()) problems.push(...(await this.tableProblems(loaded)));
    return problems;
  }

  /**
   * The raw rows of a table with __pos, each record's 0-based place: its rowid in
   * the table (file order), or its row number within its Parquet file.
   */
  private positioned(loaded: LoadedTable): string {
    if (loaded.source.format === 'parquet') return `(SELECT *, file_row_number AS __pos FROM ${readExpression(loaded.source)})`;
    const raw = ident(`raw_${loaded.source.table}`);
    // A column of the file named rowid hides the table's own; the streaming row_number() keeps the table's order too.
    if (loaded.columns.has('rowid')) return `(SELECT *, row_number() OVER () - 1 AS __pos FROM ${raw})`;
    return `(SELECT *, rowid AS __pos FROM ${raw})`;
  }

  private async tableProblems(loaded: LoadedTable): Promise<FileProblem[]> {
    const { source, columns } = loaded;
    const spec = TABLES[source.table];
    const problems: FileProblem[] = [];
    // `counts`: the same count as disjoint parts whose plain comparisons Parquet statistics can answer (see below).
    const checks: { column: string; condition: string; counts?: string[]; message: (value: unknown) => string }[] = [];
    for (const col of spec.columns) {
      const found = columns.get(col.name);
      if (!found) {
        if (col.required) {
          problems.push({
            table: source.table,
            file: source.display,
            column: col.name,
            message: `required column is missing (columns found: ${[...columns.values()].map((c) => c.name).join(', ') || 'none'})`,
          });
        }
        continue;
      }
      const v = ident(found.name);
      if (col.required) {
        checks.push({
          column: found.name,
          // Only text can be blank; casting typed Parquet columns to text would cost a scan's worth of strings.
          condition: found.rawType === 'VARCHAR' ? `${v} IS NULL OR trim(${v}) = ''` : `${v} IS NULL`,
          // trim() strips spaces only, so a blank text sorts before '!': a bound that min/max statistics can refute.
          counts: found.rawType === 'VARCHAR' ? [`${v} IS NULL`, `${v} < '!' AND trim(${v}) = ''`] : [`${v} IS NULL`],
          message: () => 'the value is empty, and the column is required',
        });
      }
      const bad = badValueCondition(col, found);
      if (bad) {
        const condition = `${v} IS NOT NULL AND trim(CAST(${v} AS VARCHAR)) <> '' AND (${bad})`;
        checks.push({
          column: found.name,
          condition,
          // A value spelled exactly as expected is good whatever the rest says: a cheap filter first.
          ...(col.type === 'sourceType' && found.rawType === 'VARCHAR'
            ? { counts: [`${v} NOT IN ('campaign', 'automation', 'smartflow') AND ${condition}`] }
            : {}),
          message: (value) => `${describeValue(value)} is not ${TYPE_DESCRIPTIONS[col.type]}`,
        });
      }
    }
    if (checks.length === 0) return problems;
    const raw = ident(`raw_${source.table}`);
    let counts: Row | undefined;
    try {
      // Parquet: each check its own count under WHERE, so that the scan takes the filter and skips every
      // row group whose statistics (null counts, min/max) rule it out: clean typed files are barely read.
      // Text tables are in memory: one pass with every check.
      counts = await this.db.one(
        source.format === 'parquet'
          ? `SELECT ${checks
              .map((c, i) => `${(c.counts ?? [c.condition]).map((w) => `(SELECT count(*) FROM ${raw} WHERE ${w})`).join(' + ')} AS c${i}`)
              .join(', ')}`
          : `SELECT ${checks.map((c, i) => `count(*) FILTER (WHERE ${c.condition}) AS c${i}`).join(', ')} FROM ${raw}`,
      );
    } catch (error) {
      problems.push({ table: source.table, file: source.display, message: `cannot read the file: ${firstLine(error)}` });
      return problems;
    }
    const count = (i: number) => Number(counts?.[`c${i}`] ?? 0);

    // Only now, with something to show, the examples: the first few in file order, then their lines.
    const positioned = this.positioned(loaded);
    const examples = new Map<number, Row[]>();
    for (const [i, check] of checks.entries()) {
      if (count(i) === 0) continue;
      examples.set(
        i,
        await this.db.all(
          `SELECT __file, __pos, ${ident(check.column)} AS v FROM ${positioned} WHERE ${check.condition} ORDER BY __file, __pos LIMIT 3`,
        ),
      );
    }
    const located = [...examples.values()].flat().map((r) => ({ file: String(r.__file), position: Number(r.__pos) }));
    const labels = await this.lineLabels(loaded, located);
    const where = (row: Row) => {
      const file = String(row.__file);
      return { file: fileLabel(this.dir, source, file), line: labels.get(locationKey(file, Number(row.__pos))) };
    };

    for (const [i, check] of checks.entries()) {
      const rows = examples.get(i);
      if (!rows) continue;
      for (const example of rows) {
        const { file, line } = where(example);
        problems.push({
          table: source.table,
          file,
          ...(line ? { line } : {}),
          column: check.column,
          message: check.message(example.v),
        });
      }
      if (count(i) > rows.length) {
        const more = count(i) - rows.length;
        problems.push({
          table: source.table,
          file: source.display,
          column: check.column,
          message: `${plural(more, 'more row has', 'more rows have')} this problem`,
        });
      }
    }
    return problems;
  }

  /**
   * docs/reporting.md, Transactions: a non-refund order with a negative amount is a finding; it
   * still counts as it stands. Counted on the typed table (a few milliseconds
   * for millions of rows); only when there are some, the raw rows say where.
   */
  private async negativeOrders(loaded: LoadedTable): Promise<void> {
    const found = await this.db.one<{ n: bigint }>(
      `SELECT count(*) AS n FROM t_orders WHERE NOT coalesce(is_refund, false) AND (amount_wo_tax < 0 OR amount_w_tax < 0)`,
    );
    const count = Number(found?.n ?? 0);
    if (count === 0) return;
    const { columns, source } = loaded;
    const amounts = [negativeCondition(columns.get('amount_wo_tax')), negativeCondition(columns.get('amount_w_tax'))].filter(Boolean);
    const id = columns.get('order_id');
    const plugin = columns.get('plugin_id');
    const rows = await this.db.all(
      `SELECT __file, __pos, ${id ? `CAST(${ident(id.name)} AS VARCHAR)` : 'NULL'} AS id,
         ${plugin ? `CAST(${ident(plugin.name)} AS VARCHAR)` : 'NULL'} AS plugin
       FROM ${this.positioned(loaded)}
       WHERE NOT ${refundCondition(columns.get('is_refund'))} AND (${amounts.join(' OR ') || 'false'})
       ORDER BY __file, __pos LIMIT 5`,
    );
    const labels = await this.lineLabels(
      loaded,
      rows.map((r) => ({ file: String(r.__file), position: Number(r.__pos) })),
    );
    this.findings.push({
      code: 'negative_amount',
      message:
        count === 1
          ? 'an order row (is_refund false) has a negative amount_wo_tax or amount_w_tax; it counts as it stands'
          : `${count} order rows (is_refund false) have a negative amount_wo_tax or amount_w_tax; they count as they stand`,
      count,
      examples: rows.map((row) => {
        const file = String(row.__file);
        const line = labels.get(locationKey(file, Number(row.__pos)));
        const order = row.id === null ? 'no order_id' : `order ${row.plugin === null ? '' : `${String(row.plugin)}/`}${String(row.id)}`;
        return `${order} (${[fileLabel(this.dir, source, file), line].filter(Boolean).join(', ')})`;
      }),
    });
  }

  /**
   * "line N" (CSV, JSON Lines: the physical line, counting the header, blank
   * and comment lines and the lines of values that span several), "row N"
   * (Parquet) or "record N" (JSON arrays) for each record, by locationKey.
   */
  private async lineLabels(loaded: LoadedTable, records: Located[]): Promise<Map<string, string>> {
    const labels = new Map<string, string>();
    if (records.length === 0) return labels;
    const { source } = loaded;
    if (source.format === 'parquet') {
      for (const r of records) labels.set(locationKey(r.file, r.position), `row ${r.position + 1}`);
      return labels;
    }
    const byFile = new Map<string, Set<number>>();
    for (const r of records) {
      if (!byFile.has(r.file)) byFile.set(r.file, new Set());
      byFile.get(r.file)!.add(r.position);
    }
    // A table of several files holds them one after another: a record's place in its file counts from the file's first rowid.
    const starts = new Map<string, number>();
    if (source.multiFile) {
      const params: SqlParams = {};
      const names = [...byFile.keys()].map((file, i) => {
        params[`f${i}`] = file;
        return `$f${i}`;
      });
      const rows = await this.db.all<{ f: string; s: bigint }>(
        `SELECT __file AS f, min(__pos) AS s FROM ${this.positioned(loaded)} WHERE __file IN (${names.join(', ')}) GROUP BY __file`,
        params,
      );
      for (const row of rows) starts.set(row.f, Number(row.s));
    }
    for (const [file, positions] of byFile) {
      const start = starts.get(file) ?? 0;
      const wanted = [...positions].map((p) => p - start);
      let lines = new Map<number, number>();
      if (source.format === 'json' && !source.jsonLines) {
        // A JSON array has no meaningful lines: its records are numbered.
      } else {
        try {
          lines = source.format === 'json' ? await jsonRecordLines(file, wanted) : await this.csvLines(loaded, file, start, wanted);
        } catch {
          // An unreadable file falls back to record numbers.
        }
      }
      for (const position of positions) {
        const index = position - start;
        const line = lines.get(index);
        labels.set(locationKey(file, position), line === undefined ? `record ${index + 1}` : `line ${line}`);
      }
    }
    return labels;
  }

  /** The physical lines of CSV records, given how DuckDB parsed the file. */
  private async csvLines(loaded: LoadedTable, file: string, start: number, wanted: number[]): Promise<Map<number, number>> {
    let skipRows = 0;
    let comment: number | undefined;
    try {
      const sniff = await this.db.one<{ skip: number | bigint; comment: string }>(
        `SELECT SkipRows AS skip, Comment AS comment FROM sniff_csv(${sqlString(file)}, header = true, ${csvDialect([file])})`,
      );
      skipRows = Number(sniff?.skip ?? 0);
      if (sniff && typeof sniff.comment === 'string' && Buffer.byteLength(sniff.comment) === 1) comment = sniff.comment.charCodeAt(0);
    } catch {
      // Without the sniffer's view, assume no preamble and no comments.
    }
    const text = [...loaded.columns.values()].filter((c) => c.rawType === 'VARCHAR').map((c) => ident(c.name));
    const breaks = new Map<number, number>();
    const last = Math.max(...wanted);
    if (text.length > 0 && last > 0) {
      // Values that span lines (quoted line breaks), in the records before the last wanted one.
      const rows = await this.db.all<{ k: bigint; n: bigint }>(
        `SELECT __pos - $start AS k, ${text.map(lineBreaks).join(' + ')} AS n FROM ${this.positioned(loaded)}
         WHERE __file = $file AND __pos >= $start AND __pos < $start + $last
           AND (${text.map((v) => `contains(${v}, chr(10)) OR contains(${v}, chr(13))`).join(' OR ')})`,
        { file, start, last },
      );
      for (const row of rows) breaks.set(Number(row.k), Number(row.n));
    }
    const headerBreaks = [...loaded.columns.values()].reduce((sum, c) => sum + countBreaks(c.name), 0);
    return csvRecordLines(
      file,
      { skipRows, ...(comment !== undefined ? { comment } : {}), headerBreaks, blankIsRecord: loaded.columns.size === 1, breaks },
      wanted,
    );
  }

  /** Raises a DataError naming every problem, if there is any. */
  async validate(): Promise<void> {
    const problems = await this.problems();
    if (problems.length) {
      throw new DataError(
        `the dataset at ${this.dir} has ${problems.length} problem${problems.length > 1 ? 's' : ''} (run \`convx data check ${this.dir}\` for integrity findings too):`,
        problems.map(formatFileProblem),
      );
    }
  }

  /**
   * Creates t_<name> for each table (typed columns, plugin_id, a row id in file order) and drops the raw copy;
   * notes the findings (negative orders) on the way.
   */
  async createTypedTables(options: { materialise?: boolean } = {}): Promise<void> {
    if (this.imported) return;
    this.findings.length = 0;
    for (const loaded of this.tables.values()) {
      const spec = TABLES[loaded.source.table];
      const known = new Set(spec.columns.map((c) => c.name));
      // A table whose row order never matters, read from Parquet, stays a typed view over the files:
      // no copy in memory, and Parquet is cheap to scan again.
      // An import (materialise) copies everything, so that the file stands on its own.
      const asView = spec.unordered === true && loaded.source.format === 'parquet' && !options.materialise;
      const select = [
        ...(asView || (spec.unordered && options.materialise) ? [] : ['row_number() OVER () AS row_id']),
        loaded.hasPluginId
          ? `CAST(${ident(loaded.columns.get('plugin_id')!.name)} AS VARCHAR) AS plugin_id`
          : 'CAST(NULL AS VARCHAR) AS plugin_id',
        ...spec.columns.map((c) => `${typedValue(c, loaded.columns.get(c.name))} AS ${ident(c.name)}`),
      ];
      if (spec.keepOtherColumns) {
        for (const [lower, column] of loaded.columns) {
          if (!known.has(lower) && lower !== 'plugin_id') {
            select.push(`CAST(${ident(column.name)} AS VARCHAR) AS ${ident(lower)}`);
          }
        }
      }
      try {
        await this.db.exec(
          `CREATE OR REPLACE ${asView ? 'VIEW' : 'TABLE'} ${ident(`t_${spec.name}`)} AS SELECT ${select.join(', ')} FROM ${ident(`raw_${spec.name}`)}`,
        );
        if (spec.name === 'orders') await this.negativeOrders(loaded);
        if (!asView) await this.db.exec(`DROP ${loaded.source.format === 'parquet' ? 'VIEW' : 'TABLE'} ${ident(`raw_${spec.name}`)}`);
      } catch (error) {
        throw new DataError(`cannot load ${loaded.source.display}: ${firstLine(error)}`);
      }
    }
  }
}

export function firstLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.split('\n')[0] ?? text;
}
