/**
 * A served report summed in JavaScript from the per-day sums (src/local/day-sums.ts) gives the page
 * the SQL gives, byte for byte: on seeded random shops (several currencies and rates, refunds,
 * zero, negative and large amounts, sources without a name, two sources of one name, refunds
 * some days after their order), for random periods (one day, across the data's edges, empty), every sort key
 * either way, offsets past the end and small limits. And a shop whose sums could pass 2^48
 * ten-thousandths (the bound that keeps every sum exact in a double) keeps the SQL way.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { REPORT_SORT_FIELDS, type ReportQuery } from '../src/model/query.js';
import { ServedDataset } from '../src/server/plugins.js';
import type { LocalBackend } from '../src/local/backend.js';
import { DaySums } from '../src/local/day-sums.js';
import { reportQuery, shop, type OrderRow, type TouchRow } from './helpers.js';

/** A seeded generator of floats in [0, 1). */
function random(seed: number): () => number {
  let s = Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const DAY = 86_400_000;
const START = Date.UTC(2024, 0, 1);
const iso = (ms: number) => new Date(ms).toISOString();
const date = (ms: number) => iso(ms).slice(0, 10);

/** A shop of 14 sources over two months: orders in EUR, CZK and PLN, each after a click of its contact. */
function randomShop(seed: number): string {
  const r = random(seed);
  const pick = <T,>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)]!;
  const sources = Array.from({ length: 14 }, (_, i) => ({ type: i % 4 === 3 ? 'automation' : 'campaign', id: `k${i}` }));
  const orders: OrderRow[] = [];
  const touches: TouchRow[] = [];
  for (let i = 0; i < 160; i++) {
    const contact = `c${Math.floor(r() * 40)}`;
    const at = START + Math.floor(r() * 60 * DAY);
    const source = pick(sources);
    touches.push({ contact, at: iso(at - Math.floor(r() * 5 * DAY) - 1000), type: source.type, source: source.id });
    const kind = r();
    const net = kind < 0.05 ? 0 : kind < 0.1 ? -12.5 : kind < 0.15 ? 987654.3219 : Math.round(r() * 100000) / 100;
    const currency = pick(['EUR', 'CZK', 'PLN']);
    orders.push({ id: `o${i}`, contact, at: iso(at), currency, net: net.toFixed(4), gross: (net * 1.21).toFixed(4) });
    // a refund of part of the order, some days later (some on a day of no order of the source)
    if (r() < 0.2) {
      const part = -Math.round(r() * Math.abs(net) * 100) / 100;
      orders.push({ id: `o${i}`, contact, at: iso(at + Math.floor(r() * 9 * DAY) + 1000), currency, net: part.toFixed(4), gross: (part * 1.21).toFixed(4), refund: true, status: 'refunded' });
    }
  }
  const fx: [string, string, string][] = [];
  for (let d = -8; d < 62; d += 3) {
    fx.push([date(START + d * DAY), 'CZK', (0.04 + r() / 100).toFixed(6)]);
    fx.push([date(START + d * DAY), 'PLN', (0.23 + r() / 50).toFixed(6)]);
  }
  // Two sources of one name and of two types (k2 a campaign, k7 an automation); k5 and k9 without a row (no name).
  const named = sources.filter((s) => s.id !== 'k5' && s.id !== 'k9');
  const rows = named.map((s) => [s.type, s.id, s.id === 'k7' || s.id === 'k2' ? 'Twin' : `Campaign ${s.id}`, s.id, '', '', '', '', '2023-12-01T08:00:00.123Z']);
  return shop({ orders, touches, fx, sources: rows });
}

/** The queries of a seed: each sort key either way over periods of one day, across the data's edges and empty, some with a second key and a small page; the name's ties; random periods. */
function queriesOf(seed: number): ReportQuery[] {
  const r = random(seed * 7919);
  const periods: [string, string][] = [
    ['2024-01-01', '2024-03-31'],
    ['2023-12-01', '2023-12-31'], // before the data: no rows
    ['2024-01-15', '2024-01-15'], // one day
    ['2023-12-20', '2024-01-05'], // across the data's start
    ['2024-02-20', '2024-03-10'], // across its end
  ];
  const queries: ReportQuery[] = [];
  for (const [i, field] of REPORT_SORT_FIELDS.entries()) {
    for (const descending of [false, true]) {
      const [from, to] = periods[(2 * i + Number(descending)) % periods.length]!;
      const then = r() < 0.5 ? [{ field: 'name', descending: !descending }] : [];
      const paging = r() < 0.3 ? { limit: 3, offset: Math.floor(r() * 12) } : { limit: 1000, offset: 0 };
      queries.push(reportQuery(from, to, { sort: [{ field, descending }, ...then], ...paging }));
    }
  }
  // the name's ties (two sources named Twin) broken by source type and id
  queries.push(reportQuery('2024-01-01', '2024-03-31', { sort: [{ field: 'name', descending: false }] }));
  for (let i = 0; i < 4; i++) {
    const from = START + Math.floor(r() * 60) * DAY;
    queries.push(reportQuery(date(from), date(from + Math.floor(r() * 40) * DAY)));
  }
  return queries;
}

/** Every query of the seed gives the SQL's page byte for byte. */
async function sameAsSql(backend: LocalBackend, seed: number): Promise<void> {
  for (const query of queriesOf(seed)) {
    const [summed, bySql] = await bothWays(backend, query);
    expect(summed, `${query.dateFrom}..${query.dateTo} by ${JSON.stringify(query.sort)}`).toBe(bySql);
  }
}

/** The page the backend gives, and the one it gives without the sums in JavaScript (the SQL's), as JSON. */
async function bothWays(backend: LocalBackend, query: ReportQuery): Promise<[string, string]> {
  const kept = backend.scope.daySums;
  expect(kept, 'the served scope holds its per-day sums in JavaScript').toBeDefined();
  const summed = JSON.stringify(await backend.report(query));
  backend.scope.daySums = undefined;
  try {
    return [summed, JSON.stringify(await backend.report(query))];
  } finally {
    backend.scope.daySums = kept;
  }
}

const opened: ServedDataset[] = [];
afterAll(async () => {
  await Promise.all(opened.map((d) => d.retire()));
});

async function served(dir: string): Promise<LocalBackend> {
  const dataset = await ServedDataset.load(dir, { poolSize: 1 });
  opened.push(dataset);
  return dataset.backend('default', { pooled: false });
}

describe('a served report summed in JavaScript from the per-day sums', () => {
  it.each([1, 2])('seed %i: every sort key either way, over periods of one day, across the data\'s edges and empty, paged, gives the SQL page byte for byte', async (seed) => {
    const backend = await served(randomShop(seed));
    try {
      await sameAsSql(backend, seed);
      // what a plugin file's memory budget counts holds the arrays' bytes (about 105 a report_day row)
      const bytes = backend.scope.daySums!.bytes;
      expect(bytes).toBeGreaterThan(100 * 150);
      const dataset = opened.at(-1)!;
      const withSums = await dataset.memoryUsage();
      const kept = backend.scope.daySums;
      backend.scope.daySums = undefined;
      const duckdbAlone = await dataset.memoryUsage();
      backend.scope.daySums = kept;
      expect(withSums - duckdbAlone).toBe(bytes);
      // the data has rows where the comparison can see them: a full period lists the sources with orders, the Twins among them
      const all = JSON.parse((await bothWays(backend, reportQuery('2024-01-01', '2024-03-31')))[0]) as { rows: { name: string }[] };
      expect(all.rows.length).toBeGreaterThan(8);
      expect(all.rows.filter((row) => row.name === 'Twin')).toHaveLength(2);
    } finally {
      await backend.close();
    }
  });

  it('finds the days by binary search where a day index would be too large, with the same pages', async () => {
    const backend = await served(randomShop(3));
    const indexed = backend.scope.daySums;
    try {
      backend.scope.daySums = await DaySums.load(backend.scope.db, (name) => backend.scope.relation(name), { dayIndexEntries: 0 });
      const runs = backend.scope.daySums as unknown as Record<'cells' | 'bySource', { through: unknown }>;
      expect(runs.cells.through).toBeUndefined();
      expect(runs.bySource.through).toBeUndefined();
      await sameAsSql(backend, 3);
    } finally {
      backend.scope.daySums = indexed;
      await backend.close();
    }
  });

  it('a first and last conversion past 2^53 µs (after 2255) keep the milliseconds the SQL writes', async () => {
    const ats = ['2300-03-02T10:00:00.999999Z', '2300-03-03T10:00:00.000001Z', '2300-03-04T10:00:00.998999Z', '2300-03-05T10:00:00.997999Z', '2300-03-06T10:00:00.999997Z'];
    const dir = shop({
      orders: ats.flatMap((at, i) => [{ id: `o${i}`, contact: 'c1', at, net: 1, gross: 1 }]),
      touches: [{ contact: 'c1', at: '2300-03-01T10:00:00Z', source: 'k1' }],
    });
    const backend = await served(dir);
    try {
      expect(backend.scope.daySums).toBeDefined();
      for (const [from, to] of [['2300-03-01', '2300-03-31'], ['2300-03-03', '2300-03-03'], ['2300-03-04', '2300-03-05'], ['2300-03-02', '2300-03-06']] as const) {
        const [js, bySql] = await bothWays(backend, reportQuery(from, to));
        expect(js).toBe(bySql);
      }
    } finally {
      await backend.close();
    }
  });

  it('an amount past what a double holds in whole ten-thousandths keeps the SQL way, with the same answer', async () => {
    const big = 99_999_999_999_999.9999; // 10^18 ten-thousandths: past 2^53
    const dir = shop({
      orders: [
        { id: 'o1', contact: 'c1', at: '2024-03-02T10:00:00Z', net: '99999999999999.9999', gross: '99999999999999.9999' },
        { id: 'o2', contact: 'c1', at: '2024-03-03T10:00:00Z', net: 1, gross: 1 },
      ],
      touches: [{ contact: 'c1', at: '2024-03-01T10:00:00Z', source: 'k1' }],
    });
    const backend = await served(dir);
    try {
      expect(backend.scope.daySums).toBeUndefined();
      const page = await backend.report(reportQuery('2024-03-01', '2024-03-31'));
      expect(page.rows[0]!.conversionsNumber).toBe(2);
      expect(page.rows[0]!.conversionsAmountWTax).toBe(big + 1);
    } finally {
      await backend.close();
    }
  });

  it('sums just past 2^48 ten-thousandths keep the SQL way; just under it, the JavaScript way, with the same answer', async () => {
    // 2^48 ten-thousandths are 28,147,497,671.0656: two orders of half of it each, with and without a margin
    for (const [each, kept] of [['14073748835.5328', false], ['13900000000.0000', true]] as const) {
      const dir = shop({
        orders: [
          { id: 'o1', contact: 'c1', at: '2024-03-02T10:00:00Z', net: each, gross: each },
          { id: 'o2', contact: 'c1', at: '2024-03-03T10:00:00Z', net: each, gross: each },
        ],
        touches: [{ contact: 'c1', at: '2024-03-01T10:00:00Z', source: 'k1' }],
      });
      const backend = await served(dir);
      try {
        expect(backend.scope.daySums !== undefined, each).toBe(kept);
        if (kept) {
          const [js, bySql] = await bothWays(backend, reportQuery('2024-03-01', '2024-03-31'));
          expect(js).toBe(bySql);
        }
      } finally {
        await backend.close();
      }
    }
  });
});
