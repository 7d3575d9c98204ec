/**
 * `items --all -o csv|tsv` in local mode streams lines DuckDB writes (src/local/text.ts):
 * they must be byte-identical to what the formatters write for the same records,
 * for awkward text (quotes, commas, line breaks, tabs, backslashes, formula starts,
 * non-ASCII), nulls, --fields, formula escaping on and off, and amounts at the limit.
 */
import chalk from 'chalk';
import { describe, expect, it } from 'vitest';
import type { RowStream } from '../src/backend.js';
import { ITEM_COLUMNS } from '../src/output/columns.js';
import { ResultWriter, type RecordKind } from '../src/output/writer.js';
import type { Sink } from '../src/output/sink.js';
import type { ItemsQuery } from '../src/model/query.js';
import { partCount } from '../src/local/queries.js';
import { dataset, itemsQuery, withBackend } from './helpers.js';

const AWKWARD_TEXT = [
  'plain',
  'comma, inside',
  'a "quoted" word',
  'two\nlines',
  'carriage\rreturn',
  'crlf\r\nend',
  'tab\there',
  'back\\slash',
  '=SUM(A1)',
  '+1',
  '-minus',
  '@at',
  '\tlead tab',
  '\rlead cr',
  '',
  'Žluťoučký kůň 🐎',
  "it's",
];

function stringSink(): Sink & { text: () => string } {
  let out = '';
  return { write: async (t) => void (out += typeof t === 'string' ? t : Buffer.from(t).toString('utf8')), flush: async () => undefined, text: () => out };
}

const KIND: RecordKind = { columns: ITEM_COLUMNS, tableColumns: [], objectFields: [] };

async function write(stream: RowStream<unknown>, format: 'csv' | 'tsv' | 'jsonl', fields: string[] | undefined, formulaEscape: boolean) {
  const sink = stringSink();
  const writer = new ResultWriter(sink, { format, chalk, formulaEscape, ...(fields ? { fields } : {}) });
  const count = await writer.stream(KIND, stream, 0);
  return { text: sink.text(), count };
}

const jsonl = (rows: Record<string, unknown>[]) => rows.map((r) => JSON.stringify(r)).join('\n') + '\n';
const TYPES = ['campaign', 'automation', 'smartflow'];

/** Awkward text everywhere a record shows text; JSON Lines, so any character can stand in a value. */
function awkwardShop(amounts: number[], extra: string[]): string {
  const AWKWARD = [...AWKWARD_TEXT, ...extra];
  const at = (i: number, hour = 10) => `2024-03-${String((i % 27) + 1).padStart(2, '0')}T${String(hour).padStart(2, '0')}:00:00Z`;
  return dataset({
    'orders.jsonl': jsonl(
      AWKWARD.map((_, i) => ({
        order_id: AWKWARD[(i + 3) % AWKWARD.length]! + i,
        contact_id: `c${i}`,
        datetime: at(i),
        currency: 'EUR',
        amount_wo_tax: amounts[i % amounts.length]!,
        amount_w_tax: amounts[(i + 1) % amounts.length]!,
        country: i % 4 === 0 ? null : AWKWARD[i]!,
        is_refund: i % 5 === 4,
        status: 'completed',
      })),
    ),
    'touches.jsonl': jsonl(
      AWKWARD.map((name, i) => ({ contact_id: `c${i}`, datetime: at(i, i % 10), touch: 'click', source_type: TYPES[i % 3], source_id: `s-${name}` })),
    ),
    'sources.jsonl': jsonl(
      AWKWARD.map((name, i) => ({
        source_type: TYPES[i % 3],
        source_id: `s-${name}`,
        name: i % 6 === 5 ? null : name,
        smartflow_id: i % 3 === 2 ? `sf ${name}` : null,
        smartflow_name: i % 3 === 2 ? name : null,
        delivery_id: i % 2 ? `d,${name}` : null,
      })),
    ),
    'contacts.jsonl': jsonl(
      AWKWARD.map((name, i) => ({
        contact_id: `c${i}`,
        client_contact_id: i % 3 ? `x${name}` : null,
        first_name: name,
        surname: AWKWARD[(i + 5) % AWKWARD.length]!,
      })),
    ),
  });
}

describe('csv and tsv lines written by DuckDB', () => {
  const usual = [12.5, 0.0001, -3, 100, 99999999999.5, 7.1];
  const cases: { name: string; amounts: number[]; extra: string[]; fast: (format: string) => boolean }[] = [
    { name: 'engine lines', amounts: usual, extra: [], fast: () => true },
    { name: 'an amount too large: row path', amounts: [12.5, 123456789012.5], extra: [], fast: () => false },
    { name: 'a leading U+FEFF: row path', amounts: usual, extra: ['\ufeffbom'], fast: () => false },
    { name: 'a control character: row path for JSON', amounts: usual, extra: ['ctl\u000bx\u001f'], fast: (f) => f !== 'jsonl' },
  ];
  for (const { name, amounts, extra, fast } of cases) {
    it(`equal the formatters' output byte for byte (${name})`, async () => {
      const dir = awkwardShop(amounts, extra);
      await withBackend(dir, async (backend) => {
        // The row path's records of each order, read once: the formatters write them in every format below.
        const records = new Map<string, { totalCount: number; rows: unknown[] }>();
        const rowsOf = async (query: ItemsQuery, sort: string): Promise<RowStream<unknown>> => {
          if (!records.has(sort)) {
            const { text: _text, ...rowsOnly } = await backend.allItems(query);
            const rows: unknown[] = [];
            for await (const row of rowsOnly.rows) rows.push(row);
            records.set(sort, { totalCount: rowsOnly.totalCount, rows });
          }
          const { totalCount, rows } = records.get(sort)!;
          return { totalCount, rows: (async function* () { yield* rows; })() };
        };
        for (const format of ['csv', 'tsv', 'jsonl'] as const) {
          const fieldSets = format === 'jsonl' ? [undefined] : [undefined, ['source.name', 'conversionsAmount', 'isRefund', 'attribution.hoursToConversion', 'attribution.model']];
          for (const fields of fieldSets) {
            for (const formulaEscape of [true, false]) {
              // The engine's lines in four orders; the row path (the writer's own, pinned by format.test) in two.
              for (const sort of fast('csv') ? ['datetime', '-surname', 'conversionsAmount', '-country'] : ['datetime', '-surname']) {
                const query = itemsQuery('2024-01-01', '2024-12-31', {
                  sort: [{ field: sort.replace('-', ''), descending: sort.startsWith('-') }],
                  offset: 2,
                });
                // One stream of the engine: asked whether it writes the lines itself, then written (the writer asks again).
                const stream = await backend.allItems(query);
                expect(await stream.text!({ format, columns: fields ?? ITEM_COLUMNS, formulaEscape }) !== undefined).toBe(fast(format));
                // Declined: both sides below would be the writer over the same query's records, equal by
                // construction (the writer's own lines are pinned by format.test).
                if (!fast(format)) continue;
                const viaEngine = await write(stream, format, fields, formulaEscape);
                const viaRows = await write(await rowsOf(query, sort), format, fields, formulaEscape);
                expect(viaEngine.text).toBe(viaRows.text);
                expect(viaEngine.count).toBe(viaRows.count);
                expect(viaRows.count).toBeGreaterThan(5);
              }
            }
          }
        }
      });
    }, 60_000);
  }
});

/** n orders, each a contact's with a click before it, their text cycling through the awkward values. */
function manyShop(n: number): string {
  const AWKWARD = AWKWARD_TEXT;
  const at = (i: number, minute = 30) => new Date(Date.UTC(2024, 0, 1 + (i % 360), i % 24, minute, i % 60)).toISOString();
  return dataset({
    'orders.jsonl': jsonl(
      Array.from({ length: n }, (_, i) => ({
        order_id: `${AWKWARD[i % AWKWARD.length]}${i}`,
        contact_id: `c${i % 997}`,
        datetime: at(i),
        currency: 'EUR',
        amount_wo_tax: (i % 500) + 0.25,
        amount_w_tax: (i % 500) + 0.5,
        country: i % 4 === 0 ? null : AWKWARD[(i + 1) % AWKWARD.length]!,
        is_refund: i % 50 === 49,
        status: 'completed',
      })),
    ),
    'touches.jsonl': jsonl(Array.from({ length: n }, (_, i) => ({ contact_id: `c${i % 997}`, datetime: at(i, 10), touch: 'click', source_type: TYPES[i % 3], source_id: `s-${AWKWARD[i % AWKWARD.length]}` }))),
    'sources.jsonl': jsonl(
      AWKWARD.flatMap((name, k) =>
        TYPES.map((type, t) => ({ source_type: type, source_id: `s-${name}`, name: k % 6 === 5 ? null : name, smartflow_id: t === 2 ? `sf ${name}` : null, smartflow_name: t === 2 ? name : null, delivery_id: k % 2 ? `d,${name}` : null })),
      ),
    ),
    'contacts.jsonl': jsonl(
      Array.from({ length: 997 }, (_, i) => ({ contact_id: `c${i}`, client_contact_id: i % 3 ? `x${i}` : null, first_name: AWKWARD[i % AWKWARD.length]!, surname: AWKWARD[(i + 5) % AWKWARD.length]! })),
    ),
  });
}

describe('lines of a statement split into parts', () => {
  it('split a table of one row group among the threads, and only then', () => {
    expect(partCount(1, 100_000)).toBe(1);
    expect(partCount(2, 100)).toBe(1);
    expect(partCount(2, 5000)).toBe(2);
    expect(partCount(8, 5000)).toBe(2);
    expect(partCount(8, 100_000)).toBe(8);
    expect(partCount(64, 100_000)).toBe(16);
    // enough row groups for the threads already
    expect(partCount(2, 1_000_000)).toBe(1);
    expect(partCount(16, 500_000)).toBe(4);
  });

  it(`equal the formatters' output byte for byte when the rows are read in parts`, async () => {
    const dir = manyShop(5000);
    await withBackend(
      dir,
      async (backend) => {
        for (const sort of ['datetime', '-surname']) {
          const query = itemsQuery('2024-01-01', '2024-12-31', { sort: [{ field: sort.replace('-', ''), descending: sort.startsWith('-') }], offset: 2 });
          const { text: _text, ...rowsOnly } = await backend.allItems(query);
          const rows: unknown[] = [];
          for await (const row of rowsOnly.rows) rows.push(row);
          // two threads, one row group: the lines' statement reads the rows in two parts
          expect(partCount(2, rowsOnly.totalCount)).toBe(2);
          for (const format of ['csv', 'tsv', 'jsonl'] as const) {
            const stream = await backend.allItems(query);
            expect(await stream.text!({ format, columns: ITEM_COLUMNS, formulaEscape: true })).toBeDefined();
            const viaEngine = await write(stream, format, undefined, true);
            const viaRows = await write({ totalCount: rowsOnly.totalCount, rows: (async function* () { yield* rows; })() }, format, undefined, true);
            expect(viaEngine.count).toBe(rows.length);
            expect(viaEngine.text).toBe(viaRows.text);
          }
        }
      },
      { threads: 2 },
    );
  }, 60_000);
});
