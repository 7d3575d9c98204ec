/**
 * CSV and TSV files read without DuckDB's sniffer when they are plain (src/local/dataset/plain.ts):
 * the read is taken for plain files, left to the sniffer for the rest, and gives the very table
 * the sniffer's read gives (names, types, values, NULL or '', order).
 */
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DataError } from '../src/errors.js';
import { Database } from '../src/local/db.js';
import { Dataset } from '../src/local/dataset.js';
import { discoverTables } from '../src/local/dataset/discover.js';
import { PLAIN_MAX_BYTES } from '../src/local/dataset/plain.js';
import { plainReadExpression, readExpression } from '../src/local/dataset/reader.js';
import type { TableSource } from '../src/local/dataset/types.js';
import { compile, sql, type Sql } from '../src/local/sql.js';
import { csv, dataset, ORDER_HEADER, SAMPLES, suiteThreadsOption, TOUCH_HEADER } from './helpers.js';

let db: Database;
beforeAll(async () => {
  db = await Database.open(':memory:', suiteThreadsOption());
});
afterAll(() => db.close());

/** The orders table of a dataset of these files. */
function orders(files: Record<string, string | Buffer>): TableSource {
  const source = discoverTables(dataset(files)).get('orders');
  if (!source) throw new Error('no orders table');
  return source;
}

/** A table read by a table function, as text: its columns with their types and its rows in order (or the error). */
async function tableOf(read: Sql): Promise<string> {
  try {
    await db.exec(sql`CREATE OR REPLACE TABLE read_back AS SELECT * FROM ${read}`);
    const columns = await db.all(sql`DESCRIBE SELECT * FROM read_back`);
    const rows = await db.all(sql`SELECT * FROM read_back ORDER BY rowid`);
    const cell = (v: unknown) => (typeof v === 'bigint' ? `${v}n` : v);
    return JSON.stringify({ columns: columns.map((c) => [c.column_name, c.column_type]), rows: rows.map((r) => Object.values(r).map(cell)) });
  } catch (error) {
    return `error: ${(error as Error).message}`;
  }
}

/** The table read without the sniffer and with it; throws when the file is not taken as plain. */
async function bothWays(source: TableSource): Promise<{ plain: string; sniffed: string }> {
  const plain = await plainReadExpression(db, source);
  if (!plain) throw new Error(`not read as plain: ${source.files.join(', ')}`);
  const read = await tableOf(plain.read);
  // The columns the plain read says it gives without asking DuckDB are those DESCRIBE finds.
  if (plain.columns && !read.startsWith('error:')) {
    expect((JSON.parse(read) as { columns: unknown }).columns).toEqual(plain.columns.map((c) => [c.column_name, c.column_type]));
  }
  return { plain: read, sniffed: await tableOf(readExpression(source)) };
}

const rows = (n: number, row: (i: number) => string) => Array.from({ length: n }, (_, i) => row(i)).join('\n') + '\n';

/** Plain files with what a reader might take differently: each is read as plain, to the sniffer's table. */
const AWKWARD: Record<string, string> = {
  // No comment lines (reader.ts): a record beginning with #, and one holding it, read as they stand.
  'a record beginning with #': 'a,b\n#1002,2\nx#y,3\n',
  'a UTF-8 BOM': '\ufeffa,b\n1,2\n',
  'CRLF line endings, a BOM and a blank line': '\ufeffa,b\r\n1,2\r\n\r\n3,4\r\n',
  'no line break at the end': 'a,b\n1,2\n3,4',
  'blank lines inside and at the end': 'a,b\n\n1,2\n\n\n3,4\n\n\n',
  'only the header': 'a,b\n',
  'only the header, no line break': 'a,b',
  'empty fields, quoted empty fields and spaces': 'a,b,c\n,"",\n" ",  , x \n"",,""\n',
  'doubled quotes and delimiters in quoted values': 'a,b\n"x""y",1\n"p,q",""""\n"""",","\n',
  'line breaks in quoted values (LF)': 'a,b\n"x\ny",1\n"p\n\nq",2\n',
  'line breaks in quoted values (CRLF)': 'a,b\r\n"x\r\ny",1\r\n"p\r\n\r\nq",2\r\n',
  'unicode values': 'a,b\nÄpfel,日本\n😀,"é,ü"\ne\u0301,\u00a0\n',
  'semicolons, pipes, tabs, apostrophes and backslashes outside quotes': "a,b\nl-3;l-4,x|y\nit's,C:\\dir\\\nq\tr,'x'\n",
  'the same number of semicolons in every record, quoted values too': rows(40, (i) => (i === 0 ? 'a,b' : i === 5 ? '"x;y;z",1' : `x;y;z,${i}`)),
  'text that looks like other types': 'a,b,c\n1,2024-01-01,true\n-1.5,NULL,null\n0x10,1e5,N/A\n',
  'a doubled quote past the sniffer sample': 'a,b\n' + rows(3000, (i) => (i === 2900 ? '"x""y",1' : `v,${i}`)),
  'a first quoted value past the sniffer sample': 'a,b\n' + rows(3000, (i) => (i === 2900 ? '"x,y",1' : `v,${i}`)),
  'names in any case': 'Order_ID,contact_id,AMOUNT\no1,c1,10\n',
};

describe('plain CSV read without the sniffer', () => {
  it('takes it for every table of the sample dataset, to the same table', async () => {
    for (const [name, source] of discoverTables(SAMPLES)) {
      const plain = await plainReadExpression(db, source);
      expect(plain && compile(plain.read).text, name).toMatch(/^read_csv\(.*auto_detect = false.*columns = \{'/);
      const { plain: read, sniffed } = await bothWays(source);
      expect(read, name).toBe(sniffed);
      expect(read, name).not.toMatch(/^error/);
    }
  });

  it('reads awkward plain files to the table the sniffer reads', async () => {
    for (const [what, text] of Object.entries(AWKWARD)) {
      const { plain, sniffed } = await bothWays(orders({ 'orders.csv': text }));
      expect(plain, what).toBe(sniffed);
      expect(plain, what).not.toMatch(/^error/);
    }
    // The sniffer keeps '' and NULL apart as the plain read does: quoted empty is NULL too.
    const { plain } = await bothWays(orders({ 'orders.csv': AWKWARD['empty fields, quoted empty fields and spaces']! }));
    expect(JSON.parse(plain).rows[0]).toEqual([null, null, null, expect.stringMatching(/orders\.csv$/)]);
  });

  it('reads TSV, folders of files and hive partitions to the table the sniffer reads', async () => {
    const variants: Record<string, string>[] = [
      { 'orders.tsv': 'a\tb\n1,2\tx;y\n\t|\n' },
      { 'orders/p1/x.csv': 'a,b\n1,2\n', 'orders/p2/y.csv': '\ufeffa,b\n3,"4"\n' },
      { 'orders/p1/x.csv': 'a,b\r\n1,2\r\n', 'orders/p2/y.csv': 'a,b\r\n"3\r\n",4' },
      { 'orders/month=2024-03/x.csv': 'a,b\n1,2\n', 'orders/month=2024-04/y.csv': 'a,b\n3,"4"\n' },
      { 'orders/a.tsv': 'a\tb\n1\t2\n', 'orders/b/c.tsv': 'a\tb\n' },
    ];
    for (const files of variants) {
      const { plain, sniffed } = await bothWays(orders(files));
      expect(plain, Object.keys(files).join(' ')).toBe(sniffed);
    }
  });

  it('leaves to the sniffer a file it could read otherwise, or a table it reads otherwise', async () => {
    const big = `a,b\n${'x'.repeat(PLAIN_MAX_BYTES)},1\n`;
    const others: Record<string, Record<string, string | Buffer>> = {
      'a blank first line': { 'orders.csv': '\na,b\n1,2\n' },
      'another delimiter': { 'orders.csv': 'a;b\n1;2\n' },
      'a quote inside a value': { 'orders.csv': 'a,b\nx"y,2\n' },
      'text after a closing quote': { 'orders.csv': 'a,b\n"x";y;z,1\n' },
      'a backslash in a quoted value': { 'orders.csv': 'a,b\n"x\\\\",1\n' },
      'an apostrophe in a quoted value': { 'orders.csv': 'a,b\n"it\'s",1\n' },
      'a record with a field too many': { 'orders.csv': 'a,b\n1,2,\n' },
      'a record with a field too few': { 'orders.csv': 'a,b\n1,2\n3\n' },
      'a line of spaces': { 'orders.csv': 'a,b\n1,2\n \n' },
      'mixed line endings': { 'orders.csv': 'a,b\r\n1,2\n' },
      'a lone CR': { 'orders.csv': 'a,b\r1,2\r' },
      'a quoted name': { 'orders.csv': '"a",b\n1,2\n' },
      'a name with a space': { 'orders.csv': 'a x,b\n1,2\n' },
      'a name twice, in another case': { 'orders.csv': 'a,A\n1,2\n' },
      'one column': { 'orders.csv': 'a\n1\n' },
      'a column named __file': { 'orders.csv': 'a,__file\n1,2\n' },
      'a quote in TSV': { 'orders.tsv': 'a\tb\n"x"\t2\n' },
      'an apostrophe in TSV': { 'orders.tsv': "a\tb\nit's\t2\n" },
      'a NUL byte': { 'orders.csv': 'a,b\n1\u00002,3\n' },
      'bytes that are not UTF-8': { 'orders.csv': Buffer.from([...Buffer.from('a,b\n'), 0xff, 0x2c, 0x31, 0x0a]) },
      'a compressed file': { 'orders.csv.gz': gzipSync('a,b\n1,2\n') },
      'a file over the size checked': { 'orders.csv': big },
      'files with different headers': { 'orders/x.csv': 'a,b\n1,2\n', 'orders/y.csv': 'b,a\n1,2\n' },
      'a hidden file the reader reads too': { 'orders/x.csv': 'a,b\n1,2\n', 'orders/.y.csv': 'a,b\n3,4\n' },
      'a column named as a hive partition': { 'orders/a=1/x.csv': 'a,b\n1,2\n' },
      'files with different line breaks': { 'orders/x.csv': 'a,b\n1,2\n', 'orders/y.csv': 'a,b\r\n3,4\r\n' },
      'files, one with a doubled quote': { 'orders/x.csv': 'a,b\n1,2\n', 'orders/y.csv': 'a,b\n"3""",4\n' },
    };
    for (const [what, files] of Object.entries(others)) expect(await plainReadExpression(db, orders(files)), what).toBeUndefined();
    // CSV and TSV files in one folder, which one read with one delimiter cannot take: refused as the folder is found, naming it.
    for (const csvSuffix of ['.csv', '.csv.gz']) {
      const mixed = dataset({ [`orders/x${csvSuffix}`]: csvSuffix === '.csv' ? 'a,b\n1,2\n' : gzipSync('a,b\n1,2\n'), 'orders/y.tsv': 'a\tb\n1\t2\n' });
      expect(() => discoverTables(mixed)).toThrow(DataError);
      expect(() => discoverTables(mixed)).toThrow(`orders/: the folder mixes comma-separated (${csvSuffix}) and tab-separated (.tsv) files; use one`);
    }
    // A dataset path holding a glob character: DuckDB reads what the glob finds, here a second file.
    const globbed = dataset({ 'x*y/orders.csv': 'a,b\n1,2\n', 'xzy/orders.csv': 'a,b\n3,4\n' });
    expect(await plainReadExpression(db, discoverTables(`${globbed}/x*y`).get('orders')!)).toBeUndefined();
    // The sniffer reads each file of a folder and refuses dialects that differ, where one plain read would take them all.
    for (const what of ['files with different line breaks', 'files, one with a doubled quote']) {
      expect(await tableOf(readExpression(orders(others[what]!))), what).toMatch(/^error: .*schema mismatch/);
    }
  });
});

/** A random small CSV file of plain and awkward pieces (a fixed seed: the same files every run). */
function randomCsv(next: () => number): string {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]!;
  const values = ['', 'a', '#x', ' x ', 'é', '日本', 'NULL', '1', '-1.5', 'l-3;l-4', 'a|b', "it's", 'C:\\d', '"q"', '"x""y"', '"a,b"', '""', '"l\nm"'];
  const columns = 2 + Math.floor(next() * 4);
  const eol = pick(['\n', '\r\n']);
  const lines = [Array.from({ length: columns }, (_, i) => pick(['a', 'B', 'c_d', '_e']) + i).join(',')];
  const count = Math.floor(next() * 12);
  for (let r = 0; r < count; r++) {
    const fields = next() < 0.05 ? columns + pick([-1, 1]) : columns;
    lines.push(next() < 0.05 ? '' : Array.from({ length: fields }, () => pick(values).replaceAll('\n', eol)).join(','));
  }
  return (next() < 0.2 ? '\ufeff' : '') + lines.join(eol) + (next() < 0.8 ? eol : '') + (next() < 0.1 ? eol : '');
}

describe('random small CSV files', () => {
  it('read as plain, give the table the sniffer reads', async () => {
    let seed = 7;
    const next = () => ((seed = (seed * 1664525 + 1013904223) >>> 0) / 2 ** 32);
    let plainCount = 0;
    for (let k = 0; k < 150; k++) {
      const source = orders({ 'orders.csv': randomCsv(next) });
      if (!(await plainReadExpression(db, source))) continue;
      plainCount++;
      const { plain, sniffed } = await bothWays(source);
      expect(plain, source.files[0]).toBe(sniffed);
    }
    expect(plainCount).toBeGreaterThan(50);
  });
});

describe('a plain read that fails', () => {
  it('falls back to the sniffer, whose error the diagnosis explains as before', async () => {
    // Plain, and small enough to be checked, but a record over the reader's size limit: both reads fail.
    const huge = `o3,c1,2024-03-02T10:00:00Z,EUR,10,12${'0'.repeat(2_100_000)},CZ,false,completed`;
    const text = csv(ORDER_HEADER, [['o1', 'c1', '2024-03-01T10:00:00Z', 'EUR', '10', '12', 'CZ', 'false', 'completed']]) + `${huge}\n`;
    const dir = dataset({ 'orders.csv': text, 'touches.csv': csv(TOUCH_HEADER, []) });
    expect(await plainReadExpression(db, discoverTables(dir).get('orders')!)).toBeDefined();
    const other = await Database.open(':memory:', suiteThreadsOption());
    try {
      const error = await Dataset.open(dir, other).then(
        () => undefined,
        (e: Error) => e,
      );
      expect(error).toBeInstanceOf(DataError);
      expect((error as DataError).summary).toBe('cannot read orders.csv:');
      expect((error as DataError).details).toEqual([
        `orders.csv, line 3, column amount_w_tax: the line is ${Buffer.byteLength(huge).toLocaleString('en-US')} bytes long; a record may hold at most 2,000,000 bytes (it passes the limit in this column)`,
      ]);
    } finally {
      other.close();
    }
  });
});
