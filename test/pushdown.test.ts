/**
 * Local commands attribute only what their period needs (attribution.ts with a
 * period): the same queries must give byte-identical answers to the full
 * attribution the server computes once per load. These tests fail if the
 * push-down drops an order or a click that a transaction of the period needs.
 */
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { choosePlugin, Scope } from '../src/local/attribution.js';
import { LocalBackend } from '../src/local/backend.js';
import { openDataset } from '../src/local/open.js';
import { generateDataset } from '../src/local/generate.js';
import type { ItemsQuery, ReportQuery } from '../src/model/query.js';
import { csv, dataset, itemsQuery, ORDER_HEADER, reportQuery, SOURCE_HEADER, suiteThreadsOption, tempDir, TOUCH_HEADER } from './helpers.js';

async function collect<T>(rows: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const row of rows) out.push(row);
  return out;
}

/** A full scope (as served, attributed when first asked for) and a factory of fresh pushed-down scopes on the same dataset. */
async function pair(dir: string, plugin?: string) {
  const data = await openDataset(dir, undefined, suiteThreadsOption());
  const chosen = await choosePlugin(data, plugin);
  let served: Promise<LocalBackend> | undefined;
  const full = () => (served ??= Scope.forServing(data, 'full', chosen).then((scope) => new LocalBackend(scope, data.db)));
  let n = 0;
  const pushed = async () =>
    new LocalBackend(await Scope.forQuery(data, `pushed_${n++}`, chosen), data.db);
  return { data, full, pushed };
}

async function answers(backend: LocalBackend, items: ItemsQuery, report: ReportQuery) {
  const all = await backend.allItems(items);
  const reportAll = await backend.allReport(report);
  return JSON.stringify({
    items: { total: all.totalCount, rows: await collect(all.rows) },
    report: { total: reportAll.totalCount, rows: await collect(reportAll.rows) },
    page: await backend.report({ ...report, limit: 3, offset: 1 }),
  });
}

async function expectSame(dir: string, periods: [string, string][], plugin?: string): Promise<number> {
  const { data, full, pushed } = await pair(dir, plugin);
  let records = 0;
  try {
    for (const [from, to] of periods) {
      const items = itemsQuery(from, to, { sort: [{ field: 'datetime', descending: true }] });
      const report = reportQuery(from, to);
      const expected = await answers(await full(), items, report);
      const actual = await answers(await pushed(), items, report);
      expect(actual, `${plugin ?? ''} ${from}..${to}`).toBe(expected);
      records += (JSON.parse(expected) as { items: { total: number } }).items.total;
    }
  } finally {
    data.db.close();
  }
  return records;
}

describe('the period pushed into the attribution', () => {
  // c-edge's only click is exactly 30 days before its order at the first instant of March;
  // o-old (January, click in December) has a refund in March; o-dup's earliest row is in January
  // and a later duplicate row in March must not count; c-tie has two clicks at one instant.
  const dir = dataset({
    'orders.csv': csv(ORDER_HEADER, [
      ['o-edge', 'c-edge', '2024-03-01T00:00:00Z', 'EUR', 10, 12, 'CZ', false, 'completed'],
      ['o-old', 'c-old', '2024-01-05T10:00:00Z', 'EUR', 50, 60, 'CZ', false, 'completed'],
      ['o-old', 'c-old', '2024-03-10T10:00:00Z', 'EUR', -20, -24, 'CZ', true, 'refunded'],
      ['o-dup', 'c-dup', '2024-01-10T08:00:00Z', 'EUR', 30, 36, 'SK', false, 'completed'],
      ['o-dup', 'c-dup', '2024-03-11T08:00:00Z', 'EUR', 99, 120, 'SK', false, 'completed'],
      ['o-tie', 'c-tie', '2024-03-31T23:59:59.999Z', 'EUR', 5, 6, 'PL', false, 'completed'],
      ['o-late', 'c-old', '2024-04-01T00:00:00Z', 'EUR', 7, 8, 'PL', false, 'completed'],
      ['o-ref-late', 'c-tie', '2024-02-20T12:00:00Z', 'EUR', 40, 48, 'PL', false, 'completed'],
      ['o-ref-late', 'c-tie', '2024-04-02T12:00:00Z', 'EUR', -40, -48, 'PL', true, 'refunded'],
    ]),
    'touches.csv': csv(TOUCH_HEADER, [
      ['c-edge', '2024-01-31T00:00:00Z', 'click', 'campaign', 'k-edge'],
      ['c-edge', '2024-01-30T23:59:59.999Z', 'click', 'campaign', 'k-too-early'],
      ['c-old', '2023-12-20T09:00:00Z', 'click', 'automation', 'a-old'],
      ['c-old', '2024-03-05T09:00:00Z', 'click', 'campaign', 'k-late'],
      ['c-dup', '2024-01-09T08:00:00Z', 'click', 'smartflow', 'n-dup'],
      ['c-dup', '2024-03-10T08:00:00Z', 'click', 'campaign', 'k-dup-row'],
      ['c-tie', '2024-03-30T00:00:00Z', 'click', 'campaign', 'k-a'],
      ['c-tie', '2024-03-30T00:00:00Z', 'click', 'campaign', 'k-b'],
      ['c-tie', '2024-02-19T00:00:00Z', 'click', 'automation', 'a-feb'],
      ['c-tie', '2024-02-19T00:00:00Z', 'open', 'automation', 'a-open'],
    ]),
    // k-edge has no started_at: its sourceStartedAt is its earliest touch in the whole dataset.
    'sources.csv': csv(SOURCE_HEADER, [['campaign', 'k-a', 'Tie A', '', '', '', '', '', '2023-01-01T00:00:00Z']]),
  });

  it('March holds the order 30 days after its click, the refund of a January order, not the duplicate row', async () => {
    const { data, pushed } = await pair(dir);
    try {
      const backend = await pushed();
      const page = await backend.items(itemsQuery('2024-03-01', '2024-03-31'));
      expect(page.rows.map((r) => [r.orderId, r.isRefund, r.source.id, r.conversionsAmount])).toEqual([
        ['o-edge', false, 'k-edge', 12],
        ['o-old', true, 'a-old', -24],
        ['o-tie', false, 'k-b', 6],
      ]);
      const report = await backend.report(reportQuery('2024-03-01', '2024-03-31'));
      expect(report.rows.find((r) => r.id === 'k-edge')?.sourceStartedAt).toBe('2024-01-31T00:00:00.000Z');
    } finally {
      data.db.close();
    }
  });

  it('gives the full attribution\'s answers for every period, at the data\'s edges too', async () => {
    const periods: [string, string][] = [
      ['2024-03-01', '2024-03-31'],
      ['2024-03-01', '2024-03-01'],
      ['2024-03-31', '2024-03-31'],
      ['2024-03-10', '2024-03-11'],
      ['2024-04-01', '2024-04-30'],
      ['2024-04-02', '2024-04-02'],
      ['2024-01-01', '2024-12-31'],
      ['2023-01-01', '2023-12-31'],
      ['1900-01-01', '9999-12-31'],
      ['2024-02-01', '2024-02-29'],
    ];
    expect(await expectSame(dir, periods)).toBeGreaterThan(0);
  });

  describe('on generated data', () => {
    let root: string;
    beforeAll(async () => {
      root = tempDir('convx-pushdown-');
      for (const format of ['csv', 'parquet'] as const) {
        await generateDataset({
          out: join(root, format),
          seed: 11,
          contacts: 300,
          orders: 1500,
          touches: 9000,
          from: '2024-01-01',
          to: '2024-12-31',
          format,
          plugins: 2,
          ...suiteThreadsOption(),
        });
      }
    }, 60_000);

    // Months, single days, spans over a year's edge, refunds after the orders' year (2025), and beyond the data.
    const periods: [string, string][] = [
      ['2024-01-01', '2024-01-31'],
      ['2024-06-01', '2024-06-30'],
      ['2024-12-01', '2024-12-31'],
      ['2025-01-01', '2025-01-31'],
      ['2025-02-01', '2025-12-31'],
      ['2024-12-31', '2025-02-28'],
      ['2024-02-29', '2024-02-29'],
      ['2024-07-15', '2024-08-14'],
      ['2024-01-01', '2025-12-31'],
      ['2023-06-01', '2023-12-31'],
    ];
    // Each reader and each reference currency once (not their cross product, twice as long): csv
    // copied into tables, Parquet whose unordered tables stay views over the file (the period's
    // filter reaches the scan); shop-1 in EUR, shop-2 in CZK, each plugin's orders needing rates
    // into its own reference currency.
    for (const [format, plugin] of [['csv', 'shop-1'], ['parquet', 'shop-2']] as const) {
      it(`${format}, ${plugin}`, async () => {
        expect(await expectSame(join(root, format), periods, plugin)).toBeGreaterThan(100);
      }, 60_000);
    }
  });
});
