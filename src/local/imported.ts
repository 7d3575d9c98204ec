/**
 * Reading convx's own dataset file (`convx data import DIR --into FILE.duckdb`, written by
 * import-writer.ts): the typed tables of a checked dataset, and per plugin every transaction
 * already attributed (conv, in time order, with an index on order_id), the source identities and
 * per-day sums for reports. `--data FILE.duckdb` reads it in place (attached read-only): nothing
 * to parse, check or attribute, so a command or a server starts at once and answers as it would
 * from the files. This module also says what the file holds (ImportMeta), which the writer writes.
 */
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { DataError } from '../errors.js';
import { field, QUERY_PARAMETERS } from '../model/parameters.js';
import { Database, QueryTimeoutError } from './db.js';
import { Dataset, firstLine, type DataIssue, type LoadedTable } from './dataset.js';
import type { TableName } from './schema.js';
import { ident, literal, sql, table, trusted, type Sql } from './sql.js';

/** Names the file's layout; a file of another version is refused with a word on importing again. */
export const IMPORT_FORMAT = 'convx-dataset';
export const IMPORT_VERSION = 4;
/** The catalog name an imported file is attached under. */
const ALIAS = 'imported';
/** The table of the file that says what it holds (one row per key, JSON values). */
export const META = 'convx_dataset';

export interface ImportedTable {
  table: TableName;
  /** How the source was named (orders.parquet, orders/ ...), for messages. */
  display: string;
  hasPluginId: boolean;
  rows: number;
}

export interface ImportedScope {
  /** The plugin, or null for a dataset without plugin_id (served as the single plugin). */
  plugin: string | null;
  schema: string;
  referenceCurrency: string;
}

export interface ImportMeta {
  format: typeof IMPORT_FORMAT;
  version: number;
  convx: string;
  /** The dataset directory as it was given to the import. */
  source: string;
  importedAt: string;
  tables: ImportedTable[];
  findings: DataIssue[];
  scopes: ImportedScope[];
  /** The files read, as they were before the import read them (import-append.ts): `data import --append` adds only files after them. Absent in files of older imports. */
  files?: ImportedFile[];
  /** The reference currency the import was asked for (--reference-currency), null for each plugin's own; `--append` attributes with it again. */
  referenceCurrencyAsked?: string | null;
  /** Each table's columns as the reader found them, "name type" (a typed value depends on them): `--append` adds rows to tables whose columns are the same. */
  columns?: Partial<Record<TableName, string[]>>;
}

/**
 * One file of the dataset an import read: its path relative to the dataset (with /), its size and
 * modification time in nanoseconds, and the SHA-256 of its bytes (hex) as they were before the
 * import read them (absent in files of older imports): a file given another modification time with
 * the same bytes (copied again, exported again) is the file imported.
 */
export interface ImportedFile {
  table: TableName;
  path: string;
  size: number;
  mtimeNs: string;
  sha256?: string;
}

/** True for a file that starts like a DuckDB database (its header says DUCK at byte 8). */
export function isDuckDbFile(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    const fd = openSync(path, 'r');
    try {
      const head = Buffer.alloc(12);
      const read = readSync(fd, head, 0, 12, 0);
      return read === 12 && head.subarray(8, 12).toString('latin1') === 'DUCK';
    } finally {
      closeSync(fd);
    }
  } catch {
    return false;
  }
}

/**
 * What an imported file holds (its convx_dataset), read without opening it as a dataset; on an
 * instance of the command's DuckDB threads (the same kept instance as the command's other work).
 */
export async function readImportMeta(file: string, threads?: number): Promise<ImportMeta> {
  const db = await Database.open(':memory:', { ...(threads ? { threads } : {}), reuse: true });
  try {
    try {
      await db.exec(sql`ATTACH ${literal(file)} AS ${trusted(ALIAS)} (READ_ONLY)`);
    } catch (error) {
      throw new DataError(`cannot open ${file}: ${firstLine(error)}`);
    }
    return await readMeta(db, file);
  } finally {
    db.close();
  }
}

/**
 * Opens an imported file on db (an in-memory database), named in messages by name: attached read-only, with
 * views t_<name> over its typed tables. attributed() tells a Scope where its
 * attribution lies, when it was computed for the reference currency asked.
 */
export async function openImported(
  file: string,
  db: Database,
  name = file,
): Promise<{ dataset: Dataset; attributed: (plugin: string | null, referenceCurrency: string) => Sql | undefined }> {
  try {
    await db.exec(sql`ATTACH ${literal(file)} AS ${trusted(ALIAS)} (READ_ONLY)`);
  } catch (error) {
    throw new DataError(`cannot open ${name}: ${firstLine(error)}`);
  }
  const meta = await readMeta(db, name);
  await checkFilterColumns(db, name, meta);
  const loaded: [TableName, LoadedTable][] = [];
  for (const t of meta.tables) {
    await db.exec(sql`CREATE OR REPLACE VIEW ${table(t.table)} AS SELECT * FROM ${table(t.table, 'imported.main')}`);
    loaded.push([t.table, storedTable(t)]);
  }
  const dataset = Dataset.typed(file, db, loaded, meta.findings, name);
  const attributed = (plugin: string | null, referenceCurrency: string) => {
    const scope = meta.scopes.find((s) => s.plugin === plugin && s.referenceCurrency === referenceCurrency);
    return scope ? sql`${trusted(ALIAS)}.${ident(scope.schema)}` : undefined;
  };
  return { dataset, attributed };
}

/** A table an imported file stores, as a Dataset holds it: typed already, read from no file of its own. */
export function storedTable(t: ImportedTable): LoadedTable {
  return {
    source: { table: t.table, patterns: [], display: t.display, files: [], format: 'parquet', jsonLines: false, hive: false, multiFile: false },
    columns: new Map(),
    hasPluginId: t.hasPluginId,
  };
}

/**
 * Every column the query parameters filter on (model/parameters.ts) must be in each scope's
 * attributed transactions: a file imported before a filter's column was added to conv is
 * refused with the command to import it again, not failed on later by a query.
 */
async function checkFilterColumns(db: Database, file: string, meta: ImportMeta): Promise<void> {
  const wanted = [...new Set(QUERY_PARAMETERS.flatMap((p) => field(p, 'column') ?? []))];
  const columns = await conversionColumns(db, meta.scopes);
  for (const scope of meta.scopes) {
    const present = columns.get(scope.schema) ?? new Set<string>();
    // A dataset without orders (validation only) has no attributed transactions to filter.
    if (present.size === 0) continue;
    const missing = wanted.filter((column) => !present.has(column));
    if (missing.length) {
      throw new DataError(
        `${file} was written by convx ${meta.convx} without ${missing.join(', ')}, which this convx filters on`,
        [`import the dataset again: convx data import ${meta.source} --into ${file} --force`],
      );
    }
  }
}

/** Up to this many scopes have their columns read one by one (one short statement each); more, all at once from the catalog. */
const SCOPES_READ_ALONE = 8;

/**
 * The columns of each scope's attributed transactions (conv), by schema; a scope without them has none.
 * A few scopes are read by their own columns, which costs less than DuckDB's catalog of every column
 * (duckdb_columns() binds every view of every catalog); a scope without conv falls back to the catalog.
 */
async function conversionColumns(db: Database, scopes: readonly ImportedScope[]): Promise<Map<string, Set<string>>> {
  const bySchema = new Map<string, Set<string>>();
  if (scopes.length <= SCOPES_READ_ALONE) {
    try {
      for (const { schema } of scopes) {
        bySchema.set(schema, new Set(await db.columnNames(sql`SELECT * FROM ${trusted(ALIAS)}.${ident(schema)}.conv LIMIT 0`)));
      }
      return bySchema;
    } catch (error) {
      if (error instanceof QueryTimeoutError) throw error;
      bySchema.clear();
    }
  }
  const rows = await db.all<{ schema_name: string; column_name: string }>(
    sql`SELECT schema_name, column_name FROM duckdb_columns() WHERE database_name = ${ALIAS} AND table_name = 'conv'`,
  );
  for (const row of rows) {
    const columns = bySchema.get(row.schema_name) ?? new Set<string>();
    columns.add(row.column_name);
    bySchema.set(row.schema_name, columns);
  }
  return bySchema;
}

async function readMeta(db: Database, file: string): Promise<ImportMeta> {
  const notOurs = () =>
    new DataError(`${file} is a DuckDB database, but not a dataset written by \`convx data import\``, [
      `write one with: convx data import DIR --into dataset.duckdb`,
    ]);
  let rows: { key: string; value: string }[];
  try {
    rows = await db.all<{ key: string; value: string }>(sql`SELECT key, value FROM ${trusted(ALIAS)}.main.${ident(META)}`);
  } catch (error) {
    // Only a read that failed asks the catalog (a cost) whether the table is there at all.
    if (error instanceof QueryTimeoutError) throw error;
    const present = await db.one<{ n: bigint }>(
      sql`SELECT count(*) AS n FROM duckdb_tables() WHERE database_name = ${ALIAS} AND schema_name = 'main' AND table_name = ${META}`,
    );
    if (!present || Number(present.n) === 0) throw notOurs();
    throw error;
  }
  const entries = Object.fromEntries(rows.map((r) => [r.key, JSON.parse(r.value) as unknown]));
  if (entries.format !== IMPORT_FORMAT) throw notOurs();
  if (entries.version !== IMPORT_VERSION) {
    throw new DataError(
      `${file} was written by convx ${String(entries.convx)} in dataset format ${String(entries.version)}; this convx reads format ${IMPORT_VERSION}`,
      [`import the dataset again: convx data import ${String(entries.source)} --into ${file} --force`],
    );
  }
  return entries as unknown as ImportMeta;
}
