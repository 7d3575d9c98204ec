/**
 * Database's streamed results (src/local/db.ts): DuckDB closes a result being streamed when
 * another statement runs on its connection, and the next fetch then gives no rows, as at the end.
 * Every way of reading a stream (stream, streamBytes, columnChunks, numberColumns) fails then,
 * rather than give fewer rows than the query has; read alone, or with the other statement on
 * another connection, it gives them all.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Database } from '../src/local/db.js';
import { sql } from '../src/local/sql.js';

const ROWS = 5000;
const CUT = /another query ran on the connection while a result was streamed from it/;

/** Reads a stream to its end, running `between` once after its first chunk of rows. */
async function readAll<T>(rows: AsyncIterable<T>, size: (item: T) => number, between?: () => Promise<unknown>): Promise<number> {
  let n = 0;
  for await (const item of rows) {
    if (n === 0 && between) await between();
    n += size(item);
  }
  return n;
}

describe('a result streamed from a connection', () => {
  let db: Database;
  beforeAll(async () => {
    db = await Database.open(':memory:', { threads: 1 });
    await db.exec(sql`CREATE TABLE t AS SELECT i, CAST(i AS DOUBLE) AS x, 'row ' || CAST(i AS VARCHAR) AS v FROM range(${ROWS}) r(i)`);
  });
  afterAll(() => db.close());

  /** Each way of reading a stream of the table's rows, to its end: the rows it gave (`between` runs after the first chunk). */
  const ways: Record<string, (between?: () => Promise<unknown>) => Promise<number>> = {
    stream: (between) => readAll(db.stream(sql`SELECT i FROM t ORDER BY i`), () => 1, between),
    streamBytes: (between) => readAll(db.streamBytes(sql`SELECT encode(v) AS line FROM t ORDER BY i`), (chunk) => chunk.rows, between),
    columnChunks: (between) => readAll(db.columnChunks(sql`SELECT v FROM t ORDER BY i`), (columns) => columns[0]!.length, between),
  };

  for (const [name, read] of Object.entries(ways)) {
    it(`${name}: read alone, gives every row; with a query on its connection before its end, fails`, async () => {
      expect(await read()).toBe(ROWS);
      await expect(read(() => db.one(sql`SELECT 1 AS one`))).rejects.toThrow(CUT);
      // The connection answers the next query, and the next stream in full.
      expect(await db.one<{ n: bigint }>(sql`SELECT count(*) AS n FROM t`)).toEqual({ n: BigInt(ROWS) });
      expect(await read()).toBe(ROWS);
    });
  }

  it('a query on another connection of the database does not end it', async () => {
    const other = await db.connect();
    try {
      const n = await readAll(db.stream(sql`SELECT i FROM t ORDER BY i`), () => 1, () => other.one(sql`SELECT count(*) AS n FROM t`));
      expect(n).toBe(ROWS);
    } finally {
      other.close();
    }
  });

  it('a stream begun while a query started before it still runs: every row or the error, never fewer rows', async () => {
    for (let i = 0; i < 20; i++) {
      const before = db.one(sql`SELECT count(*) AS n FROM t WHERE v LIKE ${`%${i}%`}`);
      const [read] = await Promise.allSettled([readAll(db.stream(sql`SELECT i FROM t ORDER BY i`), () => 1), before]);
      if (read.status === 'fulfilled') expect(read.value).toBe(ROWS);
      else expect(String(read.reason)).toMatch(CUT);
    }
  });

  it('numberColumns beside queries started at the same moment: every row or the error, never fewer rows', async () => {
    for (let i = 0; i < 20; i++) {
      const [columns] = await Promise.allSettled([db.numberColumns(sql`SELECT x FROM t ORDER BY i`), db.one(sql`SELECT count(*) AS n FROM t`), db.one(sql`SELECT ${i} AS i`)]);
      if (columns.status === 'fulfilled') {
        expect(columns.value[0]!.length).toBe(ROWS);
      } else {
        expect(String(columns.reason)).toMatch(CUT);
      }
    }
  });
});
