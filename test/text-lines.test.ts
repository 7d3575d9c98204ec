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
