/** Reading a table's files into DuckDB as they are (raw_<name>), with its columns as found. */
import { DataError } from '../../errors.js';
import { QueryTimeoutError, type Database, type Row } from '../db.js';
import { TABLES, type TableName } from '../schema.js';
import { ident, join, sql, trusted, type Sql } from '../sql.js';
import { duplicateColumns } from './duplicates.js';
import { lineEndingRuns } from './endings.js';
import { blankFile, folderDifference, namedTwice, titledFolderDifference, type FolderDifference } from './headers.js';
import { fileLabel, firstLine, UnreadableTableError } from './problems.js';
import { plainReadExpression, rawTable, readExpression } from './reader.js';
import type { LoadedTable, SourceColumn, TableSource } from './types.js';
import { diagnoseTable, rejectMixedLineEndings } from './unreadable.js';
import { quoted } from '../../words.js';

/** Fills raw_<name> from a table function and describes it (`described`: what DESCRIBE would say, known already). */
async function fill(db: Database, source: TableSource, read: Sql, target: Sql, described?: Row[]): Promise<Row[]> {
  // Text formats are parsed once into a table; Parquet is cheap to scan again, so it stays a view.
  // A table keeps the files' order (DuckDB preserves insertion order), so its rowid is the record's place.
  const kind = source.format === 'parquet' ? 'VIEW' : 'TABLE';
  await db.exec(sql`CREATE OR REPLACE ${trusted(kind)} ${target} AS SELECT * FROM ${read}`);
  return described ?? db.all(sql`DESCRIBE SELECT * FROM ${target}`);
}

/**
 * Reads a table into raw_<name>: plain CSV files without the sniffer, anything else (and a plain
 * read that fails, so that its error is the sniffer's) with it. A query out of time stays so.
 */
async function readRaw(db: Database, source: TableSource, target = rawTable(source.table)): Promise<Row[]> {
  const plain = await plainReadExpression(db, source);
  if (plain) {
    try {
      return await fill(db, source, plain.read, target, plain.columns);
    } catch (error) {
      if (error instanceof QueryTimeoutError) throw error;
    }
  }
  return fill(db, source, readExpression(source), target);
}

/**
 * Reads a table into raw_<name> in one read; when that fails on a folder of CSV files whose line
 * endings differ (endings.ts), reads each run of files that agree and appends the runs in order,
 * so that the table, its rowids and its records' files are those of files that all end alike.
 */
async function readTable(db: Database, source: TableSource): Promise<Row[]> {
  try {
    return await readRaw(db, source);
  } catch (error) {
    if (error instanceof QueryTimeoutError) throw error;
    const runs = await lineEndingRuns(db, source);
    if (!runs) throw error;
    return readRuns(db, source, runs);
  }
}

/**
 * The runs of readTable read one by one into raw_<name>, each run's columns taken by name, as the one
 * read takes them: a header may name them in another order, a run that lacks a column of the first
 * is refused (ColumnsDiffer), and so is one with a column the first lacks (loadTable, from the headers).
 */
async function readRuns(db: Database, source: TableSource, runs: string[][]): Promise<Row[]> {
  const raw = rawTable(source.table);
  const part = ident(`raw_${source.table}_run`);
  const names = (rows: Row[]) => rows.map((row) => String(row.column_name));
  try {
    let first: string[] | undefined;
    for (const files of runs) {
      const rows = await readRaw(db, { ...source, patterns: files, files }, first === undefined ? raw : part);
      if (first === undefined) {
        first = names(rows);
        continue;
      }
      // As DuckDB names columns: in any case.
      const these = names(rows).map((name) => name.toLowerCase());
      const missing = first.find((name) => !these.includes(name.toLowerCase()));
      if (missing !== undefined) throw new ColumnsDiffer(runs[0]![0]!, files[0]!, missing);
      // A column only a later file has: refused by loadTable once the table is read, as after the one read.
      await db.exec(sql`INSERT INTO ${raw} BY NAME SELECT ${join(first.map((name) => ident(name)))} FROM ${part}`);
    }
  } finally {
    await db.exec(sql`DROP TABLE IF EXISTS ${part}`);
  }
  return db.all(sql`DESCRIBE SELECT * FROM ${raw}`);
}

/** Whether the names lack a required column of the table (schema.ts), in any case. */
function lacksRequired(table: TableName, names: readonly string[]): boolean {
  const lower = new Set(names.map((name) => name.toLowerCase()));
  return TABLES[table].columns.some((c) => c.required && !lower.has(c.name));
}

/** Whether convx reads a column (named in lower case) of a table: one of its columns in schema.ts, plugin_id, or any of a table that keeps the others (contacts' merge fields). */
function readsColumn(table: TableName, column: string): boolean {
  const spec = TABLES[table];
  return spec.keepOtherColumns === true || column === 'plugin_id' || spec.columns.some((c) => c.name === column);
}

/** What differs between two files' headers: a column `other` lacks that `first` has, or (`extra`) one `other` has that `first` lacks. */
function differLine(first: string, other: string, column: string, extra: boolean): string {
  return extra ? `${other} has a column ${column}, which ${first} lacks` : `${other} has no column ${column}, which ${first} has`;
}

/** Files of a folder whose headers name different columns (differLine says how). */
class ColumnsDiffer extends Error {
  constructor(
    readonly first: string,
    readonly other: string,
    readonly column: string,
    readonly extra = false,
  ) {
    super(differLine(first, other, column, extra));
  }
}

/** DuckDB's words for a folder's file that lacks a column of the first file read. */
const SCHEMA_MISMATCH = /schema mismatch in glob: column "([^"]*)" was read from the original file "([^"]*)", but could not be found in file "([^"]*)"/;

/** The reader's failure on a folder's file without a column of the first file read (its own, ColumnsDiffer, or DuckDB's words); else undefined. */
function differOf(error: unknown): ColumnsDiffer | undefined {
  if (error instanceof ColumnsDiffer) return error;
  const said = SCHEMA_MISMATCH.exec(error instanceof Error ? error.message : String(error));
  return said ? new ColumnsDiffer(said[2]!, said[3]!, said[1]!) : undefined;
}

/** A folder whose files name different columns, as the DataError naming the files and the column. */
function differError(dir: string, source: TableSource, differ: ColumnsDiffer): DataError {
  const [first, other] = [fileLabel(dir, source, differ.first), fileLabel(dir, source, differ.other)];
  return new DataError(`cannot read ${source.display}: its files do not have the same columns:`, [
    differLine(first, other, differ.column, differ.extra),
    'give every file of the folder the same header (the order of the columns may differ)',
  ]);
}

/** A file of a folder with a column the first lacks, or typed otherwise, as the DataError naming the files and the column. */
function differenceError(dir: string, source: TableSource, difference: FolderDifference): DataError {
  if (difference.kind === 'extra') return differError(dir, source, new ColumnsDiffer(difference.without, difference.file, difference.column, true));
  if (difference.kind === 'missing') return differError(dir, source, new ColumnsDiffer(difference.first, difference.file, difference.column));
  if (difference.kind === 'twice') {
    const [first, second] = difference.names.map((name) => quoted(name));
    return new DataError(`cannot read ${source.display}: ${fileLabel(dir, source, difference.file)} names a column twice, as ${first} and ${second}`, [
      first === second ? 'keep one of them' : 'names match case-insensitively, so keep one of them',
    ]);
  }
  const [first, other] = [fileLabel(dir, source, difference.first), fileLabel(dir, source, difference.file)];
  if (difference.kind === 'preamble') {
    const lines = difference.lines === 1 ? 'a line' : `${difference.lines} lines`;
    return new DataError(`cannot read ${source.display}: ${first} has ${lines} above its header, and ${other} has not as many`, [
      "the read skips the first file's lines above the header in every file, and would lose a record of the others: give every file the same lines above its header, or none",
    ]);
  }
  return new DataError(`cannot read ${source.display}: its files do not give a column one type:`, [
    `${other} has ${difference.column} as ${difference.type}, ${first} as ${difference.firstType}`,
    "give the column one type in every file of the folder (the read takes the first file's, and would change the others' values to it)",
  ]);
}

/**
 * A CSV file without a header (empty, or a line break or a byte order mark alone): a folder's first
 * file, whose columns the read takes, or a table's one file, which DuckDB reads as one column, column0.
 */
function emptyFileError(dir: string, source: TableSource, file: string): DataError {
  const required = TABLES[source.table].columns.filter((c) => c.required).map((c) => c.name);
  const hint = source.multiFile
    ? "remove it, or give it the header of the folder's other files"
    : `remove it, or give it a header naming the table's columns (at least ${required.join(', ')})`;
  const what = source.multiFile ? fileLabel(dir, source, file) : 'it';
  return new DataError(`cannot read ${source.display}: ${what} is empty, without even a header`, [hint]);
}

/**
 * The reader's failure on a folder whose files name different columns, as a DataError naming the
 * files and the column; else undefined. A first file naming a column twice is what the read stumbled
 * on, whatever column DuckDB names (NAME_1, which no other file has): said as such. (A first file
 * without a header, empty or a line break or a byte order mark alone, never reaches the read.)
 */
async function columnsDiffer(db: Database, dir: string, source: TableSource, error: unknown): Promise<DataError | undefined> {
  const differ = differOf(error);
  if (!differ || !source.multiFile) return undefined;
  const first = source.files[0]!;
  const twice = source.format === 'csv' ? await namedTwice(db, first) : undefined;
  if (twice) return differenceError(dir, source, { kind: 'twice', file: first, names: twice });
  return differError(dir, source, differ);
}

/**
 * Reads a table into raw_<name> and says what columns it has. A table the reader cannot read is
 * an UnreadableTableError naming where and why (or a DataError with the reader's words, when the
 * files read again show nothing).
 */
export async function loadTable(db: Database, dir: string, source: TableSource): Promise<LoadedTable> {
  // A folder whose first CSV file has no header is refused before DuckDB reads it: its reader of the
  // next files (CSVSniffer::MinimalSniff, DuckDB 1.5.5) can crash the process on such a file.
  if (source.format === 'csv' && source.multiFile && (await blankFile(source.files[0]!))) throw emptyFileError(dir, source, source.files[0]!);
  let rows: Row[];
  try {
    rows = await readTable(db, source);
  } catch (error) {
    // Only now, after the reader failed, the files are read again to say where and why.
    if (source.format === 'csv') await rejectMixedLineEndings(dir, source);
    // A later file without a column, in a folder whose first file has a title line: its headers say which (diagnoseTable would read the title as the header).
    const titled = differOf(error) ? await titledFolderDifference(db, source) : undefined;
    if (titled) throw differenceError(dir, source, titled);
    const located = await diagnoseTable(dir, source);
    if (located.length) throw new UnreadableTableError(source, located);
    throw (await columnsDiffer(db, dir, source, error)) ?? new DataError(`cannot read ${source.display}: ${firstLine(error)}`);
  }
  const names = rows.map((row) => String(row.column_name)).filter((name) => name !== '__file');
  // A table's one file without a header: said as such, rather than as every required column missing beside column0.
  if (source.format === 'csv' && !source.multiFile && names.length === 1 && (await blankFile(source.files[0]!))) throw emptyFileError(dir, source, source.files[0]!);
  // One column whose name holds delimiters: the CSV sniffer gave up on the dialect (records of
  // different lengths), and read each line whole.
  // Or a header without the table's required columns: the sniffer may take a wider record for the
  // header (a last line with a field too many). Say which line is wrong, if one is.
  if (source.format === 'csv' && ((names.length === 1 && /[,;|\t]/.test(names[0]!)) || lacksRequired(source.table, names))) {
    const located = await diagnoseTable(dir, source);
    if (located.length) throw new UnreadableTableError(source, located);
  }
  // A column only a later file has, which the read left out, or one a later file types otherwise, which the read cast to the
  // first file's type: refused as a file without a column of the first is, when convx reads that column.
  const raw = rows.filter((row) => String(row.column_name) !== '__file').map((row) => ({ name: String(row.column_name), type: String(row.column_type) }));
  const difference = await folderDifference(db, source, raw, (column) => readsColumn(source.table, column));
  if (difference) throw differenceError(dir, source, difference);
  const columns = new Map<string, SourceColumn>();
  for (const row of rows) {
    const name = String(row.column_name);
    if (name === '__file') continue;
    if (columns.has(name.toLowerCase())) continue; // a duplicate: refused below
    columns.set(name.toLowerCase(), { name, rawType: String(row.column_type) });
  }
  const duplicates = await duplicateColumns(db, dir, source, names);
  return { source, columns, hasPluginId: columns.has('plugin_id'), ...(duplicates.length ? { duplicates } : {}) };
}
