/**
 * Database.streamBytes (src/local/db.ts): a query of one BLOB column as each chunk's bytes end to
 * end. It copies runs of values that lie one after another in DuckDB's memory in one call, and
 * takes inline values (12 bytes or fewer) from the vector itself: the bytes must be the values',
 * in order, whatever the mix of short and long values, across chunks and in any order.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Database } from '../src/local/db.js';
import { sql } from '../src/local/sql.js';

/** Row i's value: lengths from 0 to 40 bytes, some of them multi-byte UTF-8, so runs of long values break on short ones. */
const valueSql = sql`CASE WHEN i % 7 = 3 THEN '' WHEN i % 5 = 1 THEN 'ž' || CAST(i AS VARCHAR) ELSE repeat('é', CAST(i % 13 AS INTEGER)) || 'line ' || CAST(i AS VARCHAR) || chr(10) END`;
const valueOf = (i: number): string => (i % 7 === 3 ? '' : i % 5 === 1 ? `ž${i}` : `${'é'.repeat(i % 13)}line ${i}\n`);

async function bytesOf(db: Database, query: ReturnType<typeof sql>): Promise<{ text: string; rows: number; chunks: number }> {
  const parts: Buffer[] = [];
  let rows = 0;
  let chunks = 0;
  for await (const chunk of db.streamBytes(query)) {
    parts.push(Buffer.from(chunk.text));
    rows += chunk.rows;
    chunks++;
  }
  return { text: Buffer.concat(parts).toString('utf8'), rows, chunks };
}

describe('streamBytes', () => {
  let db: Database;
  beforeAll(async () => {
    db = await Database.open(':memory:', { threads: 2 });
    await db.exec(sql`CREATE TABLE t AS SELECT i, ${valueSql} AS v FROM range(10000) r(i)`);
  });
  afterAll(() => db.close());

  it('gives the values end to end, short and long, in the order of the query', async () => {
    for (const [order, ids] of [
      [sql`i`, Array.from({ length: 10000 }, (_, i) => i)],
      [sql`i DESC`, Array.from({ length: 10000 }, (_, i) => 9999 - i)],
      [sql`v, i`, null],
    ] as const) {
      const got = await bytesOf(db, sql`SELECT encode(v) AS line FROM t ORDER BY ${order}`);
      expect(got.rows).toBe(10000);
      expect(got.chunks).toBeGreaterThan(1);
      if (ids) expect(got.text).toBe(ids.map(valueOf).join(''));
      else expect(got.text.length).toBe(Array.from({ length: 10000 }, (_, i) => valueOf(i)).join('').length);
    }
  });

  it('gives values built by the query (one run per chunk) and a long run of long values', async () => {
    const got = await bytesOf(db, sql`SELECT encode(repeat('x', 20) || CAST(i AS VARCHAR) || chr(10)) AS line FROM range(5000) r(i) ORDER BY i`);
    expect(got.text).toBe(Array.from({ length: 5000 }, (_, i) => `${'x'.repeat(20)}${i}\n`).join(''));
  });

  it('refuses a NULL value', async () => {
    await expect(bytesOf(db, sql`SELECT encode(CASE WHEN i = 3000 THEN NULL ELSE v END) AS line FROM t ORDER BY i`)).rejects.toThrow(/NULL/);
  });
});
