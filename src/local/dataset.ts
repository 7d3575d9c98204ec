/**
 * Finding a dataset's tables on disk, checking every value against the table's
 * column types, and loading typed tables into DuckDB (the README's Datasets section).
 */
import { existsSync, lstatSync, readdirSync, readlinkSync, statSync, type Stats } from 'node:fs';
import { join, relative } from 'node:path';
import { DataError } from '../errors.js';
import { plural } from '../words.js';
import { Database, ident, sqlString, type Row, type SqlParams } from './db.js';
import { csvHeader, csvRecordLines, diagnoseCsv, diagnoseJsonArray, diagnoseJsonLines, firstLineEndingChange, jsonRecordLines } from './lines.js';
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
  /** Columns named twice (also in another case): the table's only problems, since which one counts is unclear. */
  duplicates?: FileProblem[];
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

/** A table the reader could not read, with where and why: a data error (exit 2) that names each place. */
export class UnreadableTableError extends DataError {
  constructor(
    readonly source: TableSource,
    readonly problems: FileProblem[],
  ) {
    super(`cannot read ${source.display}:`, problems.map(formatFileProblem));
  }
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

/**
 * What a path that is not a regular file or directory is, for a refusal: a broken
 * symbolic link, a loop of links, a named pipe, a device, a socket; undefined when
 * it is (or links to) a regular file or a directory.
 */
function notARegularFile(path: string): string | undefined {
  let target: Stats;
  try {
    target = statSync(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    let link = '';
    try {
      link = ` to ${readlinkSync(path)}`;
    } catch {
      // not a link after all
    }
    if (code === 'ENOENT') return `is a broken symbolic link${link} (its target does not exist)`;
    if (code === 'ELOOP') return `is a loop of symbolic links (it links${link}, which leads back to itself)`;
    return `cannot be read (${code ?? String(error)})`;
  }
  if (target.isFile() || target.isDirectory()) return undefined;
  const via = lstatSync(path).isSymbolicLink() ? `a symbolic link to ${readlinkSync(path)}, ` : '';
  const kind = target.isFIFO()
    ? 'a named pipe (FIFO)'
    : target.isCharacterDevice() || target.isBlockDevice()
      ? 'a device'
      : target.isSocket()
        ? 'a socket'
        : 'not a regular file';
  return `is ${via}${kind}, not a regular file: a table must be a file or a folder of files`;
}

/**
 * The data files under a table's folder, in any depth. Symbolic links to files are read (as the
 * reader's globs do); a link to a folder, which the globs do not follow, and anything else that is
 * not a regular file are refused in `problems`.
 */
function listFiles(dir: string, root: string, problems: string[]): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name.startsWith('.')) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...listFiles(path, root, problems));
    else if (entry.isFile()) out.push(path);
    else if (matchExtension(entry.name) || entry.isSymbolicLink()) {
      const name = relative(root, path);
      const wrong = notARegularFile(path);
      if (wrong) problems.push(`${name} ${wrong}`);
      else if (statSync(path).isDirectory()) {
        problems.push(`${name} is a symbolic link to a folder, which is not read; move the files into the table's folder or link them one by one`);
      } else if (matchExtension(entry.name)) out.push(path);
    }
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
  // Tables that are neither a regular file nor a directory (a broken or looping link, a FIFO, a device): refused.
  const unreadable: string[] = [];
  const kinds = new Map<string, 'file' | 'directory'>();
  for (const entry of entries) {
    if (entry.isFile()) kinds.set(entry.name, 'file');
    else if (entry.isDirectory()) kinds.set(entry.name, 'directory');
    else {
      const ext = matchExtension(entry.name);
      const named = (TABLE_NAMES as readonly string[]).includes(ext ? entry.name.slice(0, -ext.suffix.length) : entry.name);
      if (!named) continue;
      const wrong = notARegularFile(join(dir, entry.name));
      if (wrong) unreadable.push(`${entry.name} ${wrong}`);
      else kinds.set(entry.name, statSync(join(dir, entry.name)).isDirectory() ? 'directory' : 'file');
    }
  }
  for (const table of TABLE_NAMES) {
    const candidates: TableSource[] = [];
    for (const entry of entries) {
      const path = join(dir, entry.name);
      if (kinds.get(entry.name) === 'directory' && entry.name === table) {
        const files = listFiles(path, dir, unreadable).filter((f) => matchExtension(f));
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
      } else if (kinds.get(entry.name) === 'file') {
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
  if (unreadable.length) {
    throw new DataError(`the dataset at ${dir} holds tables that are not regular files, which convx refuses to read:`, [...unreadable, ...problems]);
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

/** A decimal that fits the column's DECIMAL(18, places): at most 18 - places digits before the point (leading zeros aside). */
const boundedDecimalPattern = (places: number) =>
  `^\\s*[+-]?(0*\\d{1,${18 - places}}(\\.\\d{0,${places}})?|\\.\\d{1,${places}})\\s*$`;
const DECIMAL_PLACES = { amount: 4, rate: 10 } as const;

/** A raw column DuckDB typed as JSON (a JSON file whose records disagree on the value's kind). */
const isJson = (column: SourceColumn) => column.rawType === 'JSON';
/** A raw column of nested values only (every record holds an object or a list there). */
const isNested = (column: SourceColumn) => /^(STRUCT|MAP|UNION)\b|\]$/.test(column.rawType);

/**
 * The raw value as SQL: the column itself, or for a JSON column its text (a JSON string unquoted,
 * a number or boolean as written), so that it is checked and typed as text.
 */
function rawValue(column: SourceColumn): string {
  const v = ident(column.name);
  return isJson(column) ? `CASE WHEN json_type(${v}) = 'VARCHAR' THEN ${v} ->> '$' ELSE CAST(${v} AS VARCHAR) END` : v;
}

/** SQL that is true where a raw value is an object or an array (JSON files). */
function nestedCondition(column: SourceColumn): string | undefined {
  if (isNested(column)) return `${ident(column.name)} IS NOT NULL`;
  if (isJson(column)) return `json_type(${ident(column.name)}) IN ('OBJECT', 'ARRAY')`;
  return undefined;
}

/** How many digits an integer or decimal raw type may hold before the point. */
function integerDigits(rawType: string): number {
  const decimal = /^DECIMAL\((\d+),\s*(\d+)\)$/.exec(rawType);
  if (decimal) return Number(decimal[1]) - Number(decimal[2]);
  const digits: Record<string, number> = { TINYINT: 3, SMALLINT: 5, INTEGER: 10, UTINYINT: 3, USMALLINT: 5, UINTEGER: 10 };
  return digits[rawType] ?? Infinity;
}

/** The message of a value a check found: out of the column's range, or not a value of its type. */
function badValueMessage(spec: ColumnSpec, value: unknown): string {
  if (spec.type === 'amount' || spec.type === 'rate') {
    const places = DECIMAL_PLACES[spec.type];
    const digits = 18 - places;
    const text = value === null || value === undefined ? '' : String(value).trim();
    const form = /^[+-]?0*(\d*)(?:\.(\d*))?$/.exec(text);
    const tooLarge =
      typeof value === 'number' || typeof value === 'bigint'
        ? Math.abs(Number(value)) >= 10 ** digits
        : form !== null && (form[2] ?? '').length <= places && form[1]!.length > digits;
    if (tooLarge) {
      return `${describeValue(value)} is out of range: ${spec.type === 'amount' ? 'an amount' : 'a rate'} has at most ${digits} digits before the point and ${places} after (DECIMAL(18,${places}): up to ${'9'.repeat(digits)}.${'9'.repeat(places)})`;
    }
  }
  return `${describeValue(value)} is not ${TYPE_DESCRIPTIONS[spec.type]}`;
}

/**
 * For a numeric raw amount or rate: disjoint conditions whose union is a bad value (out of the
 * column's range; a rate not positive), each a plain comparison that Parquet statistics can refute.
 */
function numericBadParts(type: 'amount' | 'rate', column: SourceColumn): string[] {
  const v = ident(column.name);
  const digits = 18 - DECIMAL_PLACES[type];
  const limit = `1${'0'.repeat(digits)}`;
  const range = integerDigits(column.rawType) > digits;
  if (type === 'rate') return [...(range ? [`${v} >= ${limit}`] : []), `${v} <= 0`];
  return range ? [`${v} >= ${limit}`, `${v} <= -${limit}`] : [];
}

/** SQL that is true where a non-null raw value cannot be read as the column's type. */
function badValueCondition(spec: ColumnSpec, column: SourceColumn): string | undefined {
  if (isNested(column)) return undefined; // nestedCondition says it
  const v = rawValue(column);
  const isText = column.rawType === 'VARCHAR' || isJson(column);
  // A JSON object or array is the nested check's; the rest of a JSON column is checked as text.
  const scalar = (condition: string) => (isJson(column) ? `json_type(${ident(column.name)}) NOT IN ('OBJECT', 'ARRAY') AND (${condition})` : condition);
  switch (spec.type) {
    case 'string':
      return undefined;
    case 'timestamp':
      if (isText) return scalar(`TRY_CAST(${v} AS TIMESTAMPTZ) IS NULL`);
      return TIME_TYPE.test(column.rawType) ? undefined : 'true';
    case 'date':
      if (isText) return scalar(`NOT regexp_full_match(trim(${v}), '\\d{4}-\\d{2}-\\d{2}') OR TRY_CAST(trim(${v}) AS DATE) IS NULL`);
      return TIME_TYPE.test(column.rawType) ? undefined : 'true';
    case 'amount':
    case 'rate': {
      const places = DECIMAL_PLACES[spec.type];
      const positive = spec.type === 'rate' ? ` OR TRY_CAST(${v} AS DOUBLE) <= 0` : '';
      // One pattern checks the form and the range (the digits before the point): the message tells them apart.
      if (isText) return scalar(`NOT regexp_matches(${v}, '${boundedDecimalPattern(places)}')${positive}`);
      if (NUMERIC_TYPE.test(column.rawType)) {
        const parts = numericBadParts(spec.type, column);
        return parts.length ? parts.join(' OR ') : undefined;
      }
      return 'true';
    }
    case 'boolean':
      if (isText) return scalar(`lower(trim(${v})) NOT IN ('true', 'false', '1', '0')`);
      if (column.rawType === 'BOOLEAN') return undefined;
      return INTEGER_TYPE.test(column.rawType) ? `${v} NOT IN (0, 1)` : 'true';
    case 'sourceType':
      return scalar(`lower(trim(CAST(${v} AS VARCHAR))) NOT IN ('campaign', 'automation', 'smartflow')`);
  }
}

/** SQL that reads a checked raw value as the column's type. */
function typedValue(spec: ColumnSpec, column: SourceColumn | undefined): string {
  if (!column) return `CAST(NULL AS ${SQL_TYPES[spec.type]})`;
  const v = rawValue(column);
  const isText = column.rawType === 'VARCHAR' || isJson(column);
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

  /**
   * Tables the reader could not read, by where and why (collect mode, for `convx data check`):
   * listed by problems() first; the table itself is not loaded.
   */
  readonly unreadable: FileProblem[] = [];

  /**
   * Reads a directory's tables. A table the reader cannot read is a DataError naming where and
   * why; with `collect` (data check), its problems are kept in `unreadable` and the rest is read.
   */
  static async open(dir: string, db: Database, options: { collect?: boolean } = {}): Promise<Dataset> {
    const dataset = new Dataset(dir, db);
    for (const [name, source] of discoverTables(dir)) {
      try {
        dataset.tables.set(name, await dataset.describe(source));
      } catch (error) {
        if (!options.collect || !(error instanceof UnreadableTableError)) throw error;
        dataset.unreadable.push(...error.problems);
      }
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
      // Only now, after the reader failed, the files are read again to say where and why.
      if (source.format === 'csv') await this.rejectMixedLineEndings(source);
      const located = await this.diagnose(source);
      if (located.length) throw new UnreadableTableError(source, located);
      throw new DataError(`cannot read ${source.display}: ${firstLine(error)}`);
    }
    const names = rows.map((row) => String(row.column_name)).filter((name) => name !== '__file');
    // One column whose name holds delimiters: the CSV sniffer gave up on the dialect (records of
    // different lengths), and read each line whole. Say which line is wrong, if one is.
    if (source.format === 'csv' && names.length === 1 && /[,;|\t]/.test(names[0]!)) {
      const located = await this.diagnose(source);
      if (located.length) throw new UnreadableTableError(source, located);
    }
    const columns = new Map<string, SourceColumn>();
    for (const row of rows) {
      const name = String(row.column_name);
      if (name === '__file') continue;
      if (columns.has(name.toLowerCase())) continue; // a duplicate: refused below
      columns.set(name.toLowerCase(), { name, rawType: String(row.column_type) });
    }
    const duplicates = await this.duplicateColumns(source, names);
    return { source, columns, hasPluginId: columns.has('plugin_id'), ...(duplicates.length ? { duplicates } : {}) };
  }

  /**
   * Columns named twice in a file, also in another case (names match case-insensitively, so either
   * could be read). DuckDB renames the second of a CSV header to NAME_1: only then is the header read
   * again, to name both as written.
   */
  private async duplicateColumns(source: TableSource, names: string[]): Promise<FileProblem[]> {
    const problems: FileProblem[] = [];
    const lower = names.map((n) => n.toLowerCase());
    const problem = (file: string, first: string, second: string, at?: [number, number]) =>
      problems.push({
        table: source.table,
        file,
        column: first,
        message:
          first === second
            ? `the column is named twice${at ? ` (columns ${at[0]} and ${at[1]})` : ''}; keep one of them`
            : `the column is named twice, as ${JSON.stringify(first)} and ${JSON.stringify(second)}${at ? ` (columns ${at[0]} and ${at[1]})` : ''}; names match case-insensitively, so keep one of them`,
      });
    lower.forEach((name, i) => {
      const first = lower.indexOf(name);
      if (first < i) problem(source.display, names[first]!, names[i]!);
    });
    const renamed = lower.some((name) => {
      const m = /^(.+)_\d+$/.exec(name);
      return m !== null && lower.includes(m[1]!);
    });
    if (!renamed) return problems;
    if (source.format === 'json') {
      // The keys as the records hold them (DuckDB renamed the second of two that differ in case).
      try {
        const keys = await this.db.all<{ k: string }>(
          `SELECT DISTINCT unnest(json_keys(json)) AS k FROM read_json_objects([${source.patterns.map(sqlString).join(', ')}], format = 'auto') ORDER BY k DESC`,
        );
        const seen = new Map<string, string>();
        for (const { k } of keys) {
          const first = seen.get(k.toLowerCase());
          if (first === undefined) seen.set(k.toLowerCase(), k);
          else problem(source.display, first, k);
        }
      } catch {
        // Unreadable as objects: the reader's own view stands.
      }
      return problems;
    }
    if (source.format !== 'csv') return problems;
    for (const file of source.files) {
      let header: string[];
      try {
        const sniff = await this.db.one<{ delim: string; skip: number | bigint }>(
          `SELECT Delimiter AS delim, SkipRows AS skip FROM sniff_csv(${sqlString(file)}, header = true, ${csvDialect([file])})`,
        );
        header = await csvHeader(file, (sniff?.delim ?? ',').charCodeAt(0), Number(sniff?.skip ?? 0));
      } catch {
        continue;
      }
      const seen = new Map<string, number>();
      header.forEach((name, i) => {
        const key = name.trim().toLowerCase();
        const first = seen.get(key);
        if (first === undefined) seen.set(key, i);
        else problem(fileLabel(this.dir, source, file), header[first]!, name, [first + 1, i + 1]);
      });
    }
    return problems;
  }

  /**
   * Where and why the reader failed, found by reading the files again (lines.ts): records with the
   * wrong number of fields, a record over the size limit, a compressed file that breaks off, a
   * JSON Lines record that does not parse. Empty when none of these is found.
   */
  private async diagnose(source: TableSource): Promise<FileProblem[]> {
    const problems: FileProblem[] = [];
    const numericColumns = new Set(
      TABLES[source.table].columns.filter((c) => c.type === 'amount' || c.type === 'rate').map((c) => c.name),
    );
    for (const file of source.files) {
      const label = fileLabel(this.dir, source, file);
      let found: { problems: { line: number; column?: string; message: string }[]; stopped: boolean };
      try {
        if (source.format === 'csv') {
          found = await diagnoseCsv(file, { ...(file.toLowerCase().endsWith('.tsv') ? { delimiter: 0x09 } : {}), numericColumns });
        } else if (source.format === 'json' && source.jsonLines) {
          found = await diagnoseJsonLines(file);
        } else if (source.format === 'json') {
          const broken = await diagnoseJsonArray(file);
          if (broken) {
            problems.push({
              table: source.table,
              file: label,
              line: broken.record ? `record ${broken.record} (line ${broken.line})` : `line ${broken.line}`,
              ...(broken.column ? { column: broken.column } : {}),
              message: broken.message,
            });
            break;
          }
          continue;
        } else {
          continue;
        }
      } catch {
        continue;
      }
      for (const p of found.problems) {
        problems.push({ table: source.table, file: label, line: `line ${p.line}`, ...(p.column ? { column: p.column } : {}), message: p.message });
      }
      if (found.stopped) {
        problems.push({ table: source.table, file: label, message: `the search stopped at these ${found.problems.length}; lines after them may have more` });
      }
      if (found.problems.length) break; // one file at a time: fix it, and the next is read
    }
    return problems;
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
    const problems: FileProblem[] = [...this.unreadable];
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
    const checks: { column: string; value: string; condition: string; counts?: string[]; message: (value: unknown) => string }[] = [];
    if (loaded.duplicates?.length) return loaded.duplicates;
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
      const v = rawValue(found);
      if (col.required) {
        checks.push({
          column: found.name,
          value: v,
          // Only text can be blank; casting typed Parquet columns to text would cost a scan's worth of strings.
          condition: found.rawType === 'VARCHAR' ? `${v} IS NULL OR trim(${v}) = ''` : `${v} IS NULL`,
          // trim() strips spaces only, so a blank text sorts before '!': a bound that min/max statistics can refute.
          counts: found.rawType === 'VARCHAR' ? [`${v} IS NULL`, `${v} < '!' AND trim(${v}) = ''`] : [`${v} IS NULL`],
          message: () => 'the value is empty, and the column is required',
        });
      }
      const nested = nestedCondition(found);
      if (nested) {
        checks.push({
          column: found.name,
          value: `CAST(${ident(found.name)} AS VARCHAR)`,
          condition: nested,
          message: (value) => `${describeValue(value)} is a nested value (an object or a list), not ${TYPE_DESCRIPTIONS[col.type]}`,
        });
      }
      const bad = badValueCondition(col, found);
      if (bad) {
        const condition = `${v} IS NOT NULL AND trim(CAST(${v} AS VARCHAR)) <> '' AND (${bad})`;
        checks.push({
          column: found.name,
          value: v,
          condition,
          // A value spelled exactly as expected is good whatever the rest says: a cheap filter first.
          ...(col.type === 'sourceType' && found.rawType === 'VARCHAR'
            ? { counts: [`${v} NOT IN ('campaign', 'automation', 'smartflow') AND ${condition}`] }
            : (col.type === 'amount' || col.type === 'rate') && NUMERIC_TYPE.test(found.rawType)
              ? { counts: numericBadParts(col.type, found) }
              : {}),
          message: (value) => badValueMessage(col, value),
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
          `SELECT __file, __pos, ${check.value} AS v FROM ${positioned} WHERE ${check.condition} ORDER BY __file, __pos LIMIT 3`,
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
   * (Parquet) or "record N (line L)" (JSON arrays: the place in the array, and
   * the line where the record starts) for each record, by locationKey.
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
      try {
        lines = source.format === 'json' ? await jsonRecordLines(file, wanted) : await this.csvLines(loaded, file, start, wanted);
      } catch {
        // An unreadable file falls back to record numbers.
      }
      // A JSON array's records are numbered, with the line where each starts.
      const array = source.format === 'json' && !source.jsonLines;
      for (const position of positions) {
        const index = position - start;
        const line = lines.get(index);
        labels.set(
          locationKey(file, position),
          line === undefined ? `record ${index + 1}` : array ? `record ${index + 1} (line ${line})` : `line ${line}`,
        );
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
