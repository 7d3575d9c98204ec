/**
 * Finding a dataset's tables on disk, checking every value against the table's
 * column types, and loading typed tables into DuckDB (DESIGN.md section 3).
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { DataError } from '../errors.js';
import { Database, ident, type Row } from './db.js';
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

export interface Problem {
  table: TableName;
  file: string;
  column?: string;
  line?: string;
  message: string;
}

export function formatProblem(p: Problem): string {
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
  if (!existsSync(dir)) throw new DataError(`no dataset at ${dir}: the directory does not exist`);
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

function sqlString(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}

/** The table function that reads a source with every column as found, plus the file name. */
export function readExpression(source: TableSource): string {
  const path = `[${source.patterns.map(sqlString).join(', ')}]`;
  const hive = source.hive ? ', hive_partitioning = true' : '';
  switch (source.format) {
    case 'csv':
      return `read_csv(${path}, header = true, all_varchar = true, filename = '__file'${hive})`;
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

function lineLabel(source: TableSource, rowNumber: number): string {
  if (source.format === 'csv') return `line ${rowNumber + 1}`;
  if (source.format === 'json') return source.jsonLines ? `line ${rowNumber}` : `record ${rowNumber}`;
  return `row ${rowNumber}`;
}

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

  private constructor(
    readonly dir: string,
    readonly db: Database,
  ) {}

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

  private async describe(source: TableSource): Promise<LoadedTable> {
    let rows: Row[];
    try {
      // Text formats are parsed once into a table; Parquet is cheap to scan again, so it stays a view.
      const kind = source.format === 'parquet' ? 'VIEW' : 'TABLE';
      await this.db.exec(`CREATE OR REPLACE ${kind} ${ident(`raw_${source.table}`)} AS SELECT * FROM ${readExpression(source)}`);
      rows = await this.db.all(`DESCRIBE SELECT * FROM ${ident(`raw_${source.table}`)}`);
    } catch (error) {
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

  /** Every problem of every loaded table: missing columns, values of the wrong type, empty required values. */
  async problems(): Promise<Problem[]> {
    const problems: Problem[] = [];
    for (const loaded of this.tables.values()) problems.push(...(await this.tableProblems(loaded)));
    return problems;
  }

  private async tableProblems(loaded: LoadedTable): Promise<Problem[]> {
    const { source, columns } = loaded;
    const spec = TABLES[source.table];
    const problems: Problem[] = [];
    const checks: { column: string; condition: string; message: (value: unknown) => string }[] = [];
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
          message: () => 'the value is empty, and the column is required',
        });
      }
      const bad = badValueCondition(col, found);
      if (bad) {
        checks.push({
          column: found.name,
          condition: `${v} IS NOT NULL AND trim(CAST(${v} AS VARCHAR)) <> '' AND (${bad})`,
          message: (value) => `${describeValue(value)} is not ${TYPE_DESCRIPTIONS[col.type]}`,
        });
      }
    }
    if (checks.length === 0) return problems;
    const raw = ident(`raw_${source.table}`);
    let counts: Row | undefined;
    try {
      counts = await this.db.one(
        `SELECT ${checks.map((c, i) => `count(*) FILTER (WHERE ${c.condition}) AS c${i}`).join(', ')} FROM ${raw}`,
      );
    } catch (error) {
      problems.push({ table: source.table, file: source.display, message: `cannot read the file: ${firstLine(error)}` });
      return problems;
    }
    for (const [i, check] of checks.entries()) {
      const count = Number(counts?.[`c${i}`] ?? 0);
      if (count === 0) continue;
      const examples = await this.db.all(
        `SELECT __file, rn, v FROM (
           SELECT __file, row_number() OVER (PARTITION BY __file) AS rn, ${ident(check.column)} AS v, (${check.condition}) AS bad
           FROM ${raw})
         WHERE bad ORDER BY __file, rn LIMIT 3`,
      );
      for (const example of examples) {
        problems.push({
          table: source.table,
          file: fileLabel(this.dir, source, example.__file),
          line: lineLabel(source, Number(example.rn)),
          column: check.column,
          message: check.message(example.v),
        });
      }
      if (count > examples.length) {
        problems.push({
          table: source.table,
          file: source.display,
          column: check.column,
          message: `${count - examples.length} more ${count - examples.length === 1 ? 'row has' : 'rows have'} this problem`,
        });
      }
    }
    return problems;
  }

  /** Raises a DataError naming every problem, if there is any. */
  async validate(): Promise<void> {
    const problems = await this.problems();
    if (problems.length) {
      throw new DataError(
        `the dataset at ${this.dir} has ${problems.length} problem${problems.length > 1 ? 's' : ''} (run \`convx data check ${this.dir}\` for integrity findings too):`,
        problems.map(formatProblem),
      );
    }
  }

  /** Creates t_<name> for each table (typed columns, plugin_id, a row id in file order) and drops the raw copy. */
  async createTypedTables(): Promise<void> {
    for (const loaded of this.tables.values()) {
      const spec = TABLES[loaded.source.table];
      const known = new Set(spec.columns.map((c) => c.name));
      // A table whose row order never matters, read from Parquet, stays a typed view over the files:
      // no copy in memory, and Parquet is cheap to scan again.
      const asView = spec.unordered === true && loaded.source.format === 'parquet';
      const select = [
        ...(asView ? [] : ['row_number() OVER () AS row_id']),
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
