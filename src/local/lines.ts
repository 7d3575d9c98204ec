/**
 * Physical line numbers in data files, for data errors that name the line
 * (docs/datasets.md). DuckDB reads the files; these scans run only when a
 * problem has been found, and stop as soon as every wanted record is placed.
 *
 * A line ends at CRLF, LF or a lone CR; the first line is 1.
 */
import { isUtf8 } from 'node:buffer';
import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { pipeline, type Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { withCommas } from '../words.js';
import { describeValue } from './dataset/problems.js';

const LF = 0x0a;
const CR = 0x0d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** A file's bytes, decompressed when it is gzipped, in chunks of `chunk` bytes. */
export function fileStream(path: string, chunk = 1 << 20): Readable {
  const file = createReadStream(path, { highWaterMark: chunk });
  if (!path.toLowerCase().endsWith('.gz')) return file;
  return pipeline(file, createGunzip(), () => undefined);
}

/** How DuckDB read a CSV file: what it skipped, and how many line breaks each record holds. */
export interface CsvLayout {
  /** Physical lines before the header (read_csv's skip, as the sniffer found it). */
  skipRows: number;
  /** Line breaks inside the header record (quoted column names). */
  headerBreaks: number;
  /** A file of one column reads a blank line as a record (a NULL value); otherwise blank lines are skipped. */
  blankIsRecord: boolean;
  /** Line breaks inside quoted values of data record i (0-based), for every record that has any. */
  breaks: ReadonlyMap<number, number>;
}

/**
 * Places record i's first line: remembers it if wanted, and says whether the
 * scan may stop (no wanted record comes after i).
 */
type Place = (record: number, line: number) => boolean;

/**
 * The common part of the record scans: the wanted records, where they were
 * found, and the file, opened only if a record is wanted. `scan` reads the
 * chunks, calls `place` as each record starts, and returns once it says stop.
 */
async function recordLines(
  path: string,
  wanted: Iterable<number>,
  scan: (chunks: AsyncIterable<Buffer>, place: Place) => Promise<void>,
): Promise<Map<number, number>> {
  const want = new Set(wanted);
  const found = new Map<number, number>();
  if (want.size === 0) return found;
  let last = 0;
  for (const w of want) last = Math.max(last, w);
  const stream = fileStream(path);
  try {
    await scan(stream as AsyncIterable<Buffer>, (record, line) => {
      if (want.has(record)) found.set(record, line);
      return record >= last;
    });
    return found;
  } finally {
    stream.destroy();
  }
}

/**
 * The physical line on which each wanted data record (0-based, in file order,
 * the header not counted) starts. Records not found (the file ended first) are absent.
 */
export function csvRecordLines(path: string, layout: CsvLayout, wanted: Iterable<number>): Promise<Map<number, number>> {
  return recordLines(path, wanted, async (chunks, place) => {
    let line = 1;
    let record = -1; // -1: the header is next
    let pending = 0; // further lines of the current record
    const onLine = (length: number): boolean => {
      const n = line++;
      if (n <= layout.skipRows) return false;
      if (pending > 0) {
        pending--;
        return false;
      }
      if (length === 0 && !(layout.blankIsRecord && record >= 0)) return false;
      if (record === -1) {
        pending = layout.headerBreaks;
        record = 0;
        return false;
      }
      const index = record++;
      pending = layout.breaks.get(index) ?? 0;
      return place(index, n);
    };

    let length = 0;
    let afterCR = false;
    for await (const chunk of chunks) {
      for (let i = 0; i < chunk.length; i++) {
        const b = chunk[i]!;
        if (b === LF) {
          if (afterCR) {
            afterCR = false;
            continue;
          }
          if (onLine(length)) return;
          length = 0;
        } else if (b === CR) {
          afterCR = true;
          if (onLine(length)) return;
          length = 0;
        } else {
          afterCR = false;
          length++;
        }
      }
    }
    if (length > 0) onLine(length);
  });
}

/**
 * The physical line on which each wanted JSON record (0-based) starts: a
 * top-level value, or an element of a top-level array. Strings may hold any
 * bracket; blank lines and records spread over several lines are counted.
 */
export function jsonRecordLines(path: string, wanted: Iterable<number>): Promise<Map<number, number>> {
  return recordLines(path, wanted, async (chunks, place) => {
    let line = 1;
    let afterCR = false;
    let depth = 0;
    let inString = false;
    let escaped = false;
    let recordDepth = -1; // 0: records are top-level values; 1: elements of a top-level array
    let record = 0;
    let first = true;
    for await (const chunk of chunks) {
      // A byte order mark is not a value.
      const bom = first && chunk[0] === 0xef && chunk[1] === 0xbb && chunk[2] === 0xbf ? 3 : 0;
      first = false;
      for (let i = bom; i < chunk.length; i++) {
        const b = chunk[i]!;
        if (b === LF) {
          if (!afterCR) line++;
          afterCR = false;
          continue;
        }
        afterCR = false;
        if (b === CR) {
          line++;
          afterCR = true;
          continue;
        }
        if (inString) {
          if (escaped) escaped = false;
          else if (b === BACKSLASH) escaped = true;
          else if (b === QUOTE) inString = false;
          continue;
        }
        if (b === 0x20 || b === 0x09 || b === 0x2c || b === 0x3a) continue; // space, tab, comma, colon
        if (recordDepth === -1) recordDepth = b === 0x5b /* [ */ ? 1 : 0;
        // A value that begins at the records' depth is a record (the closing ] of a top-level array is not).
        const starts = depth === recordDepth && b !== 0x5d && b !== 0x7d;
        if (starts && place(record++, line)) return;
        if (b === QUOTE) inString = true;
        else if (b === 0x7b || b === 0x5b) depth++; // { [
        else if (b === 0x7d || b === 0x5d) depth--; // } ]
        else if (starts) {
          // A scalar record (a number, true, null): skip its other bytes.
          while (i + 1 < chunk.length && !isDelimiter(chunk[i + 1]!)) i++;
        }
      }
    }
  });
}

function isDelimiter(b: number): boolean {
  return b === LF || b === CR || b === 0x20 || b === 0x09 || b === 0x2c || b === 0x5d || b === 0x7d;
}

export type LineEnding = 'CRLF' | 'LF' | 'CR';

/** How a file's first line (outside quotes) ends; undefined for a file of one line or none (dataset/endings.ts). */
export async function firstLineEnding(path: string): Promise<LineEnding | undefined> {
  let inQuotes = false;
  let afterCR = false;
  const stream = fileStream(path, 1 << 16);
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      for (const b of chunk) {
        if (afterCR) return b === LF ? 'CRLF' : 'CR';
        if (b === QUOTE) inQuotes = !inQuotes;
        else if (!inQuotes && b === CR) afterCR = true;
        else if (!inQuotes && b === LF) return 'LF';
      }
    }
    return afterCR ? 'CR' : undefined;
  } finally {
    stream.destroy();
  }
}

/**
 * The UTF-16 a file's text is in, told by its byte order mark (FF FE, FE FF: Excel's "Unicode
 * Text", Notepad's "UTF-16"), or undefined for any other start (a gzip file's inflated text).
 */
export async function utf16Of(path: string): Promise<'UTF-16LE' | 'UTF-16BE' | undefined> {
  const stream = fileStream(path, 1 << 14);
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      if (chunk.length < 2) return undefined;
      return chunk[0] === 0xff && chunk[1] === 0xfe ? 'UTF-16LE' : chunk[0] === 0xfe && chunk[1] === 0xff ? 'UTF-16BE' : undefined;
    }
    return undefined;
  } catch {
    return undefined;
  } finally {
    stream.destroy();
  }
}

/**
 * The first physical line whose bytes are not UTF-8 (a file saved as Windows-1250 or Latin-1), or
 * undefined when every line is. A line break is never part of a multi-byte character, so each run
 * of whole lines is checked at once, and only a run that fails is searched line by line.
 */
export async function firstNonUtf8Line(path: string): Promise<number | undefined> {
  let line = 1;
  let rest: Buffer = Buffer.alloc(0);
  const search = (bytes: Buffer): number | undefined => {
    if (isUtf8(bytes)) {
      for (let i = bytes.indexOf(LF); i >= 0; i = bytes.indexOf(LF, i + 1)) line++;
      return undefined;
    }
    let start = 0;
    for (;;) {
      const end = bytes.indexOf(LF, start);
      if (!isUtf8(bytes.subarray(start, end < 0 ? bytes.length : end))) return line;
      if (end < 0) return undefined;
      line++;
      start = end + 1;
    }
  };
  const stream = fileStream(path);
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      const bytes = rest.length ? Buffer.concat([rest, chunk]) : chunk;
      const last = bytes.lastIndexOf(LF);
      if (last < 0) {
        rest = bytes;
        continue;
      }
      const found = search(bytes.subarray(0, last + 1));
      if (found !== undefined) return found;
      rest = Buffer.from(bytes.subarray(last + 1));
    }
    return rest.length ? search(rest) : undefined;
  } catch {
    // A file that cannot be read to its end (gzip data cut off): the other diagnoses say where.
    return undefined;
  } finally {
    stream.destroy();
  }
}

/**
 * The first line whose ending differs from the first line's (line breaks inside
 * double-quoted values do not count), or undefined when the file uses one kind.
 */
export async function firstLineEndingChange(path: string): Promise<{ line: number; from: LineEnding; to: LineEnding } | undefined> {
  let line = 1;
  let inQuotes = false;
  let afterCR = false;
  let kind: LineEnding | undefined;
  const end = (ending: LineEnding) => {
    const n = line++;
    if (inQuotes) return undefined;
    if (kind === undefined) kind = ending;
    return ending === kind ? undefined : { line: n, from: kind, to: ending };
  };
  const stream = fileStream(path);
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      for (let i = 0; i < chunk.length; i++) {
        const b = chunk[i]!;
        if (afterCR) {
          afterCR = false;
          const change = end(b === LF ? 'CRLF' : 'CR');
          if (change) return change;
          if (b === LF) continue;
        }
        if (b === CR) afterCR = true;
        else if (b === LF) {
          const change = end('LF');
          if (change) return change;
        } else if (b === QUOTE) inQuotes = !inQuotes;
      }
    }
    return afterCR ? end('CR') : undefined;
  } finally {
    stream.destroy();
  }
}

/** The longest record DuckDB's CSV reader takes (its max_line_size default), in bytes. */
export const MAX_CSV_RECORD_BYTES = 2_000_000;

/** A problem of a CSV file's shape, found by diagnoseCsv. */
export interface CsvShapeProblem {
  /** The physical line where the record starts (or where the file breaks off). */
  line: number;
  /** The column the problem is in, as the header names it. */
  column?: string;
  message: string;
}

export interface CsvShapeOptions {
  /** The delimiter byte; when absent, the most frequent of , ; | and tab in the header line. */
  delimiter?: number;
  /** Columns whose values are numbers: an extra field there is most likely a decimal comma. */
  numericColumns?: ReadonlySet<string>;
  /** The longest record in bytes. */
  maxRecordBytes?: number;
  /** How many problems to find before the scan stops. */
  keep?: number;
}

export interface CsvShape {
  header: string[];
  delimiter: number;
  problems: CsvShapeProblem[];
  /** The scan stopped at `keep` problems: there may be more. */
  stopped: boolean;
}

const DELIMITERS = [0x2c, 0x3b, 0x7c, 0x09]; // , ; | tab
/** How much of a field's text a message may quote. */
const FIELD_KEEP = 64;

/** The delimiter of a CSV file: the most frequent candidate outside quotes on its first non-blank line. */
async function sniffDelimiter(path: string): Promise<number> {
  const counts = new Map<number, number>();
  let inQuotes = false;
  let seen = 0;
  const stream = fileStream(path);
  try {
    outer: for await (const chunk of stream as AsyncIterable<Buffer>) {
      for (let i = 0; i < chunk.length; i++) {
        const b = chunk[i]!;
        if (++seen > 1 << 20) break outer;
        if (b === QUOTE) inQuotes = !inQuotes;
        else if (!inQuotes && (b === LF || b === CR)) {
          if (counts.size > 0) break outer;
        } else if (!inQuotes && DELIMITERS.includes(b)) counts.set(b, (counts.get(b) ?? 0) + 1);
      }
    }
  } catch {
    // A file that cannot be read to its first line break: the header so far decides.
  } finally {
    stream.destroy();
  }
  let best = DELIMITERS[0]!;
  for (const d of DELIMITERS) if ((counts.get(d) ?? 0) > (counts.get(best) ?? 0)) best = d;
  return best;
}

// States of a CSV field: at its start, unquoted, inside quotes, just after a quote inside quotes.
const START = 0;
const PLAIN = 1;
const QUOTED = 2;
const CLOSED = 3;
/** The most fields of a record whose text is kept (the rest are counted). */
const MAX_FIELDS = 4096;

/**
 * The fields of the CSV record being read: where each one's first bytes (enough to quote it) lie,
 * how many were kept, and whether it was longer. Text is made only for a record that is reported.
 */
class RecordFields {
  private readonly bytes = Buffer.alloc(FIELD_KEEP * MAX_FIELDS);
  private readonly starts = new Int32Array(MAX_FIELDS);
  private readonly lengths = new Int32Array(MAX_FIELDS);
  private readonly cut = new Uint8Array(MAX_FIELDS);
  /** Bytes used in `bytes`. */
  private used = 0;
  /** Bytes kept of the current field, and its length. */
  private kept = 0;
  private fieldBytes = 0;
  /** Fields of the record so far. */
  count = 0;

  /** A byte of the current field. */
  add(b: number): void {
    this.fieldBytes++;
    if (this.kept < FIELD_KEEP && this.used < this.bytes.length) {
      this.bytes[this.used++] = b;
      this.kept++;
    }
  }

  endField(): void {
    if (this.count < MAX_FIELDS) {
      this.starts[this.count] = this.used - this.kept;
      this.lengths[this.count] = this.kept;
      this.cut[this.count] = this.fieldBytes > this.kept ? 1 : 0;
    }
    this.count++;
    this.kept = 0;
    this.fieldBytes = 0;
  }

  /** Ends the record (and its last field): how many fields it had. Their texts stay readable until the next byte. */
  endRecord(): number {
    this.endField();
    const fields = this.count;
    this.count = 0;
    this.used = 0;
    return fields;
  }

  /** The texts of the last record's `count` fields, as far as kept ("…" where cut). */
  texts(count: number): string[] {
    const out: string[] = [];
    for (let f = 0; f < Math.min(count, MAX_FIELDS); f++) {
      out.push(this.bytes.toString('utf8', this.starts[f]!, this.starts[f]! + this.lengths[f]!) + (this.cut[f] ? '…' : ''));
    }
    while (out.length < count) out.push('…');
    return out;
  }
}

/** The scan of diagnoseCsv: an RFC 4180 reader fed chunk by chunk, keeping the problems it finds. */
class CsvShapeScan {
  private readonly problems: CsvShapeProblem[] = [];
  private header: string[] | undefined;
  /** The physical line being read, and where the current record starts. */
  private line = 1;
  private recordLine = 1;
  private readonly fields = new RecordFields();
  private recordBytes = 0;
  private tooLong: { column: string | undefined } | undefined;
  private state = START;
  private atRecordStart = true;
  private afterCR = false;

  constructor(
    readonly delimiter: number,
    private readonly maxBytes: number,
    private readonly keep: number,
    private readonly numericColumns: ReadonlySet<string> | undefined,
  ) {}

  private columnAt(index: number): string | undefined {
    const header = this.header;
    return header && index < header.length ? header[index] : header?.at(-1);
  }

  /** Reads a chunk; true once `keep` problems are found (the scan stops). */
  read(chunk: Buffer): boolean {
    const n = chunk.length;
    for (let i = 0; i < n; i++) {
      const b = chunk[i]!;
      if (b === LF || b === CR) {
        if (this.lineBreak(b)) return true;
      } else this.byte(b);
    }
    return false;
  }

  /** A line break: part of a quoted value, or the end of a record. True when the scan stops. */
  private lineBreak(b: number): boolean {
    const second = b === LF && this.afterCR;
    this.afterCR = b === CR;
    if (second) return false;
    if (this.state === QUOTED) {
      // A line break inside a quoted value: part of the value.
      this.line++;
      this.fields.add(b);
      return false;
    }
    if (!this.atRecordStart) {
      this.endRecord();
      if (this.problems.length >= this.keep) return true;
    }
    this.line++;
    return false;
  }

  /** Any other byte: a field's, a delimiter, a quote. */
  private byte(b: number): void {
    this.afterCR = false;
    if (this.atRecordStart) {
      this.atRecordStart = false;
      this.recordLine = this.line;
    }
    if (++this.recordBytes > this.maxBytes && this.tooLong === undefined) this.tooLong = { column: this.columnAt(this.fields.count) };
    if (this.state === START) {
      if (b === QUOTE) {
        this.state = QUOTED;
        return;
      }
      this.state = PLAIN;
    }
    if (this.state === PLAIN) {
      if (b === this.delimiter) return this.nextField();
    } else if (this.state === QUOTED) {
      if (b === QUOTE) {
        this.state = CLOSED;
        return;
      }
    } else if (b === QUOTE) {
      // state CLOSED: a doubled quote is one quote of the value
      this.state = QUOTED;
    } else if (b === this.delimiter) {
      return this.nextField();
    } else this.state = PLAIN;
    this.fields.add(b);
  }

  private nextField(): void {
    this.fields.endField();
    this.state = START;
  }

  /** The end of a record: the header, or a record checked against it (its size, its number of fields). */
  private endRecord(): void {
    this.atRecordStart = true;
    this.state = START;
    const fields = this.fields.endRecord();
    const size = this.recordBytes;
    this.recordBytes = 0;
    const long = this.tooLong;
    this.tooLong = undefined;
    if (long) {
      this.problems.push({
        line: this.recordLine,
        ...(long.column ? { column: long.column } : {}),
        message: `the line is ${withCommas(size)} bytes long; a record may hold at most ${withCommas(this.maxBytes)} bytes (it passes the limit in this column)`,
      });
    } else if (!this.header) {
      this.header = this.fields.texts(fields);
    } else if (fields !== this.header.length) {
      this.problems.push(shapeProblem(this.recordLine, this.header, this.fields.texts(fields), this.numericColumns));
    }
  }

  /** The file ended: a quoted value never closed, or the last record (without a line break after it). */
  end(): void {
    if (this.state === QUOTED) {
      const column = this.columnAt(this.fields.count);
      this.problems.push({
        line: this.recordLine,
        ...(column ? { column } : {}),
        message: 'a quoted value starts in this line and is never closed (a " is missing)',
      });
    } else if (!this.atRecordStart) this.endRecord();
  }

  /** The file could not be read on (a truncated or corrupt gzip stream, say). */
  breaksOff(path: string, error: unknown): void {
    const reason = error instanceof Error ? error.message : String(error);
    const column = this.atRecordStart ? undefined : this.columnAt(this.fields.count);
    this.problems.push({
      line: this.atRecordStart ? this.line : this.recordLine,
      ...(column ? { column } : {}),
      message: `the file breaks off here: ${path.toLowerCase().endsWith('.gz') ? 'the gzip data is truncated or corrupt' : 'it cannot be read'} (${reason})`,
    });
  }

  result(stopped: boolean): CsvShape {
    return { header: this.header ?? [], delimiter: this.delimiter, problems: this.problems, stopped };
  }
}

/**
 * Reads a CSV file as RFC 4180 says (double quotes, doubled inside a quoted value) and
 * finds what DuckDB's reader cannot take: a record with more or fewer fields than the header,
 * a record longer than the reader's limit, a quoted value never closed, a compressed file that
 * breaks off. Run only after the reader failed, to say where and why: it reads the file up to
 * the `keep`-th problem (the whole file when there are fewer).
 * Blank lines are skipped; so are lines starting with # when the header does not.
 */
export async function diagnoseCsv(path: string, options: CsvShapeOptions = {}): Promise<CsvShape> {
  const delimiter = options.delimiter ?? (await sniffDelimiter(path));
  const scan = new CsvShapeScan(delimiter, options.maxRecordBytes ?? MAX_CSV_RECORD_BYTES, options.keep ?? 3, options.numericColumns);
  const stream = fileStream(path);
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      if (scan.read(chunk)) return scan.result(true);
    }
  } catch (error) {
    scan.breaksOff(path, error);
    return scan.result(false);
  } finally {
    stream.destroy();
  }
  scan.end();
  return scan.result(false);
}

/** What is wrong with a record of `record.length` fields under a header of another length. */
function shapeProblem(line: number, header: string[], record: string[], numeric: ReadonlySet<string> = new Set()): CsvShapeProblem {
  const counts = `${record.length} field${record.length === 1 ? '' : 's'} where the header has ${header.length} columns`;
  if (record.length > header.length) {
    if (record.length === header.length + 1) {
      // A decimal comma splits one number in two: an integer, then one to four digits.
      const candidates: number[] = [];
      for (let i = 0; i < header.length; i++) {
        if (/^[+-]?\d+$/.test(record[i]!.trim()) && /^\d{1,4}$/.test(record[i + 1]!.trim())) candidates.push(i);
      }
      // Merged there, the record must read well: every other number column holds a number (or nothing).
      const reads = (i: number) =>
        header.every((name, j) => j === i || !numeric.has(name.toLowerCase()) || /^\s*([+-]?(\d+(\.\d*)?|\.\d+))?\s*$/.test(record[j > i ? j + 1 : j]!));
      const fitting = candidates.filter(reads);
      const at = fitting.find((i) => numeric.has(header[i]!.toLowerCase())) ?? fitting[0];
      if (at !== undefined) {
        const value = `${record[at]!.trim()},${record[at + 1]!.trim()}`;
        return {
          line,
          column: header[at]!,
          message: `${counts}: ${describeValue(value)} looks like a number with a decimal comma; write it with a dot (${value.replace(',', '.')}) or quote it`,
        };
      }
    }
    const surplus = record.slice(header.length).map(describeValue).join(', ');
    return { line, column: header.at(-1)!, message: `${counts}: more values than columns (after this column: ${surplus})` };
  }
  const missing = header.slice(record.length);
  return {
    line,
    column: header[record.length]!,
    message: `${counts}: the line ends before this column (no value for ${missing.join(', ')})`,
  };
}

export interface JsonLinesProblem {
  line: number;
  column?: string;
  message: string;
}

/**
 * Reads a JSON Lines file and finds the records JSON cannot parse, by the physical
 * line where each starts (blank lines count). A record may span lines. Run only after
 * DuckDB's reader failed.
 */
export async function diagnoseJsonLines(path: string, keep = 3): Promise<{ problems: JsonLinesProblem[]; stopped: boolean }> {
  const problems: JsonLinesProblem[] = [];
  const broken = (line: number, failure: NonNullable<ReturnType<typeof parseFailure>>) => {
    problems.push({ line, ...(failure.key ? { column: failure.key } : {}), message: `the record is not valid JSON: ${failure.message}` });
  };
  // A record that does not parse on its own line, but may be completed by the next ones.
  let pending: { line: number; text: string; failure: NonNullable<ReturnType<typeof parseFailure>> } | undefined;
  let line = 0;
  const stopped = await eachLine(path, (raw) => {
    if (problems.length >= keep) return true;
    line++;
    const text = line === 1 ? raw.replace(/^\uFEFF/, '') : raw;
    if (pending) {
      const joined = `${pending.text}\n${text}`;
      const failure = parseFailure(joined);
      if (!failure) {
        pending = undefined;
        return false;
      }
      if (text.trim() === '' || (failure.incomplete && parseFailure(text) !== undefined && joined.length < 64 << 20)) {
        pending.text = joined;
        pending.failure = failure;
        return false;
      }
      // This line starts a record of its own: the pending one is broken as it stood.
      broken(pending.line, pending.failure);
      pending = undefined;
    }
    if (text.trim() === '') return false;
    const failure = parseFailure(text);
    if (!failure) return false;
    if (failure.incomplete) pending = { line, text, failure };
    else broken(line, failure);
    return false;
  });
  if (pending && !stopped) broken(pending.line, pending.failure);
  return { problems, stopped };
}

/**
 * Walks JSON text up to `end` (a parser's error position): the physical line reached, and the
 * last key seen of the value's object (one value) or of the current record's object (array: the
 * records of a top-level array are counted, the key is reset at each).
 */
function scanJson(text: string, end: number, array: boolean): { line: number; record: number; key?: string } {
  const keyDepth = array ? 2 : 1;
  let line = 1;
  let depth = 0;
  let inString = false;
  let start = -1;
  let last = '';
  let record = 0;
  let key: string | undefined;
  for (let i = 0; i < end; i++) {
    const c = text[i]!;
    if (c === '\n' || (c === '\r' && text[i + 1] !== '\n')) line++;
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') {
        inString = false;
        last = text.slice(start, i + 1);
      }
      continue;
    }
    if (array && depth === 1 && !/[\s,\]]/.test(c)) {
      record++;
      key = undefined;
    }
    if (c === '"') {
      inString = true;
      start = i;
    } else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') depth--;
    else if (c === ':' && depth === keyDepth && last) {
      try {
        key = JSON.parse(last) as string;
      } catch {
        // not a key
      }
    }
    if (array && depth === 1 && c !== '[' && c !== '{' && c !== '"' && !/[\s,\]]/.test(c)) {
      // a scalar record: skip to its end
      while (i + 1 < end && !/[\s,\]]/.test(text[i + 1]!)) i++;
    }
  }
  return { line, record, ...(key ? { key } : {}) };
}

/** Why a text is not one JSON value: the parser's message, the top-level key it was in, and whether more text could complete it. */
function parseFailure(text: string): { message: string; key?: string; incomplete: boolean } | undefined {
  try {
    JSON.parse(text);
    return undefined;
  } catch (error) {
    const message = (error instanceof Error ? error.message : String(error)).replace(/^JSON\.parse: /, '');
    const position = /position (\d+)/.exec(message);
    const at = position ? Number(position[1]) : text.length;
    const incomplete = /end of (JSON )?(input|data)|Unterminated string/i.test(message);
    // The last top-level key before the error.
    const { key } = scanJson(text, Math.min(at, text.length), false);
    return { message: message.replace(/\s+/g, ' ').slice(0, 200), ...(key ? { key } : {}), incomplete };
  }
}

/** Calls onLine with each physical line's text (CRLF, LF or a lone CR end a line) until it says stop; true if it did. */
async function eachLine(path: string, onLine: (text: string) => boolean): Promise<boolean> {
  const stream = fileStream(path);
  let parts: Buffer[] = [];
  let afterCR = false;
  const emit = () => {
    const stop = onLine(Buffer.concat(parts).toString('utf8'));
    parts = [];
    return stop;
  };
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      let from = 0;
      for (let i = 0; i < chunk.length; i++) {
        const b = chunk[i]!;
        if (b === LF && afterCR) {
          afterCR = false;
          from = i + 1;
          continue;
        }
        afterCR = b === CR;
        if (b === LF || b === CR) {
          parts.push(chunk.subarray(from, i));
          if (emit()) return true;
          from = i + 1;
        }
      }
      if (from < chunk.length) parts.push(chunk.subarray(from));
    }
    if (parts.length && Buffer.concat(parts).length) return emit();
    return false;
  } finally {
    stream.destroy();
  }
}

/** The header record's fields of a CSV file (after `skipRows` lines), as written. */
export async function csvHeader(path: string, delimiter: number, skipRows = 0): Promise<string[]> {
  const fields: string[] = [];
  let field: number[] = [];
  let state = 'start' as 'start' | 'plain' | 'quoted' | 'quote';
  let line = 1;
  let afterCR = false;
  let started = false;
  const stream = fileStream(path);
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      for (let i = 0; i < chunk.length; i++) {
        const b = chunk[i]!;
        if ((b === LF || b === CR) && state !== 'quoted') {
          const second = b === LF && afterCR;
          afterCR = b === CR;
          if (second) continue;
          if (line++ <= skipRows) continue;
          if (!started) continue; // blank lines before the header
          fields.push(Buffer.from(field).toString('utf8'));
          return fields;
        }
        afterCR = false;
        if (line <= skipRows) continue;
        if (!started && line === 1 && fields.length === 0 && field.length === 0 && b === 0xef) {
          // a byte order mark: skip its three bytes
          i += 2;
          continue;
        }
        started = true;
        if (state === 'start' && b === QUOTE) state = 'quoted';
        else if (state === 'quoted') state = b === QUOTE ? 'quote' : (field.push(b), 'quoted');
        else if (b === delimiter) {
          fields.push(Buffer.from(field).toString('utf8'));
          field = [];
          state = 'start';
        } else if (state === 'quote' && b === QUOTE) {
          field.push(b);
          state = 'quoted';
        } else {
          field.push(b);
          state = 'plain';
        }
        if (field.length > 4096) return fields;
      }
    }
    if (started) fields.push(Buffer.from(field).toString('utf8'));
    return fields;
  } finally {
    stream.destroy();
  }
}

/**
 * Where a JSON file (an array of records) stops being JSON: the physical line, the
 * record (1-based place in the array) and the key it was in. Undefined when it parses,
 * or is too large to read whole (over 256 MB). Run only after DuckDB's reader failed.
 */
export async function diagnoseJsonArray(path: string): Promise<{ line: number; record?: number; column?: string; message: string } | undefined> {
  if ((await stat(path)).size > 256 << 20) return undefined;
  const text = (await readFile(path, 'utf8')).replace(/^\uFEFF/, '');
  let message: string;
  try {
    JSON.parse(text);
    return undefined;
  } catch (error) {
    message = (error instanceof Error ? error.message : String(error)).replace(/\s+/g, ' ');
  }
  const position = /position (\d+)/.exec(message);
  const at = position ? Math.min(Number(position[1]), text.length) : text.length;
  const { line, record, key } = scanJson(text, at, true);
  return {
    line,
    ...(record > 0 ? { record } : {}),
    ...(key ? { column: key } : {}),
    message: `the file is not valid JSON: ${message.replace(/^JSON\.parse: /, '').slice(0, 200)}`,
  };
}
