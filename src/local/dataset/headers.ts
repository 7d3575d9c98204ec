/**
 * The columns of each file of a folder's table, to find a column that some file has and the table
 * read does not. DuckDB reads a folder's files with the columns of the first file it reads, taken
 * by name in the others: a later file without one of them is an error of the read, but a column
 * only a later file has is left out without a word (a `status` exported from March on, and the
 * cancelled orders of those months would count). load.ts refuses such a folder when convx reads
 * that column, as it refuses a file without a column of the first. CSV and TSV headers are read
 * here, from each file's first line (a few kilobytes, where DuckDB's sniffer would read each file's
 * sample again); Parquet's columns from the files' footers, every file's in one statement.
 */
import { open } from 'node:fs/promises';
import { constants, gunzipSync } from 'node:zlib';
import type { Database } from '../db.js';
import { sql } from '../sql.js';
import { pathList } from './reader.js';
import type { TableSource } from './types.js';

/** How much of a file its header is looked for in: a header longer than this is not checked. */
const HEADER_BYTES = 64 * 1024;

/** A column some file of the table has and the table read does not, with a file that lacks it. */
export interface ExtraColumn {
  column: string;
  file: string;
  /** A file without it (the first of the table's files that lacks it). */
  without: string;
}

/**
 * A column that a file of a folder's table has and the table read (`names`, as DESCRIBE gave them)
 * does not, among those convx reads (`reads`, given the name in lower case: a column it never reads
 * changes nothing), compared in any case as DuckDB names columns; undefined when there is none, for
 * a table of one file, for JSON (read with the keys of every record of every file, reader.ts), and
 * for a CSV header this reading would not split into the names DuckDB found, which is read as before.
 */
export async function extraColumn(
  db: Database,
  source: TableSource,
  names: readonly string[],
  reads: (column: string) => boolean,
): Promise<ExtraColumn | undefined> {
  if (!source.multiFile || source.files.length < 2) return undefined;
  const columns = source.format === 'csv' ? await csvColumns(source.files, names) : source.format === 'parquet' ? await parquetColumns(db, source.files, names) : undefined;
  if (!columns) return undefined;
  const known = new Set(names.map((name) => name.toLowerCase()));
  for (const file of source.files) {
    const column = columns.get(file)?.find((name) => !known.has(name.toLowerCase()) && reads(name.toLowerCase()));
    if (column === undefined) continue;
    const lower = column.toLowerCase();
    const without = source.files.find((other) => !columns.get(other)?.some((name) => name.toLowerCase() === lower));
    return { column, file, without: without ?? source.files[0]! };
  }
  return undefined;
}

/** The delimiters a CSV or TSV header may be split by (DuckDB's sniffer picks among these). */
const DELIMITERS = [',', '\t', ';', '|'];

/**
 * Each CSV file's header names, split by the delimiter that splits the first file's header into
 * the names the read found (Hive partition keys aside); undefined when none does.
 */
async function csvColumns(files: readonly string[], names: readonly string[]): Promise<Map<string, string[]> | undefined> {
  const headers = new Map<string, string>();
  for (const file of files) {
    const header = await firstLine(file);
    if (header === undefined) return undefined;
    headers.set(file, header);
  }
  const wanted = names.filter((name) => name !== '__file' && !partitionKeys(files[0]!).has(name));
  const first = headers.get(files[0]!)!;
  const delimiter = DELIMITERS.find((d) => sameNames(splitHeader(first, d), wanted));
  if (delimiter === undefined) return undefined;
  return new Map([...headers].map(([file, header]) => [file, splitHeader(header, delimiter)]));
}

/** The keys of a path's Hive partitions (`month=2025-03/`). */
function partitionKeys(file: string): Set<string> {
  return new Set(file.split(/[\\/]/).flatMap((segment) => (/^[^=]+=/.test(segment) ? [segment.slice(0, segment.indexOf('='))] : [])));
}

function sameNames(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((name, i) => name === b[i]);
}

/** A header's fields: split by the delimiter outside double quotes, a quoted field's doubled quotes made one. */
export function splitHeader(header: string, delimiter: string): string[] {
  const fields: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < header.length; i++) {
    const c = header[i]!;
    if (quoted) {
      if (c !== '"') field += c;
      else if (header[i + 1] === '"') {
        field += '"';
        i++;
      } else quoted = false;
    } else if (c === '"') quoted = true;
    else if (c === delimiter) {
      fields.push(field);
      field = '';
    } else field += c;
  }
  fields.push(field);
  return fields;
}

/** A file's first line (a gzip file's, inflated), without a byte order mark or line break; undefined when it is not within HEADER_BYTES or cannot be read. */
async function firstLine(file: string): Promise<string | undefined> {
  let bytes: Buffer;
  try {
    const handle = await open(file, 'r');
    try {
      const buffer = Buffer.alloc(HEADER_BYTES);
      const { bytesRead } = await handle.read(buffer, 0, HEADER_BYTES, 0);
      bytes = buffer.subarray(0, bytesRead);
    } finally {
      await handle.close();
    }
    // The start of a gzip stream: inflated as far as it goes.
    if (file.toLowerCase().endsWith('.gz')) bytes = gunzipSync(bytes, { finishFlush: constants.Z_SYNC_FLUSH });
  } catch {
    return undefined;
  }
  const text = bytes.toString('utf8');
  const end = text.indexOf('\n');
  if (end < 0) return undefined;
  return text.slice(text.startsWith('\uFEFF') ? 1 : 0, end).replace(/\r$/, '');
}

/**
 * The Parquet files' columns, when some file has one the table read lacks: the columns of every
 * file together from their footers (union_by_name, one statement), and only then each file's own,
 * to say which. Undefined when every file's columns are the table's.
 */
async function parquetColumns(db: Database, files: readonly string[], names: readonly string[]): Promise<Map<string, string[]> | undefined> {
  const describe = async (list: readonly string[]) =>
    (await db.all<{ column_name: string }>(sql`DESCRIBE SELECT * FROM read_parquet(${pathList(list)}, union_by_name = true)`)).map((row) => String(row.column_name));
  const known = new Set(names.map((name) => name.toLowerCase()));
  if ((await describe(files)).every((name) => known.has(name.toLowerCase()))) return undefined;
  const columns = new Map<string, string[]>();
  for (const file of files) columns.set(file, await describe([file]));
  return columns;
}
