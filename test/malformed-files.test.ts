/**
 * Issue 17, point 6: a malformed file is a data error (exit 2) that names the file, the
 * physical line or record, the column and what is wrong; a table that is a broken or looping
 * link, a FIFO or a device is refused by name. Each file is built here, and each expected line
 * is computed from what the test wrote.
 */
import { execFileSync } from 'node:child_process';
import { symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { constants, gunzipSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { DataError } from '../src/errors.js';
import { Database } from '../src/local/db.js';
import { parseItemsQuery } from '../src/model/query.js';
import { DatasetHolder, ServedDataset } from '../src/server/plugins.js';
import { cli, csv, dataset, tempDir, TOUCH_HEADER } from './helpers.js';
import { literal, sql, trusted, type Sql } from '../src/local/sql.js';

const HEADER = ['order_id', 'contact_id', 'datetime', 'currency', 'amount_wo_tax', 'amount_w_tax'];
const TOUCHES = csv(TOUCH_HEADER, [['c1', '2024-03-01T00:00:00Z', 'click', 'campaign', 'k1']]);
const row = (i: number, net = '10', gross = '12') => `o${i},c1,2024-03-02T10:00:00Z,EUR,${net},${gross}`;
const record = (i: number, extra: Record<string, unknown> = {}) => ({
  order_id: `o${i}`,
  contact_id: 'c1',
  datetime: '2024-03-02T10:00:00Z',
  currency: 'EUR',
  amount_wo_tax: 10,
  amount_w_tax: 12,
  ...extra,
});

/** An orders.csv of `n` good rows, with some lines replaced (by index in the file, 0 = the header). */
function ordersCsv(n: number, replace: Record<number, string> = {}): { text: string; lines: string[] } {
  const lines = [HEADER.join(','), ...Array.from({ length: n }, (_, i) => row(i + 1))];
  for (const [index, text] of Object.entries(replace)) lines[Number(index)] = text;
  return { text: `${lines.join('\n')}\n`, lines };
}

/** `convx report` over a dataset: the exit code and the error's text. */
/** A dataset of TOUCHES and an orders.parquet of these rows, of the columns order_id, contact_id, datetime, currency, amount_wo_tax, amount_w_tax. */
async function parquetOrders(rows: Sql): Promise<string> {
  const dir = dataset({ 'touches.csv': TOUCHES });
  const db = await Database.open();
  try {
    await db.exec(sql`COPY (SELECT * FROM (VALUES ${rows}) AS t(order_id, contact_id, datetime, currency, amount_wo_tax, amount_w_tax)) TO ${literal(join(dir, 'orders.parquet'))} (FORMAT parquet)`);
  } finally {
    db.close();
  }
  return dir;
}

async function report(dir: string) {
  const run = await cli(['report', '--data', dir, '--from', '2024-03-01', '--to', '2024-03-31']);
  return { code: run.code, message: run.stderr };
}

/** The lines of an error that name a place (two spaces, then the file). */
const placed = (message: string) => message.split('\n').filter((l) => l.startsWith('  '));

describe('malformed CSV files name the physical line, the column and what is wrong', () => {
  it('an extra field from a decimal comma (12,50 unquoted) names its line and column, not "required column is missing"', async () => {
    const { text, lines } = ordersCsv(6, { 4: row(4, '12,50') });
    const line = lines.indexOf(row(4, '12,50')) + 1;
    const dir = dataset({ 'orders.csv': text, 'touches.csv': TOUCHES });
    const { code, message } = await report(dir);
    expect(code).toBe(2);
    expect(message).not.toMatch(/required column/);
    expect(placed(message)).toHaveLength(1);
    expect(message).toContain(`orders.csv, line ${line}, column amount_wo_tax: 7 fields where the header has 6 columns`);
    expect(message).toContain('"12,50" looks like a number with a decimal comma');

    // data check lists it as a problem of the file, with the same place.
    const check = await cli(['data', 'check', dir, '-o', 'json']);
    const problems = JSON.parse(check.stdout).problems as { file: string; line: string; column: string; message: string }[];
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatchObject({ file: 'orders.csv', line: `line ${line}`, column: 'amount_wo_tax' });
    expect(check.code).toBe(1);
  });

  it('a decimal comma on the last line, which the sniffer takes for the header (the widest record), names that line, not "required column is missing"', async () => {
    const { text, lines } = ordersCsv(20, { 20: 'o20,c1,2024-03-02T10:00:00Z,EUR,1,040,12' });
    const { code, message } = await report(dataset({ 'orders.csv': text, 'touches.csv': TOUCHES }));
    expect(code).toBe(2);
    expect(message).not.toMatch(/required column/);
    expect(placed(message)).toEqual([
      `  orders.csv, line ${lines.length}, column amount_wo_tax: 7 fields where the header has 6 columns: "1,040" looks like a number with a decimal comma; write it with a dot (1.040) or quote it`,
    ]);
  });

  it('a ragged CSV (a line with fewer fields, another with more) names each line, not "Error when sniffing file"', async () => {
    const short = 'o3,c1,2024-03-02T10:00:00Z,EUR';
    const long = `${row(6)},surplus`;
    const { text, lines } = ordersCsv(8, { 3: short, 6: long });
    const dir = dataset({ 'orders.csv': text, 'touches.csv': TOUCHES });
    const { code, message } = await report(dir);
    expect(code).toBe(2);
    expect(message).not.toMatch(/sniffing/);
    expect(placed(message)).toEqual([
      `  orders.csv, line ${lines.indexOf(short) + 1}, column amount_wo_tax: 4 fields where the header has 6 columns: the line ends before this column (no value for amount_wo_tax, amount_w_tax)`,
      `  orders.csv, line ${lines.indexOf(long) + 1}, column amount_w_tax: 7 fields where the header has 6 columns: more values than columns (after this column: "surplus")`,
    ]);
  });

  it('many ragged lines: the first three, and a word that the search stopped there', async () => {
    const short = (i: number) => `o${i},c1,2024-03-02T10:00:00Z,EUR,10`;
    const { text } = ordersCsv(10, { 2: short(2), 4: short(4), 5: short(5), 8: short(8), 9: short(9) });
    const { code, message } = await report(dataset({ 'orders.csv': text, 'touches.csv': TOUCHES }));
    expect(code).toBe(2);
    expect(placed(message).map((l) => /line (\d+)/.exec(l)?.[1] ?? l)).toEqual(['3', '5', '6', '  orders.csv: the search stopped at these 3; lines after them may have more']);
  });

  it('a quoted value never closed names the line where it opens and its column', async () => {
    const open = 'o2,c1,"2024-03-02T10:00:00Z,EUR,10,12';
    const { text, lines } = ordersCsv(4, { 2: open });
    const { code, message } = await report(dataset({ 'orders.csv': text, 'touches.csv': TOUCHES }));
    expect(code).toBe(2);
    expect(placed(message)).toEqual([`  orders.csv, line ${lines.indexOf(open) + 1}, column datetime: a quoted value starts in this line and is never closed (a " is missing)`]);
  });

  it('a ragged line past the sniffer sample, after quoted values that span lines, is placed on its physical line', async () => {
    const lines = [HEADER.join(',')];
    for (let i = 1; i <= 30_000; i++) lines.push(i === 100 ? `o100,c1,2024-03-02T10:00:00Z,"EUR\nstill EUR",10,12` : row(i));
    const bad = 'o25000,c1,2024-03-02T10:00:00Z,EUR,10';
    lines[25_000] = bad;
    const text = `${lines.join('\n')}\n`;
    // The physical line: every line break before it counts, the quoted one too.
    const line = text.slice(0, text.indexOf(bad)).split('\n').length;
    const { code, message } = await report(dataset({ 'orders.csv': text, 'touches.csv': TOUCHES }));
    expect(code).toBe(2);
    expect(placed(message)).toEqual([`  orders.csv, line ${line}, column amount_w_tax: 5 fields where the header has 6 columns: the line ends before this column (no value for amount_w_tax)`]);
  });

  it('a truncated .csv.gz names the line where the data breaks off', async () => {
    const { text } = ordersCsv(20_000);
    const full = gzipSync(text);
    const cut = full.subarray(0, Math.floor(full.length / 2));
    // What can be decompressed of the cut file: the data breaks off in its last line.
    const prefix = gunzipSync(cut, { finishFlush: constants.Z_SYNC_FLUSH }).toString();
    const line = prefix.split('\n').length;
    const { code, message } = await report(dataset({ 'orders.csv.gz': cut, 'touches.csv': TOUCHES }));
    expect(code).toBe(2);
    expect(message).not.toMatch(/required column|sniffing/);
    expect(placed(message)).toHaveLength(1);
    expect(message).toMatch(new RegExp(`orders\\.csv\\.gz, line ${line}, column \\w+: the file breaks off here: the gzip data is truncated or corrupt`));
  });

  it('a file in another encoding (Windows-1250) names the first line that is not UTF-8, not "CSV Error on Line", also gzipped and past a large first part', async () => {
    const { lines } = ordersCsv(30_000);
    // Line 25,002 (index 25,001) holds a contact id with "ř" and "š" as Windows-1250 writes them (0xF8, 0x9A): not UTF-8.
    const before = Buffer.from(`${lines.slice(0, 25_001).join('\n')}\n`);
    const bad = Buffer.concat([Buffer.from('o-x,P'), Buffer.from([0xf8, 0xed, 0x9a]), Buffer.from(',2024-03-02T10:00:00Z,EUR,10,12\n')]);
    const after = Buffer.from(`${lines.slice(25_002).join('\n')}\n`);
    const bytes = Buffer.concat([before, bad, after]);
    for (const [name, content] of [['orders.csv', bytes], ['orders.csv.gz', gzipSync(bytes)]] as const) {
      const { code, message } = await report(dataset({ [name]: content, 'touches.csv': TOUCHES }));
      expect(code, name).toBe(2);
      expect(placed(message), name).toEqual([`  ${name}, line 25002: its bytes are not UTF-8 text (saved as Windows-1250 or Latin-1?); save the file as UTF-8`]);
    }
  });

  it('a UTF-16 file (Excel\'s "Unicode Text", with its byte order mark) is named as UTF-16, not as Windows-1250; also gzipped', async () => {
    const { text } = ordersCsv(3);
    const utf16le = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]);
    const utf16be = Buffer.from(utf16le.map((_, i) => utf16le[i ^ 1]!));
    for (const [name, content, order] of [['orders.csv', utf16le, 'UTF-16LE'], ['orders.csv.gz', gzipSync(utf16le), 'UTF-16LE'], ['orders.csv', utf16be, 'UTF-16BE']] as const) {
      const { code, message } = await report(dataset({ [name]: content, 'touches.csv': TOUCHES }));
      expect(code, name).toBe(2);
      expect(placed(message), name).toEqual([`  ${name}, line 1: its text is ${order} (it starts with UTF-16's byte order mark); save the file as UTF-8`]);
    }
  });

  it('a 5 MB line names its line and column and the limit, not "Line: 1"', async () => {
    const huge = row(3, '10', `12${'0'.repeat(5 * 1024 * 1024)}`);
    const { text, lines } = ordersCsv(5, { 3: huge });
    const { code, message } = await report(dataset({ 'orders.csv': text, 'touches.csv': TOUCHES }));
    expect(code).toBe(2);
    expect(message).not.toMatch(/Line: 1/);
    expect(placed(message)).toEqual([
      `  orders.csv, line ${lines.indexOf(huge) + 1}, column amount_w_tax: the line is ${Buffer.byteLength(huge).toLocaleString('en-US')} bytes long; a record may hold at most 2,000,000 bytes (it passes the limit in this column)`,
    ]);
  });

  it('an amount of 15 or 20 digits names the file, line, column, value and the range, not a raw Conversion Error', async () => {
    const fifteen = row(2, '123456789012345');
    const twenty = row(4, '10', '12345678901234567890');
    const fourteen = row(5, '99999999999999.9999'); // the largest that fits: no problem
    const { text, lines } = ordersCsv(5, { 2: fifteen, 4: twenty, 5: fourteen });
    const { code, message } = await report(dataset({ 'orders.csv': text, 'touches.csv': TOUCHES }));
    expect(code).toBe(2);
    expect(message).not.toMatch(/Conversion Error/);
    const range = 'an amount has at most 14 digits before the point and 4 after (DECIMAL(18,4): up to 99999999999999.9999)';
    expect(placed(message)).toEqual([
      `  orders.csv, line ${lines.indexOf(fifteen) + 1}, column amount_wo_tax: "123456789012345" is out of range: ${range}`,
      `  orders.csv, line ${lines.indexOf(twenty) + 1}, column amount_w_tax: "12345678901234567890" is out of range: ${range}`,
    ]);
  });

  it('a Parquet DECIMAL amount of more than 4 decimals that rounds past the range (99999999999999.99999) is a data error naming it, not a failed cast', async () => {
    const dir = await parquetOrders(sql`('o1', 'c1', TIMESTAMP '2024-03-02 10:00:00', 'EUR', CAST('99999999999999.99999' AS DECIMAL(38,6)), CAST('99999999999999.9999' AS DECIMAL(38,6)))`);
    const { code, message } = await report(dir);
    expect(code).toBe(2);
    expect(message).not.toMatch(/Conversion Error/);
    // The largest amount with 4 decimals is read; one more decimal is refused as any fifth decimal is.
    expect(placed(message)).toEqual(['  orders.parquet, row 1, column amount_wo_tax: "99999999999999.99999" is not a decimal number with a dot (at most 4 decimals)']);
  });

  it('a Parquet DECIMAL whose scale is its width (DuckDB writes .12345) is shown with its leading zero: "0.12345", "-0.12345"', async () => {
    const dir = await parquetOrders(sql`('o1', 'c1', TIMESTAMP '2024-03-02 10:00:00', 'EUR', CAST('0.12345' AS DECIMAL(5,5)), CAST('-0.12345' AS DECIMAL(5,5)))`);
    const { code, message } = await report(dir);
    expect(code).toBe(2);
    const decimals = 'is not a decimal number with a dot (at most 4 decimals)';
    expect(placed(message)).toEqual([
      `  orders.parquet, row 1, column amount_wo_tax: "0.12345" ${decimals}`,
      `  orders.parquet, row 1, column amount_w_tax: "-0.12345" ${decimals}`,
    ]);
  });

  it('a Parquet amount out of range names the row, the column and the range', async () => {
    const dir = await parquetOrders(sql`('o1', 'c1', TIMESTAMP '2024-03-02 10:00:00', 'EUR', 10.0::DOUBLE, 12.0::DOUBLE),
        ('o2', 'c1', TIMESTAMP '2024-03-02 10:00:00', 'EUR', 1e15::DOUBLE, 12.0::DOUBLE)`);
    const { code, message } = await report(dir);
    expect(code).toBe(2);
    expect(message).not.toMatch(/Conversion Error/);
    expect(placed(message)).toEqual([
      '  orders.parquet, row 2, column amount_wo_tax: "1000000000000000" is out of range: an amount has at most 14 digits before the point and 4 after (DECIMAL(18,4): up to 99999999999999.9999)',
    ]);
  });

  it('a Parquet amount both out of range and of more than 4 decimals counts once among the rows with the problem (DOUBLE, DECIMAL(38,6))', async () => {
    for (const [type, big] of [['DOUBLE', '1000000000000000.5'], ['DECIMAL(38,6)', '123456789012345.123456']] as const) {
      const dir = dataset({ 'touches.csv': TOUCHES });
      const db = await Database.open();
      try {
        // Five such amounts, then one of more than 4 decimals alone and one out of range alone: 7 rows, each counted once.
        await db.exec(sql`COPY (SELECT 'o' || i AS order_id, 'c1' AS contact_id, TIMESTAMP '2024-03-02 10:00:00' AS datetime, 'EUR' AS currency,
          CAST(10 AS ${trusted(type)}) AS amount_wo_tax,
          CAST(CASE WHEN i <= 5 THEN ${big} WHEN i = 6 THEN '1.00001' ELSE '1000000000000000' END AS ${trusted(type)}) AS amount_w_tax
          FROM range(1, 8) t(i)) TO ${literal(join(dir, 'orders.parquet'))} (FORMAT parquet)`);
      } finally {
        db.close();
      }
      const { code, message } = await report(dir);
      expect(code, type).toBe(2);
      const lines = placed(message);
      expect(lines.slice(0, 3).map((l) => l.slice(0, l.indexOf(':'))), type).toEqual([1, 2, 3].map((row) => `  orders.parquet, row ${row}, column amount_w_tax`));
      expect(lines.slice(3), type).toEqual(['  orders.parquet, column amount_w_tax: 4 more rows have this problem']);
    }
  });

  it('a Parquet DECIMAL is shown exactly as stored (its text, not a double: 123456789012345.123456, not …12), a DOUBLE by its shortest text as before', async () => {
    // amount_wo_tax DECIMAL(38,6), amount_w_tax DOUBLE; datetime a DECIMAL(4,3), which DuckDB writes 0.500.
    const dir = await parquetOrders(sql`
          ('o1', 'c1', CAST('0.5' AS DECIMAL(4,3)), 'EUR', CAST('123456789012345.123456' AS DECIMAL(38,6)), CAST('12' AS DOUBLE)),
          ('o2', 'c1', CAST('0.5' AS DECIMAL(4,3)), 'EUR', CAST('-123456789012345.5' AS DECIMAL(38,6)), CAST('0.1' AS DOUBLE) + CAST('0.2' AS DOUBLE)),
          ('o3', 'c1', CAST('0.5' AS DECIMAL(4,3)), 'EUR', CAST('1.00495' AS DECIMAL(38,6)), CAST('1000000000000000.5' AS DOUBLE)),
          ('o4', 'c1', CAST('0.5' AS DECIMAL(4,3)), 'EUR', CAST('10' AS DECIMAL(38,6)), CAST('1e15' AS DOUBLE))`);
    const { code, message } = await report(dir);
    expect(code).toBe(2);
    const range = 'is out of range: an amount has at most 14 digits before the point and 4 after (DECIMAL(18,4): up to 99999999999999.9999)';
    const decimals = 'is not a decimal number with a dot (at most 4 decimals)';
    expect(placed(message)).toEqual([
      ...[1, 2, 3].map((row) => `  orders.parquet, row ${row}, column datetime: "0.5" is not an ISO 8601 timestamp`),
      '  orders.parquet, column datetime: 1 more row has this problem',
      `  orders.parquet, row 1, column amount_wo_tax: "123456789012345.123456" ${range}`,
      `  orders.parquet, row 2, column amount_wo_tax: "-123456789012345.5" ${range}`,
      `  orders.parquet, row 3, column amount_wo_tax: "1.00495" ${decimals}`,
      `  orders.parquet, row 2, column amount_w_tax: "0.30000000000000004" ${decimals}`,
      `  orders.parquet, row 3, column amount_w_tax: "1000000000000000.5" ${range}`,
      `  orders.parquet, row 4, column amount_w_tax: "1000000000000000" ${range}`,
    ]);
  });

  it('a duplicate column, also by case, is refused naming both columns and the file', async () => {
    for (const second of ['AMOUNT_W_TAX', 'amount_w_tax']) {
      const text = `${[...HEADER, second].join(',')}\n${row(1)},13\n`;
      const { code, message } = await report(dataset({ 'orders.csv': text, 'touches.csv': TOUCHES }));
      expect(code).toBe(2);
      expect(placed(message)).toHaveLength(1);
      expect(message).toContain('orders.csv, column amount_w_tax: the column is named twice');
      expect(message).toContain('(columns 6 and 7)');
      if (second !== 'amount_w_tax') expect(message).toContain(`as "amount_w_tax" and "${second}"`);
    }
    // JSON keys that differ in case only.
    const lines = [record(1), { ...record(2), AMOUNT_W_TAX: 13 }].map((r) => JSON.stringify(r));
    const { code, message } = await report(dataset({ 'orders.jsonl': `${lines.join('\n')}\n`, 'touches.csv': TOUCHES }));
    expect(code).toBe(2);
    expect(message).toContain('orders.jsonl, column amount_w_tax: the column is named twice, as "amount_w_tax" and "AMOUNT_W_TAX"');
  });
});

describe('malformed JSON files name the physical line or the record', () => {
  it('a JSON Lines record that does not parse is named by its physical line, blank lines counted', async () => {
    const lines = [JSON.stringify(record(1)), '', JSON.stringify(record(2)), '', '', JSON.stringify(record(3)), '{"order_id": "o4", "contact_id": ', JSON.stringify(record(5))];
    const line = lines.indexOf('{"order_id": "o4", "contact_id": ') + 1;
    const { code, message } = await report(dataset({ 'orders.jsonl': `${lines.join('\n')}\n`, 'touches.csv': TOUCHES }));
    expect(code).toBe(2);
    expect(placed(message)).toHaveLength(1);
    expect(message).toMatch(new RegExp(`orders\\.jsonl, line ${line}, column contact_id: the record is not valid JSON: `));
  });

  it('a JSON array that breaks off names the record, its line and the key, not "record/value 3"', async () => {
    const good = JSON.stringify(record(1));
    const broken = JSON.stringify(record(2)).replace(',"amount_w_tax"', ' "amount_w_tax"'); // a comma missing
    const text = `[\n${good},\n\n${broken}\n]\n`;
    const line = text.split('\n').indexOf(broken) + 1;
    const { code, message } = await report(dataset({ 'orders.json': text, 'touches.csv': TOUCHES }));
    expect(code).toBe(2);
    expect(placed(message)).toHaveLength(1);
    expect(message).toContain(`orders.json, record 2 (line ${line}), column amount_wo_tax: the file is not valid JSON: `);
  });

  it('a nested value in a JSON array names that record and field, and no other record', async () => {
    const records = [record(1), record(2), record(3, { amount_wo_tax: { value: 10 } }), record(4), record(5, { currency: ['EUR'] })];
    const text = JSON.stringify(records, null, 2);
    // The line of a record's opening brace: the one before its order_id.
    const startLine = (id: string) => text.split('\n').indexOf(`    "order_id": "${id}",`);
    const { code, message } = await report(dataset({ 'orders.json': text, 'touches.csv': TOUCHES }));
    expect(code).toBe(2);
    // In the order of the table's columns: currency before amount_wo_tax.
    expect(placed(message)).toEqual([
      `  orders.json, record 5 (line ${startLine('o5')}), column currency: "[\\"EUR\\"]" is a nested value (an object or a list), not a currency code`,
      `  orders.json, record 3 (line ${startLine('o3')}), column amount_wo_tax: "{\\"value\\":10}" is a nested value (an object or a list), not a decimal number with a dot (at most 4 decimals)`,
    ]);
  });
});

describe('a table that is not a regular file is refused by name', () => {
  const refused = async (make: (dir: string) => void, expected: RegExp) => {
    const dir = dataset({ 'touches.csv': TOUCHES });
    make(dir);
    const { code, message } = await report(dir);
    expect(code).toBe(2);
    expect(message).not.toMatch(/no orders table/);
    expect(message).toMatch(expected);
  };

  it('a broken symbolic link', () =>
    refused((dir) => symlinkSync(join(dir, 'gone.csv'), join(dir, 'orders.csv')), /orders\.csv is a broken symbolic link to .*gone\.csv \(its target does not exist\)/));

  it('a loop of symbolic links', () =>
    refused((dir) => {
      symlinkSync(join(dir, 'b.csv'), join(dir, 'orders.csv'));
      symlinkSync(join(dir, 'orders.csv'), join(dir, 'b.csv'));
    }, /orders\.csv is a loop of symbolic links/));

  it('a FIFO', async (context) => {
    let made = true;
    await refused((dir) => {
      try {
        execFileSync('mkfifo', [join(dir, 'orders.csv')]);
      } catch {
        made = false;
      }
    }, /orders\.csv is a named pipe \(FIFO\), not a regular file/).catch((error: unknown) => {
      if (made) throw error;
    });
    if (!made) context.skip();
  });

  it('a device (a link to /dev/null)', () =>
    refused((dir) => symlinkSync('/dev/null', join(dir, 'orders.csv')), /orders\.csv is a symbolic link to \/dev\/null, a device, not a regular file/));

  it('a broken link inside a table folder', () =>
    refused((dir) => {
      execFileSync('mkdir', [join(dir, 'orders')]);
      writeFileSync(join(dir, 'orders', 'a.csv'), ordersCsv(1).text);
      symlinkSync(join(dir, 'nowhere.csv'), join(dir, 'orders', 'b.csv'));
    }, /orders\/b\.csv is a broken symbolic link/));

  it('a link to a regular file is read like the file', async () => {
    const dir = dataset({ 'touches.csv': TOUCHES, 'exports/march.csv': ordersCsv(2).text });
    symlinkSync(join(dir, 'exports', 'march.csv'), join(dir, 'orders.csv'));
    const run = await cli(['report', '--data', dir, '--from', '2024-03-01', '--to', '2024-03-31', '-o', 'json']);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout).conversions[0].conversionsNumber).toBe(2);
  });
});

describe('the same errors from data import and convx serve', () => {
  const decimalComma = () => ordersCsv(3, { 2: row(2, '12,50') });

  it('data import refuses the file with the located error and writes nothing', async () => {
    const dir = dataset({ 'orders.csv': decimalComma().text, 'touches.csv': TOUCHES });
    const into = join(tempDir(), 'shop.duckdb');
    const run = await cli(['data', 'import', dir, '--into', into]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('orders.csv, line 3, column amount_wo_tax: 7 fields where the header has 6 columns');
  });

  it('serve: startup fails with it; a reload that meets it keeps the data served before', async () => {
    const bad = dataset({ 'orders.csv': decimalComma().text, 'touches.csv': TOUCHES });
    const startup = await ServedDataset.load(bad).catch((e: unknown) => e);
    expect(startup).toBeInstanceOf(DataError);
    expect((startup as Error).message).toContain('orders.csv, line 3, column amount_wo_tax:');

    const dir = dataset({ 'orders.csv': ordersCsv(2).text, 'touches.csv': TOUCHES });
    const holder = new DatasetHolder(await ServedDataset.load(dir), {});
    try {
      writeFileSync(join(dir, 'orders.csv'), decimalComma().text);
      await expect(holder.reload()).rejects.toThrow(/orders\.csv, line 3, column amount_wo_tax: 7 fields/);
      const backend = await holder.current.backend('default');
      try {
        const items = await backend.items(parseItemsQuery({ dateFrom: '2024-03-01', dateTo: '2024-03-31' }));
        expect(items.paging.totalCount).toBe(2);
      } finally {
        await backend.close();
      }
    } finally {
      await holder.close();
    }
  });
});
