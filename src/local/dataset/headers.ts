/**
 * The columns of each file of a folder's table, for what the one read of the folder would get wrong
 * without a word. DuckDB reads a folder's files with the columns (and, for CSV, the lines above the
 * header) of the first file it reads, taken by name in the others: a later file without one of them
 * is an error of the read, but a column only a later file has is left out (a `status` exported from
 * March on, and the cancelled orders of those months would count), a Parquet column a later file
 * types otherwise is cast to the first file's type (15.125 to 15), a column a later file names twice
 * is taken once, and a later file without the first file's title line loses its first record.
 * load.ts refuses such a folder when convx reads that column, as it refuses a file without a column
 * of the first. CSV and TSV headers are read here, from each file's first line (a few kilobytes,
 * where DuckDB's sniffer would read each file's sample again); Parquet's columns from the files'
 * footers, every file's together in two statements.
 */
import { open, stat } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { constants, gunzipSync } from 'node:zlib';
import type { Database } from '../db.js';
import { csvHeader, fileStream } from '../lines.js';
import { list, sql } from '../sql.js';
import { csvDialect, pathList, sniffedDialect } from './reader.js';
import type { TableSource } from './types.js';

/** How much of a file its header is looked for in: a header longer than this is not checked. */
const HEADER_BYTES = 64 * 1024;

/**
 * How a file of a folder differs from the table read: a column it has that the table lacks (`extra`,
 * with a file without it), a column of the first file it lacks below the first file's lines above
 * the header (`missing`), a column it names twice (`twice`), fewer lines above its header than the
 * first file has (`preamble`), or a column it types otherwise than the read took it (`type`, Parquet:
 * the read casts every file's values to the first file's type, 15.125 to 15 in a BIGINT column).
 */
export type FolderDifference =
  | { kind: 'extra'; column: string; file: string; without: string }
  | { kind: 'missing'; column: string; file: string; first: string }
  | { kind: 'twice'; file: string; names: [string, string] }
  | { kind: 'preamble'; file: string; first: string; lines: number }
  | { kind: 'type'; column: string; file: string; type: string; first: string; firstType: string };

/** A file's columns: names and, for Parquet, their types. */
type FileColumns = Map<string, { name: string; type?: string }[]>;

/**
 * A difference between a file of a folder's table and the table read (`columns`, as DESCRIBE gave
 * them), among the columns convx reads (`reads`, given the name in lower case: a column it never
 * reads changes nothing), names compared in any case as DuckDB names columns; undefined when there
 * is none, for a table of one file, for JSON (read with the keys and types of every record of every
 * file, reader.ts), and for a CSV header this reading would not split into the names DuckDB found,
 * which is read as before.
 */
export async function folderDifference(
  db: Database,
  source: TableSource,
  columns: readonly { name: string; type: string }[],
  reads: (column: string) => boolean,
): Promise<FolderDifference | undefined> {
  if (!source.multiFile || source.files.length < 2) return undefined;
  const names = columns.map((c) => c.name);
  const files =
    source.format === 'csv' ? await csvColumns(db, source, names) : source.format === 'parquet' ? await parquetColumns(db, source.files, columns) : undefined;
  if (!files) return undefined;
  if (!(files instanceof Map)) return files;
  const read = new Map(columns.map((c) => [c.name.toLowerCase(), c.type]));
  const has = (file: string, lower: string) => files.get(file)?.find((c) => c.name.toLowerCase() === lower);
  for (const file of source.files) {
    const seen = new Map<string, string>();
    for (const { name, type } of files.get(file) ?? []) {
      const lower = name.toLowerCase();
      if (!reads(lower)) continue;
      // Named twice (in any case): which one the read takes is unclear, as in a file of its own (duplicates.ts).
      const before = seen.get(lower);
      if (before !== undefined) return { kind: 'twice', file, names: [before, name] };
      seen.set(lower, name);
      if (!read.has(lower)) return { kind: 'extra', column: name, file, without: source.files.find((other) => !has(other, lower)) ?? source.files[0]! };
      const firstType = read.get(lower)!;
      if (type !== undefined && type !== firstType && !lossless(type, firstType)) {
        const first = source.files.find((other) => has(other, lower)?.type === firstType) ?? source.files[0]!;
        return { kind: 'type', column: name, file, type, first, firstType };
      }
    }
  }
  return undefined;
}

/** The integer types. */
const INTEGERS = new Set(['TINYINT', 'SMALLINT', 'INTEGER', 'BIGINT', 'HUGEINT', 'UTINYINT', 'USMALLINT', 'UINTEGER', 'UBIGINT']);

/** DECIMAL(p,s) as its digits before and after the point. */
function decimalDigits(type: string): { before: number; after: number } | undefined {
  const m = /^DECIMAL\((\d+),\s*(\d+)\)$/.exec(type);
  return m ? { before: Number(m[1]) - Number(m[2]), after: Number(m[2]) } : undefined;
}

/**
 * Whether a later file's values cast to the read's type unchanged or not at all: DuckDB refuses a
 * value that overflows (a BIGINT's 5,000,000,000 into an INTEGER), so only what it would change
 * without a word counts: digits after the point (a DECIMAL(18,4)'s into a DECIMAL(18,2), a
 * DOUBLE's into an integer), a DECIMAL's digits past a double's 15, a time of day
 * (a TIMESTAMP into a DATE), text into a number ('01002' into 1002), a FLOAT into a DOUBLE (88.17
 * becomes 88.16999816894531). Integers among themselves and into a DECIMAL, a DECIMAL into one
 * with as many digits after the point, a DATE into a TIMESTAMP (midnight), an integer into text are.
 */
export function lossless(from: string, to: string): boolean {
  if (from === to) return true;
  const [fi, ti, fd, td] = [INTEGERS.has(from), INTEGERS.has(to), decimalDigits(from), decimalDigits(to)];
  if (fi) {
    // Into a DOUBLE too: only past 2^53 would it round, beyond any amount's range (a day of whole prices written as BIGINT).
    return ti || td !== undefined || to === 'DOUBLE' || to === 'VARCHAR';
  }
  if (fd) {
    if (td) return fd.after <= td.after;
    return to === 'DOUBLE' && fd.before + fd.after <= 15;
  }
  return from === 'DATE' && /^TIMESTAMP/.test(to);
}

/** The delimiters a CSV or TSV header may be split by (DuckDB's sniffer picks among these). */
const DELIMITERS = [',', '\t', ';', '|'];

/**
 * Each CSV file's header names as written: its first line split by the delimiter that splits the
 * first file's into the names the read found (Hive partition keys aside), names trimmed as DuckDB
 * trims them. When the first file's first line is not its header (a title or `sep=,` line above it,
 * which the sniffer skips), the sniffer's delimiter is asked once, and a later file without a header
 * as many lines down is a `preamble` difference (a `missing` one when a header there lacks a column: belowPreamble). A later file whose header is neither its first line
 * nor that line (a title line of its own) is asked of the sniffer alone, and only what it cannot
 * split into the table's names is described by DuckDB (which renames a name given twice, NAME_1):
 * the read took every column of the table from each file, so a header that does not name them all
 * is not the one it read. An empty file has no columns.
 */
async function csvColumns(db: Database, source: TableSource, names: readonly string[]): Promise<FileColumns | FolderDifference> {
  const files = source.files;
  const wanted = names.filter((name) => name !== '__file' && !partitionKeys(files[0]!).has(name)).map((name) => name.trim());
  const headers = new Map<string, string | undefined>();
  for (const file of files) headers.set(file, await lineAt(file, 0));
  const first = headers.get(files[0]!);
  // The delimiter that splits the first line into the names read; else (a title line above the header) the sniffer's, asked once.
  let delimiter = first === undefined ? undefined : DELIMITERS.find((d) => sameNames(splitHeader(first, d), wanted));
  let skip = 0;
  const header = headerOf(wanted);
  if (delimiter === undefined) {
    const sniffed = await sniffedDialect(db, files[0]!);
    delimiter = sniffed?.delimiter;
    skip = delimiter === undefined ? 0 : (sniffed?.skip ?? 0);
    // Lines above the first file's header: the read skips as many in every file, so each must have them.
    const differs = skip > 0 ? await belowPreamble(files, wanted, delimiter!, skip) : undefined;
    if (differs) return differs;
  }
  const columns: FileColumns = new Map();
  for (const file of files) {
    const line = headers.get(file);
    if (line === '') {
      columns.set(file, []);
      continue;
    }
    const read = header(line, delimiter) ?? (skip > 0 ? header(await lineAt(file, skip), delimiter) : undefined) ?? (await ownHeader(db, file, header));
    columns.set(file, read.map((name) => ({ name })));
  }
  return columns;
}

/**
 * Whether each later file has the first file's lines above the header (`skip` of them): a file whose
 * line below them names every column wanted has; one whose line there names some of them, and whose
 * first line is not a header of them all, has them above a header without a column (`missing`: the
 * first it lacks, in the first file's order); any other has not (`preamble`: the read would take its
 * header for those lines and its first record for the header). Undefined when every file has them.
 */
async function belowPreamble(files: readonly string[], wanted: readonly string[], delimiter: string, skip: number): Promise<FolderDifference | undefined> {
  const header = headerOf(wanted);
  for (const file of files.slice(1)) {
    const line = await lineAt(file, skip);
    if (header(line, delimiter)) continue;
    const names = new Set(line === undefined ? [] : splitHeader(line, delimiter).map((name) => name.toLowerCase()));
    const lacking = wanted.find((name) => !names.has(name.toLowerCase()));
    const named = wanted.some((name) => names.has(name.toLowerCase()));
    if (named && lacking !== undefined && !header(await lineAt(file, 0), delimiter)) return { kind: 'missing', column: lacking, file, first: files[0]! };
    return { kind: 'preamble', file, first: files[0]!, lines: skip };
  }
  return undefined;
}

/**
 * A folder of CSV files whose first file has lines above its header (a title, `sep=,`), as its headers
 * show it, for a read that failed on a column a later file lacks: the difference belowPreamble finds
 * from the first file's header (a diagnosis of the lines would take the title for the header).
 * Undefined for any other table, or when every later file has the first file's header below as many lines.
 */
export async function titledFolderDifference(db: Database, source: TableSource): Promise<FolderDifference | undefined> {
  const first = source.files[0];
  if (source.format !== 'csv' || !source.multiFile || source.files.length < 2 || first === undefined) return undefined;
  const sniffed = await sniffedDialect(db, first);
  if (sniffed?.delimiter === undefined || sniffed.skip === 0) return undefined;
  const line = await lineAt(first, sniffed.skip);
  if (line === undefined) return undefined;
  const keys = partitionKeys(first);
  const wanted = splitHeader(line, sniffed.delimiter).filter((name) => !keys.has(name));
  return belowPreamble(source.files, wanted, sniffed.delimiter, sniffed.skip);
}

/** A line's names split by the delimiter, when they hold every name wanted (in any case and order); else undefined. */
function headerOf(wanted: readonly string[]): (line: string | undefined, delimiter: string | undefined) => string[] | undefined {
  const known = wanted.map((name) => name.toLowerCase());
  return (line, delimiter) => {
    if (line === undefined || delimiter === undefined) return undefined;
    const split = splitHeader(line, delimiter);
    const lower = split.map((name) => name.toLowerCase());
    return known.every((name) => lower.includes(name)) ? split : undefined;
  };
}

/** A file's header where the sniffer finds it in the file alone (below a title line of its own), as written; else DuckDB's names. */
async function ownHeader(db: Database, file: string, header: ReturnType<typeof headerOf>): Promise<string[]> {
  const sniffed = await sniffedDialect(db, file);
  return (sniffed && header(await lineAt(file, sniffed.skip), sniffed.delimiter)) ?? describedCsv(db, file);
}

/** A CSV file's column names as DuckDB's sniffer reads the file alone (none when it cannot). */
async function describedCsv(db: Database, file: string): Promise<string[]> {
  try {
    const rows = await db.all<{ column_name: string }>(sql`DESCRIBE SELECT * FROM read_csv(${pathList([file])}, header = true, all_varchar = true, ${csvDialect([file])})`);
    return rows.map((row) => String(row.column_name));
  } catch {
    return [];
  }
}

/** The keys of a path's Hive partitions (`month=2025-03/`). */
function partitionKeys(file: string): Set<string> {
  return new Set(file.split(/[\\/]/).flatMap((segment) => (/^[^=]+=/.test(segment) ? [segment.slice(0, segment.indexOf('='))] : [])));
}

function sameNames(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((name, i) => name === b[i]);
}

/** A header's fields: split by the delimiter outside double quotes, a quoted field's doubled quotes made one, each trimmed. */
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
  return fields.map((f) => f.trim());
}

/** The start of a file as text (a gzip file's inflated as far as it goes), without a byte order mark; `whole`: the file ends within it. Undefined when it cannot be read. */
async function startOf(file: string): Promise<{ text: string; whole: boolean } | undefined> {
  let bytes: Buffer;
  let whole: boolean;
  try {
    const handle = await open(file, 'r');
    try {
      const buffer = Buffer.alloc(HEADER_BYTES);
      const { bytesRead } = await handle.read(buffer, 0, HEADER_BYTES, 0);
      bytes = buffer.subarray(0, bytesRead);
    } finally {
      await handle.close();
    }
    whole = bytes.length < HEADER_BYTES;
    // The start of a gzip stream: inflated as far as it goes.
    if (file.toLowerCase().endsWith('.gz')) {
      bytes = gunzipSync(bytes, { finishFlush: constants.Z_SYNC_FLUSH });
      whole &&= bytes.length < HEADER_BYTES;
    }
  } catch {
    return undefined;
  }
  const text = bytes.toString('utf8');
  return { text: text.startsWith('\uFEFF') ? text.slice(1) : text, whole };
}

/** A file's line of this index (0: the first; a gzip file's, inflated), without a byte order mark or line break ('' for an empty file); undefined past HEADER_BYTES or the file's end, or when it cannot be read. */
async function lineAt(file: string, index: number): Promise<string | undefined> {
  const start = await startOf(file);
  if (!start) return undefined;
  const { text, whole } = start;
  let at = 0;
  for (let i = 0; i < index; i++) {
    const next = text.indexOf('\n', at);
    if (next < 0) return undefined;
    at = next + 1;
  }
  const newline = text.indexOf('\n', at);
  // No line break: the rest when the file ended within the bytes read (a header alone), else too long to tell.
  const end = newline >= 0 ? newline : whole ? text.length : -1;
  if (end < 0) return undefined;
  return text.slice(at, end).replace(/\r$/, '');
}

/** Whether a file holds no header at all: nothing, or only a byte order mark, spaces and line breaks (a gzip file's inflated bytes too). */
export async function blankFile(file: string): Promise<boolean> {
  const gzip = file.toLowerCase().endsWith('.gz');
  let stream: Readable | undefined;
  try {
    // Read (a gzip file inflated) until the first byte that is not a byte order mark, a space or a line break: however long the blank run.
    if (gzip && (await stat(file)).size === 0) return true;
    stream = fileStream(file, HEADER_BYTES);
    // at: the bytes looked at; bom: how many of them began the file as its byte order mark
    let [at, bom] = [0, 0];
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      for (const byte of chunk) {
        if (at++ === bom && bom < BOM.length && byte === BOM[bom]) bom++;
        else if (!BLANK_BYTES.has(byte)) return false;
      }
    }
    return true;
  } catch {
    // unreadable, or not gzip: not blank; the read says why
    return false;
  } finally {
    stream?.destroy();
  }
}

/** A byte order mark's bytes in UTF-8, and the bytes of a blank line (spaces, tabs, line breaks). */
const BOM = [0xef, 0xbb, 0xbf];
const BLANK_BYTES = new Set([0x20, 0x09, 0x0a, 0x0d, 0x0b, 0x0c]);

/** The first two names (as written) of a column a CSV file's header names twice, also in another case, its header where the sniffer finds it; undefined when none is, or the header cannot be found. */
export async function namedTwice(db: Database, file: string): Promise<[string, string] | undefined> {
  const sniffed = await sniffedDialect(db, file);
  if (sniffed?.delimiter === undefined) return undefined;
  const header = await csvHeader(file, sniffed.delimiter.charCodeAt(0), sniffed.skip).catch(() => undefined);
  const seen = new Map<string, string>();
  for (const name of (header ?? []).map((n) => n.trim())) {
    const before = seen.get(name.toLowerCase());
    if (before !== undefined) return [before, name];
    seen.set(name.toLowerCase(), name);
  }
  return undefined;
}

/**
 * The Parquet files' columns and types, when some file has a column the table read lacks or types one
 * otherwise: every file's together from their footers first, in two statements (union_by_name: a
 * column only some file has, or one a file types wider; parquet_schema: a column the files do not all
 * type alike, such as a FLOAT after a DOUBLE, which union_by_name would give as the DOUBLE the read has),
 * and only then each file's own, to say which. Undefined when every file's columns are the table's,
 * typed alike.
 */
async function parquetColumns(db: Database, files: readonly string[], columns: readonly { name: string; type: string }[]): Promise<FileColumns | undefined> {
  const describe = async (list: readonly string[]) =>
    (await db.all<{ column_name: string; column_type: string }>(sql`DESCRIBE SELECT * FROM read_parquet(${pathList(list)}, union_by_name = true)`)).map((row) => ({
      name: String(row.column_name),
      type: String(row.column_type),
    }));
  const read = new Map(columns.map((c) => [c.name.toLowerCase(), c.type]));
  if ((await describe(files)).every((c) => read.get(c.name.toLowerCase()) === c.type) && (await typedAlike(db, files, [...read.keys()]))) return undefined;
  const each: FileColumns = new Map();
  for (const file of files) each.set(file, await describe([file]));
  return each;
}

/**
 * Whether every file types each of these columns (names in lower case) alike, from their footers in
 * one statement. A nested value's field of the same name counts too: it only sends the comparison to
 * each file's own columns.
 */
async function typedAlike(db: Database, files: readonly string[], names: readonly string[]): Promise<boolean> {
  const differ = await db.one<{ n: bigint | number }>(
    sql`SELECT count(*) AS n FROM (SELECT lower(name) AS column_name FROM parquet_schema(${pathList(files)}) WHERE lower(name) IN ${list(names)}
      GROUP BY column_name HAVING count(DISTINCT coalesce(duckdb_type, '')) > 1)`,
  );
  return Number(differ?.n ?? 0) === 0;
}
