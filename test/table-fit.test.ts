/**
 * Issue 12, item 3: tables that fit the terminal, money columns with their currency, a
 * totals row over several sources, and --breakdown lines without the source's totals.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Chalk } from 'chalk';
import { describe, expect, it } from 'vitest';
import { BREAKDOWN_COLUMNS, BREAKDOWN_TABLE_COLUMNS, breakdownRows, REPORT_COLUMNS, REPORT_TABLE_COLUMNS } from '../src/output/columns.js';
import { layoutTable, textWidth } from '../src/output/table.js';
import { ResultWriter } from '../src/output/writer.js';
import { REPORT_BREAKDOWN_KIND, REPORT_KIND } from '../src/commands/shared.js';
import { shop, tempDir } from './helpers.js';
import { keptBackends } from './kept-backends.js';

const LONG = 'Spring sale 2024: everything must go, twenty percent off the whole shop, for members only';
const plain = new Chalk({ level: 0 });
const strip = (text: string) => text.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '');

/** Three campaigns (one with a very long name), orders in EUR and CZK. */
const dir = shop({
  orders: [
    { id: 'o1', contact: 'c1', at: '2024-03-02T10:00:00Z', net: 100, gross: 121 },
    { id: 'o2', contact: 'c2', at: '2024-03-03T10:00:00Z', currency: 'CZK', net: 1000, gross: 1210.1 },
    { id: 'o3', contact: 'c3', at: '2024-03-04T10:00:00Z', net: 10.1, gross: 12.2 },
    { id: 'o3', contact: 'c3', at: '2024-03-05T10:00:00Z', net: -5, gross: -6.05, refund: true },
    { id: 'o4', contact: 'c1', at: '2024-03-06T10:00:00Z', net: 0.1, gross: 0.2 },
  ],
  touches: [
    { contact: 'c1', at: '2024-03-01T00:00:00Z', source: 'k1' },
    { contact: 'c2', at: '2024-03-01T00:00:00Z', source: 'k1' },
    { contact: 'c3', at: '2024-03-01T00:00:00Z', source: 'k2' },
    { contact: 'c1', at: '2024-03-05T00:00:00Z', source: 'k3' },
  ],
  fx: [
    ['2024-03-01', 'CZK', '0.04'],
    ['2024-03-02', 'CZK', '0.04'],
    ['2024-03-03', 'CZK', '0.04'],
  ],
  sources: [
    ['campaign', 'k1', LONG, 'k1', '', '', '', '', '2024-02-01T00:00:00Z'],
    ['campaign', 'k2', 'Winter', 'k2', '', '', '', '', '2024-02-01T00:00:00Z'],
    ['campaign', 'k3', 'Autumn', 'k3', '', '', '', '', '2024-02-01T00:00:00Z'],
  ],
});
const PERIOD = ['--data', dir, '--from', '2024-03-01', '--to', '2024-03-31'];

/** dir opened once and lent to every command (kept-backends.ts): the tests are about the tables. */
const kept = keptBackends();

const report = async () => JSON.parse((await kept(['report', ...PERIOD, '-o', 'json'])).stdout) as { conversions: Record<string, unknown>[] };

describe('tables fit the terminal', () => {
  it('shortens long names with an ellipsis to the width, one line per row, and leaves out right-most columns only when names cannot give more', async () => {
    const { conversions } = await report();
    for (const width of [140, 120, 100, 80, 60, 40]) {
      const { text, hidden } = layoutTable(conversions, REPORT_TABLE_COLUMNS, plain, { width, totals: true });
      const lines = text.trimEnd().split('\n');
      // top, header, 3 rows, separator, total, bottom: nothing wrapped onto extra lines
      expect(lines, `width ${width}`).toHaveLength(8);
      for (const line of lines) expect(textWidth(line), `width ${width}: ${line}`).toBeLessThanOrEqual(width);
      expect(text).toMatch(/│ Spring sale[^│]*… /);
      expect(text).not.toContain(LONG);
      if (width >= 140) expect(hidden).toEqual([]);
      if (width <= 60) expect(hidden.length).toBeGreaterThan(0);
      // the visible money is never cut
      expect(text).toContain('Revenue (EUR)');
    }
    const full = layoutTable(conversions, REPORT_TABLE_COLUMNS, plain, { totals: true });
    expect(full.text).toContain(LONG);
    expect(full.hidden).toEqual([]);
  });

  it('keeps the name, the first amount, the reference amount and the currency column longest', async () => {
    const { conversions } = await report();
    const lines = conversions.flatMap((row) => breakdownRows(row as never));
    const wide = layoutTable(lines, BREAKDOWN_TABLE_COLUMNS, plain, { width: 200, totals: true });
    expect(wide.hidden).toEqual([]);
    for (const width of [80, 60, 50]) {
      const { text, hidden } = layoutTable(lines, BREAKDOWN_TABLE_COLUMNS, plain, { width, totals: true });
      expect(hidden, `width ${width}`).not.toContain('Cur');
      expect(hidden, `width ${width}`).not.toContain('Revenue');
      expect(text.split('\n')[1], `width ${width}`).toMatch(/│ Source\s+│ (Type\s+│ )?Cur │ (Orders │ )?Revenue\s+│/);
      for (const line of text.trimEnd().split('\n')) expect(textWidth(line)).toBeLessThanOrEqual(width);
      if (width >= 60) expect(hidden).not.toContain('Revenue (EUR)');
    }
  });

  it('measures wide characters and keeps line breaks in names out of the layout', () => {
    const records = [
      { id: 'a', name: '日本語のキャンペーン名がとても長いです本当に長い', conversionsNumber: 1 },
      { id: 'b', name: 'two\nlines', conversionsNumber: 2 },
    ];
    const { text } = layoutTable(records, ['name', 'conversionsNumber'], plain, { width: 30 });
    const lines = text.trimEnd().split('\n');
    expect(lines).toHaveLength(5);
    for (const line of lines) expect(textWidth(line)).toBeLessThanOrEqual(30);
    expect(text).toContain('two lines');
    expect(text).toContain('…');
  });

  it('fits the width of the terminal stdout is (in-process), and says which columns it left out', async () => {
    const narrow = await kept.terminal(['report', ...PERIOD], 60);
    expect(narrow.code, narrow.stderr).toBe(0);
    const lines = strip(narrow.stdout).trimEnd().split('\n');
    const table = lines.filter((l) => /^[┌│├└]/.test(l));
    for (const line of table) expect(textWidth(line)).toBeLessThanOrEqual(60);
    expect(strip(narrow.stdout + narrow.stderr)).toMatch(/columns? left out to fit the terminal \(.*Avg order \(EUR\)\); --wide shows every column/);
    const wide = await kept.terminal(['report', ...PERIOD], 200);
    expect(wide.stdout).toContain(LONG);
    expect(wide.stdout + wide.stderr).not.toMatch(/left out/);
  });

  it('shows every column at full width with the writer option wide (--wide)', async () => {
    const { conversions } = await report();
    let text = '';
    const sink = { write: async (t: string) => void (text += t), flush: async () => undefined, columns: () => 40 };
    await new ResultWriter(sink, { format: 'table', chalk: plain, wide: true }).page(REPORT_KIND, {
      rows: conversions,
      paging: { start: 0, count: 3, totalCount: 3 },
    });
    expect(text).toContain(LONG);
    expect(text).toContain('Avg order (EUR)');
    text = '';
    await new ResultWriter(sink, { format: 'table', chalk: plain }).page(REPORT_KIND, {
      rows: conversions,
      paging: { start: 0, count: 3, totalCount: 3 },
    });
    expect(text).not.toContain(LONG);
    const notices: string[] = [];
    text = '';
    await new ResultWriter(sink, { format: 'table', chalk: plain, notice: (m) => notices.push(m) }).page(REPORT_KIND, {
      rows: conversions,
      paging: { start: 0, count: 3, totalCount: 3 },
    });
    expect(notices).toHaveLength(1);
    expect(text).not.toMatch(/left out/);
  });

  const bin = join(import.meta.dirname, '..', 'bin', 'convx.js');
  const hasScript = (() => {
    try {
      execFileSync('script', ['--version'], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  })();
  it.skipIf(!hasScript || !existsSync(join(import.meta.dirname, '..', 'dist', 'output', 'table.js')))(
    'the built binary on a real terminal of COLUMNS=60 (script) prints no line wider than 60',
    () => {
      const command = ['node', bin, 'report', ...PERIOD].map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ');
      const out = execFileSync('script', ['-qec', command, '/dev/null'], {
        env: { ...process.env, COLUMNS: '60', NO_COLOR: '1', XDG_CONFIG_HOME: tempDir('convx-config-') },
        encoding: 'utf8',
        timeout: 60_000,
      });
      const lines = strip(out)
        .split(/\r?\n|\r/)
        .filter((l) => /^[┌│├└]/.test(l));
      expect(lines.length).toBeGreaterThanOrEqual(7);
      for (const line of lines) expect(textWidth(line), line).toBeLessThanOrEqual(60);
      expect(lines.join('\n')).toMatch(/│ Spring sale[^│]*… /);
      // the note of the left-out columns comes after the table, not in front of it
      const text = strip(out);
      expect(text.indexOf('left out to fit the terminal'), text).toBeGreaterThan(text.lastIndexOf('└'));
    },
    90_000,
  );
});

describe('money columns show their currency, and a totals row closes a table of several sources', () => {
  it('report: headers name the reference currency; the total adds up the sources to the cent', async () => {
    const { conversions } = await report();
    const tty = await kept(['report', ...PERIOD, '--no-color'], { tty: true });
    expect(tty.code, tty.stderr).toBe(0);
    const lines = tty.stdout.trimEnd().split('\n');
    expect(lines[1]).toMatch(/│ Revenue \(EUR\) │ Refunds │ Refunded \(EUR\) │ Gross \(EUR\) │ Contacts │ Avg order \(EUR\) │/);
    expect(lines.at(-3)).toMatch(/^├─/);
    const total = lines.at(-2)!.split('│').map((c) => c.trim());
    const cents = (field: string) => conversions.reduce((s, r) => s + Math.round((r[field] as number) * 100), 0);
    const money = (c: number) => (c / 100).toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 });
    expect(total.slice(1, -1)).toEqual([
      'Total',
      '',
      String(conversions.reduce((s, r) => s + (r.conversionsNumber as number), 0)),
      money(cents('conversionsAmountWTax')),
      String(conversions.reduce((s, r) => s + (r.refundsNumber as number), 0)),
      money(cents('refundsAmountWTax')),
      money(cents('grossConversionsAmountWTax')),
      '',
      '',
    ]);
    // one source: no totals row
    const one = await kept(['report', ...PERIOD, '-q', 'winter', '--no-color'], { tty: true });
    expect(one.stdout).not.toMatch(/Total/);
    expect(one.stdout).not.toMatch(/├/);
    // part of the rows: the total says which
    const page = await kept(['report', ...PERIOD, '--limit', '2', '--no-color'], { tty: true });
    expect(page.stdout).toMatch(/│ Total \(1-2 of 3\)/);
    // no column that adds up: no totals row
    const names = await kept(['report', ...PERIOD, '--fields', 'name,source.detailUrl', '--no-color'], { tty: true });
    expect(names.stdout).not.toMatch(/Total|├/);
    expect((await kept(['report', ...PERIOD, '--fields', 'name,conversionsNumber', '--no-color'], { tty: true })).stdout).toMatch(/│ Total /);
  });

  it('breakdown table: a total per currency, then the reference total', async () => {
    const tty = await kept(['report', ...PERIOD, '--breakdown', '--no-color'], { tty: true });
    expect(tty.code, tty.stderr).toBe(0);
    const lines = tty.stdout.trimEnd().split('\n');
    // amounts in each line's own currency (the Cur column), the reference amount in EUR
    expect(lines[1]).toMatch(/│ Cur │ Orders │ Revenue\s+│ Refunded\s+│ Revenue \(EUR\) │/);
    const totals = lines.filter((l) => l.startsWith('│ Total')).map((l) => l.split('│').map((c) => c.trim()).slice(1, -1));
    expect(totals).toEqual([
      ['Total', '', 'CZK', '1', '1,210.10', '0.00', '48.40'],
      ['Total', '', 'EUR', '3', '133.40', '-6.05', '133.40'],
      ['Total', '', '', '4', '', '', '181.80'],
    ]);
    // one currency only: it is in the headers
    const eur = await kept(['report', ...PERIOD, '--breakdown', '--currency', 'EUR', '--no-color'], { tty: true });
    expect(eur.stdout.split('\n')[1]).toMatch(/│ Revenue \(EUR\) │ Refunded \(EUR\) │ Revenue \(EUR\) │/);
  });

  it('csv, tsv and json values do not change', async () => {
    const csvText = (await kept(['report', ...PERIOD, '-o', 'csv'])).stdout;
    expect(csvText.split('\n')[0]).toBe(REPORT_COLUMNS.join(','));
    expect(csvText).not.toMatch(/EUR\)|Total/);
    expect(csvText.trim().split('\n')).toHaveLength(4);
  });
});

describe('--breakdown -o csv|tsv|json: one line per source and currency, without the source totals', () => {
  const SOURCE_COLUMNS = [
    'id',
    'name',
    'source.type',
    'source.id',
    'source.name',
    'source.campaignId',
    'source.smartflowId',
    'source.smartflowName',
    'source.deliveryId',
    'source.deliveryName',
    'source.detailUrl',
    'sourceStartedAt',
    'referenceCurrency',
  ];

  it('csv and tsv lines carry the source columns and the currency columns only', async () => {
    const { conversions } = await report();
    const csvLines = (await kept(['report', ...PERIOD, '--breakdown', '-o', 'csv'])).stdout.trim().split('\n');
    expect(csvLines[0]).toBe([...SOURCE_COLUMNS, ...BREAKDOWN_COLUMNS].join(','));
    const tsv = (await kept(['report', ...PERIOD, '--breakdown', '-o', 'tsv'])).stdout.trim().split('\n');
    const header = tsv[0]!.split('\t');
    expect(header).toEqual([...SOURCE_COLUMNS, ...BREAKDOWN_COLUMNS]);
    for (const total of ['conversionsAmountWTax', 'conversionsNumber', 'uniqueContacts', 'averageConversion', 'firstConversionAt']) {
      expect(header).not.toContain(total);
    }
    const expected = conversions.flatMap((row) =>
      (row.breakdown as Record<string, unknown>[]).map((b) => [row.id, b.currency, b.conversionsAmountWTax, b.conversionAmountWTaxReference].join('|')),
    );
    const got = tsv.slice(1).map((line) => {
      const cells = Object.fromEntries(line.split('\t').map((v, i) => [header[i], v]));
      return [cells.id, cells['breakdown.currency'], cells['breakdown.conversionsAmountWTax'], cells['breakdown.conversionAmountWTaxReference']].join('|');
    });
    expect(got).toEqual(expected);
    expect(csvLines).toHaveLength(expected.length + 1);
  });

  it('--fields may still name a source total; json and jsonl stay the interface document', async () => {
    const picked = await kept(['report', ...PERIOD, '--breakdown', '-o', 'csv', '--fields', 'id,conversionsAmountWTax,breakdown.currency']);
    expect(picked.code, picked.stderr).toBe(0);
    expect(picked.stdout.split('\n')[0]).toBe('id,conversionsAmountWTax,breakdown.currency');
    const plainJson = (await kept(['report', ...PERIOD, '-o', 'json'])).stdout;
    expect((await kept(['report', ...PERIOD, '--breakdown', '-o', 'json'])).stdout).toBe(plainJson);
    expect((await kept(['report', ...PERIOD, '--breakdown', '-o', 'jsonl'])).stdout).toBe((await kept(['report', ...PERIOD, '-o', 'jsonl'])).stdout);
    expect(REPORT_BREAKDOWN_KIND.columns).toEqual([...SOURCE_COLUMNS, ...BREAKDOWN_COLUMNS]);
  });
});

describe('the items table leaves columns out by priority (issue 22, item 4)', () => {
  it('at 80 columns keeps the order, the source and the amount, and leaves the millisecond timestamp out first', async () => {
    const run = await kept.terminal(['items', ...PERIOD], 80);
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stdout.trimEnd().split('\n');
    for (const line of lines) expect(textWidth(line), line).toBeLessThanOrEqual(80);
    const header = lines[1]!.split('│').map((cell) => cell.trim()).filter(Boolean);
    expect(header).toEqual(expect.arrayContaining(['Order', 'Source']));
    expect(header.some((title) => title.startsWith('Amount'))).toBe(true);
    expect(header).not.toContain('Date (UTC)');
    expect(run.stdout).toMatch(/│ o1 +│/);
    expect(run.stdout).not.toMatch(/\d{2}:\d{2}:\d{2}\.\d{3}Z/);
    expect(run.stderr).toMatch(/left out to fit the terminal \(Date \(UTC\)/);
  });

  it('a table without priorities still leaves columns out from the right (report at 60 keeps the first column)', async () => {
    const { conversions } = await report();
    const { hidden } = layoutTable(conversions, REPORT_TABLE_COLUMNS, plain, { width: 60, totals: true });
    expect(hidden).not.toContain('Source');
    // a priority names the columns that go first, in its order, whatever their place
    const records = [{ a: 'aaaaaaaaaa', b: 'bbbbbbbbbb', c: 'cccccccccc' }];
    expect(layoutTable(records, ['a', 'b', 'c'], plain, { width: 30 }).hidden).toEqual(['c']);
    expect(layoutTable(records, ['a', 'b', 'c'], plain, { width: 30, dropFirst: ['a'] }).hidden).toEqual(['a']);
    expect(layoutTable(records, ['a', 'b', 'c'], plain, { width: 16, dropFirst: ['b', 'a'] }).hidden).toEqual(['a', 'b']);
  });
});
