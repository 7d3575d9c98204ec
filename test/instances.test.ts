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
    await first.exec(sql`CREATE TEMP VIEW audience_view AS SELECT 1 AS b`);
    await first.exec(sql`SET VARIABLE day_from = DATE '2024-01-01'`);
    await first.exec(sql`ATTACH ${literal(file)} AS ${trusted('imported')} (READ_ONLY)`);
    expect(await first.one(sql`SELECT answer FROM imported.main.kept`)).toEqual({ answer: 42 });
    first.close();

    const second = await Database.open(':memory:', { reuse: true, threads: 1 });
    try {
      expect(instanceOf(second)).toBe(instanceOf(first));
      expect(await second.one(sql`SELECT count(*) AS n FROM duckdb_tables()`)).toEqual({ n: 0n });
      expect(await second.one(sql`SELECT count(*) AS n FROM duckdb_schemas() WHERE schema_name = 'scope_0'`)).toEqual({ n: 0n });
      await expect(second.one(sql`SELECT twice(2) AS v`)).rejects.toThrow(/twice/);
      // Its temporary objects and session variables went with it (the connection is kept).
      expect(await second.one(sql`SELECT count(*) AS n FROM duckdb_views() WHERE temporary AND NOT internal`)).toEqual({ n: 0n });
      expect(await second.one(sql`SELECT getvariable('day_from') AS v`)).toEqual({ v: null });
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
  it('keeps its statements with parameters for the next lease: they run on the tables of the lease running them, a database attached again is read anew, a detached one is not found', async () => {
    const file = await databaseFile();
    const other = join(tempDir(), 'another.duckdb');
    const writer = await Database.open(other);
    await writer.exec(sql`CREATE TABLE kept AS SELECT 7 AS answer`);
    writer.close();
    /** Counts the statements the connection prepares (DuckDB's package prepares a text run with parameters through either). */
    const prepares = (db: Database) => {
      const connection = (db as unknown as { connection: Record<'prepare' | 'extractStatements', (text: string) => Promise<unknown>> }).connection;
      const counted = { n: 0 };
      const kept = { prepare: connection.prepare, extractStatements: connection.extractStatements };
      for (const name of ['prepare', 'extractStatements'] as const) {
        connection[name] = function (this: unknown, text: string) {
          counted.n++;
          return kept[name].call(this, text);
        };
      }
      return { counted, restore: () => Object.assign(connection, kept) };
    };
    const first = await Database.open(':memory:', { reuse: true, threads: 1 });
    await first.exec(sql`CREATE TABLE t AS SELECT * FROM range(10) r(x)`);
    expect(await first.one(sql`SELECT count(*) AS n FROM t WHERE x >= ${5}`)).toEqual({ n: 5n });
    await first.exec(sql`CREATE TABLE u AS SELECT x FROM t WHERE x >= ${8}`);
    await first.exec(sql`ATTACH ${literal(file)} AS ${trusted('imported')} (READ_ONLY)`);
    expect(await first.one(sql`SELECT answer + ${1} AS a FROM imported.main.kept`)).toEqual({ a: 43 });
    first.close();

    const second = await Database.open(':memory:', { reuse: true, threads: 1 });
    const { counted, restore } = prepares(second);
    try {
      expect(instanceOf(second)).toBe(instanceOf(first));
      // The same texts, kept: not prepared again, and planned on this lease's own tables and files.
      await second.exec(sql`CREATE TABLE t AS SELECT * FROM range(100) r(x)`);
      expect(await second.one(sql`SELECT count(*) AS n FROM t WHERE x >= ${5}`)).toEqual({ n: 95n });
      // A statement that writes: into this lease's catalog (by the name every lease's catalog has).
      await second.exec(sql`CREATE TABLE u AS SELECT x FROM t WHERE x >= ${8}`);
      expect(await second.one(sql`SELECT count(*) AS n FROM u`)).toEqual({ n: 92n });
      await second.exec(sql`ATTACH ${literal(other)} AS ${trusted('imported')} (READ_ONLY)`);
      expect(await second.one(sql`SELECT answer + ${1} AS a FROM imported.main.kept`)).toEqual({ a: 8 });
      await second.exec(sql`DETACH imported`);
      await expect(second.one(sql`SELECT answer + ${1} AS a FROM imported.main.kept`)).rejects.toThrow(/imported/);
      // A table replaced within the lease is read as it is now.
      await second.exec(sql`CREATE OR REPLACE TABLE t AS SELECT * FROM range(7) r(x)`);
      expect(await second.one(sql`SELECT count(*) AS n FROM t WHERE x >= ${5}`)).toEqual({ n: 2n });
      expect(counted.n).toBe(0);
      // A text of several statements with a parameter runs as before (DuckDB prepares one at a time).
      await second.exec(sql`CREATE TABLE w AS SELECT 1 AS a; CREATE TABLE v AS SELECT ${2} AS b`);
      expect(await second.one(sql`SELECT a, b FROM w, v`)).toEqual({ a: 1, b: 2 });
      // Kept without their values (a large one would stay in memory): run bare, each asks for them.
      const kept = [...(second as unknown as { statements: Map<string, { run: () => Promise<unknown> }> }).statements.values()];
      expect(kept.length).toBeGreaterThan(0);
      for (const statement of kept) await expect(statement.run()).rejects.toThrow(/Values were not provided/);
      // Queries of one text at once on one connection: each runs with its own parameters.
      const many = await Promise.all(Array.from({ length: 8 }, (_, i) => second.one<{ n: bigint }>(sql`SELECT count(*) AS n FROM t WHERE x >= ${i}`)));
      expect(many.map((row) => Number(row!.n))).toEqual([7, 6, 5, 4, 3, 2, 1, 0]);
    } finally {
      restore();
      second.close();
    }
  });
});
