/**
 * Physical line numbers in data files, for data errors that name the line
 * (the README's Datasets section). DuckDB reads the files; these scans run only when a
 * problem has been found, and stop as soon as every wanted record is placed.
 *
 * A line ends at CRLF, LF or a lone CR; the first line is 1.
 */
import { createReadStream } from 'node:fs';
import { pipeline, type Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';

const LF = 0x0a;
const CR = 0x0d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

function open(path: string): Readable {
  const file = createReadStream(path, { highWaterMark: 1 << 20 });
  if (!path.toLowerCase().endsWith('.gz')) return file;
  return pipeline(file, createGunzip(), () => undefined);
}

/** How DuckDB read a CSV file: what it skipped, and how many line breaks each record holds. */
export interface CsvLayout {
  /** Physical lines before the header (read_csv's skip, as the sniffer found it). */
  skipRows: number;
  /** The byte that starts a comment line, if the sniffer found one. */
  comment?: number;
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
  const stream = open(path);
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
    const onLine = (length: number, first: number): boolean => {
      const n = line++;
      if (n <= layout.skipRows) return false;
      if (pending > 0) {
        pending--;
        return false;
      }
      if (length === 0 && !(layout.blankIsRecord && record >= 0)) return false;
      if (layout.comment !== undefined && length > 0 && first === layout.comment) return false;
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
    let first = -1;
    let afterCR = false;
    for await (const chunk of chunks) {
      for (let i = 0; i < chunk.length; i++) {
        const b = chunk[i]!;
        if (b === LF) {
          if (afterCR) {
            afterCR = false;
            continue;
          }
          if (onLine(length, first)) return;
          length = 0;
        } else if (b === CR) {
          afterCR = true;
          if (onLine(length, first)) return;
          length = 0;
        } else {
          afterCR = false;
          if (length === 0) first = b;
          length++;
        }
      }
    }
    if (length > 0) onLine(length, first);
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
  const stream = open(path);
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
