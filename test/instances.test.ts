import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Database } from '../src/local/db.js';
import { literal, sql, trusted } from '../src/local/sql.js';
import { tempDir } from './temp.js';

/** The DuckDB instance under a Database (the lease's, when it reuses one). */
const instanceOf = (db: Database): unknown => (db as unknown as { instance: unknown }).instance;

/** A database file written by another Database, to attach. */
async function databaseFile(): Promise<string> {
  const file = join(tempDir(), 'other.duckdb');
  const writer = await Database.open(file);
  await writer.exec(sql`CREATE TABLE kept AS SELECT 42 AS answer`);
  writer.close();
  return file;
}

describe('a DuckDB instance kept for the next command (src/local/instances.ts)', () => {
  it('is reused, and the next Database sees nothing the last one made or attached', async () => {
    const file = await databaseFile();
    const first = await Database.open(':memory:', { reuse: true, threads: 1 });
    await first.exec(sql`CREATE TABLE t_orders AS SELECT 1 AS a`);
    await first.exec(sql`CREATE SCHEMA scope_0`);
    await first.exec(sql`CREATE MACRO twice(x) AS 2 * x`);
    await first.exec(sql`CREATE TEMP TABLE audience AS SELECT 1 AS b`);
    await first.exec(sql`ATTACH ${literal(file)} AS ${trusted('imported')} (READ_ONLY)`);
    expect(await first.one(sql`SELECT answer FROM imported.main.kept`)).toEqual({ answer: 42 });
    first.close();

    const second = await Database.open(':memory:', { reuse: true, threads: 1 });
    try {
      expect(instanceOf(second)).toBe(instanceOf(first));
      expect(await second.one(sql`SELECT count(*) AS n FROM duckdb_tables()`)).toEqual({ n: 0n });
      expect(await second.one(sql`SELECT count(*) AS n FROM duckdb_schemas() WHERE schema_name = 'scope_0'`)).toEqual({ n: 0n });
      await expect(second.one(sql`SELECT twice(2) AS v`)).rejects.toThrow(/twice/);
      const attached = await second.all<{ database_name: string }>(sql`SELECT database_name FROM duckdb_databases() WHERE NOT internal`);
      expect(attached.map((d) => d.database_name)).not.toContain('imported');
      // The names the last one used are free, as in a new instance; the session is UTC.
      await second.exec(sql`CREATE TABLE t_orders AS SELECT 2 AS a`);
      await second.exec(sql`ATTACH ${literal(file)} AS ${trusted('imported')} (READ_ONLY)`);
      expect(await second.one(sql`SELECT current_setting('TimeZone') AS tz`)).toEqual({ tz: 'UTC' });
    } finally {
      second.close();
    }
  });

  it('is not kept once another connection shared it, nor for a Database that did not ask', async () => {
    const shared = await Database.open(':memory:', { reuse: true, threads: 1 });
    const sibling = await shared.connect();
    // The sibling works on the lease's catalog too.
    await shared.exec(sql`CREATE TABLE t AS SELECT 1 AS a`);
    expect(await sibling.one(sql`SELECT a FROM t`)).toEqual({ a: 1 });
    sibling.close();
    shared.close();
    const next = await Database.open(':memory:', { reuse: true, threads: 1 });
    expect(instanceOf(next)).not.toBe(instanceOf(shared));
    next.close();

    const own = await Database.open(':memory:', { threads: 1 });
    own.close();
    const after = await Database.open(':memory:', { reuse: true, threads: 1 });
    expect(instanceOf(after)).not.toBe(instanceOf(own));
    after.close();
  });
});
