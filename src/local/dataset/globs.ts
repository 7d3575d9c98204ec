/**
 * The files DuckDB's read of a table takes, and in which order: each pattern's glob in turn (a
 * folder's files of one suffix, then of the next; within a glob, a folder's own files before its
 * subfolders'). The rows of a table follow this order, so a record's row id is its place in it.
 */
import type { Database } from '../db.js';
import { int, join, literal, sql, trusted } from '../sql.js';
import type { TableSource } from './types.js';

/** A character that makes a path a glob to DuckDB's readers. */
export const GLOB_CHARACTER = /[*?[\]{}]/;

/** The files the one read of source takes, in its order. */
export async function filesAsRead(db: Database, source: Pick<TableSource, 'patterns'>): Promise<string[]> {
  return (await everyFileAsRead(db, [source]))[0]!;
}

/**
 * The files the read of each source takes, in its order, from one statement: every pattern's glob
 * in one UNION ALL, each row naming its source, its pattern and its place in the glob's list, and
 * sorted by them (a UNION ALL on several threads need not keep its branches' order).
 */
export async function everyFileAsRead(db: Database, sources: readonly Pick<TableSource, 'patterns'>[]): Promise<string[][]> {
  const out = sources.map((): string[] => []);
  const globs = sources.flatMap((source, i) =>
    source.patterns.map((pattern, k) => sql`SELECT ${int(i)} AS s, ${int(k)} AS g, row_number() OVER () AS n, file FROM glob(${literal(pattern)})`),
  );
  if (globs.length === 0) return out;
  const rows = await db.all<{ s: number; file: string }>(sql`SELECT s, file FROM (${join(globs, trusted(' UNION ALL '))}) ORDER BY s, g, n`);
  for (const row of rows) out[row.s]!.push(row.file);
  return out;
}
