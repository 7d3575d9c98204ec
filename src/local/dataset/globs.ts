/**
 * The files DuckDB's read of a table takes, and in which order: each pattern's glob in turn (a
 * folder's files of one suffix, then of the next; within a glob, a folder's own files before its
 * subfolders'). The rows of a table follow this order, so a record's row id is its place in it.
 */
import type { Database } from '../db.js';
import { literal, sql } from '../sql.js';
import type { TableSource } from './types.js';

/** A character that makes a path a glob to DuckDB's readers. */
export const GLOB_CHARACTER = /[*?[\]{}]/;

/** The files the one read of source takes, in its order. */
export async function filesAsRead(db: Database, source: Pick<TableSource, 'patterns'>): Promise<string[]> {
  const files: string[] = [];
  for (const pattern of source.patterns) {
    for (const row of await db.all<{ file: string }>(sql`SELECT file FROM glob(${literal(pattern)})`)) files.push(row.file);
  }
  return files;
}
