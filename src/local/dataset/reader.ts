/** How DuckDB reads a table's files: the table function, the raw table it fills, and each raw record's place. */
import type { Database } from '../db.js';
import { EMPTY, ident, join, literal, sql, type Sql } from '../sql.js';
import { plainColumns } from './plain.js';
import type { LoadedTable, TableSource } from './types.js';

/**
 * How read_csv is told the dialect of a file. CSV: RFC 4180's double quote (sniffed, it would be
 * "none" for a file whose first quoted value lies past the sniffer's sample). TSV: the tab, with
 * quoting as sniffed, since TSV rarely quotes and a cell may well begin with a bare quote. Neither
 * has comment lines (RFC 4180 knows none): sniffed, a `#` at the start of a record, as in an order
 * id `#1002`, would make DuckDB skip that record, and cut a value at a later `#`, without a word.
 */
export function csvDialect(files: readonly string[]): Sql {
  return files.every((f) => f.toLowerCase().endsWith('.tsv')) ? sql`delim = '\t', comment = ''` : sql`quote = '"', comment = ''`;
}

/** A list of paths (or globs) for a table function: constants, as table functions take no parameters. */
export function pathList(paths: readonly string[]): Sql {
  return sql`[${join(paths.map(literal))}]`;
}

/** The table function that reads a source with every column as found, plus the file name. */
export function readExpression(source: TableSource): Sql {
  const path = pathList(source.patterns);
  const hive = source.hive ? sql`, hive_partitioning = true` : EMPTY;
  switch (source.format) {
    case 'csv':
      return sql`read_csv(${path}, header = true, all_varchar = true, ${csvDialect(source.patterns)}, filename = '__file'${hive})`;
    case 'parquet':
      return sql`read_parquet(${path}, filename = '__file'${hive})`;
    case 'json':
      // Every record of every file sampled for the columns and their types: by default DuckDB looks at
      // the first 20,480 records of the first 32 files, and refuses a key it first meets later
      // ("JSON transform error ... unknown key": a status exported from record 30,000 on).
      return sql`read_json(${path}, format = 'auto', sample_size = -1, maximum_sample_files = -1, filename = '__file'${hive})`;
  }
}

/**
 * The read of a CSV or TSV table without the sniffer, when its files are plain (plain.ts): the
 * dialect and the columns it would find, spelled out. Undefined for any other table, which
 * readExpression reads; load.ts falls back to it as well when this read fails. `columns`: what
 * DESCRIBE says of the table it fills (the names given, then __file, all text), known without
 * asking when no Hive partition adds columns of its own.
 */
export async function plainReadExpression(
  db: Database,
  source: TableSource,
): Promise<{ read: Sql; columns?: { column_name: string; column_type: string }[] } | undefined> {
  const plain = await plainColumns(db, source);
  if (!plain) return undefined;
  const path = pathList(source.patterns);
  const hive = source.hive ? sql`, hive_partitioning = true` : EMPTY;
  const delim = plain.tab ? sql`'\t'` : sql`','`;
  const columns = join(plain.names.map((name) => sql`${literal(name)}: 'VARCHAR'`));
  const read = sql`read_csv(${path}, header = true, auto_detect = false, all_varchar = true, delim = ${delim}, quote = '"', escape = '"', columns = {${columns}}, filename = '__file'${hive})`;
  if (source.hive) return { read };
  return { read, columns: [...plain.names, '__file'].map((name) => ({ column_name: name, column_type: 'VARCHAR' })) };
}

/** The raw table (or view, for Parquet) raw_<name> that holds a table's records as read. */
export function rawTable(table: string): Sql {
  return ident(`raw_${table}`);
}

/**
 * The raw rows of a table with __pos, each record's 0-based place: its rowid in
 * the table (file order), or its row number within its Parquet file.
 */
export function positioned(loaded: LoadedTable): Sql {
  if (loaded.source.format === 'parquet') return sql`(SELECT *, file_row_number AS __pos FROM ${readExpression(loaded.source)})`;
  const raw = rawTable(loaded.source.table);
  // A column of the file named rowid hides the table's own; the streaming row_number() keeps the table's order too.
  if (loaded.columns.has('rowid')) return sql`(SELECT *, row_number() OVER () - 1 AS __pos FROM ${raw})`;
  return sql`(SELECT *, rowid AS __pos FROM ${raw})`;
}

/** The delimiter DuckDB's sniffer finds in a CSV file, and the lines it skips above the header (undefined when it cannot tell). */
export async function sniffedDialect(db: Database, file: string): Promise<{ delimiter: string | undefined; skip: number } | undefined> {
  try {
    const row = await db.one<{ d: string; skip: bigint | number }>(
      sql`SELECT Delimiter AS d, SkipRows AS skip FROM sniff_csv(${literal(file)}, header = true, ${csvDialect([file])})`,
    );
    return row ? { delimiter: row.d.length === 1 ? row.d : undefined, skip: Number(row.skip) } : undefined;
  } catch {
    return undefined;
  }
}
