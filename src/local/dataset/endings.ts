/**
 * The line endings of a folder's CSV files, when they differ: DuckDB's reader reads a folder with
 * the dialect of its first file and refuses a file whose lines end otherwise, so load.ts then
 * reads each run of files that agree on its own (in the order the one read takes them) and puts
 * the runs one after another. Used only after the one read failed: a folder whose files agree is
 * read once, as before.
 */
import { QueryTimeoutError, type Database } from '../db.js';
import { firstLineEnding, type LineEnding } from '../lines.js';
import { filesAsRead, GLOB_CHARACTER } from './globs.js';
import type { TableSource } from './types.js';

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
    const runs: { ending: LineEnding | undefined; files: string[] }[] = [];
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
