/**
 * Database.all (src/local/db.ts) reads a materialised result's chunks by index (rowObjects of
 * src/local/duckdb.ts) rather than fetching them one by one as DuckDB's reader does: the rows, their
 * names and their JavaScript values are the reader's, over several chunks, for every type convx
 * reads, for repeated column names, without rows, and on a kept statement with parameters.
 */
import { describe, expect, it } from 'vitest';
import { Database, mapInTurns } from '../src/local/db.js';
import { compile, sql } from '../src/local/sql.js';

/** More rows than three of DuckDB's chunks (2,048 rows each) hold, of every type convx reads, two columns named alike. */
const QUERY = sql`SELECT i, CAST(i AS INTEGER) AS small, CAST(i AS DECIMAL(18, 3)) / 7 AS amount, CAST(i AS HUGEINT) * 1000000000000 AS huge,
    i / 3 AS x, 'row ' || CAST(i AS VARCHAR) AS v, CASE WHEN i % 5 = 0 THEN NULL ELSE i % 2 = 0 END AS flag,
    DATE '2024-01-01' + CAST(i % 400 AS INTEGER) AS day, TIMESTAMP '2024-01-01 00:00:00' + to_milliseconds(i) AS at,
    [i, i + 1] AS pair, struct_pack(a := i, b := 'b') AS s, i + 1 AS i
  FROM range(7000) r(i) ORDER BY i`;

/** What DuckDB's own reader makes of the query's rows: readAll(), then getRowObjectsJS(). */
async function readerRows(db: Database, query: ReturnType<typeof sql>): Promise<unknown[]> {
  const { text, params } = compile(query);
  return (await db.connection.runAndReadAll(text, params)).getRowObjectsJS();
}

describe('Database.all reads rows as DuckDB\'s reader does', () => {
  it('over several chunks, every type, repeated names, no rows, and a kept statement with parameters', async () => {
    const db = await Database.open(':memory:', { reuse: true, threads: 1 });
    try {
      const rows = await db.all<Record<string, unknown>>(QUERY);
      expect(rows).toHaveLength(7000);
      expect(rows).toEqual(await readerRows(db, QUERY));
      // The second column named i is the reader's "i:1".
      expect(rows[6999]).toMatchObject({ i: 6999n, 'i:1': 7000n, small: 6999, v: 'row 6999' });

      const none = sql`SELECT 1 AS a WHERE false`;
      expect(await db.all(none)).toEqual([]);
      expect(await readerRows(db, none)).toEqual([]);

      // A statement with parameters, kept for the next run (the second runs on the kept one).
      const some = (from: number) => sql`SELECT i, CAST(i AS DECIMAL(18, 3)) / 7 AS amount FROM range(3000) r(i) WHERE i >= ${from} ORDER BY i`;
      for (const from of [0, 2500]) expect(await db.all(some(from))).toEqual(await readerRows(db, some(from)));
    } finally {
      db.close();
    }
  });
});

describe('large main-thread work is done a piece at a turn, one such work at a time', () => {
  it('another request\'s step runs between two pieces, and a second large work waits until the first is done (no piece of each in turn)', async () => {
    const log: string[] = [];
    const items = Array.from({ length: 20 }, (_, i) => i);
    const piece = (name: string) => (x: number, i: number) => {
      if (i % 4 === 0) log.push(`${name}${i / 4}`);
      return x * 2;
    };
    const first = mapInTurns(items, piece('a'), 4);
    const second = mapInTurns(items, piece('b'), 4);
    const small = new Promise<void>((resolve) => setImmediate(() => resolve(void log.push('small'))));
    const [a, b] = await Promise.all([first, second, small]);
    expect(a).toEqual(items.map((x) => x * 2));
    expect(b).toEqual(a);
    expect(log).toEqual(['a0', 'small', 'a1', 'a2', 'a3', 'a4', 'b0', 'b1', 'b2', 'b3', 'b4']);
    // a few items: one piece, as a plain map
    expect(await mapInTurns([1, 2, 3], (x) => x + 1)).toEqual([2, 3, 4]);
  });
});
