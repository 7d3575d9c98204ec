/**
 * The line endings of a folder's CSV files, when they differ: DuckDB's reader reads a folder with
 * the dialect of its first file and refuses a file whose lines end otherwise, so load.ts then
 * reads each run of files that agree on its own (in the order the one read takes them) and puts
 * the runs one after another. Used only after the one read failed: a folder whose files agree is
 * read once, as before.
 */
import { createReadStream } from 'node:fs';
import { pipeline, type Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { QueryTimeoutError, type Database } from '../db.js';
import { filesAsRead, GLOB_CHARACTER } from './globs.js';
import type { TableSource } from './types.js';

type Ending = 'CRLF' | 'LF' | 'CR';

/** A file's bytes, decompressed when it is gzipped. */
function bytesOf(path: string): Readable {
  const file = createReadStream(path, { highWaterMark: 1 << 16 });
  return path.toLowerCase().endsWith('.gz') ? pipeline(file, createGunzip(), () => undefined) : file;
}

/** How a file's first line (outside quotes) ends; undefined for a file of one line or none. */
export async function firstLineEnding(path: string): Promise<Ending | undefined> {
  let inQuotes = false;
  let afterCR = false;
  const stream = bytesOf(path);
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      for (const b of chunk) {
        if (afterCR) return b === 0x0a ? 'CRLF' : 'CR';
        if (b === 0x22) inQuotes = !inQuotes; // "
        else if (!inQuotes && b === 0x0d) afterCR = true; // CR
        else if (!inQuotes && b === 0x0a) return 'LF';
      }
    }
    return afterCR ? 'CR' : undefined;
  } finally {
    stream.destroy();
  }
}

/**
 * The files of a folder of CSV files in runs of one line ending, in the order the one read takes
 * them; undefined when they all end alike (or a path holds a glob character, or a file cannot be
 * read), so that the one read's error stands. A file of one line joins the run it follows.
 */
export async function lineEndingRuns(db: Database, source: TableSource): Promise<string[][] | undefined> {
  if (source.format !== 'csv' || !source.multiFile) return undefined;
  try {
    const files = await filesAsRead(db, source);
    if (files.length < 2 || files.some((f) => GLOB_CHARACTER.test(f))) return undefined;
    const runs: { ending: Ending | undefined; files: string[] }[] = [];
    for (const file of files) {
      const ending = await firstLineEnding(file);
      const last = runs.at(-1);
      if (last && (ending === undefined || last.ending === undefined || ending === last.ending)) {
        last.ending ??= ending;
        last.files.push(file);
      } else runs.push({ ending, files: [file] });
    }
    return runs.length > 1 ? runs.map((r) => r.files) : undefined;
  } catch (error) {
    if (error instanceof QueryTimeoutError) throw error;
    return undefined;
  }
}
