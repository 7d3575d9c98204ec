/** Two imported files compared table by table (test/import-append*.test.ts). */
import { expect } from 'vitest';
import { Database } from '../src/local/db.js';
import { ident, join as joinSql, literal, sql } from '../src/local/sql.js';
import { suiteThreadsOption } from './helpers.js';

/**
 * Every table of the two files holds the same rows, as many times each (the typed tables with
 * their row ids, each scope's conv, source_info and per-day sums: a count and a sum of the rows'
 * hashes, a fingerprint of the multiset, each table read once), and convx_dataset the same values
 * but when and by which convx the file was written: one DuckDB session, one query for the tables.
 */
export async function sameTables(full: string, updated: string, label: string): Promise<void> {
  // On a kept instance of the suite's threads, as a command's (a new instance costs some 10 ms of CPU); both files detached when it closes.
  const db = await Database.open(':memory:', { ...suiteThreadsOption(), reuse: true });
  try {
    await db.exec(sql`ATTACH ${literal(full)} AS f (READ_ONLY)`);
    await db.exec(sql`ATTACH ${literal(updated)} AS u (READ_ONLY)`);
    const names = await db.all<{ d: string; s: string; t: string }>(
      sql`SELECT database_name AS d, schema_name AS s, table_name AS t FROM duckdb_tables() WHERE database_name IN ('f', 'u') AND table_name <> 'convx_dataset'`,
    );
    const parts = names.map(({ d, s, t }) => sql`SELECT ${`${s}.${t}`} AS name, ${d} AS file, count(*) AS n, CAST(sum(CAST(hash(x) AS HUGEINT)) AS VARCHAR) AS h FROM ${ident(d)}.${ident(s)}.${ident(t)} x`);
    const rows = await db.all<{ name: string; file: string; n: bigint; h: string | null }>(sql`${joinSql(parts, sql` UNION ALL `)} ORDER BY name, file`);
    const of = (file: string) => rows.filter((r) => r.file === file).map((r) => ({ table: r.name, rows: Number(r.n), fingerprint: r.h }));
    expect(of('u'), label).toEqual(of('f'));
    const meta = async (alias: string) =>
      db.all(sql`SELECT key, value FROM ${ident(alias)}.main.convx_dataset WHERE key NOT IN ('importedAt', 'convx', 'source') ORDER BY key`);
    expect(await meta('u'), label).toEqual(await meta('f'));
  } finally {
    db.close();
  }
}
