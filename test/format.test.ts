import { describe, expect, it } from 'vitest';
import { Chalk } from 'chalk';
import { csvRow } from '../src/output/csv.js';
import { jsonListClose, jsonListItem, JSON_LIST_OPEN, project, tsvRow } from '../src/output/format.js';
import { renderTable } from '../src/output/table.js';

describe('formatters', () => {
  it('streams JSON byte-identical to JSON.stringify(value, null, 2)', () => {
    for (const rows of [[], [{ a: 1, b: { c: [1, 2] } }], [{ a: 1 }, { a: 'x"y', n: null }]]) {
      const paging = { start: 0, count: rows.length, totalCount: 7 };
      const streamed = JSON_LIST_OPEN + rows.map((r, i) => jsonListItem(r, i === 0)).join('') + jsonListClose(paging, rows.length === 0);
      expect(streamed).toBe(`${JSON.stringify({ conversions: rows, paging }, null, 2)}\n`);
    }
  });

  it('escapes TSV and quotes CSV', () => {
    const record = { a: 'tab\there', b: 'line\nbreak', c: 'back\\slash', d: null, e: 'x,"y"' };
    expect(tsvRow(record, ['a', 'b', 'c', 'd'])).toBe('tab\\there\tline\\nbreak\tback\\\\slash\t\n');
    expect(csvRow(record, ['e', 'd', 'b'])).toBe('"x,""y""",,"line\nbreak"\n');
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
