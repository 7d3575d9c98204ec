/**
 * A served look-up of an order answered in JavaScript from the order index (src/local/order-index.ts)
 * gives the page the SQL gives, byte for byte: on seeded random shops (several currencies and rates,
 * refunds, order ids of several rows, sale rows that do not count, contacts with and without names
 * and client ids, countries from the order, the contact or none, sources of every type, zero,
 * negative and large amounts, odd ids whose UTF-8 order is not their UTF-16 order), for every sort key
 * either way, periods of every date, a month, a day and none of the order's, offsets past the end,
 * small limits, unknown ids; the order look-up of any date too. And the index runs no query, while a
 * look-up it cannot answer (a time zone, another filter, a missing rate) takes the SQL way, with the
 * same answer or error; data it cannot hold keeps the SQL way.
 */
import { afterAll, describe, expect, it, vi } from 'vitest';
import { EVERY_DATE, ITEMS_SORT_FIELDS, type ItemsQuery } from '../src/model/query.js';
import type { ConversionRecord } from '../src/model/types.js';
import { ServedDataset } from '../src/server/plugins.js';
import type { LocalBackend } from '../src/local/backend.js';
import type { Database } from '../src/local/db.js';
import { OrderIndex } from '../src/local/order-index.js';
import { sql } from '../src/local/sql.js';
import { csv, itemsQuery, shop, type OrderRow, type TouchRow } from './helpers.js';

/** A seeded generator of floats in [0, 1) (Park and Miller's). */
const random = (seed: number): (() => number) => {
  let s = (seed * 7_777) % 2_147_483_647 || 1;
  return () => (s = (s * 48_271) % 2_147_483_647) / 2_147_483_647;
};

const DAY = 86_400_000;
const START = Date.UTC(2024, 0, 1);
const iso = (ms: number) => new Date(ms).toISOString();
const date = (ms: number) => iso(ms).slice(0, 10);

/** Order ids whose UTF-8 byte order differs from their UTF-16 order (an astral character and U+FFFD, U+E000), case, spaces and signs. */
const ODD_IDS = ['o-\u{1F600}', 'o-\uFFFD', 'o-\uE000', 'o-é', 'O-1', 'o 1', 'o%2F/x', '0', `o-${'x'.repeat(300)}`, 'o-"quoted",'];

/** Sources of every type: campaigns (one without a row: no name), automations, smartflow nodes with and without a delivery. */
const SOURCES = [
  { type: 'campaign', id: 'k0' },
  { type: 'campaign', id: 'k1' },
  { type: 'campaign', id: 'k-nameless' },
  { type: 'automation', id: 'a0' },
  { type: 'automation', id: 'a1' },
  { type: 'smartflow', id: 'n0' },
  { type: 'smartflow', id: 'n1' },
] as const;
const SOURCE_ROWS = [
  ['campaign', 'k0', 'Spring sale', 'k0', '', '', '', '', '2023-12-01T08:00:00.123Z'],
  ['campaign', 'k1', 'Léto ✓', 'k1', '', '', '', '', ''],
  ['automation', 'a0', 'Welcome', 'cmp-a0', '', '', '', '', ''],
  ['automation', 'a1', 'Spring sale', 'cmp a/1', '', '', '', '', ''],
  ['smartflow', 'n0', 'Reminder node', '', 'sf 1', 'Flow ✓', 'd/0', 'Reminder', ''],
  ['smartflow', 'n1', 'Bare node', '', 'sf2', '', '', '', ''],
];

/** Contacts c0..c11: some with a client id, names and a country, some with none, c10 and c11 not in the file. */
function contactsFile(): string {
  const rows = Array.from({ length: 10 }, (_, i) => [`c${i}`, i % 3 === 0 ? '' : `CL-${i}`, `c${i}@example.com`, i % 4 === 1 ? '' : `Ann ${i}`, i % 5 === 2 ? '' : `Nováková ${i}`, i % 2 ? 'SK' : '']);
  return csv(['contact_id', 'client_contact_id', 'email', 'first_name', 'surname', 'country'], rows);
}

/** The amount of the i-th order: mostly cents, one in ten zero (not a transaction), negative, large or of four decimals. */
function amountOf(i: number, r: () => number): number {
  return [0, -12.5, 987654321.1234, 0.0001][(i % 10) - 5] ?? Math.round(r() * 100000) / 100;
}

/** A shop of 60 orders over two months, each after a click of its contact (but some), with refunds and extra rows. */
function randomShop(seed: number): { dir: string; ids: string[] } {
  const r = random(seed);
  const pick = <T,>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)]!;
  const ids = [...ODD_IDS, ...Array.from({ length: 50 }, (_, i) => `o-${i}`)];
  const orders: OrderRow[] = [];
  const touches: TouchRow[] = [];
  for (const [i, id] of ids.entries()) {
    const contact = `c${Math.floor(r() * 12)}`;
    const at = START + Math.floor(r() * 60 * DAY) + Math.floor(r() * 1000);
    const source = pick(SOURCES);
    // most orders after a click of their contact within the window (the odd ids' always)
    const odd = i < ODD_IDS.length;
    // three orders in HUF, which fx has no rate of
    const unpriced = !odd && i % 17 === 11;
    if (odd || unpriced || r() < 0.9) touches.push({ contact, at: iso(at - Math.floor(r() * 5 * DAY) - 1), type: source.type, source: source.id });
    const net = amountOf(i, r);
    const currency = unpriced ? 'HUF' : pick(['EUR', 'CZK', 'PLN', 'USD']);
    const country = pick(['CZ', 'sk', '']);
    orders.push({ id, contact, at: iso(at), currency, net: net.toFixed(4), gross: (net * 1.21).toFixed(4), country });
    // a second sale row of the id: the earlier of the two counts
    if (r() < 0.15) orders.push({ id, contact, at: iso(at + (r() < 0.5 ? -1 : 1) * Math.floor(r() * 3 * DAY)), currency, net: '5', gross: '6.05', country });
    // refunds, some at one instant, some a month later (outside a month's period)
    const refunds = Math.floor(r() * r() * 4);
    const refundAt = at + Math.floor(r() * 40 * DAY) + 1;
    for (let k = 0; k < refunds; k++) {
      const part = -Math.round(r() * Math.abs(net) * 100) / 100;
      // a refund row of another contact now and then (its own contact columns and activityUrl)
      const of = r() < 0.2 ? `c${Math.floor(r() * 12)}` : contact;
      orders.push({ id, contact: of, at: iso(r() < 0.3 ? refundAt : at + Math.floor(r() * 40 * DAY) + 1), currency, net: part.toFixed(4), gross: (part * 1.21).toFixed(4), refund: true, status: 'refunded', country });
    }
  }
  const fx: [string, string, string][] = [];
  for (let d = -8; d < 110; d += 2) {
    for (const [currency, base] of [['CZK', 0.04], ['PLN', 0.23], ['USD', 0.9]] as const) fx.push([date(START + d * DAY), currency, (base + r() / 100).toFixed(6)]);
  }
  const dir = shop({ orders, touches, fx, sources: SOURCE_ROWS, files: { 'contacts.csv': contactsFile() } });
  return { dir, ids };
}

/** The periods asked: every date (the look-up's), the data's months, one day, and one before the data. */
const PERIODS: [string, string][] = [
  [EVERY_DATE.dateFrom, EVERY_DATE.dateTo],
  ['2024-01-01', '2024-01-31'],
  ['2024-02-01', '2024-03-31'],
  ['2024-01-15', '2024-01-15'],
  ['2023-01-01', '2023-12-31'],
];

/** The queries of a seed: per id the look-up's query; per sort key either way, random ids (unknown ones too), periods and pages. */
function queriesOf(seed: number, ids: string[]): ItemsQuery[] {
  const r = random(seed * 7919);
  const pick = <T,>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)]!;
  const queries = ids.map((orderId) => itemsQuery(EVERY_DATE.dateFrom, EVERY_DATE.dateTo, { orderId }));
  // per id, the sorts by what a refund of another contact changes
  for (const orderId of ids) {
    for (const descending of [false, true]) queries.push(itemsQuery(EVERY_DATE.dateFrom, EVERY_DATE.dateTo, { orderId, sort: [{ field: 'activityUrl', descending }] }));
  }
  const asked = [...ids, 'nope', 'o-', 'o-1 ', 'o-\u{1F601}'];
  for (const field of ITEMS_SORT_FIELDS) {
    for (const descending of [false, true]) {
      for (let k = 0; k < 4; k++) {
        const [from, to] = pick(PERIODS);
        const paging = r() < 0.4 ? { limit: 1 + Math.floor(r() * 2), offset: Math.floor(r() * 4) } : { limit: 1000, offset: 0 };
        queries.push(itemsQuery(from, to, { orderId: pick(asked), sort: [{ field, descending }], ...paging }));
      }
    }
  }
  return queries;
}

/** Per order, the periods whose first or last day is the day of one of its rows: that day alone, through it, from it, from the day after. */
async function edgesOf(backend: LocalBackend, ids: string[]): Promise<ItemsQuery[]> {
  const queries: ItemsQuery[] = [];
  for (const orderId of ids) {
    const page = await backend.items(itemsQuery(EVERY_DATE.dateFrom, EVERY_DATE.dateTo, { orderId })).catch(() => undefined);
    for (const row of page?.rows ?? []) {
      const day = row.datetime.slice(0, 10);
      const next = date(Date.parse(`${day}T00:00:00Z`) + DAY);
      for (const [from, to] of [[day, day], ['2023-12-01', day], [day, '2024-12-31'], [next, '2024-12-31']] as const) queries.push(itemsQuery(from, to, { orderId }));
    }
  }
  return queries;
}

/** What the pages compared must show (factsOf): every source type, nulls where a column has them, refunds, odd ids, several rows of an order. */
const FACTS = ['automation', 'campaign', 'smartflow', 'smartflow without delivery', 'no client id', 'no first name', 'no surname', 'no country', 'refund', 'odd id', 'astral id', 'large amount', 'negative sale'];

function factsOf(row: ConversionRecord): string[] {
  const facts: [string, boolean][] = [
    [row.source.type, true],
    ['smartflow without delivery', row.source.type === 'smartflow' && row.source.deliveryId === null],
    ['no client id', row.clientContactId === null],
    ['no first name', row.firstName === null],
    ['no surname', row.surname === null],
    ['no country', row.country === null],
    ['refund', row.isRefund],
    ['odd id', ODD_IDS.includes(row.orderId)],
    ['astral id', row.orderId === 'o-\u{1F600}'],
    ['large amount', Math.abs(row.conversionsAmount) > 1e9],
    ['negative sale', !row.isRefund && row.conversionsAmount < 0],
  ];
  return facts.filter(([, holds]) => holds).map(([fact]) => fact);
}

/** What an answer prints: the page, or the error thrown (its class, message and details). */
async function outcome(answer: () => Promise<unknown>): Promise<string> {
  try {
    return JSON.stringify(await answer());
  } catch (error) {
    return `${(error as Error).constructor.name}: ${(error as Error).message} ${JSON.stringify(error)}`;
  }
}

/** The backend's queries counted while work runs. */
async function queriesRun(backend: LocalBackend, work: () => Promise<unknown>): Promise<number> {
  const db = (backend as unknown as { db: Database }).db;
  const all = db.all;
  let n = 0;
  db.all = function (this: Database, ...args: Parameters<Database['all']>) {
    n++;
    return all.apply(this, args);
  } as Database['all'];
  try {
    await work();
  } finally {
    db.all = all;
  }
  return n;
}

/** The answer the backend gives (with the order index), the one it gives without it (the SQL's), and the queries the first ran. */
async function bothWays(backend: LocalBackend, answer: () => Promise<unknown>): Promise<{ indexed: string; bySql: string; queries: number }> {
  const kept = backend.scope.orderIndex;
  expect(kept, 'the served scope holds its order index').toBeDefined();
  let indexed = '';
  const queries = await queriesRun(backend, async () => (indexed = await outcome(answer)));
  backend.scope.orderIndex = undefined;
  try {
    return { indexed, bySql: await outcome(answer), queries };
  } finally {
    backend.scope.orderIndex = kept;
  }
}

const opened: ServedDataset[] = [];
afterAll(async () => {
  await Promise.all(opened.map((d) => d.retire()));
});

/** A served dataset, its order indexes loaded (a server loads one on the first look-up that could use it). */
async function served(dir: string, { indexed = true }: { indexed?: boolean } = {}): Promise<{ dataset: ServedDataset; backend: LocalBackend }> {
  const dataset = await ServedDataset.load(dir, { poolSize: 1 });
  opened.push(dataset);
  if (indexed) await dataset.indexAllOrders();
  return { dataset, backend: await dataset.backend('default', { pooled: false }) };
}

describe('a served order look-up answered from the order index', () => {
  it.each([1, 2])('seed %i: every sort key either way, over periods of every date, a month, a day and none, paged, unknown and odd ids, gives the SQL page byte for byte', async (seed) => {
    const { dir, ids } = randomShop(seed);
    const { backend } = await served(dir);
    let rows = 0;
    let errors = 0;
    const seen = new Set<string>();
    try {
      for (const query of [...queriesOf(seed, ids), ...(await edgesOf(backend, ids))]) {
        const { indexed, bySql, queries } = await bothWays(backend, () => backend.items(query));
        const what = `${JSON.stringify(query.orderId)} ${query.dateFrom}..${query.dateTo} by ${JSON.stringify(query.sort)} ${query.offset}+${query.limit}`;
        expect(indexed, what).toBe(bySql);
        if (bySql.startsWith('DataError')) {
          errors++;
          continue;
        }
        // the index answers without a query, but where a rate is missing (the SQL way says which)
        expect(queries, what).toBe(0);
        const page = JSON.parse(bySql) as { rows: ConversionRecord[] };
        rows += page.rows.length;
        for (const row of page.rows) for (const fact of factsOf(row)) seen.add(fact);
      }
    } finally {
      await backend.close();
    }
    // the comparison saw rows of every kind, and the errors of missing rates (HUF has none)
    expect(rows).toBeGreaterThan(100);
    expect(errors).toBeGreaterThan(0);
    expect([...seen].sort()).toEqual([...FACTS].sort());
  });

  it('the order look-up of any date (GET /v1/conversions/orders/{orderId}) gives the same answer, for every id and an unknown one', async () => {
    const { dir, ids } = randomShop(4);
    const { backend } = await served(dir);
    try {
      for (const id of [...ids, 'nope']) {
        const { indexed, bySql } = await bothWays(backend, () => backend.findOrder(id));
        expect(indexed, id).toBe(bySql);
      }
    } finally {
      await backend.close();
    }
  });

  it('a server loads the index in the background on the first look-up that could use it, which takes the SQL way; retiring the data (a reload, a stop) stops a load under way', async () => {
    const { dir, ids } = randomShop(6);
    const { dataset, backend } = await served(dir, { indexed: false });
    try {
      expect(backend.scope.orderIndex).toBeUndefined();
      let asked = 0;
      const want = backend.scope.wantOrderIndex!;
      backend.scope.wantOrderIndex = () => {
        asked++;
        want();
      };
      const query = itemsQuery('2024-01-01', '2024-03-31', { orderId: ids[3]! });
      await backend.items({ ...query, timeZone: 'Europe/Prague' });
      await backend.items({ ...query, country: ['SK'] });
      expect(asked, 'a look-up the index could not answer asks for nothing').toBe(0);
      const first = await outcome(() => backend.items(query));
      expect(asked).toBe(1);
      await dataset.indexOrders(backend.scope);
      expect(backend.scope.orderIndex).toBeDefined();
      const queries = await queriesRun(backend, async () => expect(await outcome(() => backend.items(query))).toBe(first));
      expect(queries).toBe(0);
      expect(asked).toBe(1);
    } finally {
      await backend.close();
    }
    const other = await ServedDataset.load(dir, { poolSize: 1 });
    const lent = await other.backend('default', { pooled: false });
    const { scope } = lent;
    await lent.close();
    const loading = other.indexOrders(scope);
    await other.retire();
    await loading;
    expect(scope.orderIndex, 'a load under way when the data is retired keeps nothing').toBeUndefined();
    expect(other.indexOrders(scope), 'a retired dataset loads nothing more').toBe(loading);
  });

  it('a load stops between its statements and chunks once asked, keeping nothing', async () => {
    const { dir } = randomShop(8);
    const { backend } = await served(dir, { indexed: false });
    try {
      const conv = backend.scope.relation('conv');
      expect(await OrderIndex.load(backend.scope.db, conv, () => false)).toBeDefined();
      // asked to stop after a few checks: the temporary tables made, before the rows are read
      for (const after of [0, 2, 5]) {
        let checks = 0;
        expect(await OrderIndex.load(backend.scope.db, conv, () => checks++ >= after), `stopped after ${after} checks`).toBeUndefined();
        expect(checks).toBeGreaterThan(after);
      }
      // and its temporary tables are dropped
      const left = await backend.scope.db.all(sql`SELECT table_name FROM duckdb_tables() WHERE temporary AND table_name LIKE 'convx_order_index_%'`);
      expect(left).toEqual([]);
    } finally {
      await backend.close();
    }
  });

  it("with orderIndex 'eager' (convx serve of one dataset) the index is read right after the load, without a look-up", async () => {
    const { dir } = randomShop(7);
    const dataset = await ServedDataset.load(dir, { poolSize: 1, orderIndex: 'eager' });
    opened.push(dataset);
    const backend = await dataset.backend('default', { pooled: false });
    try {
      await vi.waitFor(() => expect(backend.scope.orderIndex).toBeDefined(), { timeout: 20_000, interval: 20 });
    } finally {
      await backend.close();
    }
  });

  it('a look-up with a time zone or another filter takes the SQL way; what a plugin file\'s memory budget counts holds the index\'s bytes', async () => {
    const { dir, ids } = randomShop(5);
    const { dataset, backend } = await served(dir);
    try {
      const base = itemsQuery('2024-01-01', '2024-03-31', { orderId: ids[12]! });
      for (const query of [{ ...base, timeZone: 'Europe/Prague' }, { ...base, country: ['CZ'] }, { ...base, sourceType: 'campaign' as const }, { ...base, orderId: undefined }]) {
        const { indexed, bySql, queries } = await bothWays(backend, () => backend.items(query));
        expect(indexed).toBe(bySql);
        expect(queries).toBeGreaterThan(0);
      }
      const index = backend.scope.orderIndex!;
      expect(index.bytes).toBeGreaterThan(60 * 40);
      const withIndex = await dataset.memoryUsage();
      backend.scope.orderIndex = undefined;
      const without = await dataset.memoryUsage();
      backend.scope.orderIndex = index;
      expect(withIndex - without).toBe(index.bytes);
    } finally {
      await backend.close();
    }
  });

  it('an order of several rows in one run: its refunds at one instant are ordered by row, its other sale row does not count', async () => {
    const dir = shop({
      orders: [
        { id: 'o1', contact: 'c1', at: '2024-03-02T10:00:00.5Z', net: 100, gross: 121 },
        { id: 'o1', contact: 'c1', at: '2024-03-03T10:00:00Z', net: 50, gross: 60 },
        { id: 'o1', contact: 'c1', at: '2024-03-09T10:00:00Z', net: -10, gross: -12.1, refund: true, status: 'refunded' },
        { id: 'o1', contact: 'c1', at: '2024-03-09T10:00:00Z', net: -20, gross: -24.2, refund: true, status: 'refunded' },
        { id: 'o0', contact: 'c1', at: '2024-03-04T10:00:00Z', net: 1, gross: 1 },
        { id: 'o2', contact: 'c1', at: '2024-03-05T10:00:00Z', net: 1, gross: 1 },
      ],
      touches: [{ contact: 'c1', at: '2024-03-01T10:00:00Z', source: 'k1' }],
    });
    const { backend } = await served(dir);
    try {
      const page = await backend.items(itemsQuery('2024-03-01', '2024-03-31', { orderId: 'o1', sort: [{ field: 'datetime', descending: true }] }));
      expect(page.rows.map((row) => [row.datetime, row.conversionsAmount, row.isRefund])).toEqual([
        ['2024-03-09T10:00:00.000Z', -12.1, true],
        ['2024-03-09T10:00:00.000Z', -24.2, true],
        ['2024-03-02T10:00:00.500Z', 121, false],
      ]);
      expect(page.rows[2]!.attribution.hoursToConversion).toBe(24);
      expect(page.paging.totalCount).toBe(3);
      expect((await backend.items(itemsQuery('2024-03-01', '2024-03-08', { orderId: 'o1' }))).paging.totalCount).toBe(1);
    } finally {
      await backend.close();
    }
  });

  it('order ids that DuckDB would sort otherwise than by their bytes (a collation), a contact or a source of two rows are not held: the binary search would miss, no key would name one', async () => {
    const { dir } = randomShop(6);
    const { backend } = await served(dir);
    try {
      const conv = backend.scope.relation('conv');
      expect(await OrderIndex.load(backend.scope.db, conv)).toBeDefined();
      expect(await OrderIndex.load(backend.scope.db, sql`(SELECT * REPLACE (order_id COLLATE nocase AS order_id) FROM ${conv})`)).toBeUndefined();
      // a contact id of two contact rows, a source of two source rows: no key names one
      expect(await OrderIndex.load(backend.scope.db, sql`(SELECT * REPLACE (CASE WHEN row_id % 2 = 0 THEN 'Eve' ELSE first_name END AS first_name) FROM ${conv})`)).toBeUndefined();
      expect(await OrderIndex.load(backend.scope.db, sql`(SELECT * REPLACE (CASE WHEN row_id % 2 = 0 THEN 'Other' ELSE name END AS name) FROM ${conv})`)).toBeUndefined();
    } finally {
      await backend.close();
    }
  });

  it('a time before 1970 keeps the SQL way, with the same answers', async () => {
    const dir = shop({
      orders: [
        { id: 'o1', contact: 'c1', at: '1969-12-31T23:00:00Z' },
        { id: 'o2', contact: 'c1', at: '2024-03-03T10:00:00Z' },
      ],
      touches: [
        { contact: 'c1', at: '1969-12-30T10:00:00Z', source: 'k1' },
        { contact: 'c1', at: '2024-03-01T10:00:00Z', source: 'k1' },
      ],
    });
    const { backend } = await served(dir);
    try {
      expect(backend.scope.orderIndex).toBeUndefined();
      expect(await OrderIndex.load(backend.scope.db, backend.scope.relation('conv'))).toBeUndefined();
      const page = await backend.items(itemsQuery(EVERY_DATE.dateFrom, EVERY_DATE.dateTo, { orderId: 'o1' }));
      expect(page.rows.map((row) => row.datetime)).toEqual(['1969-12-31T23:00:00.000Z']);
    } finally {
      await backend.close();
    }
  });
});
