/**
 * Columns named twice in a file, also in another case: names match case-insensitively, so either
 * could be read, and the table is refused with both named.
 */
import type { Database } from '../db.js';
import { csvHeader } from '../lines.js';
import { sql } from '../sql.js';
import { fileLabel } from './problems.js';
import { pathList, sniffedDialect } from './reader.js';
import type { FileProblem, TableSource } from './types.js';
import { quoted } from '../../words.js';

type Named = (file: string, first: string, second: string, at?: [number, number]) => void;

/**
 * The duplicate columns of a table, from the names DuckDB read (`names`). DuckDB renames the
 * second of a CSV header to NAME_1, and of JSON keys that differ in case: only then are the
 * files read again, to name both as written.
 */
export async function duplicateColumns(db: Database, dir: string, source: TableSource, names: string[]): Promise<FileProblem[]> {
  const problems: FileProblem[] = [];
  const named: Named = (file, first, second, at) => {
    const columns = at ? ` (columns ${at[0]} and ${at[1]})` : '';
    problems.push({
      table: source.table,
      file,
      column: first,
      message:
        first === second
          ? `the column is named twice${columns}; keep one of them`
          : `the column is named twice, as ${quoted(first)} and ${quoted(second)}${columns}; names match case-insensitively, so keep one of them`,
    });
  };
  const lower = names.map((n) => n.toLowerCase());
  lower.forEach((name, i) => {
    const first = lower.indexOf(name);
    if (first < i) named(source.display, names[first]!, names[i]!);
  });
  const renamed = lower.some((name) => {
    const m = /^(.+)_\d+$/.exec(name);
    return m !== null && lower.includes(m[1]!);
  });
  if (!renamed) return problems;
  if (source.format === 'json') await jsonKeys(db, source, named);
  else if (source.format === 'csv') await csvHeaders(db, dir, source, named);
  return problems;
}

/** The keys as the records hold them (DuckDB renamed the second of two that differ in case). */
async function jsonKeys(db: Database, source: TableSource, named: Named): Promise<void> {
  try {
    const keys = await db.all<{ k: string }>(
      sql`SELECT DISTINCT unnest(json_keys(json)) AS k FROM read_json_objects(${pathList(source.patterns)}, format = 'auto') ORDER BY k DESC`,
    );
    const seen = new Map<string, string>();
    for (const { k } of keys) {
      const first = seen.get(k.toLowerCase());
      if (first === undefined) seen.set(k.toLowerCase(), k);
      else named(source.display, first, k);
    }
  } catch {
    // Unreadable as objects: the reader's own view stands.
  }
}

/** Each file's header as written, with the places of a name found twice. */
async function csvHeaders(db: Database, dir: string, source: TableSource, named: Named): Promise<void> {
  for (const file of source.files) {
    let header: string[];
    try {
      const sniff = await sniffedDialect(db, file);
      header = await csvHeader(file, (sniff?.delimiter ?? ',').charCodeAt(0), sniff?.skip ?? 0);
    } catch {
      continue;
    }
    const seen = new Map<string, number>();
    header.forEach((name, i) => {
      const key = name.trim().toLowerCase();
      const first = seen.get(key);
      if (first === undefined) seen.set(key, i);
      else named(fileLabel(dir, source, file), header[first]!, name, [first + 1, i + 1]);
    });
  }
}
