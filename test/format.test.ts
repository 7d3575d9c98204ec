import { describe, expect, it } from 'vitest';
import { Chalk } from 'chalk';
import { csvRow, csvRows } from '../src/output/csv.js';
import { isFormulaText, jsonListClose, jsonListItem, JSON_LIST_OPEN, project, tsvRow } from '../src/output/format.js';
import { renderTable } from '../src/output/table.js';
import { cli, csv, dataset, ORDER_HEADER, SOURCE_HEADER, TOUCH_HEADER } from './helpers.js';
import { keptBackends } from './kept-backends.js';

describe('formatters', () => {
  it('streams JSON byte-identical to JSON.stringify(value, null, 2)', () => {
    for (const rows of [[], [{ a: 1, b: { c: [1, 2] } }], [{ a: 1 }, { a: 'x"y', n: null }]]) {
      const paging = { start: 0, count: rows.length, totalCount: 7 };
      const streamed = JSON_LIST_OPEN + rows.map((r, i) => jsonListItem(r, i === 0)).join('') + jsonListClose(paging, rows.length === 0);
      expect(streamed).toBe(`${JSON.stringify({ conversions: rows, paging }, null, 2)}\n`);
    }
  });

  it('a table shows amounts and the hours to a conversion with two decimals, other numbers as they are', () => {
    const records = [{ attribution: { hoursToConversion: 231 }, conversionsAmount: 264.7, conversionsNumber: 3 }, { attribution: { hoursToConversion: 88.83 }, conversionsAmount: 5, conversionsNumber: 12 }];
    const table = renderTable(records, ['attribution.hoursToConversion', 'conversionsAmount', 'conversionsNumber'], new Chalk({ level: 0 }));
    expect(table).toContain('│ 231.00 │ 264.70 │      3 │');
    expect(table).toContain('│  88.83 │   5.00 │     12 │');
  });

  it('escapes TSV and quotes CSV', () => {
    const record = { a: 'tab\there', b: 'line\nbreak', c: 'back\\slash', d: null, e: 'x,"y"' };
    expect(tsvRow(record, ['a', 'b', 'c', 'd'])).toBe('tab\\there\tline\\nbreak\tback\\\\slash\t\n');
    expect(csvRow(record, ['e', 'd', 'b'])).toBe('"x,""y""",,"line\nbreak"\n');
  });

  it('defuses formula text in csv and tsv by type: strings, never numbers', () => {
    const record = {
      eq: '=HYPERLINK("http://evil","x")',
      plus: '+1',
      minus: '-o1',
      at: '@SUM(A1)',
      tab: '\tx',
      cr: '\rx',
      amount: -12.5,
      big: 1e21,
      ok: 'a=b',
      quote: "'=already",
      empty: '',
      nil: null,
      flag: false,
      obj: { a: '=x' },
    };
    const columns = Object.keys(record);
    expect(tsvRow(record, columns)).toBe(
      ["'=HYPERLINK(\"http://evil\",\"x\")", "'+1", "'-o1", "'@SUM(A1)", "'\\tx", "'\\rx", '-12.5', '1e+21', 'a=b', "'=already", '', '', 'false', '{"a":"=x"}'].join('\t') +
        '\n',
    );
    // csv: the escaped cells are quoted as well (OWASP), the rest as before
    expect(csvRow(record, columns)).toBe(
      `"'=HYPERLINK(""http://evil"",""x"")","'+1","'-o1","'@SUM(A1)","'\tx","'\rx",-12.5,1e+21,a=b,'=already,,,false,"{""a"":""=x""}"\n`,
    );
    // off: exactly the text of before
    expect(tsvRow(record, columns, false)).toBe(
      ['=HYPERLINK("http://evil","x")', '+1', '-o1', '@SUM(A1)', '\\tx', '\\rx', '-12.5', '1e+21', 'a=b', "'=already", '', '', 'false', '{"a":"=x"}'].join('\t') + '\n',
    );
    expect(csvRow(record, columns, false)).toBe(`"=HYPERLINK(""http://evil"",""x"")",+1,-o1,@SUM(A1),\tx,"\rx",-12.5,1e+21,a=b,'=already,,,false,"{""a"":""=x""}"\n`);
    // the same rule for every row of a batch
    expect(csvRows([{ n: '-1' }, { n: -1 }, { n: '1' }], ['n'])).toBe(`"'-1"\n-1\n1\n`);
    expect([0, -0.5, '-', '=', '', ' =x', 'x', null, undefined, true].map(isFormulaText)).toEqual([false, false, true, true, false, false, false, false, false, false]);
  });

  it('projects dotted fields into nested objects', () => {
    expect(project({ a: 1, s: { t: 'x', u: 2 }, z: 3 }, ['s.t', 'a'])).toEqual({ s: { t: 'x' }, a: 1 });
  });

  it('shows money with two decimals in a table, and no colour at level 0', () => {
    const text = renderTable([{ conversionsAmountWTax: 1234.5, conversionsNumber: 3 }], ['conversionsAmountWTax', 'conversionsNumber'], new Chalk({ level: 0 }));
    expect(text).toMatch(/1,234\.50/);
    expect(text).not.toMatch(/\x1b\[/);
  });
});

describe('ResultWriter', () => {
  it('reports progress every 10,000 rows while streaming', async () => {
    const { ResultWriter } = await import('../src/output/writer.js');
    let text = '';
    const sink = { write: async (t: string) => void (text += t), flush: async () => undefined };
    const writer = new ResultWriter(sink, { format: 'jsonl', chalk: new Chalk({ level: 0 }) });
    async function* rows() {
      for (let i = 0; i < 25_000; i++) yield { i };
    }
    const heard: [number, number][] = [];
    const count = await writer.stream({ columns: ['i'], tableColumns: ['i'], objectFields: [] }, { totalCount: 25_000, rows: rows() }, 0, (n, total) => heard.push([n, total]));
    expect(count).toBe(25_000);
    expect(heard).toEqual([
      [10_000, 25_000],
      [20_000, 25_000],
    ]);
    expect(text.split('\n')).toHaveLength(25_001);
  });
});

/** The dataset of the formula escaping tests opened once and lent to every command (kept-backends.ts): they compare formats. */
const kept = keptBackends();

describe('formula escaping through the CLI', () => {
  const dir = dataset({
    'orders.csv': csv(ORDER_HEADER, [
      ['o1', 'c1', '2024-03-02T10:00:00Z', 'EUR', 10, 12.5, 'CZ', false, ''],
      ['o1', 'c1', '2024-03-03T10:00:00Z', 'EUR', -10, -12.5, 'CZ', true, ''],
      ['-o2', 'c1', '2024-03-04T10:00:00Z', 'EUR', 20, 24, 'CZ', false, ''],
    ]),
    'touches.csv': csv(TOUCH_HEADER, [['c1', '2024-03-01T00:00:00Z', 'click', 'campaign', 'k1']]),
    'sources.csv': csv(SOURCE_HEADER, [['campaign', 'k1', '=HYPERLINK("http://evil.example","click")', '', '', '', '', '', '']]),
  });
  const period = ['--data', dir, '--from', '2024-03-01', '--to', '2024-03-31'];
  const fields = ['--fields', 'orderId,isRefund,conversionsAmount,source.name', '--sort', 'datetime'];

  it('escapes a source name =HYPERLINK(...) in csv and tsv, keeps it raw with --no-formula-escape, never touches a negative amount', async () => {
    const csvOut = await kept(['items', ...period, ...fields, '-o', 'csv']);
    expect(csvOut.code, csvOut.stderr).toBe(0);
    expect(csvOut.stdout).toBe(
      [
        'orderId,isRefund,conversionsAmount,source.name',
        `o1,false,12.5,"'=HYPERLINK(""http://evil.example"",""click"")"`,
        `o1,true,-12.5,"'=HYPERLINK(""http://evil.example"",""click"")"`,
        `"'-o2",false,24,"'=HYPERLINK(""http://evil.example"",""click"")"`,
        '',
      ].join('\n'),
    );
    const tsvOut = await kept(['items', ...period, ...fields, '-o', 'tsv']);
    expect(tsvOut.stdout.split('\n').slice(1, 4)).toEqual([
      `o1\tfalse\t12.5\t'=HYPERLINK("http://evil.example","click")`,
      `o1\ttrue\t-12.5\t'=HYPERLINK("http://evil.example","click")`,
      `'-o2\tfalse\t24\t'=HYPERLINK("http://evil.example","click")`,
    ]);
    const raw = await kept(['items', ...period, ...fields, '-o', 'csv', '--no-formula-escape']);
    expect(raw.stdout.split('\n').slice(1, 4)).toEqual([
      `o1,false,12.5,"=HYPERLINK(""http://evil.example"",""click"")"`,
      `o1,true,-12.5,"=HYPERLINK(""http://evil.example"",""click"")"`,
      `-o2,false,24,"=HYPERLINK(""http://evil.example"",""click"")"`,
    ]);
    const rawTsv = await kept(['--no-formula-escape', 'report', ...period, '--fields', 'name,refundsAmountWTax', '-o', 'tsv']);
    expect(rawTsv.stdout).toBe('name\trefundsAmountWTax\n=HYPERLINK("http://evil.example","click")\t-12.5\n');
    const report = await kept(['report', ...period, '--fields', 'name,refundsAmountWTax', '-o', 'tsv']);
    expect(report.stdout).toBe(`name\trefundsAmountWTax\n'=HYPERLINK("http://evil.example","click")\t-12.5\n`);
    // json and tables are not spreadsheet input: unchanged
    const json = JSON.parse((await kept(['items', ...period, '-o', 'json'])).stdout);
    expect(json.conversions[0].source.name).toBe('=HYPERLINK("http://evil.example","click")');
    expect((await cli(['--help'])).stdout).toMatch(/--no-formula-escape/);
  });
});
