/**
 * Section 3: data errors name the physical line of the file, the same on every
 * run; docs/reporting.md, Transactions: a non-refund order with a negative amount is a finding.
 */
import { rmSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { DataError } from '../src/errors.js';
import { checkDataset } from '../src/local/check.js';
import { Database } from '../src/local/db.js';
import { cli, csv, dataset, ORDER_HEADER, TOUCH_HEADER, withBackend } from './helpers.js';
import { literal, sql } from '../src/local/sql.js';

const TOUCHES = csv(TOUCH_HEADER, [['c1', '2024-03-01T00:00:00Z', 'click', 'campaign', 'k1']]);

/** An order row; amount goes to amount_wo_tax. */
const order = (id: string | number, amount = '10', status = 'completed', refund = 'false') =>
  [`o${id}`, 'c1', '2024-03-02T10:00:00Z', 'EUR', amount, '12', 'CZ', refund, status];

const line = (cells: string[], delimiter = ',') =>
  cells.map((c) => (/[",\n\r]/.test(c) ? `"${c.replaceAll('"', '""')}"` : c)).join(delimiter);

/** The DataError message of loading a dataset for reports. */
async function loadError(dir: string): Promise<string> {
  const error = await withBackend(dir, async () => undefined).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(DataError);
  return (error as Error).message;
}

/** The places (file, line) of the problems in a message, in order. */
const places = (message: string) =>
  [...message.matchAll(/^ {2}(\S+), ((?:line|row|record) \d+(?: \(line \d+\))?), column (\w+)/gm)].map((m) => `${m[1]} ${m[2]} ${m[3]}`);

describe('data errors name the physical line, the same on every run', () => {
  it('a large CSV read by several threads: the exact line of each bad value, every time, after a late multi-line value', async () => {
    const bad = new Map([
      [12_345, 'ten'],
      [38_001, '1,5'],
      [49_999, 'x'],
    ]);
    const rows = [line(ORDER_HEADER)];
    for (let i = 1; i <= 50_000; i++) rows.push(line(order(i, bad.get(i) ?? '10')));
    const late = order(20_000);
    late[2] = 'yesterday';
    rows[20_000] = line(late);
    // Past the sniffer's sample: the first quoted value, and it spans two lines.
    rows[30_000] = line(order(30_000, '10', 'packed\nshipped'));
    const dir = dataset({ 'orders.csv': `${rows.join('\n')}\n`, 'touches.csv': TOUCHES });
    for (let run = 0; run < 3; run++) {
      const message = await loadError(dir);
      // Data row i is on line i + 1 (the header is line 1), and one more after row 30000.
      expect(places(message)).toEqual([
        'orders.csv line 20001 datetime',
        'orders.csv line 12346 amount_wo_tax',
        'orders.csv line 38003 amount_wo_tax',
        'orders.csv line 50001 amount_wo_tax',
      ]);
      expect(message).toContain('orders.csv, line 38003, column amount_wo_tax: "1,5" is not a decimal number');
    }
  });

  it('counts the header, every line of a value that spans several and blank lines; a line beginning with # is a record', async () => {
    const records = (delimiter: string) => [
      line(ORDER_HEADER, delimiter), // 1
      line(order(1), delimiter), // 2
      line(order(2, '10', 'shipped\nin two\nparts'), delimiter), // 3-5
      '', // 6
      line(order(3, 'bad'), delimiter), // 7
      line(order(4), delimiter), // 8
      '', // 9
      '', // 10
      line(order(5, 'x'), delimiter), // 11
    ];
    const text = records(',').join('\n') + '\n';
    const variants: [string, string | Buffer][] = [
      ['orders.csv', text],
      ['orders.csv', text.replaceAll('\n', '\r\n')],
      ['orders.csv.gz', gzipSync(text)],
      ['orders.tsv', records('\t').join('\n') + '\n'],
    ];
    for (const [name, content] of variants) {
      const message = await loadError(dataset({ [name]: content, 'touches.csv': TOUCHES }));
      expect(places(message), name).toEqual([`${name} line 7 amount_wo_tax`, `${name} line 11 amount_wo_tax`]);
    }
    // CSV has no comment lines (RFC 4180 knows none): a line beginning with # is a record, here one of a single field.
    const hashed = records(',').map((r, i) => (i === 3 ? '# a note' : r)).join('\n') + '\n';
    const message = await loadError(dataset({ 'orders.csv': hashed, 'touches.csv': TOUCHES }));
    expect(message).toContain('orders.csv, line 6, column contact_id: 1 field where the header has 9 columns');
  });

  it('names the file of a folder and the line within it', async () => {
    const message = await loadError(
      dataset({
        'orders/month=2024-02/a.csv': [line(ORDER_HEADER), line(order(1)), line(order(2, 'bad'))].join('\n') + '\n',
        'orders/month=2024-03/b.csv': [line(ORDER_HEADER), line(order(3, '1', 'a\nb')), '', line(order(4, 'zzz'))].join('\n') + '\n',
        'touches.csv': TOUCHES,
      }),
    );
    expect(places(message)).toEqual(['orders/month=2024-02/a.csv line 3 amount_wo_tax', 'orders/month=2024-03/b.csv line 5 amount_wo_tax']);
  });

  it('JSON Lines name the physical line; JSON arrays the record; Parquet the row', async () => {
    const json = (id: string, amount: string) =>
      JSON.stringify({ order_id: id, contact_id: 'c', datetime: '2024-03-02T10:00:00Z', currency: 'EUR', amount_wo_tax: amount, amount_w_tax: '1' });
    const lines = ['', json('o1', '1'), '', '  ', json('o2', 'abc'), json('o3', 'x')];
    const jsonl = await loadError(dataset({ 'orders.jsonl': lines.join('\n'), 'touches.csv': TOUCHES }));
    expect(places(jsonl)).toEqual(['orders.jsonl line 5 amount_wo_tax', 'orders.jsonl line 6 amount_wo_tax']);

    const records = [json('o1', '1'), json('o2', 'abc')];
    const array = await loadError(dataset({ 'orders.json': `[\n${records.join(',\n\n')}\n]`, 'touches.csv': TOUCHES }));
    // The record's place in the array, and the line where it starts ([ is line 1, a blank line after record 1).
    expect(places(array)).toEqual(['orders.json record 2 (line 4) amount_wo_tax']);

    const table = [line(ORDER_HEADER), line(order(1)), line(order(2)), line(order(3, 'bad'))];
    const dir = dataset({ 'in.csv': `${table.join('\n')}\n`, 'touches.csv': TOUCHES });
    const db = await Database.open();
    try {
      await db.exec(sql`COPY (SELECT * FROM read_csv(${literal(`${dir}/in.csv`)}, all_varchar = true)) TO ${literal(`${dir}/orders.parquet`)} (FORMAT parquet)`);
    } finally {
      db.close();
    }
    rmSync(`${dir}/in.csv`);
    expect(places(await loadError(dir))).toEqual(['orders.parquet row 3 amount_wo_tax']);
  });
});

describe('a CSV that mixes CRLF and LF line endings', () => {
  it('is refused with the line where the ending changes, not a parser error', async () => {
    const head = [line(ORDER_HEADER), line(order(1)), line(order(2))].join('\r\n') + '\r\n';
    const message = await loadError(dataset({ 'orders.csv': `${head}${line(order(3))}\n${line(order(4))}\r\n`, 'touches.csv': TOUCHES }));
    expect(message).toContain('orders.csv, line 4: this line ends in LF, the lines before it in CRLF');
    expect(message).toMatch(/convert the file to one kind of line ending/);
    expect(message).not.toMatch(/sniff|state machine/i);

    const gz = await loadError(dataset({ 'orders.csv.gz': gzipSync(`${line(ORDER_HEADER)}\n${line(order(1))}\r\n`), 'touches.csv': TOUCHES }));
    expect(gz).toContain('orders.csv.gz, line 2: this line ends in CRLF, the lines before it in LF');
  });

  it('reads a CRLF file whose quoted values hold LF line breaks (as spreadsheets write them)', async () => {
    const text = [line(ORDER_HEADER), line(order(1, '10', 'a\nb')), line(order(2, 'bad'))].join('\r\n') + '\r\n';
    expect(places(await loadError(dataset({ 'orders.csv': text, 'touches.csv': TOUCHES })))).toEqual(['orders.csv line 4 amount_wo_tax']);
  });
});

describe('a non-refund order with a negative amount', () => {
  const files = () => ({
    'orders.csv': csv(ORDER_HEADER, [
      order(1, '10'),
      ['o2', 'c1', '2024-03-03T10:00:00Z', 'EUR', '-5', '-6.05', 'CZ', 'false', 'completed'],
      ['o1', 'c1', '2024-03-04T10:00:00Z', 'EUR', '-10', '-12', 'CZ', 'true', 'refunded'],
      ['o3', 'c1', '2024-03-05T10:00:00Z', 'EUR', '20', '-1', 'CZ', '', 'completed'],
    ]),
    'touches.csv': TOUCHES,
  });

  it('is a finding of data check, with its lines', async () => {
    const report = await checkDataset(dataset(files()));
    expect(report.problems).toEqual([]);
    const finding = report.findings.find((f) => f.code === 'negative_amount');
    expect(finding).toMatchObject({ count: 2, examples: ['order o2 (orders.csv, line 3)', 'order o3 (orders.csv, line 5)'] });
    expect(report.ok).toBe(false);

    const run = await cli(['data', 'check', dataset(files())]);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/finding negative_amount: 2 order rows \(is_refund false\) have a negative amount.*order o2 \(orders.csv, line 3\)/);
  });

  it('is a warning on stderr for report and items (not with --quiet); stdout and the numbers are unchanged', async () => {
    const dir = dataset(files());
    for (const command of [['report'], ['items']]) {
      const argv = [...command, '--data', dir, '--from', '2024-03-01', '--to', '2024-03-31', '-o', 'csv'];
      const loud = await cli(argv);
      const quiet = await cli([...argv, '--quiet']);
      expect(loud.code).toBe(0);
      expect(loud.stderr).toBe(
        'warning: 2 order rows (is_refund false) have a negative amount_wo_tax or amount_w_tax; they count as they stand: ' +
          'order o2 (orders.csv, line 3); order o3 (orders.csv, line 5)\n',
      );
      expect(loud.stdout).not.toMatch(/warning|negative/);
      expect(quiet.stderr).toBe('');
      expect(loud.stdout).toBe(quiet.stdout);
    }
    // Counted as they stand: 10 + (-5) + 20 net, refund -10.
    const report = await cli(['report', '--data', dir, '--from', '2024-03-01', '--to', '2024-03-31', '-o', 'json']);
    expect(JSON.parse(report.stdout).conversions[0]).toMatchObject({ conversionsNumber: 3, conversionsAmountWoTax: 25, refundsAmountWoTax: -10 });
  });

  it('is no warning for a clean dataset', async () => {
    const dir = dataset({ 'orders.csv': csv(ORDER_HEADER, [order(1)]), 'touches.csv': TOUCHES });
    const run = await cli(['report', '--data', dir, '--from', '2024-03-01', '--to', '2024-03-31', '-o', 'csv']);
    expect(run.code).toBe(0);
    expect(run.stderr).toBe('');
  });
});

describe('TSV files', () => {
  it('read a cell that begins with a bare double quote as text (CSV quoting is not forced on TSV)', async () => {
    const tsv = (rows: string[][]) => `${rows.map((r) => r.join('\t')).join('\n')}\n`;
    const dir = dataset({
      'orders.tsv': tsv([['order_id', 'contact_id', 'datetime', 'currency', 'amount_wo_tax', 'amount_w_tax'], ['o1', 'c1', '2024-03-02T10:00:00Z', 'EUR', '10', '12']]),
      'touches.tsv': tsv([['contact_id', 'datetime', 'touch', 'source_type', 'source_id'], ['c1', '2024-03-01T00:00:00Z', 'click', 'campaign', 'k']]),
      'sources.tsv': tsv([['source_type', 'source_id', 'name'], ['campaign', 'k', '"Best" deal']]),
    });
    const run = await cli(['report', '--data', dir, '--from', '2024-03-01', '--to', '2024-03-31', '-o', 'json']);
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout).conversions[0]).toMatchObject({ id: 'k', name: '"Best" deal', conversionsNumber: 1 });
  });
});
