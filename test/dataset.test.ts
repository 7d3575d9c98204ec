/** Section 3: tables in every format, typed reading, and data errors that name the place. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { DuckDBInstance } from '@duckdb/node-api';
import { describe, expect, it } from 'vitest';
import { DataError } from '../src/errors.js';
import { checkDataset } from '../src/local/check.js';
import { Database } from '../src/local/db.js';
import { everyFileAsRead, filesAsRead } from '../src/local/dataset/globs.js';
import { blankFile, lossless } from '../src/local/dataset/headers.js';
import { cli, csv, dataset, itemsQuery, ORDER_HEADER, shop, tempDir, TOUCH_HEADER, withBackend } from './helpers.js';
import { literal, sql, trusted } from '../src/local/sql.js';

const ORDERS = csv(ORDER_HEADER, [
  ['o1', 'c1', '2024-03-02T10:00:00Z', 'EUR', '10.50', '12.71', 'CZ', 'false', 'completed'],
  ['o1', 'c1', '2024-03-03T10:00:00Z', 'EUR', '10.50', '12.71', 'CZ', '1', 'refunded'],
]);
const TOUCHES = csv(TOUCH_HEADER, [['c1', '2024-03-01T00:00:00Z', 'click', 'campaign', 'k1']]);

async function amounts(dir: string): Promise<number[]> {
  return withBackend(dir, async (b) => (await b.items(itemsQuery('2024-03-01', '2024-03-31'))).rows.map((r) => r.conversionsAmount));
}

/** Writes a table to Parquet through DuckDB itself, from CSV text. */
async function toParquet(csvText: string, target: string): Promise<void> {
  const tmp = dataset({ 'in.csv': csvText });
  const db = await Database.open();
  try {
    await db.exec(sql`COPY (SELECT * FROM read_csv(${literal(`${tmp}/in.csv`)})) TO ${literal(target)} (FORMAT parquet)`);
  } finally {
    db.close();
  }
}

describe('table discovery by base name', () => {
  it('reads CSV (any delimiter), gzipped CSV, TSV, JSON arrays and JSON Lines alike', async () => {
    const jsonOrders = [
      { order_id: 'o1', contact_id: 'c1', datetime: '2024-03-02T10:00:00Z', currency: 'EUR', amount_wo_tax: 10.5, amount_w_tax: 12.71, is_refund: false },
      { order_id: 'o1', contact_id: 'c1', datetime: '2024-03-03T10:00:00Z', currency: 'EUR', amount_wo_tax: 10.5, amount_w_tax: 12.71, is_refund: true },
    ];
    const variants: Record<string, string | Buffer>[] = [
      { 'orders.csv': ORDERS, 'touches.csv': TOUCHES },
      { 'orders.csv.gz': gzipSync(ORDERS), 'touches.csv.gz': gzipSync(TOUCHES) },
      { 'orders.tsv': ORDERS.replaceAll(',', '\t'), 'touches.csv': TOUCHES.replaceAll(',', ';') },
      { 'orders.json': JSON.stringify(jsonOrders), 'touches.csv': TOUCHES },
      { 'orders.jsonl': jsonOrders.map((o) => JSON.stringify(o)).join('\n'), 'touches.ndjson': JSON.stringify({ contact_id: 'c1', datetime: '2024-03-01T00:00:00Z', touch: 'click', source_type: 'campaign', source_id: 'k1' }) },
    ];
    for (const files of variants) expect(await amounts(dataset(files))).toEqual([12.71, -12.71]);
  });

  it('reads Parquet files and folders of files with hive partitions', async () => {
    const dir = dataset({ 'touches.csv': TOUCHES });
    await toParquet(ORDERS, `${dir}/orders.parquet`);
    expect(await amounts(dir)).toEqual([12.71, -12.71]);

    const folder = dataset({
      'orders/month=2024-03/part-1.csv': csv(ORDER_HEADER, [['o1', 'c1', '2024-03-02T10:00:00Z', 'EUR', '10.50', '12.71', 'CZ', 'false', '']]),
      'orders/month=2024-03/part-2.csv': csv(ORDER_HEADER, [['o1', 'c1', '2024-03-03T10:00:00Z', 'EUR', '10.50', '12.71', 'CZ', 'true', '']]),
      'touches/a.csv': TOUCHES,
    });
    expect(await amounts(folder)).toEqual([12.71, -12.71]);
  });

  it("a command reads orders from one Parquet file in place, numbered by the rows' places in the file", async () => {
    // o2 has two rows at one instant: the first in the file counts, whatever the values say
    const rows = csv(ORDER_HEADER, [
      ['o2', 'c1', '2024-03-05T10:00:00Z', 'EUR', '30', '36.30', 'CZ', 'false', 'completed'],
      ['o2', 'c1', '2024-03-05T10:00:00Z', 'EUR', '20', '24.20', 'CZ', 'false', 'completed'],
      ['o1', 'c1', '2024-03-02T10:00:00Z', 'EUR', '10.50', '12.71', 'CZ', 'false', 'completed'],
      ['o1', 'c1', '2024-03-03T10:00:00Z', 'EUR', '10.50', '12.71', 'CZ', '1', 'refunded'],
    ]);
    const dir = dataset({ 'touches.csv': TOUCHES });
    await toParquet(rows, `${dir}/orders.parquet`);
    const expected = await amounts(dataset({ 'orders.csv': rows, 'touches.csv': TOUCHES }));
    expect(expected).toEqual([12.71, -12.71, 36.3]);
    expect(await amounts(dir)).toEqual(expected);
  });

  it('a command reads contacts from one Parquet file in place: the first row of a contact in the file counts', async () => {
    const contacts = csv(
      ['contact_id', 'client_contact_id', 'first_name', 'surname', 'country'],
      [
        ['c2', 'x2', 'Bea', 'Other', 'SK'],
        ['c1', 'x1', 'Ann', 'First', ''],
        ['c1', 'x9', 'Zed', 'Second', 'AT'],
      ],
    );
    const orders = csv(ORDER_HEADER, [['o1', 'c1', '2024-03-02T10:00:00Z', 'EUR', '10.50', '12.71', '', 'false', 'completed']]);
    const dir = dataset({ 'orders.csv': orders, 'touches.csv': TOUCHES });
    await toParquet(contacts, `${dir}/contacts.parquet`);
    const names = (d: string) =>
      withBackend(d, async (b) => (await b.items(itemsQuery('2024-03-01', '2024-03-31'))).rows.map((r) => [r.clientContactId, r.firstName, r.surname, r.country]));
    const expected = await names(dataset({ 'orders.csv': orders, 'touches.csv': TOUCHES, 'contacts.csv': contacts }));
    expect(expected).toEqual([['x1', 'Ann', 'First', null]]);
    expect(await names(dir)).toEqual(expected);
  });

  it('refuses two files for one table', async () => {
    const dir = dataset({ 'orders.csv': ORDERS, 'orders.jsonl': '{}', 'touches.csv': TOUCHES });
    await expect(withBackend(dir, async () => undefined)).rejects.toThrow(/orders: found orders.csv and orders.jsonl; keep one/);
  });

  it('says of a file that is no dataset that it is neither a directory nor an imported file', async () => {
    const dir = dataset({ 'fake.duckdb': 'garbage\n' });
    const run = await cli(['report', '--data', `${dir}/fake.duckdb`, '--from', '2024-03-01', '--to', '2024-03-31']);
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(
      `convx: error: ${dir}/fake.duckdb is not a directory of dataset files, nor a file written by convx data import\n  give the directory of the exported files, or a .duckdb file that convx data import wrote\n`,
    );
  });

  it('names the missing table', async () => {
    const dir = dataset({ 'orders.csv': ORDERS });
    await expect(withBackend(dir, async () => undefined)).rejects.toThrow(/has no touches table: expected touches.csv/);
  });

  it('matches column names case-insensitively and keeps text ids as text', async () => {
    const dir = dataset({
      'orders.csv': csv(
        ['ORDER_ID', 'Contact_Id', 'datetime', 'currency', 'amount_wo_tax', 'amount_w_tax'],
        [['007', '0042', '2024-03-02 10:00:00', 'EUR', '1', '1']],
      ),
      'touches.csv': csv(TOUCH_HEADER, [['0042', '2024-03-01', 'CLICK', 'Campaign', '01']]),
    });
    const items = await withBackend(dir, async (b) => (await b.items(itemsQuery('2024-03-01', '2024-03-31'))).rows);
    expect(items.map((i) => [i.orderId, i.contactId, i.source.type, i.source.id])).toEqual([['007', '0042', 'campaign', '01']]);
  });
});

describe("a folder's later file with a column the first lacks", () => {
  // Two orders of one contact, each in its own file: the second cancelled, which only its file says.
  const header = (without: string[]) => ORDER_HEADER.filter((c) => !without.includes(c));
  const rowOf = (cells: Record<string, string>, names: string[]) => names.map((n) => cells[n] ?? '');
  const FIRST = { order_id: 'o1', contact_id: 'c1', datetime: '2024-03-02T10:00:00Z', currency: 'EUR', amount_wo_tax: '10.50', amount_w_tax: '12.71', country: 'CZ', is_refund: 'false', status: 'completed' };
  const SECOND = { ...FIRST, order_id: 'o2', datetime: '2024-03-03T10:00:00Z', amount_w_tax: '20.00', status: 'cancelled' };
  const file = (names: string[], cells: Record<string, string>, delimiter = ',') => [names.join(delimiter), rowOf(cells, names).join(delimiter)].join('\n') + '\n';
  const refusal = (later: string, column: string, first: string) =>
    `cannot read orders/: its files do not have the same columns:\n  ${later} has a column ${column}, which ${first} lacks\n  give every file of the folder the same header (the order of the columns may differ)`;
  const refused = async (dir: string) => {
    const error = await withBackend(dir, async () => undefined).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DataError);
    return (error as DataError).message;
  };

  it('is refused when convx reads that column (CSV, another delimiter, gzip, hive partitions), naming both files and the column; the command exits 2', async () => {
    const noStatus = header(['status']);
    const plain = dataset({ 'orders/01.csv': file(noStatus, FIRST), 'orders/02.csv': file(ORDER_HEADER, SECOND), 'touches.csv': TOUCHES });
    expect(await refused(plain)).toBe(refusal('orders/02.csv', 'status', 'orders/01.csv'));
    const run = await cli(['report', '--data', plain, '--from', '2024-03-01', '--to', '2024-03-31']);
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(`convx: error: ${refusal('orders/02.csv', 'status', 'orders/01.csv')}\n`);
    // In another case, in a third file after one without it; semicolons; gzip; under hive partitions.
    const cased = dataset({
      'orders/01.csv': file(noStatus, FIRST),
      'orders/02.csv': file(noStatus, { ...SECOND, order_id: 'o3' }),
      'orders/03.csv': file(ORDER_HEADER.map((c) => (c === 'status' ? 'Status' : c)), SECOND),
      'touches.csv': TOUCHES,
    });
    expect(await refused(cased)).toBe(refusal('orders/03.csv', 'Status', 'orders/01.csv'));
    const semicolons = dataset({ 'orders/01.csv': file(noStatus, FIRST, ';'), 'orders/02.csv': file(ORDER_HEADER, SECOND, ';'), 'touches.csv': TOUCHES });
    expect(await refused(semicolons)).toBe(refusal('orders/02.csv', 'status', 'orders/01.csv'));
    const gzipped = dataset({ 'orders/01.csv.gz': gzipSync(file(noStatus, FIRST)), 'orders/02.csv.gz': gzipSync(file(ORDER_HEADER, SECOND)), 'touches.csv': TOUCHES });
    expect(await refused(gzipped)).toBe(refusal('orders/02.csv.gz', 'status', 'orders/01.csv.gz'));
    const hive = dataset({ 'orders/month=03/01.csv': file(noStatus, FIRST), 'orders/month=04/02.csv': file(ORDER_HEADER, SECOND), 'touches.csv': TOUCHES });
    expect(await refused(hive)).toBe(refusal('orders/month=04/02.csv', 'status', 'orders/month=03/01.csv'));
    // Contacts keep every column (merge fields): one only a later file has is refused too.
    const contacts = dataset({
      'orders.csv': file(ORDER_HEADER, FIRST),
      'touches.csv': TOUCHES,
      'contacts/01.csv': 'contact_id,first_name\nc1,Ann\n',
      'contacts/02.csv': 'contact_id,first_name,loyalty_tier\nc2,Bob,gold\n',
    });
    expect(await refused(contacts)).toBe(refusal('contacts/02.csv', 'loyalty_tier', 'contacts/01.csv').replace('orders/', 'contacts/'));
  });

  it('is refused whatever else the folder holds (an empty file, a header alone, a title line above a header, spaces in it); a later file naming a column twice too', async () => {
    const noStatus = header(['status']);
    const withStatus = file(ORDER_HEADER, SECOND);
    const base = { 'orders/01.csv': file(noStatus, FIRST), 'touches.csv': TOUCHES };
    const cases: [string, Record<string, string>][] = [
      ['an empty file after', { 'orders/02.csv': withStatus, 'orders/03.csv': '' }],
      ['a header alone, without a line break', { 'orders/02.csv': withStatus, 'orders/03.csv': noStatus.join(',') }],
      ['a title line above the header', { 'orders/02.csv': `Orders of 3 March\n${withStatus}` }],
      ['spaces around the names', { 'orders/02.csv': withStatus.replace(',status\n', ', status \n') }],
    ];
    for (const [what, files] of cases) {
      const message = await refused(dataset({ ...base, ...files }));
      expect(message, what).toContain('orders/02.csv has a column status, which orders/01.csv lacks');
    }
    // An empty first file: named as empty, not as one whose column column0 the others lack.
    const empty = dataset({ 'orders/00.csv': '', 'orders/01.csv': file(ORDER_HEADER, FIRST), 'touches.csv': TOUCHES });
    expect(await refused(empty)).toBe("cannot read orders/: orders/00.csv is empty, without even a header\n  remove it, or give it the header of the folder's other files");
    const twice = dataset({ 'orders/01.csv': file(ORDER_HEADER, FIRST), 'orders/02.csv': file([...noStatus, 'Status', 'status'], SECOND), 'touches.csv': TOUCHES });
    expect(await refused(twice)).toBe('cannot read orders/: orders/02.csv names a column twice, as "Status" and "status"\n  names match case-insensitively, so keep one of them');
  });

  it('a first file without a header (a line break, CRLF or a byte order mark alone, an empty .csv.gz) is named as empty, not by a column0 it lacks or twice', async () => {
    const empty = (name: string) => `cannot read orders/: orders/${name} is empty, without even a header\n  remove it, or give it the header of the folder's other files`;
    for (const [what, content] of [['a line break', '\n'], ['CRLF', '\r\n'], ['a byte order mark', '\uFEFF']] as const) {
      const dir = dataset({ 'orders/00.csv': content, 'orders/01.csv': file(ORDER_HEADER, FIRST), 'touches.csv': TOUCHES });
      expect(await refused(dir), what).toBe(empty('00.csv'));
    }
    const gzipped = dataset({ 'orders/00.csv.gz': gzipSync(''), 'orders/01.csv.gz': gzipSync(file(ORDER_HEADER, FIRST)), 'touches.csv': TOUCHES });
    expect(await refused(gzipped)).toBe(empty('00.csv.gz'));
    // However long the blank run: past the 64 KB a header is looked for in, and a small gzip file inflating to more.
    const long = dataset({ 'orders/00.csv': '\n'.repeat(70_000), 'orders/01.csv': file(ORDER_HEADER, FIRST), 'touches.csv': TOUCHES });
    expect(await refused(long)).toBe(empty('00.csv'));
    const inflating = dataset({ 'orders/00.csv.gz': gzipSync(`\uFEFF${' \r\n'.repeat(50_000)}`), 'orders/01.csv.gz': gzipSync(file(ORDER_HEADER, FIRST)), 'touches.csv': TOUCHES });
    expect(await refused(inflating)).toBe(empty('00.csv.gz'));
  });

  it('blankFile: nothing but a leading byte order mark, spaces and line breaks, however long; a header after them, a second mark or a bad gzip is not blank', async () => {
    const dir = tempDir();
    const at = (name: string, content: string | Buffer) => {
      writeFileSync(join(dir, name), content);
      return join(dir, name);
    };
    expect(await blankFile(at('a.csv', ''))).toBe(true);
    expect(await blankFile(at('b.csv', `\uFEFF \t\r\n${'\n'.repeat(100_000)}`))).toBe(true);
    expect(await blankFile(at('c.csv.gz', Buffer.alloc(0)))).toBe(true);
    expect(await blankFile(at('d.csv', `${'\n'.repeat(100_000)}order_id\n`))).toBe(false);
    expect(await blankFile(at('e.csv', ' \uFEFF\n'))).toBe(false);
    expect(await blankFile(at('f.csv', '\uFEFF\uFEFF'))).toBe(false);
    expect(await blankFile(at('g.csv.gz', 'not gzip'))).toBe(false);
    expect(await blankFile(join(dir, 'gone.csv'))).toBe(false);
  });

  it('a first file naming a column twice is refused as a duplicate, not by the Status_1 DuckDB names it and the others lack', async () => {
    const dir = dataset({ 'orders/01.csv': file([...ORDER_HEADER, 'Status'], { ...FIRST, Status: 'completed' }), 'orders/02.csv': file(ORDER_HEADER, SECOND), 'touches.csv': TOUCHES });
    expect(await refused(dir)).toBe('cannot read orders/: orders/01.csv names a column twice, as "status" and "Status"\n  names match case-insensitively, so keep one of them');
  });

  it("a title line above the first file's header only: refused (the read would skip each later file's first record); above every file's: read", async () => {
    const first = `Orders export\n${file(ORDER_HEADER, FIRST)}`;
    const lost = dataset({ 'orders/01.csv': first, 'orders/02.csv': file(ORDER_HEADER, { ...SECOND, status: 'completed' }), 'touches.csv': TOUCHES });
    expect(await refused(lost)).toBe(
      "cannot read orders/: orders/01.csv has a line above its header, and orders/02.csv has not as many\n  the read skips the first file's lines above the header in every file, and would lose a record of the others: give every file the same lines above its header, or none",
    );
    const every = dataset({ 'orders/01.csv': first, 'orders/02.csv': `Orders export\n${file(ORDER_HEADER, { ...SECOND, status: 'completed' })}`, 'touches.csv': TOUCHES });
    expect(await amounts(every)).toEqual([12.71, 20]);
  });

  it("a later file with the first file's title line above a header without a column of the first is refused as lacking that column, not as a file without the title line (CRLF, semicolons, gzip too)", async () => {
    const titled = (names: string[], cells: Record<string, string>, delimiter = ',') => `Orders export\n${file(names, cells, delimiter)}`;
    const lacking = (later: string, column: string, first: string) =>
      `cannot read orders/: its files do not have the same columns:\n  ${later} has no column ${column}, which ${first} has\n  give every file of the folder the same header (the order of the columns may differ)`;
    for (const column of ['status', 'country', 'order_id']) {
      const dir = dataset({ 'orders/01.csv': titled(ORDER_HEADER, FIRST), 'orders/02.csv': titled(header([column]), SECOND), 'touches.csv': TOUCHES });
      expect(await refused(dir), column).toBe(lacking('orders/02.csv', column, 'orders/01.csv'));
    }
    // A third file, after one that has it all; a CRLF file after LF ones; semicolons; gzip.
    const third = dataset({ 'orders/01.csv': titled(ORDER_HEADER, FIRST), 'orders/02.csv': titled(ORDER_HEADER, { ...SECOND, status: 'completed' }), 'orders/03.csv': titled(header(['status']), { ...SECOND, order_id: 'o3' }), 'touches.csv': TOUCHES });
    expect(await refused(third)).toBe(lacking('orders/03.csv', 'status', 'orders/01.csv'));
    const crlf = dataset({ 'orders/01.csv': titled(ORDER_HEADER, FIRST), 'orders/02.csv': titled(header(['status']), SECOND).replaceAll('\n', '\r\n'), 'touches.csv': TOUCHES });
    expect(await refused(crlf)).toBe(lacking('orders/02.csv', 'status', 'orders/01.csv'));
    const semicolons = dataset({ 'orders/01.csv': titled(ORDER_HEADER, FIRST, ';'), 'orders/02.csv': titled(header(['status']), SECOND, ';'), 'touches.csv': TOUCHES });
    expect(await refused(semicolons)).toBe(lacking('orders/02.csv', 'status', 'orders/01.csv'));
    const gzipped = dataset({ 'orders/01.csv.gz': gzipSync(titled(ORDER_HEADER, FIRST)), 'orders/02.csv.gz': gzipSync(titled(header(['status']), SECOND)), 'touches.csv': TOUCHES });
    expect(await refused(gzipped)).toBe(lacking('orders/02.csv.gz', 'status', 'orders/01.csv.gz'));
    // Without the title line, a header without the column: named as a file without the title line (the read would take its header for it).
    const untitled = dataset({ 'orders/01.csv': titled(ORDER_HEADER, FIRST), 'orders/02.csv': file(header(['status']), SECOND), 'touches.csv': TOUCHES });
    expect(await refused(untitled)).toMatch(/^cannot read orders\/: orders\/01.csv has a line above its header, and orders\/02.csv has not as many\n/);
  });

  it('a later file naming a column twice below a title line (its header found by the sniffer, which renames the second Status_1) is refused as a duplicate, with or without the title line in the first', async () => {
    const twice = `Orders of 3 March\n${file([...ORDER_HEADER, 'Status'], { ...SECOND, Status: 'completed' })}`;
    const refusal = 'cannot read orders/: orders/02.csv names a column twice, as "status" and "Status"\n  names match case-insensitively, so keep one of them';
    const later = dataset({ 'orders/01.csv': file(ORDER_HEADER, FIRST), 'orders/02.csv': twice, 'touches.csv': TOUCHES });
    expect(await refused(later)).toBe(refusal);
    // Both with a title line: not a file without the first's lines above the header.
    const both = dataset({ 'orders/01.csv': `Orders of 2 March\n${file(ORDER_HEADER, FIRST)}`, 'orders/02.csv': twice, 'touches.csv': TOUCHES });
    expect(await refused(both)).toBe(refusal);
    // Both with a title line, the later header in another order: read (the cancelled order out).
    const reordered = dataset({ 'orders/01.csv': `Orders of 2 March\n${file(ORDER_HEADER, FIRST)}`, 'orders/02.csv': `Orders of 3 March\n${file([...ORDER_HEADER].reverse(), SECOND)}`, 'touches.csv': TOUCHES });
    expect(await amounts(reordered)).toEqual([12.71]);
  });

  it('a later file that adds plugin_id (the tenant) is refused: its rows would count for no plugin', async () => {
    const dir = dataset({ 'orders/01.csv': file(ORDER_HEADER, FIRST), 'orders/02.csv': file(['plugin_id', ...ORDER_HEADER], { ...SECOND, plugin_id: 'shop' }), 'touches.csv': TOUCHES });
    expect(await refused(dir)).toBe(refusal('orders/02.csv', 'plugin_id', 'orders/01.csv'));
  });

  it('is refused in Parquet folders too', async () => {
    const dir = dataset({ 'touches.csv': TOUCHES });
    mkdirSync(join(dir, 'orders'));
    await toParquet(file(header(['status']), FIRST), join(dir, 'orders', '01.parquet'));
    await toParquet(file(ORDER_HEADER, SECOND), join(dir, 'orders', '02.parquet'));
    expect(await refused(dir)).toBe(refusal('orders/02.parquet', 'status', 'orders/01.parquet'));
  });

  /** A folder orders/ of two Parquet files, each written from a SELECT of the test's own. */
  const typed = async (first: string, second: string) => {
    const dir = dataset({ 'touches.csv': TOUCHES });
    mkdirSync(join(dir, 'orders'));
    // DuckDB itself, as a writer of the files would be (the SQL of these lines is the test's own).
    const instance = await DuckDBInstance.create();
    const connection = await instance.connect();
    try {
      for (const [name, select] of [['01', first], ['02', second]] as const) {
        await connection.run(`COPY (SELECT ${select}) TO '${join(dir, 'orders', `${name}.parquet`)}' (FORMAT parquet)`);
      }
    } finally {
      connection.closeSync();
      instance.closeSync();
    }
    return dir;
  };
  const head = (id: string, at: string) => `'${id}' AS order_id, 'c1' AS contact_id, ${at} AS datetime, 'EUR' AS currency`;
  const kind = `cannot read orders/: its files do not give a column one type:\n  `;
  const hint = `\n  give the column one type in every file of the folder (the read takes the first file's, and would change the others' values to it)`;

  it('is refused in a Parquet folder when a later file types a column convx reads otherwise (the read would cast it to the first\'s type); not for a column it does not read', async () => {
    // Whole amounts written as BIGINT on one day, DOUBLE on the next: 15.125 would read as 15.
    const whole = await typed(`${head('o1', "TIMESTAMP '2024-03-02 10:00:00'")}, 100::BIGINT AS amount_wo_tax, 121::BIGINT AS amount_w_tax`, `${head('o2', "TIMESTAMP '2024-03-03 10:00:00'")}, 12.5::DOUBLE AS amount_wo_tax, 15.125::DOUBLE AS amount_w_tax`);
    expect(await refused(whole)).toBe(`${kind}orders/02.parquet has amount_wo_tax as DOUBLE, orders/01.parquet as BIGINT${hint}`);
    // A DATE, then a TIMESTAMP: the time of day would be lost.
    const times = await typed(`${head('o1', "DATE '2024-03-02'")}, 1.5 AS amount_wo_tax, 2.5 AS amount_w_tax`, `${head('o2', "TIMESTAMP '2024-03-03 23:30:00'")}, 1.5 AS amount_wo_tax, 2.5 AS amount_w_tax`);
    expect(await refused(times)).toBe(`${kind}orders/02.parquet has datetime as TIMESTAMP, orders/01.parquet as DATE${hint}`);
    // A type every value of which the read's takes unchanged (or refuses, on overflow) is read: fewer decimals, a narrower integer.
    const scales = await typed(`${head('o1', "TIMESTAMP '2024-03-02 10:00:00'")}, 10.5::DECIMAL(18,4) AS amount_wo_tax, 12.71::DECIMAL(18,4) AS amount_w_tax`, `${head('o2', "TIMESTAMP '2024-03-03 10:00:00'")}, 10.5::DECIMAL(18,2) AS amount_wo_tax, 20.25::DECIMAL(18,2) AS amount_w_tax`);
    expect(await amounts(scales)).toEqual([12.71, 20.25]);
    const widths = await typed(`${head('o1', "TIMESTAMP '2024-03-02 10:00:00'")}, 10::BIGINT AS amount_wo_tax, 12::BIGINT AS amount_w_tax`, `${head('o2', "TIMESTAMP '2024-03-03 10:00:00'")}, 10::INTEGER AS amount_wo_tax, 20::INTEGER AS amount_w_tax`);
    expect(await amounts(widths)).toEqual([12, 20]);
    // A column convx does not read may differ.
    const notes = await typed(`${head('o1', "TIMESTAMP '2024-03-02 10:00:00'")}, 10.5 AS amount_wo_tax, 12.71 AS amount_w_tax, 1 AS note`, `${head('o2', "TIMESTAMP '2024-03-03 10:00:00'")}, 10.5 AS amount_wo_tax, 12.71 AS amount_w_tax, 'x' AS note`);
    expect(await amounts(notes)).toEqual([12.71, 12.71]);
  });

  it('is refused in a Parquet folder when a later file types a column narrower than the first, in a way the cast changes (a FLOAT after a DOUBLE), though the files\' union has the first\'s type', async () => {
    // DESCRIBE of the files together gives the wider DOUBLE, the first file's: the FLOAT 88.17 would read as 88.16999816894531.
    const float = await typed(`${head('o1', "TIMESTAMP '2024-03-02 10:00:00'")}, 10.5::DOUBLE AS amount_wo_tax, 12.71::DOUBLE AS amount_w_tax`, `${head('o2', "TIMESTAMP '2024-03-03 10:00:00'")}, 10.5::FLOAT AS amount_wo_tax, 88.17::FLOAT AS amount_w_tax`);
    expect(await refused(float)).toBe(`${kind}orders/02.parquet has amount_wo_tax as FLOAT, orders/01.parquet as DOUBLE${hint}`);
  });

  it('is read when convx does not read the column, or every file has the table\'s columns in another order (the cancelled order out)', async () => {
    const note = dataset({ 'orders/01.csv': file(ORDER_HEADER, FIRST), 'orders/02.csv': file([...ORDER_HEADER, 'note'], { ...SECOND, note: 'x' }), 'touches.csv': TOUCHES });
    expect(await amounts(note)).toEqual([12.71]);
    const reversed = [...ORDER_HEADER].reverse();
    const order = dataset({ 'orders/01.csv': file(ORDER_HEADER, FIRST), 'orders/02.csv': file(reversed, SECOND), 'touches.csv': TOUCHES });
    expect(await amounts(order)).toEqual([12.71]);
    const parquet = dataset({ 'touches.csv': TOUCHES });
    mkdirSync(join(parquet, 'orders'));
    await toParquet(file(ORDER_HEADER, FIRST), join(parquet, 'orders', '01.parquet'));
    await toParquet(file([...ORDER_HEADER, 'note'], { ...SECOND, note: 'x' }), join(parquet, 'orders', '02.parquet'));
    expect(await amounts(parquet)).toEqual([12.71]);
  });
});

describe("a table's one file without a header", () => {
  it('is named as empty, as a folder\'s first file is (nothing, a line break, CRLF or a byte order mark alone; an empty .csv.gz or .tsv), not by six required columns missing beside column0', async () => {
    const hint = 'remove it, or give it a header naming the table\'s columns (at least order_id, contact_id, datetime, currency, amount_wo_tax, amount_w_tax)';
    const cases: [string, string, string | Buffer][] = [
      ['nothing', 'orders.csv', ''],
      ['a line break', 'orders.csv', '\n'],
      ['CRLF', 'orders.csv', '\r\n'],
      ['a byte order mark', 'orders.csv', '\uFEFF'],
      ['an empty .csv.gz', 'orders.csv.gz', gzipSync('')],
      ['a line break in .tsv', 'orders.tsv', '\n'],
      ['70,000 line breaks, past the 64 KB a header is looked for in', 'orders.csv', '\n'.repeat(70_000)],
    ];
    for (const [what, name, content] of cases) {
      const dir = dataset({ [name]: content, 'touches.csv': TOUCHES });
      const run = await cli(['report', '--data', dir, '--from', '2024-03-01', '--to', '2024-03-31']);
      expect(run.code, what).toBe(2);
      expect(run.stderr, what).toBe(`convx: error: cannot read ${name}: it is empty, without even a header\n  ${hint}\n`);
    }
    // An optional table's too: its own required columns.
    const sources = await cli(['report', '--data', dataset({ 'orders.csv': ORDERS, 'touches.csv': TOUCHES, 'sources.csv': '\n' }), '--from', '2024-03-01', '--to', '2024-03-31']);
    expect(sources.stderr).toBe("convx: error: cannot read sources.csv: it is empty, without even a header\n  remove it, or give it a header naming the table's columns (at least source_type, source_id)\n");
  });
});

describe('a # in CSV', () => {
  it('starts no comment: a record beginning with it (an order named #1002) is read, and a value holding it is kept whole', async () => {
    const rows = [
      ['1001', 'c1', '2024-03-02T10:00:00Z', 'EUR', '10', '12', 'CZ', 'false', 'completed'],
      ['#1002', 'c1', '2024-03-03T10:00:00Z', 'EUR', '20', '24', 'CZ', 'false', 'completed'],
      ['1004', 'c1', '2024-03-05T10:00:00Z', 'EUR', '40', '48', 'CZ', 'false', 'cancelled # fraud'],
      ['1005', 'c1', '2024-03-06T10:00:00Z', 'EUR', '50', '60', 'CZ', 'false', 'cancelled'],
    ];
    for (const [name, text] of [
      ['orders.csv', csv(ORDER_HEADER, rows)],
      ['orders.tsv', [ORDER_HEADER, ...rows].map((r) => r.join('\t')).join('\n') + '\n'],
    ] as const) {
      const dir = dataset({ [name]: text, 'touches.csv': TOUCHES });
      const items = await withBackend(dir, async (b) => (await b.items(itemsQuery('2024-03-01', '2024-03-31'))).rows.map((r) => [r.orderId, r.conversionsAmount]));
      // 'cancelled # fraud' is not the status cancelled: it counts; 1005 does not.
      expect(items, name).toEqual([['1001', 12], ['#1002', 24], ['1004', 48]]);
    }
  });
});

describe("a Parquet folder's types that the read takes unchanged (lossless)", () => {
  it('are the ones whose values cast unchanged or not at all: not fewer digits after the point, a time of day, text into a number, a FLOAT into a DOUBLE', () => {
    const yes: [string, string][] = [['INTEGER', 'BIGINT'], ['BIGINT', 'INTEGER'], ['INTEGER', 'DECIMAL(18,4)'], ['DECIMAL(18,2)', 'DECIMAL(18,4)'], ['DECIMAL(10,2)', 'DOUBLE'], ['INTEGER', 'DOUBLE'], ['BIGINT', 'DOUBLE'], ['DATE', 'TIMESTAMP'], ['BIGINT', 'VARCHAR']];
    const no: [string, string][] = [['DECIMAL(18,4)', 'DECIMAL(18,2)'], ['DOUBLE', 'BIGINT'], ['DOUBLE', 'DECIMAL(18,4)'], ['DECIMAL(18,18)', 'DOUBLE'], ['TIMESTAMP', 'DATE'], ['VARCHAR', 'BIGINT'], ['FLOAT', 'DOUBLE']];
    for (const [from, to] of yes) expect(lossless(from, to), `${from} -> ${to}`).toBe(true);
    for (const [from, to] of no) expect(lossless(from, to), `${from} -> ${to}`).toBe(false);
  });
});

describe('JSON records whose keys first appear late', () => {
  // DuckDB infers a JSON table's columns from the first 20,480 records of the first 32 files unless told to read them all.
  const line = (cells: Record<string, string>) => `${JSON.stringify(cells)}\n`;
  const base = { contact_id: 'c1', currency: 'EUR', amount_wo_tax: '10.50', amount_w_tax: '12.71' };
  const padding = (n: number) => Array.from({ length: n }, (_, i) => line({ ...base, order_id: `pad-${i}`, contact_id: 'c-none', datetime: '2019-01-01T00:00:00Z' })).join('');
  const late = line({ ...base, order_id: 'o1', datetime: '2024-03-02T10:00:00Z', status: 'completed' }) + line({ ...base, order_id: 'o2', datetime: '2024-03-03T10:00:00Z', amount_w_tax: '20.00', status: 'cancelled' });

  it('are read: a status past the 20,480th record of a file, or only in the 33rd file of a folder, excludes its cancelled order', async () => {
    const file = dataset({ 'orders.jsonl': padding(20_481) + late, 'touches.csv': TOUCHES });
    expect(await amounts(file)).toEqual([12.71]);
    const files: Record<string, string> = { 'touches.csv': TOUCHES };
    for (let i = 0; i < 32; i++) files[`orders/${String(i).padStart(2, '0')}.jsonl`] = padding(1).replace('pad-0', `pad-${i}`);
    files['orders/32.jsonl'] = late;
    expect(await amounts(dataset(files))).toEqual([12.71]);
  });
});

describe('bad data: a data error naming file, line, column and problem', () => {
  const load = async (files: Record<string, string>) => {
    const error = await withBackend(dataset(files), async () => undefined).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DataError);
    return (error as Error).message;
  };

  it('an amount of more than 4 decimals typed as a number (JSON, Parquet DOUBLE or DECIMAL(18,6)), as in CSV text; 4 decimals read exactly', async () => {
    const order = (amount: string) => ({ order_id: 'o1', contact_id: 'c1', datetime: '2024-03-02T10:00:00Z', currency: 'EUR', amount_wo_tax: '1', amount_w_tax: amount });
    const json = await load({ 'orders.jsonl': `${JSON.stringify({ ...order('0'), amount_w_tax: 1.00495 })}\n`, 'touches.csv': TOUCHES });
    expect(json).toContain('orders.jsonl, line 1, column amount_w_tax: "1.00495" is not a decimal number with a dot (at most 4 decimals)');
    for (const type of ['DOUBLE', 'DECIMAL(18,6)'] as const) {
      const dir = dataset({ 'touches.csv': TOUCHES });
      const db = await Database.open();
      try {
        const write = (amount: string, file: string) =>
          db.exec(sql`COPY (SELECT 'o1' AS order_id, 'c1' AS contact_id, TIMESTAMP '2024-03-02 10:00:00' AS datetime, 'EUR' AS currency, 1 AS amount_wo_tax, CAST(${literal(amount)} AS ${trusted(type)}) AS amount_w_tax) TO ${literal(file)} (FORMAT parquet)`);
        await write('1.00495', join(dir, 'orders.parquet'));
        const error = await withBackend(dir, async () => undefined).catch((e: unknown) => e);
        expect((error as Error).message, type).toContain('orders.parquet, row 1, column amount_w_tax: "1.00495" is not a decimal number with a dot (at most 4 decimals)');
        // 4 decimals: read as they are (the double nearest 1.0049 is the amount 1.0049).
        await write('1.0049', join(dir, 'orders.parquet'));
        expect(await withBackend(dir, async (b) => (await b.items(itemsQuery('2024-03-01', '2024-03-31'))).rows.map((r) => r.conversionsAmount)), type).toEqual([1.0049]);
      } finally {
        db.close();
      }
    }
  });

  it("a timestamp with a zone's name instead of an offset (DuckDB's cast takes it, and shifts the zone-less rows after it); ISO 8601's forms read", async () => {
    const row = (id: string, at: string) => [id, 'c1', at, 'EUR', '10', '12'];
    const header = ORDER_HEADER.slice(0, 6);
    for (const zone of ['America/New_York', 'BST', 'Europe/London']) {
      const message = await load({ 'orders.csv': csv(header, [row('o1', `2024-03-02 10:00:00 ${zone}`), row('o2', '2024-03-03 22:30:00')]), 'touches.csv': TOUCHES });
      expect(message, zone).toContain(`orders.csv, line 2, column datetime: "2024-03-02 10:00:00 ${zone}" is not an ISO 8601 timestamp`);
    }
    const forms = ['2024-03-02', '2024-03-02T10:00', '2024-03-02 10:00:00', '2024-03-02T10:00:00.123456Z', '2024-03-02T12:00:00+02:00', '2024-03-02T12:00:00+0200', '2024-03-02 05:00:00-05', ' 2024-03-02T10:00:00Z ', '2024-03-02 10:00:00 UTC', '2024-03-02 10:00:00 GMT'];
    const dir = dataset({ 'orders.csv': csv(header, forms.map((at, i) => row(`o${i}`, at))), 'touches.csv': TOUCHES });
    const times = await withBackend(dir, async (b) => (await b.items(itemsQuery('2024-03-01', '2024-03-31'))).rows.map((r) => r.datetime));
    expect(times.sort()).toEqual(['2024-03-02T00:00:00.000Z', ...Array<string>(8).fill('2024-03-02T10:00:00.000Z'), '2024-03-02T10:00:00.123Z'].sort());
  });

  it('a Parquet timestamp is read to the millisecond as a text one is: a click after an order in its millisecond attributes it', async () => {
    // Nanoseconds typed as TIMESTAMP_NS, microseconds of an instant as TIMESTAMPTZ.
    const dir = dataset({});
    const db = await Database.open();
    try {
      await db.exec(sql`COPY (SELECT * FROM (VALUES ('o1', 'c1', TIMESTAMP_NS '2024-03-10 00:00:00.000200999'), ('o2', 'c2', TIMESTAMP_NS '2024-03-11 00:00:00.000100'))
                                t(order_id, contact_id, datetime), (SELECT 'EUR' AS currency, 10 AS amount_wo_tax, 12 AS amount_w_tax)) TO ${literal(join(dir, 'orders.parquet'))} (FORMAT parquet)`);
      await db.exec(sql`COPY (SELECT * FROM (VALUES ('c1', TIMESTAMPTZ '2024-03-10 00:00:00.000400+00'), ('c2', TIMESTAMPTZ '2024-03-11 00:00:00.000900+00')) t(contact_id, datetime),
                                (SELECT 'click' AS touch, 'campaign' AS source_type, 'k1' AS source_id)) TO ${literal(join(dir, 'touches.parquet'))} (FORMAT parquet)`);
    } finally {
      db.close();
    }
    const items = await withBackend(dir, async (b) => (await b.items(itemsQuery('2024-03-01', '2024-03-31'))).rows);
    expect(items.map((r) => [r.orderId, r.datetime, r.source.id, r.attribution.hoursToConversion]).sort()).toEqual([
      ['o1', '2024-03-10T00:00:00.000Z', 'k1', 0],
      ['o2', '2024-03-11T00:00:00.000Z', 'k1', 0],
    ]);
    // A command's one query reads a single Parquet file of orders in place, through a view: the same.
    const command = await cli(['items', '--data', dir, '--from', '2024-03-01', '--to', '2024-03-31', '-o', 'csv', '--fields', 'orderId,datetime,source.id', '--sort', 'datetime']);
    expect(command.stdout).toBe('orderId,datetime,source.id\no1,2024-03-10T00:00:00.000Z,k1\no2,2024-03-11T00:00:00.000Z,k1\n');
  });

  it('a rate date typed as a timestamp with a time of day (its cast would drop the time); at midnight it is the date', async () => {
    const dir = dataset({ 'orders.csv': ORDERS, 'touches.csv': TOUCHES });
    const instance = await DuckDBInstance.create();
    const connection = await instance.connect();
    const write = (at: string) => connection.run(`COPY (SELECT TIMESTAMP '${at}' AS date, 'EUR' AS currency, 1.0 AS rate) TO '${join(dir, 'fx.parquet')}' (FORMAT parquet)`);
    try {
      await write('2024-03-01 23:00:00');
      const error = await withBackend(dir, async () => undefined).catch((e: unknown) => e);
      expect((error as Error).message).toContain('fx.parquet, row 1, column date: "2024-03-01T23:00:00.000Z" is not a date (YYYY-MM-DD)');
      await write('2024-03-01 00:00:00');
      expect(await amounts(dir)).toEqual([12.71, -12.71]);
    } finally {
      connection.closeSync();
      instance.closeSync();
    }
  });

  it('a missing required column', async () => {
    const message = await load({
      'orders.csv': csv(['order_id', 'contact_id', 'datetime', 'currency', 'amount_w_tax'], [['o', 'c', '2024-01-01', 'EUR', '1']]),
      'touches.csv': TOUCHES,
    });
    expect(message).toMatch(/orders.csv, column amount_wo_tax: required column is missing/);
  });

  it('a non-numeric amount, with its line, and how many more rows share the problem', async () => {
    const rows = [
      ['o1', 'c1', '2024-03-02T10:00:00Z', 'EUR', '10', '12', '', '', ''],
      ['o2', 'c1', '2024-03-02T10:00:00Z', 'EUR', 'ten', '12', '', '', ''],
      ['o3', 'c1', '2024-03-02T10:00:00Z', 'EUR', '1,5', '12', '', '', ''],
      ['o4', 'c1', '2024-03-02T10:00:00Z', 'EUR', '1.23456', '12', '', '', ''],
      ['o5', 'c1', '2024-03-02T10:00:00Z', 'EUR', 'x', '12', '', '', ''],
    ];
    const message = await load({ 'orders.csv': csv(ORDER_HEADER, rows), 'touches.csv': TOUCHES });
    expect(message).toMatch(/orders.csv, line 3, column amount_wo_tax: "ten" is not a decimal number/);
    expect(message).toMatch(/orders.csv, line 4, column amount_wo_tax: "1,5" is not/);
    expect(message).toMatch(/line 5, column amount_wo_tax: "1.23456" is not a decimal number with a dot \(at most 4 decimals\)/);
    expect(message).toMatch(/1 more row has this problem/);
  });

  it('an unknown source_type', async () => {
    const message = await load({
      'orders.csv': ORDERS,
      'touches.csv': csv(TOUCH_HEADER, [['c1', '2024-03-01T00:00:00Z', 'click', 'campaign', 'k1'], ['c1', '2024-03-01T00:00:00Z', 'click', 'newsletter', 'k1']]),
    });
    expect(message).toMatch(/touches.csv, line 3, column source_type: "newsletter" is not one of campaign, automation, smartflow/);
  });

  it('a bad timestamp, a bad boolean, an empty required value and a bad fx date', async () => {
    const message = await load({
      'orders.csv': csv(ORDER_HEADER, [
        ['o1', 'c1', 'yesterday', 'EUR', '1', '1', '', 'false', ''],
        ['o2', '', '2024-03-02T10:00:00Z', 'EUR', '1', '1', '', 'maybe', ''],
      ]),
      'touches.csv': TOUCHES,
      'fx.csv': csv(['date', 'currency', 'rate'], [['2024-3-1', 'CZK', '0.04'], ['2024-03-02', 'CZK', '-1']]),
    });
    expect(message).toMatch(/orders.csv, line 2, column datetime: "yesterday" is not an ISO 8601 timestamp/);
    expect(message).toMatch(/orders.csv, line 3, column is_refund: "maybe" is not a boolean/);
    expect(message).toMatch(/orders.csv, line 3, column contact_id: the value is empty, and the column is required/);
    expect(message).toMatch(/fx.csv, line 2, column date: "2024-3-1" is not a date/);
    expect(message).toMatch(/fx.csv, line 3, column rate: "-1" is not a positive decimal number/);
  });

  it('names the file of a folder and the line in JSON Lines', async () => {
    const message = await load({
      'orders/a.jsonl': [
        JSON.stringify({ order_id: 'o1', contact_id: 'c', datetime: '2024-03-02T10:00:00Z', currency: 'EUR', amount_wo_tax: '1', amount_w_tax: '1' }),
        JSON.stringify({ order_id: 'o2', contact_id: 'c', datetime: '2024-03-02T10:00:00Z', currency: 'EUR', amount_wo_tax: 'abc', amount_w_tax: '1' }),
      ].join('\n'),
      'touches.csv': TOUCHES,
    });
    expect(message).toMatch(/orders\/a.jsonl, line 2, column amount_wo_tax: "abc"/);
  });
});

describe('convx data check', () => {
  it('finds duplicate orders, orphan refunds, unknown sources, currencies without rates and rate gaps', async () => {
    const dir = shop({
      touches: [{ at: '2024-03-01T00:00:00Z', source: 'k1' }, { at: '2024-03-01T00:00:00Z', source: 'ghost' }],
      sources: [['campaign', 'k1', 'Known', null, null, null, null, null, null]],
      fx: [['2024-03-01', 'CZK', '0.04']],
      orders: [
        { id: 'dup', at: '2024-03-02T10:00:00Z' },
        { id: 'dup', at: '2024-03-02T11:00:00Z' },
        { id: 'orphan', at: '2024-03-05T10:00:00Z', refund: true },
        { id: 'usd', at: '2024-03-05T10:00:00Z', currency: 'USD' },
        { id: 'czk', at: '2024-03-20T10:00:00Z', currency: 'CZK' },
      ],
    });
    const report = await checkDataset(dir);
    expect(report.ok).toBe(false);
    expect(report.problems).toEqual([]);
    const byCode = Object.fromEntries(report.findings.map((f) => [f.code, f]));
    expect(byCode.duplicate_order).toMatchObject({ count: 1, examples: ['dup'] });
    expect(byCode.refund_without_order).toMatchObject({ count: 1, examples: ['orphan'] });
    expect(byCode.unknown_source).toMatchObject({ count: 1, examples: ['campaign:ghost'] });
    expect(byCode.currency_without_fx).toMatchObject({ count: 1, examples: ['USD'] });
    expect(byCode.fx_gap).toMatchObject({ count: 1, examples: ['CZK on 2024-03-20'] });

    const run = await cli(['data', 'check', dir, '-o', 'table']);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/finding duplicate_order: 1 order id with more than one order row/);
    expect(byCode.duplicate_contact).toBeUndefined();
  });

  it('finds refunds dated before their order, to the millisecond: one at the same instant or later is not one', async () => {
    const dir = shop({
      touches: [{ at: '2024-03-01T00:00:00Z', source: 'k1' }],
      orders: [
        { id: 'early', at: '2024-03-10T10:00:00.000Z' },
        { id: 'early', at: '2024-03-10T09:59:59.999Z', refund: true },
        { id: 'same', at: '2024-03-10T10:00:00.000Z' },
        { id: 'same', at: '2024-03-10T10:00:00.000Z', refund: true },
        { id: 'later', at: '2024-03-10T10:00:00.000Z' },
        { id: 'later', at: '2024-03-12T10:00:00.000Z', refund: true },
        // a second order row of an id: the earliest sale is the order's, so a refund between the two is after it
        { id: 'twice', at: '2024-03-10T10:00:00.000Z' },
        { id: 'twice', at: '2024-03-11T10:00:00.000Z', refund: true },
        { id: 'twice', at: '2024-03-12T10:00:00.000Z' },
      ],
    });
    const report = await checkDataset(dir);
    expect(report.findings.find((f) => f.code === 'refund_before_order')).toMatchObject({ count: 1, examples: ['early'] });
    const run = await cli(['data', 'check', dir]);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/finding refund_before_order: 1 order id with a refund dated before the order; .* \(e\.g\. early\)\n/);
  });

  it('finds contact ids of several rows, whose later rows a validation does not read (a later unsubscribed)', async () => {
    const dir = dataset({
      'contacts.csv': csv(['contact_id', 'email', 'consent', 'unsubscribed'], [
        ['c-1', 'a@x.dev', true, false],
        ['c-2', 'b@x.dev', true, false],
        ['c-1', 'a@x.dev', true, true],
      ]),
    });
    const report = await checkDataset(dir);
    expect(report.ok).toBe(false);
    const duplicates = report.findings.filter((f) => f.code === 'duplicate_contact');
    expect(duplicates.map((f) => [f.count, f.examples])).toEqual([[1, ['c-1']]]);
    expect(duplicates[0]!.message).toBe('1 contact id with more than one row; the first row in file order counts (its e-mail, consent and unsubscribed), the others are not read');
  });

  it('two rates of a currency on a day: the first in file order converts, in a command and an import alike, and data check names the day', async () => {
    // Before this rule DuckDB's join chose between the two by its sort (in a bare test on a table of dates each given twice, the second row, always).
    const rates = (first: string, second: string): [string, string, string][] => [
      ['2024-02-28', 'CZK', '0.03'],
      ['2024-03-01', 'CZK', first],
      ['2024-03-01', 'CZK', second],
    ];
    const data = (fx: [string, string, string, string?][]) =>
      shop({ touches: [{ at: '2024-02-20T00:00:00Z' }], orders: [{ id: 'o1', at: '2024-03-01T10:00:00Z', currency: 'CZK', net: 100, gross: 121 }], fx });
    const amount = async (argv: string[]) => {
      const run = await cli([...argv, '--from', '2024-03-01', '--to', '2024-03-01', '-o', 'json']);
      expect(run.code, run.stderr).toBe(0);
      return JSON.parse(run.stdout).conversions[0].conversionsReferenceAmount;
    };
    const firstLow = data(rates('0.04', '0.05'));
    const firstHigh = data(rates('0.05', '0.04'));
    // 121 CZK at 0.04 and at 0.05 EUR, rounded per transaction
    expect(await amount(['items', '--data', firstLow])).toBe(4.84);
    expect(await amount(['items', '--data', firstHigh])).toBe(6.05);
    const file = join(tempDir('convx-fx-'), 'shop.duckdb');
    expect((await cli(['data', 'import', firstHigh, '--into', file, '--quiet'])).code).toBe(0);
    expect(await amount(['items', '--data', file])).toBe(6.05);
    const report = await checkDataset(firstLow);
    expect(report.findings.find((f) => f.code === 'fx_duplicate')).toEqual({
      code: 'fx_duplicate',
      message: '1 currency day with different rates in fx; the first row in file order counts',
      count: 1,
      examples: ['CZK on 2024-03-01 to EUR'],
    });
    // the same rate twice is no finding
    expect((await checkDataset(data(rates('0.04', '0.04')))).findings.map((f) => f.code)).not.toContain('fx_duplicate');
    // a row without reference_currency is a rate to the reference currency: it competes with one that names it
    const unnamed = data([['2024-02-28', 'CZK', '0.03'], ['2024-03-01', 'CZK', '0.04', ''], ['2024-03-01', 'CZK', '0.05']]);
    expect(await amount(['items', '--data', unnamed])).toBe(4.84);
    expect((await checkDataset(unnamed)).findings.find((f) => f.code === 'fx_duplicate')?.examples).toEqual(['CZK on 2024-03-01 to EUR']);
  });

  it('prints every file problem and exits 1; a clean dataset exits 0', async () => {
    const bad = dataset({
      'orders.csv': csv(ORDER_HEADER, [['o1', 'c1', 'never', 'EUR', 'x', '1', '', '', '']]),
      'touches.csv': TOUCHES,
    });
    const run = await cli(['data', 'check', bad]);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/error {2}orders.csv, line 2, column datetime/);
    expect(run.stdout).toMatch(/error {2}orders.csv, line 2, column amount_wo_tax/);
    const json = await cli(['data', 'check', bad, '-o', 'json']);
    expect(JSON.parse(json.stdout).problems).toHaveLength(2);
    // the checks across tables need clean files: the summary says they did not run, not "0 findings"
    expect(JSON.parse(json.stdout).integrityChecked).toBe(false);
    expect(run.stdout).toMatch(/: 2 problems; the checks across tables \(duplicate ids, refunds without an order, rates, \.\.\.\) run once the files have no problem\n$/);
    expect(run.stdout).not.toMatch(/finding/);

    const clean = await cli(['data', 'check', dataset({ 'orders.csv': ORDERS, 'touches.csv': TOUCHES })]);
    expect(clean.stdout).toMatch(/no problems found/);
    expect(clean.code).toBe(0);
    expect(JSON.parse((await cli(['data', 'check', dataset({ 'orders.csv': ORDERS, 'touches.csv': TOUCHES }), '-o', 'json'])).stdout).integrityChecked).toBe(true);
  });

  it('a finding across tables is counted where the files are clean, and said not to be looked for once a file has a problem', async () => {
    // an order currency with no rate at all: a finding across tables (orders and fx)
    const rows = [['o1', 'c1', '2024-03-10T10:00:00Z', 'EUR', '5', '6', '', '', ''], ['o3', 'c1', '2024-03-11T10:00:00Z', 'HUF', '5', '6', '', '', '']];
    const fx = 'date,currency,rate,reference_currency\n2024-03-01,CZK,0.04,EUR\n';
    const clean = await cli(['data', 'check', dataset({ 'orders.csv': csv(ORDER_HEADER, rows), 'touches.csv': TOUCHES, 'fx.csv': fx })]);
    expect(clean.code).toBe(1);
    expect(clean.stdout).toMatch(/finding currency_without_fx: .*\n.*: 0 problems, 1 finding\n$/);
    const bad = await cli(['data', 'check', dataset({ 'orders.csv': csv(ORDER_HEADER, [...rows, ['o2', 'c1', 'never', 'EUR', '1', '1', '', '', '']]), 'touches.csv': TOUCHES, 'fx.csv': fx })]);
    expect(bad.code).toBe(1);
    expect(bad.stdout).not.toMatch(/currency_without_fx|0 findings/);
    expect(bad.stdout).toMatch(/: 1 problem; the checks across tables .* run once the files have no problem\n$/);
  });
});

describe('an empty plugin_id', () => {
  // Plugins pa and pb; order o-50's plugin_id is empty: it would belong to no plugin, and no scope would read it.
  const PLUGIN_ORDERS = ['plugin_id', ...ORDER_HEADER];
  const files = (orders: string[][], touches = TOUCH_HEADER, touchRows: string[][] = [['c-1', '2024-03-09T00:00:00Z', 'click', 'campaign', 'k1']]) => ({
    'orders.csv': csv(PLUGIN_ORDERS, [
      ['pa', 'o-1', 'c-1', '2024-03-10T10:00:00Z', 'EUR', '5', '6', 'CZ', 'false', 'completed'],
      ['pb', 'o-2', 'c-1', '2024-03-10T11:00:00Z', 'EUR', '5', '6', 'CZ', 'false', 'completed'],
      ...orders,
    ]),
    'touches.csv': csv(touches, touchRows),
  });
  const EMPTY = ['', 'o-50', 'c-1', '2024-03-10T13:00:00Z', 'EUR', '7', '8', 'CZ', 'false', 'completed'];

  it('is a data error naming the file, the line and the column, in a command and in data check', async () => {
    const dir = dataset(files([EMPTY, [' ', 'o-51', 'c-1', '2024-03-10T14:00:00Z', 'EUR', '7', '8', 'CZ', 'false', 'completed']]));
    const run = await cli(['order', 'o-50', '--plugin', 'pa', '--data', dir]);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toMatch(/orders.csv, line 4, column plugin_id: the value is empty/);
    expect(run.stderr).toMatch(/orders.csv, line 5, column plugin_id: the value is empty/);
    const check = await cli(['data', 'check', dir, '-o', 'json']);
    expect(check.code).toBe(1);
    expect(JSON.parse(check.stdout).problems.map((p: { line?: string; column?: string }) => [p.line, p.column])).toEqual([['line 4', 'plugin_id'], ['line 5', 'plugin_id']]);
  });

  it('in a table other than orders (touches), and a table without the column is still shared by every plugin', async () => {
    const touches = ['plugin_id', ...TOUCH_HEADER];
    const bad = dataset(files([], touches, [['pa', 'c-1', '2024-03-09T00:00:00Z', 'click', 'campaign', 'k1'], ['', 'c-1', '2024-03-09T01:00:00Z', 'click', 'campaign', 'k2']]));
    const check = await cli(['data', 'check', bad]);
    expect(check.code).toBe(1);
    expect(check.stdout).toMatch(/error {2}touches.csv, line 3, column plugin_id: the value is empty/);
    // touches without plugin_id: every plugin's clicks, o-1 of pa and o-2 of pb both attributed
    const shared = dataset(files([]));
    expect((await cli(['data', 'check', shared])).code).toBe(0);
    for (const [plugin, order] of [['pa', 'o-1'], ['pb', 'o-2']] as const) {
      const run = await cli(['order', order, '--plugin', plugin, '--data', shared, '-o', 'json']);
      expect(run.code, run.stderr).toBe(0);
      expect(JSON.parse(run.stdout).conversions).toHaveLength(1);
    }
  });
});

describe('the files a read of a table takes', () => {
  it('are each pattern in turn, each in its glob\'s order, for several tables at once and on several threads', async () => {
    const dir = tempDir();
    const names = ['b.csv', 'a.csv', 'sub/c.csv', 'z.csv.gz', 'sub/y.csv.gz', ...Array.from({ length: 30 }, (_, i) => `m/${i}.csv`)];
    for (const name of names) {
      mkdirSync(dirname(join(dir, name)), { recursive: true });
      writeFileSync(join(dir, name), '');
    }
    const patterns = [join(dir, '*.csv'), join(dir, '**', '*.csv'), join(dir, '*.csv.gz'), join(dir, '**', '*.csv.gz')];
    const db = await Database.open(':memory:', { threads: 4 });
    try {
      const one = async (pattern: string) => (await db.all<{ file: string }>(sql`SELECT file FROM glob(${literal(pattern)})`)).map((r) => r.file);
      const expected = (await Promise.all(patterns.map(one))).flat();
      const [all, some] = await everyFileAsRead(db, [{ patterns }, { patterns: patterns.slice(2) }]);
      expect(all).toEqual(expected);
      expect(some).toEqual((await Promise.all(patterns.slice(2).map(one))).flat());
      expect(await filesAsRead(db, { patterns })).toEqual(expected);
    } finally {
      db.close();
    }
  });
});
