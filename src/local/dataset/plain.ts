/**
 * Plain CSV and TSV files, which DuckDB can read without its sniffer. The sniffer tries some 30
 * dialects on each file, and on a small dataset it is most of the time spent reading it. A file
 * is plain when the dialect it would find leaves no doubt: the header is the first line, of plain
 * names; every record has as many fields; the line endings are of one kind; and nothing in it could
 * make another dialect win (a quote that is not RFC 4180's, a backslash or an apostrophe in a
 * quoted value, for CSV; any quote character, for TSV). Anything else is left to
 * the sniffer (reader.ts), and so is a plain read that fails, so results and errors stay the
 * sniffer's (test/csv-read.test.ts reads awkward files both ways).
 */
import { isUtf8 } from 'node:buffer';
import { readFile, stat } from 'node:fs/promises';
import { QueryTimeoutError, type Database } from '../db.js';
import { filesAsRead, GLOB_CHARACTER } from './globs.js';
import type { TableSource } from './types.js';

/**
 * The largest file read ahead of DuckDB: the sniffer reads a sample of a file, this check all
 * of it, so past this size the sniffer costs less than the check.
 */
export const PLAIN_MAX_BYTES = 4 << 20;

/** A column name DuckDB's header reading keeps as it is. */
const PLAIN_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * The records after the header, each with `columns` fields (or none: a blank line), matched one
 * after another from the start ('gy'), so that what is left unmatched is where the file stops being
 * plain. A quoted value is RFC 4180's (its quotes doubled), a whole field, without a backslash or
 * an apostrophe (another escape would read it differently); every line break is the header's kind.
 */
function recordPattern(delimiter: Delimiter, columns: number, crlf: boolean): RegExp {
  const d = delimiter === '\t' ? '\\t' : ',';
  const unquoted = `[^${d}\\r\\n"]*`;
  const quoted = crlf ? `"(?:[^"\\\\'\\r\\n]|""|\\r\\n)*"` : `"(?:[^"\\\\'\\r]|"")*"`;
  const field = delimiter === '\t' ? unquoted : `(?:${quoted}|${unquoted})`;
  return new RegExp(`(?:${field}(?:${d}${field}){${columns - 1}})?(?:${crlf ? '\\r\\n' : '\\n'}|$)`, 'gy');
}

export type Delimiter = ',' | '\t';

/** What a plain file is: its header's names, and what the sniffer of a table of several files compares. */
export interface PlainFile {
  names: string[];
  /** Its line breaks are CRLF (else LF, or none). */
  crlf: boolean;
  /** It holds two quotes in a row (a doubled quote, or an empty quoted value). */
  doubledQuotes: boolean;
}

/** A plain file (see the module's comment); undefined when the file is not plain. */
export function plainFile(bytes: Buffer, delimiter: Delimiter): PlainFile | undefined {
  if (!isUtf8(bytes)) return undefined;
  const bom = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf;
  // Latin-1 keeps a byte a character: UTF-8's bytes of other characters are all above ASCII.
  const text = bytes.toString('latin1', bom ? 3 : 0);
  // NUL, "no character" in the sniffer's options; quotes in TSV, whose quote the sniffer picks. (A # starts no comment: reader.ts.)
  if (text.includes('\0')) return undefined;
  if (delimiter === '\t' && (text.includes('"') || text.includes("'"))) return undefined;
  const lf = text.indexOf('\n');
  const crlf = lf > 0 && text[lf - 1] === '\r';
  const names = (lf < 0 ? text : text.slice(0, crlf ? lf - 1 : lf)).split(delimiter);
  if (!plainNames(names)) return undefined;
  if (lf >= 0 && text.slice(lf + 1).replace(recordPattern(delimiter, names.length, crlf), '') !== '') return undefined;
  return { names, crlf, doubledQuotes: text.includes('""') };
}

/**
 * Whether a table's plain files read as one: the same header; and, for several files, which the
 * sniffer reads one by one and refuses when their dialects differ, the same line breaks and no
 * doubled quotes (whose escape only some files would show).
 */
function readAsOne(files: PlainFile[]): boolean {
  const [first] = files;
  if (!first) return false;
  const header = first.names.join('\n');
  if (files.some((f) => f.names.join('\n') !== header)) return false;
  return files.length === 1 || files.every((f) => f.crlf === first.crlf && !f.doubledQuotes);
}

/** At least two names, each plain and named once (also in another case), none the reader's own __file. */
function plainNames(names: string[]): boolean {
  const lower = names.map((n) => n.toLowerCase());
  return names.length >= 2 && names.every((n) => PLAIN_NAME.test(n)) && new Set(lower).size === names.length && !lower.includes('__file');
}

/** The file's delimiter, when its name says CSV or TSV (a compressed file is left to the sniffer). */
function delimiterOf(file: string): Delimiter | undefined {
  const name = file.toLowerCase();
  return name.endsWith('.csv') ? ',' : name.endsWith('.tsv') ? '\t' : undefined;
}

/** The keys of a file's Hive partitions (the folders named key=value on its path), lower-cased. */
function hiveKeys(file: string): string[] {
  return file
    .split(/[\\/]/)
    .filter((segment) => segment.includes('='))
    .map((segment) => segment.slice(0, segment.indexOf('=')).toLowerCase());
}

/**
 * Whether DuckDB's globs find exactly the files discovery found: it reads a folder's hidden files
 * too, say, and takes a path holding a glob character as a glob.
 */
async function sameFiles(db: Database, source: TableSource): Promise<boolean> {
  const found = new Set(await filesAsRead(db, source));
  return found.size === source.files.length && source.files.every((f) => found.has(f));
}

/**
 * The columns of a CSV or TSV table whose files are all plain, of one delimiter, with the same
 * header; undefined when any is not (or cannot be read), so that the sniffer reads the table.
 */
export async function plainColumns(db: Database, source: TableSource): Promise<{ names: string[]; tab: boolean } | undefined> {
  if (source.format !== 'csv' || source.files.length === 0) return undefined;
  const delimiters = new Set(source.files.map(delimiterOf));
  const delimiter = [...delimiters][0];
  if (delimiters.size !== 1 || delimiter === undefined) return undefined;
  try {
    if (source.patterns.some((p) => GLOB_CHARACTER.test(p)) && !(await sameFiles(db, source))) return undefined;
    const files: PlainFile[] = [];
    for (const file of source.files) {
      if ((await stat(file)).size > PLAIN_MAX_BYTES) return undefined;
      const plain = plainFile(await readFile(file), delimiter);
      if (!plain) return undefined;
      files.push(plain);
    }
    if (!readAsOne(files)) return undefined;
    const names = files[0]!.names;
    const keys = new Set(source.hive ? source.files.flatMap(hiveKeys) : []);
    if (names.some((n) => keys.has(n.toLowerCase()))) return undefined;
    return { names, tab: delimiter === '\t' };
  } catch (error) {
    if (error instanceof QueryTimeoutError) throw error;
    return undefined;
  }
}
