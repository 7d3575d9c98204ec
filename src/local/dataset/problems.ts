/** How a problem in a dataset's files is told: the place (file, line, column) and the value. */
import { relative } from 'node:path';
import { DataError } from '../../errors.js';
import type { FileProblem, TableSource } from './types.js';
import { quoted } from '../../words.js';

/** A table the reader could not read, with where and why: a data error (exit 2) that names each place. */
export class UnreadableTableError extends DataError {
  constructor(
    readonly source: TableSource,
    readonly problems: FileProblem[],
  ) {
    super(`cannot read ${source.display}:`, problems.map(formatFileProblem));
  }
}

export function formatFileProblem(p: FileProblem): string {
  const where = [p.file, p.line, p.column ? `column ${p.column}` : undefined].filter(Boolean).join(', ');
  return `${where}: ${p.message}`;
}

/** How a message names a file of a table: the table's own name, or the file's path in the dataset for a folder of files. */
export function fileLabel(datasetDir: string, source: TableSource, file: unknown): string {
  if (!source.multiFile || typeof file !== 'string') return source.display;
  return relative(datasetDir, file);
}

/** A value quoted for a message (the first 40 characters), or "empty". */
export function describeValue(value: unknown): string {
  if (value === null || value === undefined) return 'empty';
  // A typed timestamp (Parquet, JSON) as the ISO 8601 text a data file would hold, not Date's own words.
  const text = value instanceof Date && !Number.isNaN(value.getTime()) ? value.toISOString() : String(value);
  return quoted(text.length > 40 ? `${text.slice(0, 40)}…` : text);
}

/** The first line of an error's message. */
export function firstLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.split('\n')[0] ?? text;
}
