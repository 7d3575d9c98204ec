/**
 * The new files of an update (`data import --append`): read, checked and typed alone, as a full
 * import reads them (the same checks, the same typed values, given the same columns), then added
 * after the stored rows of the copy attached as out, numbered on from them. Findings of the new
 * rows join the stored ones as a full import would count and name them.
 */
import { join as joinPath } from 'node:path';
import { Database } from '../db.js';
import { discoverTables, Dataset, type DataIssue, type LoadedTable, type TableSource } from '../dataset.js';
import { GLOB_CHARACTER } from '../dataset/globs.js';
import { negativeAmounts } from '../dataset/typing.js';
import { storedTable, type ImportedFile, type ImportedTable, type ImportMeta } from '../imported.js';
import { rawColumns } from '../import-files.js';
import { TABLES, type TableName } from '../schema.js';
import { ident, int, sql, table } from '../sql.js';

/** Why an update cannot take the short way (then the whole dataset is imported again). */
export class NeedsFullImport extends Error {}

/** The name of a table's new rows (typed), beside t_<name>, which becomes a view of every row. */
export const newRows = (name: TableName) => ident(`n_${name}`);

/**
 * Each table's source narrowed to its new files that are not empty. A table the import did not
 * store, a table of one file (only a folder can grow) or a file name the reader would take as a
 * glob: the long way.
 */
function newSources(dir: string, added: readonly ImportedFile[], meta: ImportMeta): Map<TableName, TableSource> {
  const found = discoverTables(dir);
  const out = new Map<TableName, TableSource>();
  for (const [name, source] of found) {
    // An empty file holds no rows (a full import reads nothing of it; read alone, it would have no columns).
    const files = added.filter((f) => f.table === name && f.size > 0).map((f) => joinPath(dir, f.path));
    if (files.length === 0) continue;
    if (!meta.tables.some((t) => t.table === name) || !source.multiFile) throw new NeedsFullImport(`${name} is new`);
    if (files.some((f) => GLOB_CHARACTER.test(f))) throw new NeedsFullImport(`a file name of ${name} holds a glob character`);
    out.set(name, { ...source, patterns: files, files });
  }
  return out;
}

/**
 * The new files read, checked (a DataError as a full import would raise it) and typed into
 * t_<name> of a fresh in-memory database. NeedsFullImport when a table's columns as read differ
 * from those the import stored (a value's type may then differ).
 */
export async function readNewFiles(dir: string, added: readonly ImportedFile[], meta: ImportMeta, options: { threads?: number | undefined; name?: string | undefined }): Promise<Dataset> {
  const sources = newSources(dir, added, meta);
  const db = await Database.open(':memory:', { ...(options.threads ? { threads: options.threads } : {}), reuse: true });
  try {
    const dataset = await Dataset.open(dir, db, { sources, name: options.name ?? dir });
    await dataset.validate();
    const columns = rawColumns(dataset);
    for (const [name, found] of Object.entries(columns)) {
      if (JSON.stringify(found) !== JSON.stringify(meta.columns?.[name as TableName])) throw new NeedsFullImport(`the columns of ${name} differ`);
    }
    await dataset.createTypedTables({ materialise: true });
    return dataset;
  } catch (error) {
    db.close();
    throw error;
  }
}

/**
 * Adds the new rows after the stored ones of out (row_id counting on, or in insertion order for a
 * table without one), keeps them as n_<name>, and makes t_<name> a view of every row of out's
 * table; the stored tables' list with the new counts.
 */
export async function addNewRows(db: Database, fresh: Dataset, meta: ImportMeta): Promise<ImportedTable[]> {
  const tables: ImportedTable[] = [];
  for (const stored of meta.tables) {
    const name = stored.table;
    let rows = stored.rows;
    if (fresh.has(name)) {
      const ordered = !TABLES[name].unordered;
      if (ordered) await db.exec(sql`UPDATE ${table(name)} SET row_id = row_id + ${int(stored.rows)}`);
      const count = await db.rowsWritten(sql`INSERT INTO ${table(name, 'out.main')} SELECT * FROM ${table(name)} ORDER BY ${ordered ? sql`row_id` : sql`rowid`}`);
      await db.exec(sql`ALTER TABLE ${table(name)} RENAME TO ${newRows(name)}`);
      rows += count;
    }
    await db.exec(sql`CREATE VIEW ${table(name)} AS SELECT * FROM ${table(name, 'out.main')}`);
    tables.push({ ...stored, rows });
  }
  return tables;
}

/** The tables of the update as a dataset whose typed tables t_<name> are views of out's (every row). */
export function wholeDataset(dir: string, db: Database, meta: ImportMeta, findings: DataIssue[]): Dataset {
  const loaded: [TableName, LoadedTable][] = meta.tables.map((t) => [t.table, storedTable(t)]);
  return Dataset.typed(dir, db, loaded, findings);
}

/**
 * The findings of every row from the stored ones and the new rows': a full import finds negative
 * amounts while typing orders, counted over every row and named in file order (DuckDB's order of
 * the files' paths, then the rows'), so the counts add up, and where every new orders file comes
 * after the stored ones (newFilesLast), the first examples are the stored ones. Where one comes
 * before a stored one and both name some, a full import may name others: the long way.
 */
export function mergeFindings(stored: readonly DataIssue[], added: readonly DataIssue[], newFilesLast: boolean): DataIssue[] {
  const out = [...stored];
  for (const finding of added) {
    const i = out.findIndex((f) => f.code === finding.code);
    if (i < 0) out.push(finding);
    else if (finding.code !== 'negative_amount') throw new NeedsFullImport(`a finding ${finding.code}`);
    else if (!newFilesLast) throw new NeedsFullImport('negative amounts in new files named before stored ones');
    else out[i] = negativeAmounts(out[i]!.count + finding.count, [...out[i]!.examples, ...finding.examples]);
  }
  return out;
}

/** Whether every new orders file's path comes after every stored one's, in their UTF-8 bytes (as DuckDB sorts the files' names). */
export function newOrdersLast(stored: readonly ImportedFile[], added: readonly ImportedFile[]): boolean {
  const paths = (files: readonly ImportedFile[]) => files.filter((f) => f.table === 'orders').map((f) => Buffer.from(f.path, 'utf8'));
  const old = paths(stored);
  return paths(added).every((path) => old.every((o) => Buffer.compare(o, path) < 0));
}
