/**
 * Database's streamed results (src/local/db.ts): DuckDB closes a result being streamed when
 * another statement runs on its connection, when the connection is interrupted and when a leased
 * one's lease ends, and the next fetch then gives no rows, as at the end. Every way of reading a
 * stream (stream, streamBytes, columnChunks, numberColumns) fails then, rather than give fewer rows
 * than the query has; a stream waits for the statements of its connection not yet answered; read
 * alone, or with the other statement on another connection, it gives every row.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Database } from '../src/local/db.js';
import { sql } from '../src/local/sql.js';
import { ConnectionPool } from '../src/server/pool.js';

const ROWS = 5000;
const CUT = /a result streamed from a connection was ended early by another query on it, an interrupt or its close/;
const TABLE = sql`CREATE TABLE t AS SELECT i, CAST(i AS DOUBLE) AS x, 'row ' || CAST(i AS VARCHAR) AS v FROM range(${ROWS}) r(i)`;

/** Reads a stream to its end, running `between` once after its first chunk of rows: the rows it gave. */
async function readAll<T>(rows: AsyncIterable<T>, size: (item: T) => number, between?: () => unknown): Promise<number> {
  let n = 0;
  for await (const item of rows) {
    if (n === 0 && between) await between();
    n += size(item);
  }
  return n;
}

const rowsOf = (db: Database) => db.stream(sql`SELECT i FROM t ORDER BY i`);

describe('a result streamed from a connection', () => {
  let db: Database;
  beforeAll(async () => {
    db = await Database.open(':memory:', { threads: 1 });
    await db.exec(TABLE);
  });
  afterAll(() => db.close());

  /** Each way of reading a stream of the table's rows, to its end. */
  const ways: Record<string, (between?: () => unknown) => Promise<number>> = {
    stream: (between) => readAll(rowsOf(db), () => 1, between),
    streamBytes: (between) => readAll(db.streamBytes(sql`SELECT encode(v) AS line FROM t ORDER BY i`), (chunk) => chunk.rows, between),
    columnChunks: (between) => readAll(db.columnChunks(sql`SELECT v FROM t ORDER BY i`), (columns) => columns[0]!.length, between),
  };

  for (const [name, read] of Object.entries(ways)) {
    it(`${name}: read alone, gives every row; with a query on its connection or an interrupt before its end, fails`, async () => {
      expect(await read()).toBe(ROWS);
      await expect(read(() => db.one(sql`SELECT 1 AS one`))).rejects.toThrow(CUT);
      await expect(read(() => db.interrupt())).rejects.toThrow(CUT);
      // The connection answers the next query, and the next stream in full.
      expect(await db.one<{ n: bigint }>(sql`SELECT count(*) AS n FROM t`)).toEqual({ n: BigInt(ROWS) });
      expect(await read()).toBe(ROWS);
    });
  }

  it('numberColumns with queries started after it on its connection fails; alone, it gives every row', async () => {
    const [columns] = await Promise.allSettled([db.numberColumns(sql`SELECT x FROM t ORDER BY i`), db.one(sql`SELECT count(*) AS n FROM t`)]);
    expect(columns.status === 'rejected' && String(columns.reason)).toMatch(CUT);
    expect((await db.numberColumns(sql`SELECT x FROM t ORDER BY i`))[0]!.length).toBe(ROWS);
  });

  it('waits for the queries of its connection started before it, then gives every row', async () => {
    for (let i = 0; i < 10; i++) {
      const before = [db.one(sql`SELECT count(*) AS n FROM t WHERE v LIKE ${`%${i}%`}`), db.all(sql`SELECT i FROM t WHERE i < ${i}`)];
      expect(await readAll(rowsOf(db), () => 1)).toBe(ROWS);
      await Promise.all(before);
    }
  });

  it('a query on another connection of the database does not end it', async () => {
    const other = await db.connect();
    try {
      expect(await readAll(rowsOf(db), () => 1, () => other.one(sql`SELECT count(*) AS n FROM t`))).toBe(ROWS);
    } finally {
      other.close();
    }
  });

  it("a pooled connection given back while its stream is read: the next request's query ends it, and the read fails", async () => {
    const pool = new ConnectionPool(() => db.connect(), 1);
    try {
      const first = await pool.acquire();
      const read = readAll(rowsOf(first.db), () => 1, async () => {
        first.release();
        const next = await pool.acquire();
        try {
          await next.db.one(sql`SELECT 1 AS one`);
        } finally {
          next.release();
        }
      });
      await expect(read).rejects.toThrow(CUT);
    } finally {
      pool.close();
    }
  });

  it("a command's database closed while its stream is read (its lease ends): the read fails", async () => {
    const leased = await Database.open(':memory:', { threads: 1, reuse: true });
    await leased.exec(TABLE);
    await expect(readAll(rowsOf(leased), () => 1, () => leased.close())).rejects.toThrow(CUT);
  });
});
