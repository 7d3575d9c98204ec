/** The reporting rules of docs/reporting.md, one at a time, each on a dataset built here. */
import { describe, expect, it } from 'vitest';
import { DataError, UsageError } from '../src/errors.js';
import { ITEMS_SORT_FIELDS } from '../src/model/query.js';
import { ITEMS_TIE_BREAK, sortRows } from '../src/local/queries.js';
import { FEW_ROWS } from '../src/local/backend.js';
import type { LocalBackend } from '../src/local/backend.js';
import { csv, dataset, itemsQuery, reportQuery, sharedBackend, shop, twoPluginFiles, withBackend } from './helpers.js';
import { keptBackends } from './kept-backends.js';

/** A dataset asked more than once opened once, by its first question, and lent to the next (kept-backends.ts). */
const kept = keptBackends();
async function onKept<T>(dir: string, work: (backend: LocalBackend) => Promise<T>): Promise<T> {
  const backend = await kept.backend(dir);
  try {
    return await work(backend);
  } finally {
    await backend.close();
  }
}

const click = (at: string, source = 'k1', extra: { contact?: string; type?: string } = {}) => ({
  at,
  source,
  ...extra,
});

describe('4.1 period: inclusive UTC dates on each transaction’s own datetime', () => {
  const dir = shop({
    touches: [click('2024-03-09T00:00:00Z')],
    orders: [
      { id: 'last-ms', at: '2024-03-31T23:59:59.999Z' },
      { id: 'next-day', at: '2024-04-01T00:00:00.000Z' },
      { id: 'first-ms', at: '2024-03-10T00:00:00.000Z' },
      { id: 'offset', at: '2024-04-01T01:30:00+02:00' }, // 2024-03-31T23:30Z
      { id: 'before', at: '2024-03-09T23:59:59.999Z' },
    ],
  });

  it('takes the first and last millisecond of the range and nothing outside it', async () => {
    const ids = await onKept(dir, async (b) =>
      (await b.items(itemsQuery('2024-03-10', '2024-03-31'))).rows.map((r) => r.orderId),
    );
    expect(ids.sort()).toEqual(['first-ms', 'last-ms', 'offset']);
  });

  it('converts offsets to UTC before taking the date', async () => {
    const rows = await onKept(dir, async (b) => (await b.items(itemsQuery('2024-03-31', '2024-03-31'))).rows);
    expect(rows.find((r) => r.orderId === 'offset')?.datetime).toBe('2024-03-31T23:30:00.000Z');
  });
});

describe('4.2 and 4.7 refunds: reported negative, on their own date, never reducing conversions', () => {
  const dir = shop({
    touches: [click('2024-02-01T00:00:00Z')],
    orders: [
      { id: 'o1', at: '2024-02-10T10:00:00Z', net: '100.00', gross: '121.00' },
      { id: 'o1', at: '2024-03-05T10:00:00Z', net: '40.00', gross: '48.40', refund: true },
      { id: 'o1', at: '2024-03-06T10:00:00Z', net: '-10.00', gross: '-12.10', refund: true },
    ],
  });

  it('a March refund of an order attributed in February shows in March, with the February attribution', async () => {
    const march = await onKept(dir, (b) => b.report(reportQuery('2024-03-01', '2024-03-31')));
    expect(march.rows).toHaveLength(1);
    const row = march.rows[0]!;
    expect(row.id).toBe('k1');
    expect(row.conversionsNumber).toBe(0);
    expect(row.conversionsAmountWTax).toBe(0);
    expect(row.refundsNumber).toBe(2);
    expect(row.refundsAmountWoTax).toBe(-50);
    expect(row.refundsAmountWTax).toBe(-60.5);
    expect(row.grossConversionsAmountWTax).toBe(-60.5);
    expect(row.firstConversionAt).toBeNull();
  });

  it('February has the order and no refunds', async () => {
    const feb = await onKept(dir, (b) => b.report(reportQuery('2024-02-01', '2024-02-29')));
    expect(feb.rows[0]).toMatchObject({ conversionsNumber: 1, conversionsAmountWTax: 121, refundsNumber: 0 });
  });

  it('refund items are negative whatever sign the file uses', async () => {
    const items = await onKept(dir, async (b) => (await b.items(itemsQuery('2024-02-01', '2024-03-31'))).rows);
    expect(items.map((i) => [i.isRefund, i.conversionsAmount])).toEqual([
      [false, 121],
      [true, -48.4],
      [true, -12.1],
    ]);
    expect(items[1]!.attribution.datetime).toBe('2024-02-01T00:00:00.000Z');
  });

  it('over both months, gross = conversions + refunds field by field', async () => {
    const [row] = (await onKept(dir, (b) => b.report(reportQuery('2024-02-01', '2024-03-31')))).rows;
    expect(row!.conversionsAmountWTax).toBe(121);
    expect(row!.grossConversionsAmountWTax).toBe(60.5);
    expect(row!.grossConversionsAmountWoTax).toBe(50);
    expect(row!.grossConversionsNumber).toBe(3);
  });
});

describe('4.3 cancelled orders and their refunds count nowhere', () => {
  const statuses = ['cancelled', 'CANCELED', 'Storno', 'void', ' voided ', 'completed', 'refunded'];
  const dir = shop({
    touches: [click('2024-03-01T00:00:00Z')],
    orders: [
      ...statuses.map((status, i) => ({ id: `o${i}`, at: '2024-03-02T10:00:00Z', status })),
      { id: 'o0', at: '2024-03-03T10:00:00Z', refund: true, net: 10, gross: 12, status: 'refunded' },
    ],
  });

  it('matches the statuses case-insensitively and drops the cancelled order’s refund', async () => {
    const items = await withBackend(dir, async (b) => (await b.items(itemsQuery('2024-03-01', '2024-03-31'))).rows);
    expect(items.map((i) => i.orderId).sort()).toEqual(['o5', 'o6']);
    expect(items.every((i) => !i.isRefund)).toBe(true);
  });
});

describe('4.4 zero net revenue is not a conversion', () => {
  const dir = shop({
    touches: [click('2024-03-01T00:00:00Z')],
    orders: [
      { id: 'zero', at: '2024-03-02T10:00:00Z', net: '0.00', gross: '5.00' },
      { id: 'zero', at: '2024-03-04T10:00:00Z', net: '1.00', gross: '1.21', refund: true },
      { id: 'tiny', at: '2024-03-02T11:00:00Z', net: '0.01', gross: '0.01' },
      { id: 'tiny', at: '2024-03-05T11:00:00Z', net: '0.00', gross: '0.00', refund: true },
    ],
  });

  it('keeps 0.01 and drops 0.00, and a refund of a zero order, and a zero refund', async () => {
    const items = await withBackend(dir, async (b) => (await b.items(itemsQuery('2024-03-01', '2024-03-31'))).rows);
    expect(items.map((i) => [i.orderId, i.isRefund])).toEqual([['tiny', false]]);
  });
});

describe('4.5 attribution: last click within 30 days, deterministic ties', () => {
  it('counts a click exactly 30 days before the order, not one a millisecond earlier', async () => {
    const dir = shop({
      touches: [
        click('2024-02-01T12:00:00.000Z', 'k-exact', { contact: 'a' }),
        click('2024-02-01T11:59:59.999Z', 'k-late', { contact: 'b' }),
      ],
      orders: [
        { id: 'exact', contact: 'a', at: '2024-03-02T12:00:00.000Z' },
        { id: 'too-late', contact: 'b', at: '2024-03-02T12:00:00.000Z' },
      ],
    });
    const items = await onKept(dir, async (b) => (await b.items(itemsQuery('2024-03-01', '2024-03-31'))).rows);
    expect(items.map((i) => [i.orderId, i.source.id, i.attribution.hoursToConversion])).toEqual([['exact', 'k-exact', 720]]);
    const why = await onKept(dir, (b) => b.diagnoseOrder('too-late'));
    expect(why.reasons.join()).toMatch(/outside the 30-day window/);
  });

  it('takes the latest click at or before the order; opens and later clicks do not count', async () => {
    const dir = shop({
      touches: [
        click('2024-03-01T10:00:00Z', 'k-old'),
        click('2024-03-05T10:00:00Z', 'k-last'),
        { at: '2024-03-06T10:00:00Z', touch: 'open', source: 'k-open' },
        click('2024-03-06T10:00:00.001Z', 'k-after'),
        click('2024-03-06T10:00:00Z', 'k-same-instant', { contact: 'other' }),
      ],
      orders: [{ id: 'o', at: '2024-03-06T10:00:00Z' }],
    });
    const [item] = (await withBackend(dir, (b) => b.items(itemsQuery('2024-03-01', '2024-03-31')))).rows;
    expect(item!.source.id).toBe('k-last');
    expect(item!.attribution).toEqual({
      touch: 'click',
      datetime: '2024-03-05T10:00:00.000Z',
      hoursToConversion: 24,
      model: 'last-click',
      windowDays: 30,
    });
  });

  it('a click at the very instant of the order counts', async () => {
    const dir = shop({ touches: [click('2024-03-06T10:00:00Z', 'k-now')], orders: [{ id: 'o', at: '2024-03-06T10:00:00Z' }] });
    const [item] = (await withBackend(dir, (b) => b.items(itemsQuery('2024-03-01', '2024-03-31')))).rows;
    expect(item!.source.id).toBe('k-now');
    expect(item!.attribution.hoursToConversion).toBe(0);
  });

  it('two clicks at the same instant go to the greatest (source_type, source_id), whatever the file order', async () => {
    for (const order of [0, 1]) {
      const clicks = [
        click('2024-03-05T10:00:00Z', 'z-campaign', { type: 'campaign' }),
        click('2024-03-05T10:00:00Z', 'a-flow', { type: 'smartflow' }),
        click('2024-03-05T10:00:00Z', 'b-flow', { type: 'smartflow' }),
      ];
      const dir = shop({ touches: order ? clicks.reverse() : clicks, orders: [{ id: 'o', at: '2024-03-06T10:00:00Z' }] });
      const [item] = (await withBackend(dir, (b) => b.items(itemsQuery('2024-03-01', '2024-03-31')))).rows;
      expect([item!.source.type, item!.source.id]).toEqual(['smartflow', 'b-flow']);
    }
  });

  it('an order without a click is no conversion, and diagnose says so', async () => {
    const dir = shop({ touches: [click('2024-03-05T10:00:00Z', 'k', { contact: 'x' })], orders: [{ id: 'o', at: '2024-03-06T10:00:00Z' }] });
    const items = (await onKept(dir, (b) => b.items(itemsQuery('2024-03-01', '2024-03-31')))).rows;
    expect(items).toEqual([]);
    const why = await onKept(dir, (b) => b.diagnoseOrder('o'));
    expect(why.found).toBe(true);
    expect(why.reasons.join()).toMatch(/no click at or before the order/);
  });

  it('where one order_id has several order rows the earliest counts', async () => {
    const dir = shop({
      touches: [click('2024-03-01T00:00:00Z')],
      orders: [
        { id: 'dup', at: '2024-03-09T10:00:00Z', net: 50, gross: 60 },
        { id: 'dup', at: '2024-03-08T10:00:00Z', net: 70, gross: 80 },
      ],
    });
    const items = (await withBackend(dir, (b) => b.items(itemsQuery('2024-03-01', '2024-03-31')))).rows;
    expect(items.map((i) => [i.datetime, i.conversionsAmount])).toEqual([['2024-03-08T10:00:00.000Z', 80]]);
  });

  it('the counting (earliest) row decides whether an order is cancelled or of zero net revenue, never a later row of it, for reports and records alike', async () => {
    const dir = shop({
      touches: [click('2024-03-01T00:00:00Z')],
      orders: [
        // first row cancelled, a later row completed: no conversion, and its refund not reported
        { id: 'first-cancelled', at: '2024-03-05T10:00:00Z', status: 'cancelled' },
        { id: 'first-cancelled', at: '2024-03-06T10:00:00Z', status: 'completed' },
        { id: 'first-cancelled', at: '2024-03-07T10:00:00Z', refund: true, net: 10, gross: 12 },
        // first row completed, a later row cancelled: a conversion of the first row
        { id: 'later-cancelled', at: '2024-03-05T11:00:00Z', status: 'completed', net: 40, gross: 48.4 },
        { id: 'later-cancelled', at: '2024-03-06T11:00:00Z', status: 'cancelled', net: 30, gross: 36.3 },
        // first row of zero net revenue, a later row with some: no conversion
        { id: 'first-zero', at: '2024-03-05T12:00:00Z', net: '0.00', gross: '0.00' },
        { id: 'first-zero', at: '2024-03-06T12:00:00Z', net: 20, gross: 24.2 },
      ],
    });
    const [items, report] = await withBackend(dir, async (b) => [
      (await b.items(itemsQuery('2024-03-01', '2024-03-31'))).rows,
      (await b.report(reportQuery('2024-03-01', '2024-03-31'))).rows,
    ] as const);
    expect(items.map((i) => [i.orderId, i.datetime, i.conversionsAmount, i.isRefund])).toEqual([['later-cancelled', '2024-03-05T11:00:00.000Z', 48.4, false]]);
    // a report alone (conv of figures) counts the same
    const alone = await withBackend(dir, async (b) => (await b.report(reportQuery('2024-03-01', '2024-03-31'))).rows);
    for (const rows of [report, alone]) {
      expect(rows.map((r) => [r.conversionsNumber, r.conversionsAmountWTax, r.refundsNumber])).toEqual([[1, 48.4, 0]]);
    }
  });

  it('compares times to the millisecond: digits past it are dropped as a time is read, so a click in the order\'s millisecond is at its instant', async () => {
    const dir = shop({
      touches: [
        click('2024-03-10 00:00:00.000400 UTC', 'k-1', { contact: 'c1' }),
        click('2024-03-10 00:00:00.000200 UTC', 'k-9', { contact: 'c2' }),
        click('2024-03-10 00:00:00.000400 UTC', 'k-1', { contact: 'c2' }),
        click('2024-03-01 00:00:00 UTC', 'k-1', { contact: 'c3' }),
      ],
      orders: [
        // 0.2 ms before its click, in the same millisecond: the click is at the order's instant
        { id: 'o1', contact: 'c1', at: '2024-03-10 00:00:00.000200 UTC' },
        // two clicks of one millisecond are at one instant: the greatest source wins, not the later microsecond
        { id: 'o2', contact: 'c2', at: '2024-03-15 00:00:00 UTC' },
        // exactly 30 days after its click, to the millisecond
        { id: 'o3', contact: 'c3', at: '2024-03-31 00:00:00.000500 UTC' },
      ],
    });
    const items = (await onKept(dir, (b) => b.items(itemsQuery('2024-03-01', '2024-03-31')))).rows;
    expect(items.map((i) => [i.orderId, i.datetime, i.source.id, i.attribution.datetime]).sort()).toEqual([
      ['o1', '2024-03-10T00:00:00.000Z', 'k-1', '2024-03-10T00:00:00.000Z'],
      ['o2', '2024-03-15T00:00:00.000Z', 'k-9', '2024-03-10T00:00:00.000Z'],
      ['o3', '2024-03-31T00:00:00.000Z', 'k-1', '2024-03-01T00:00:00.000Z'],
    ]);
  });

  it('rows of an order id in one millisecond are at one instant: the first in file order counts, whatever their microseconds', async () => {
    const dir = shop({
      touches: [click('2024-03-01T00:00:00Z')],
      orders: [
        { id: 'dup', at: '2024-03-08 10:00:00.000900', net: 50 },
        { id: 'dup', at: '2024-03-08 10:00:00.000100', net: 70 },
      ],
    });
    const items = (await onKept(dir, (b) => b.items(itemsQuery('2024-03-01', '2024-03-31')))).rows;
    expect(items.map((i) => [i.datetime, i.conversionsAmount])).toEqual([['2024-03-08T10:00:00.000Z', 50]]);
  });

  it('a refund takes its order\'s attribution when the order lies more than 30 days before the period, to the millisecond', async () => {
    // The order's microseconds once kept a click of its own millisecond, after its time in microseconds, out of the
    // clicks a March report read: the refund went to the earlier click (k-2) in March, to k-1 over January to March.
    const dir = shop({
      touches: [click('2024-01-09T10:00:00Z', 'k-2'), click('2024-01-10 10:00:00.000500 UTC', 'k-1')],
      orders: [
        { id: 'o1', at: '2024-01-10 10:00:00.000900 UTC', net: 10, gross: 12 },
        { id: 'o1', at: '2024-03-05T10:00:00Z', net: 10, gross: 12, refund: true },
      ],
    });
    const march = (await onKept(dir, (b) => b.report(reportQuery('2024-03-01', '2024-03-31')))).rows;
    expect(march.map((r) => [r.source.id, r.refundsNumber, r.refundsAmountWTax])).toEqual([['k-1', 1, -12]]);
    const items = (await onKept(dir, (b) => b.items(itemsQuery('2024-01-01', '2024-03-31')))).rows;
    expect(items.map((i) => [i.orderId, i.isRefund, i.source.id]).sort()).toEqual([
      ['o1', false, 'k-1'],
      ['o1', true, 'k-1'],
    ]);
  });

  it('a refund whose order is not a conversion is not reported', async () => {
    const dir = shop({
      touches: [click('2024-01-01T00:00:00Z')],
      orders: [
        { id: 'unattributed', at: '2024-03-01T10:00:00Z' },
        { id: 'unattributed', at: '2024-03-05T10:00:00Z', refund: true },
        { id: 'orphan', at: '2024-03-05T10:00:00Z', refund: true },
      ],
    });
    const items = (await withBackend(dir, (b) => b.items(itemsQuery('2024-03-01', '2024-03-31')))).rows;
    expect(items).toEqual([]);
  });
});

describe('4.6 FX: the rate of the transaction’s own UTC day, carried forward at most 7 days', () => {
  const fx: [string, string, string][] = [
    ['2024-03-01', 'CZK', '0.0400000000'], // Friday
    ['2024-03-04', 'CZK', '0.0500000000'], // Monday
  ];

  it('converts a Saturday order at Friday’s rate, and a Monday order at Monday’s', async () => {
    const dir = shop({
      touches: [click('2024-03-01T00:00:00Z')],
      fx,
      orders: [
        { id: 'sat', at: '2024-03-02T23:59:59Z', currency: 'CZK', net: 1000, gross: 1210 },
        { id: 'mon', at: '2024-03-04T00:00:00Z', currency: 'CZK', net: 1000, gross: 1210 },
        { id: 'eur', at: '2024-03-04T00:00:01Z', currency: 'EUR', net: 10, gross: 12.1 },
      ],
    });
    const items = (await withBackend(dir, (b) => b.items(itemsQuery('2024-03-01', '2024-03-31')))).rows;
    expect(items.map((i) => [i.orderId, i.conversionsReferenceAmount, i.referenceCurrency])).toEqual([
      ['sat', 48.4, 'EUR'],
      ['mon', 60.5, 'EUR'],
      ['eur', 12.1, 'EUR'],
    ]);
  });

  it('uses a rate 7 days old, and fails on a gap of 8 days naming the currency, the day and the count', async () => {
    const dir = shop({
      touches: [click('2024-03-01T00:00:00Z')],
      fx,
      orders: [
        { id: 'seven', at: '2024-03-11T10:00:00Z', currency: 'CZK', net: 100, gross: 100 },
        { id: 'eight-a', at: '2024-03-12T10:00:00Z', currency: 'CZK', net: 100, gross: 100 },
        { id: 'eight-b', at: '2024-03-12T11:00:00Z', currency: 'CZK', net: 100, gross: 100 },
      ],
    });
    await withBackend(dir, async (b) => {
      const ok = await b.items(itemsQuery('2024-03-11', '2024-03-11'));
      expect(ok.rows[0]!.conversionsReferenceAmount).toBe(5);
      const error = await b.items(itemsQuery('2024-03-01', '2024-03-31')).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(DataError);
      expect((error as Error).message).toMatch(/CZK on 2024-03-12/);
      expect((error as Error).message).toMatch(/2 transactions need it/);
      expect((error as Error).message).toMatch(/2024-03-04, more than 7 days back/);
      await expect(b.report(reportQuery('2024-03-12', '2024-03-12'))).rejects.toThrow(/CZK on 2024-03-12/);
    });
  });

  it('names a currency fx holds no rate of at all in one line, its days and transactions counted; other days one line each, 20 at most, then how many more', async () => {
    // USD: no rate at all; CZK: 20 days of a gap, a transaction each (all within 30 days of a click).
    const days = Array.from({ length: 20 }, (_, i) => `2024-03-${String(12 + i).padStart(2, '0')}`);
    const dir = shop({
      touches: [click('2024-03-01T00:00:00Z'), click('2024-03-10T00:00:00Z')],
      fx,
      orders: [
        ...['2024-03-05', '2024-03-06', '2024-03-06'].map((d, i) => ({ id: `usd-${i}`, at: `${d}T10:00:00Z`, currency: 'USD', net: 1, gross: 1 })),
        ...days.map((d) => ({ id: `czk-${d}`, at: `${d}T10:00:00Z`, currency: 'CZK', net: 100, gross: 100 })),
      ],
    });
    const error = await withBackend(dir, (b) => b.report(reportQuery('2024-03-01', '2024-03-31'))).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DataError);
    const lines = (error as DataError).message.split('\n');
    expect(lines[0]).toBe('cannot convert to EUR: exchange rates are missing');
    expect(lines[1]).toBe('  USD: fx has no rate of USD to EUR at all; 3 transactions on 2 days from 2024-03-05 to 2024-03-06 need one');
    // 20 lines in all: the USD line and 19 of CZK's 20 days, then the one more.
    expect(lines.slice(2, -1)).toHaveLength(19);
    expect(lines[2]).toBe('  CZK on 2024-03-12: no rate in fx for that day or the 7 days before (the latest earlier rate is from 2024-03-04, more than 7 days back); 1 transaction needs it');
    expect(lines.at(-2)).toMatch(/^ {2}CZK on 2024-03-30: /);
    expect(lines.at(-1)).toBe('  … and 1 more day (1 transaction)');
  });

  it('counts a currency rated only to another reference currency as one without a rate; a single day by its date; the days past 20 by their transactions', async () => {
    // USD: rates to CZK only (not to EUR), one order on one day; CZK: 20 days of a gap, two transactions each.
    const days = Array.from({ length: 20 }, (_, i) => `2024-03-${String(12 + i).padStart(2, '0')}`);
    const dir = shop({
      touches: [click('2024-03-01T00:00:00Z'), click('2024-03-10T00:00:00Z')],
      fx: [...fx, ['2024-03-05', 'USD', '23', 'CZK']],
      orders: [
        { id: 'usd', at: '2024-03-05T10:00:00Z', currency: 'USD', net: 1, gross: 1 },
        ...days.flatMap((d) => [0, 1].map((k) => ({ id: `czk-${d}-${k}`, at: `${d}T1${k}:00:00Z`, currency: 'CZK', net: 100, gross: 100 }))),
      ],
    });
    const error = await withBackend(dir, (b) => b.report(reportQuery('2024-03-01', '2024-03-31')), { referenceCurrency: 'EUR' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DataError);
    const lines = (error as DataError).message.split('\n');
    expect(lines[1]).toBe('  USD: fx has no rate of USD to EUR at all; 1 transaction on 2024-03-05 needs one');
    expect(lines.slice(2, -1)).toHaveLength(19);
    expect(lines[2]).toMatch(/^ {2}CZK on 2024-03-12: .*; 2 transactions need it$/);
    expect(lines.at(-1)).toBe('  … and 1 more day (2 transactions)');
  });

  it('without an fx table, says so per currency; more than 20 currencies without a rate are counted past the 20th', async () => {
    const codes = Array.from({ length: 22 }, (_, i) => `X${String.fromCharCode(65 + Math.floor(i / 26))}${String.fromCharCode(65 + (i % 26))}`);
    const dir = shop({
      touches: [click('2024-03-01T00:00:00Z')],
      orders: codes.map((currency, i) => ({ id: `o-${i}`, at: `2024-03-${String(2 + (i % 20)).padStart(2, '0')}T10:00:00Z`, currency, net: 1, gross: 1 })),
    });
    const error = await withBackend(dir, (b) => b.report(reportQuery('2024-03-01', '2024-03-31')), { referenceCurrency: 'EUR' }).catch((e: unknown) => e);
    const lines = String((error as Error).message).split('\n');
    expect(lines, lines[0]).toHaveLength(22);
    expect(lines[1]).toBe('  XAA: the dataset has no fx table; 1 transaction on 2024-03-02 needs a rate to EUR');
    expect(lines.at(-1)).toBe('  … and 2 more currencies without a rate (2 transactions)');
  });

  it('rounds half away from zero per transaction, and sums the rounded amounts', async () => {
    // 3 x 0.125 EUR: round-then-sum = 3 x 0.13 = 0.39; sum-then-round would give 0.38.
    const dir = shop({
      touches: [click('2024-03-01T00:00:00Z')],
      fx: [['2024-03-01', 'CZK', '0.0050000000']],
      orders: ['a', 'b', 'c'].map((id) => ({ id, at: '2024-03-01T10:00:00Z', currency: 'CZK', net: 25, gross: 25 })),
    });
    const [row] = (await onKept(dir, (b) => b.report(reportQuery('2024-03-01', '2024-03-01')))).rows;
    expect(row!.conversionsAmountWTax).toBe(0.39);
    expect(row!.breakdown[0]!.conversionAmountWTaxReference).toBe(0.39);
    expect(row!.breakdown[0]!.conversionsAmountWTax).toBe(75);
    const items = (await onKept(dir, (b) => b.items(itemsQuery('2024-03-01', '2024-03-01')))).rows;
    expect(items.map((i) => i.conversionsReferenceAmount)).toEqual([0.13, 0.13, 0.13]);
  });

  it('rounds negative amounts away from zero too', async () => {
    const dir = shop({
      touches: [click('2024-03-01T00:00:00Z')],
      fx: [['2024-03-01', 'CZK', '0.0050000000']],
      orders: [
        { id: 'a', at: '2024-03-01T10:00:00Z', currency: 'CZK', net: 100, gross: 100 },
        { id: 'a', at: '2024-03-01T11:00:00Z', currency: 'CZK', net: 25, gross: 25, refund: true },
      ],
    });
    const items = (await withBackend(dir, (b) => b.items(itemsQuery('2024-03-01', '2024-03-01')))).rows;
    expect(items[1]!.conversionsReferenceAmount).toBe(-0.13);
  });

  it('converts large amounts at large rates exactly', async () => {
    const dir = shop({
      touches: [click('2024-03-01T00:00:00Z')],
      fx: [['2024-03-01', 'EUR', '25.1594090000', 'CZK']],
      orders: [
        { id: 'big', at: '2024-03-01T10:00:00Z', currency: 'EUR', net: '99999999.9999', gross: '461.9300' },
        { id: 'czk', at: '2024-03-01T11:00:00Z', currency: 'CZK', net: '1', gross: '1' },
      ],
    });
    const [item] = (await onKept(dir, (b) => b.items(itemsQuery('2024-03-01', '2024-03-01', { orderId: 'big' })))).rows;
    expect(item!.conversionsReferenceAmount).toBe(11621.89); // 461.93 x 25.159409 = 11621.8857…
    const [row] = (await onKept(dir, (b) => b.report(reportQuery('2024-03-01', '2024-03-01')))).rows;
    expect(row!.conversionsAmountWoTax).toBe(2515940901); // 2515940899.9974… rounds to …900.00, plus 1 CZK (the reference) from the other order
  });

  it('rounds ties away from zero on both sides of 9,000 and 10,000 (the 64-bit and the 128-bit product)', async () => {
    // amount x rate is computed in 64 bits where the product is surely under 9,000, in 128 bits
    // elsewhere (DECIMAL(18,14) would overflow from 10,000): both must round the same way. The ties
    // 8999.985 and 9000.005 would round down to even.
    const amounts = ['17999.9700', '17999.9900', '18000.0100', '19999.9990', '20000.0010', '-17999.9900'];
    const dir = shop({
      touches: [click('2024-03-01T00:00:00Z')],
      fx: [['2024-03-01', 'CZK', '0.5000000000']],
      orders: amounts.map((amount, i) => ({ id: `o${i}`, at: `2024-03-01T1${i}:00:00Z`, currency: 'CZK', net: amount, gross: amount })),
    });
    const items = (await withBackend(dir, (b) => b.items(itemsQuery('2024-03-01', '2024-03-01', { sort: [{ field: 'datetime', descending: false }] })))).rows;
    expect(items.map((i) => i.conversionsReferenceAmount)).toEqual([8999.99, 9000, 9000.01, 10000, 10000, -9000]);
  });

  it('matches country and currency codes whatever their case in the data', async () => {
    const dir = shop({
      touches: [click('2024-03-01T00:00:00Z')],
      orders: [
        { id: 'lower', at: '2024-03-01T10:00:00Z', country: 'cz' },
        { id: 'upper', at: '2024-03-01T11:00:00Z', country: 'CZ' },
        { id: 'other', at: '2024-03-01T12:00:00Z', country: 'sk' },
      ],
    });
    const items = (await onKept(dir, (b) => b.items(itemsQuery('2024-03-01', '2024-03-01', { country: ['CZ'] })))).rows;
    expect(items.map((i) => [i.orderId, i.country]).sort()).toEqual([['lower', 'cz'], ['upper', 'CZ']]);
    const [row] = (await onKept(dir, (b) => b.report({ ...reportQuery('2024-03-01', '2024-03-01'), country: ['SK'], currency: ['EUR'] }))).rows;
    expect(row!.conversionsNumber).toBe(1);
  });

  it('reads a currency code in any case, blanks around it or not, as that currency: converted, filtered and broken down as one', async () => {
    const dir = shop({
      touches: [click('2024-03-01T00:00:00Z')],
      orders: [
        { id: 'eur-lower', at: '2024-03-01T10:00:00Z', currency: 'eur', net: 10, gross: 10 },
        { id: 'eur', at: '2024-03-01T11:00:00Z', currency: 'EUR', net: 20, gross: 20 },
        { id: 'czk-blanks', at: '2024-03-01T12:00:00Z', currency: ' czk ', net: 250, gross: 250 },
      ],
      fx: [['2024-03-01', 'Czk', '0.04', 'eur']],
    });
    const items = (await onKept(dir, (b) => b.items(itemsQuery('2024-03-01', '2024-03-01')))).rows;
    expect(items.map((i) => [i.orderId, i.conversionsCurrency, i.conversionsReferenceAmount]).sort()).toEqual([
      ['czk-blanks', 'CZK', 10],
      ['eur', 'EUR', 20],
      ['eur-lower', 'EUR', 10],
    ]);
    const [row] = (await onKept(dir, (b) => b.report(reportQuery('2024-03-01', '2024-03-01')))).rows;
    expect([row!.referenceCurrency, row!.conversionsAmountWTax]).toEqual(['EUR', 40]);
    expect(row!.breakdown!.map((b) => [b.currency, b.conversionsNumber, b.conversionsAmountWTax])).toEqual([
      ['CZK', 1, 250],
      ['EUR', 2, 30],
    ]);
    const czk = (await onKept(dir, (b) => b.items(itemsQuery('2024-03-01', '2024-03-01', { currency: ['CZK'] })))).rows;
    expect(czk.map((i) => i.orderId)).toEqual(['czk-blanks']);
  });

  it('ignores rates to another reference currency', async () => {
    const dir = shop({
      touches: [click('2024-03-01T00:00:00Z')],
      fx: [
        ['2024-03-01', 'CZK', '0.04', 'EUR'],
        ['2024-03-01', 'CZK', '0.043', 'USD'],
      ],
      orders: [{ id: 'a', at: '2024-03-01T10:00:00Z', currency: 'CZK', net: 100, gross: 100 }],
      files: { 'plugins.csv': csv(['plugin_id', 'reference_currency'], [['p', 'USD']]) },
    });
    const [item] = (await withBackend(dir, (b) => b.items(itemsQuery('2024-03-01', '2024-03-01')))).rows;
    expect([item!.conversionsReferenceAmount, item!.referenceCurrency]).toEqual([4.3, 'USD']);
  });
});

describe('reference currency resolution (section 3)', () => {
  it('needs none when the orders table is empty: every answer is empty', async () => {
    const dir = dataset({
      'orders.csv': 'order_id,contact_id,datetime,currency,amount_wo_tax,amount_w_tax\n',
      'touches.csv': 'contact_id,datetime,touch,source_type,source_id\nc1,2024-03-01T00:00:00Z,click,campaign,k1\n',
    });
    const report = await onKept(dir, (b) => b.report(reportQuery('2024-01-01', '2024-12-31')));
    expect(report.paging.totalCount).toBe(0);
    const items = await onKept(dir, (b) => b.items(itemsQuery('2024-01-01', '2024-12-31')));
    expect(items.rows).toEqual([]);
  });

  const base = {
    touches: [click('2024-03-01T00:00:00Z')],
    orders: [
      { id: 'a', at: '2024-03-01T10:00:00Z', currency: 'EUR' },
      { id: 'b', at: '2024-03-01T10:00:00Z', currency: 'CZK' },
    ],
  };
  const fx: [string, string, string, string][] = [
    ['2024-03-01', 'CZK', '0.04', 'EUR'],
    ['2024-03-01', 'EUR', '25', 'CZK'],
  ];

  it('flag, then plugins, then a single fx reference, then a single order currency', async () => {
    const plugins = { 'plugins.csv': csv(['plugin_id', 'reference_currency'], [['p', 'CZK']]) };
    expect(await withBackend(shop({ ...base, fx, files: plugins }), async (b) => b.referenceCurrency)).toBe('CZK');
    expect(
      await withBackend(shop({ ...base, fx, files: plugins }), async (b) => b.referenceCurrency, { referenceCurrency: 'eur' }),
    ).toBe('EUR');
    expect(await withBackend(shop({ ...base, fx: [fx[0]!] }), async (b) => b.referenceCurrency)).toBe('EUR');
    const single = shop({ touches: base.touches, orders: [base.orders[0]!] });
    expect(await withBackend(single, async (b) => b.referenceCurrency)).toBe('EUR');
  });

  it('is a data error when nothing decides it', async () => {
    await expect(withBackend(shop(base), async () => undefined)).rejects.toThrow(/cannot tell the reference currency/);
    await expect(withBackend(shop({ ...base, fx }), async () => undefined)).rejects.toThrow(
      /fx.reference_currency holds CZK, EUR/,
    );
  });
});

describe('4.7 aggregate fields', () => {
  const dir = shop({
    touches: [
      click('2024-02-20T00:00:00Z', 'k1', { contact: 'a' }),
      click('2024-02-20T00:00:00Z', 'k1', { contact: 'b' }),
    ],
    sources: [['campaign', 'k1', 'Spring', null, null, null, null, null, '2024-01-15T08:00:00Z']],
    orders: [
      { id: '1', contact: 'a', at: '2024-03-01T10:00:00Z', net: '3.00', gross: '3.33' },
      { id: '2', contact: 'a', at: '2024-03-02T10:00:00Z', net: '3.00', gross: '3.34' },
      { id: '3', contact: 'b', at: '2024-03-03T10:00:00Z', net: '0.50', gross: '0.01' },
      { id: '3', contact: 'b', at: '2024-03-04T10:00:00Z', net: '0.50', gross: '0.01', refund: true },
    ],
  });

  it('computes every figure, averages rounded half away from zero', async () => {
    const [row] = (await withBackend(dir, (b) => b.report(reportQuery('2024-03-01', '2024-03-31')))).rows;
    expect(row).toMatchObject({
      id: 'k1',
      name: 'Spring',
      sourceStartedAt: '2024-01-15T08:00:00.000Z',
      firstConversionAt: '2024-03-01T10:00:00.000Z',
      lastConversionAt: '2024-03-03T10:00:00.000Z',
      conversionsAmountWoTax: 6.5,
      conversionsAmountWTax: 6.68,
      conversionsNumber: 3,
      referenceCurrency: 'EUR',
      uniqueContacts: 2,
      averageConversion: 2.23, // 6.68 / 3 = 2.2266…
      averageUniqueConversion: 3.34, // 6.68 / 2
      refundsAmountWoTax: -0.5,
      refundsAmountWTax: -0.01,
      refundsNumber: 1,
      grossConversionsAmountWoTax: 6,
      grossConversionsAmountWTax: 6.67,
      grossConversionsNumber: 4,
    });
  });

  it('rounds an average that ends in exactly 5 away from zero', async () => {
    const half = shop({
      touches: [click('2024-03-01T00:00:00Z')],
      orders: [
        { id: '1', at: '2024-03-01T10:00:00Z', net: 1, gross: '0.01' },
        { id: '2', at: '2024-03-01T11:00:00Z', net: 1, gross: '0.04' },
      ],
    });
    const [row] = (await withBackend(half, (b) => b.report(reportQuery('2024-03-01', '2024-03-01')))).rows;
    expect(row!.averageConversion).toBe(0.03); // 0.05 / 2 = 0.025
    expect(row!.breakdown[0]!.averageConversion).toBe(0.03);
  });

  it('rounds averages of amounts on either side of 10^11 alike (64-bit integers below, HUGEINT above)', async () => {
    const averageOf = async (gross: [string, string]) => {
      const dir = shop({
        touches: [click('2024-03-01T00:00:00Z')],
        orders: gross.map((g, i) => ({ id: String(i + 1), at: `2024-03-01T1${i}:00:00Z`, net: 1, gross: g })),
      });
      const [row] = (await withBackend(dir, (b) => b.report(reportQuery('2024-03-01', '2024-03-01')))).rows;
      return [row!.averageConversion, row!.averageUniqueConversion, row!.breakdown[0]!.averageConversion];
    };
    // 50000000000.01 / 2 = 25000000000.005, under 10^11
    expect(await averageOf(['49999999999.99', '0.02'])).toEqual([25000000000.01, 50000000000.01, 25000000000.01]);
    // 150000000000.09 / 2 = 75000000000.045, over 10^11
    expect(await averageOf(['150000000000.05', '0.04'])).toEqual([75000000000.05, 150000000000.09, 75000000000.05]);
    // -0.05 / 2 = -0.025: away from zero
    expect(await averageOf(['-0.01', '-0.04'])).toEqual([-0.03, -0.05, -0.03]);
  });

  it('falls back to the source’s earliest touch of any kind for sourceStartedAt', async () => {
    const noSources = shop({
      touches: [{ at: '2024-01-02T03:04:05.678Z', touch: 'open' }, click('2024-03-01T00:00:00Z')],
      orders: [{ id: '1', at: '2024-03-01T10:00:00Z' }],
    });
    const [row] = (await withBackend(noSources, (b) => b.report(reportQuery('2024-03-01', '2024-03-01')))).rows;
    expect(row!.sourceStartedAt).toBe('2024-01-02T03:04:05.678Z');
    expect(row!.name).toBe('k1');
  });

  it('gives one breakdown row per order currency with reference amounts adding up to the row', async () => {
    const multi = shop({
      touches: [click('2024-03-01T00:00:00Z')],
      fx: [['2024-03-01', 'CZK', '0.04']],
      orders: [
        { id: '1', at: '2024-03-01T10:00:00Z', currency: 'CZK', net: '1000', gross: '1210' },
        { id: '1', at: '2024-03-01T12:00:00Z', currency: 'CZK', net: '100', gross: '121', refund: true },
        { id: '2', at: '2024-03-01T11:00:00Z', currency: 'EUR', net: '10', gross: '12.10' },
      ],
    });
    const [row] = (await withBackend(multi, (b) => b.report(reportQuery('2024-03-01', '2024-03-01')))).rows;
    expect(row!.breakdown).toEqual([
      {
        currency: 'CZK',
        conversionsAmountWoTax: 1000,
        conversionsAmountWTax: 1210,
        conversionsNumber: 1,
        averageConversion: 1210,
        refundsAmountWoTax: -100,
        refundsAmountWTax: -121,
        refundsNumber: 1,
        grossConversionsAmountWoTax: 900,
        grossConversionsAmountWTax: 1089,
        grossConversionsNumber: 2,
        conversionAmountWoTaxReference: 40,
        conversionAmountWTaxReference: 48.4,
      },
      {
        currency: 'EUR',
        conversionsAmountWoTax: 10,
        conversionsAmountWTax: 12.1,
        conversionsNumber: 1,
        averageConversion: 12.1,
        refundsAmountWoTax: 0,
        refundsAmountWTax: 0,
        refundsNumber: 0,
        grossConversionsAmountWoTax: 10,
        grossConversionsAmountWTax: 12.1,
        grossConversionsNumber: 1,
        conversionAmountWoTaxReference: 10,
        conversionAmountWTaxReference: 12.1,
      },
    ]);
    expect(row!.conversionsAmountWTax).toBe(60.5);
    expect(row!.refundsAmountWTax).toBe(-4.84);
  });
});

describe('4.9 items and 4.10 identity and URLs', () => {
  const dir = shop({
    touches: [
      click('2024-03-01T00:00:00Z', 'k/1', { contact: 'c 1' }),
      click('2024-03-01T00:00:00Z', 'a1', { contact: 'c2', type: 'automation' }),
      click('2024-03-01T00:00:00Z', 'n1', { contact: 'c3', type: 'smartflow' }),
      click('2024-03-01T00:00:00Z', 'n2', { contact: 'c4', type: 'smartflow' }),
      click('2024-03-01T00:00:00Z', 'n3', { contact: 'c5', type: 'smartflow' }),
    ],
    sources: [
      ['automation', 'a1', 'Cart', 'camp-9', null, null, null, null, null],
      ['smartflow', 'n1', 'Node 1', null, 'sf1', 'Flow one', 'd1', 'First mail', null],
      ['smartflow', 'n2', null, null, 'sf1', null, null, null, null],
    ],
    files: {
      'contacts.csv': csv(
        ['contact_id', 'client_contact_id', 'first_name', 'surname', 'email'],
        [['c2', 'CL-2', 'Jana', 'Nováková', 'jana@example.com']],
      ),
    },
    orders: ['c 1', 'c2', 'c3', 'c4', 'c5'].map((contact, i) => ({
      id: `o${i}`,
      contact,
      at: `2024-03-02T0${i}:30:00Z`,
      country: i === 0 ? '' : 'SK',
    })),
  });

  it('fills every field of 2.1 to 2.3, with names from contacts and null when unknown', async () => {
    const items = (await withBackend(dir, (b) => b.items(itemsQuery('2024-03-01', '2024-03-31')))).rows;
    expect(items[1]).toEqual({
      contactId: 'c2',
      clientContactId: 'CL-2',
      datetime: '2024-03-02T01:30:00.000Z',
      orderId: 'o1',
      firstName: 'Jana',
      surname: 'Nováková',
      conversionsAmount: 121,
      conversionsCurrency: 'EUR',
      conversionsReferenceAmount: 121,
      referenceCurrency: 'EUR',
      country: 'SK',
      isRefund: false,
      attribution: { touch: 'click', datetime: '2024-03-01T00:00:00.000Z', hoursToConversion: 25.5, model: 'last-click', windowDays: 30 },
      source: {
        type: 'automation',
        id: 'a1',
        name: 'Cart',
        campaignId: 'camp-9',
        smartflowId: null,
        smartflowName: null,
        deliveryId: null,
        deliveryName: null,
        detailUrl: '/v1/campaigns/camp-9/conversions?sourceType=automation&sourceId=a1&dateFrom=2024-03-01&dateTo=2024-03-31',
      },
      activityUrl: '/v1/campaigns/camp-9/recipients/c2/activity',
    });
    expect(items[0]).toMatchObject({ firstName: null, surname: null, clientContactId: null, country: null });
  });

  it('builds ids and URLs for each source type, encoding ids', async () => {
    const items = (await withBackend(dir, (b) => b.items(itemsQuery('2024-03-01', '2024-03-31')))).rows;
    const [campaign, , withDelivery, noDelivery, unknown] = items;
    expect(campaign!.source).toMatchObject({ id: 'k/1', name: 'k/1', campaignId: 'k/1', detailUrl: '/v1/campaigns/k%2F1/conversions?sourceType=campaign&sourceId=k%2F1&dateFrom=2024-03-01&dateTo=2024-03-31' });
    expect(campaign!.activityUrl).toBe('/v1/campaigns/k%2F1/recipients/c%201/activity');
    expect(withDelivery!.source).toEqual({
      type: 'smartflow',
      id: 'n1',
      name: 'Node 1',
      campaignId: 'sf1',
      smartflowId: 'sf1',
      smartflowName: 'Flow one',
      deliveryId: 'd1',
      deliveryName: 'First mail',
      detailUrl: '/v1/deliveries/sf1/d1/conversions?sourceType=smartflow&sourceId=n1&dateFrom=2024-03-01&dateTo=2024-03-31',
    });
    expect(withDelivery!.activityUrl).toBe('/v1/deliveries/sf1/d1/recipients/c3/activity');
    expect(noDelivery!.source).toMatchObject({ name: 'n2', smartflowId: 'sf1', deliveryId: null, deliveryName: null });
    expect(noDelivery!.source.detailUrl).toBe('/v1/deliveries/sf1/conversions?sourceType=smartflow&sourceId=n2&dateFrom=2024-03-01&dateTo=2024-03-31');
    expect(noDelivery!.activityUrl).toBe('/v1/deliveries/sf1/recipients/c4/activity');
    // a smartflow source missing from sources is its own smartflow
    expect(unknown!.source).toMatchObject({ id: 'n3', name: 'n3', campaignId: 'n3', smartflowId: 'n3', smartflowName: 'n3' });
  });
});

describe('4.8 rule 6 and 4.11 filters', () => {
  const dir = shop({
    touches: [
      click('2024-03-01T00:00:00Z', 'k1', { contact: 'a' }),
      click('2024-03-01T00:00:00Z', 'a1', { contact: 'b', type: 'automation' }),
      click('2024-03-01T00:00:00Z', 'n1', { contact: 'c', type: 'smartflow' }),
      click('2024-03-01T00:00:00Z', 'k1', { contact: 'd', type: 'smartflow' }),
    ],
    sources: [
      ['campaign', 'k1', 'Spring Sale', null, null, null, null, null, null],
      ['automation', 'a1', 'Cart', null, null, null, null, null, null],
      ['smartflow', 'n1', 'Node', null, 'sf1', 'Welcome FLOW', 'd1', null, null],
      ['smartflow', 'k1', 'Same id, other type', null, 'sf2', 'Other', null, null, null],
    ],
    fx: [['2024-03-01', 'CZK', '0.04']],
    orders: [
      { id: '1', contact: 'a', at: '2024-03-02T10:00:00Z', country: 'CZ', currency: 'EUR' },
      { id: '2', contact: 'a', at: '2024-03-02T11:00:00Z', country: 'SK', currency: 'CZK', net: 1000, gross: 1000 },
      { id: '3', contact: 'b', at: '2024-03-02T12:00:00Z', country: 'SK', currency: 'EUR' },
      { id: '4', contact: 'c', at: '2024-03-02T13:00:00Z', country: 'DE', currency: 'EUR' },
      { id: '5', contact: 'd', at: '2024-03-02T14:00:00Z', country: 'AT', currency: 'EUR' },
    ],
  });
  const period = ['2024-03-01', '2024-03-31'] as const;
  // One backend answers the block's queries (helpers.ts: the attribution is per order).
  const backend = sharedBackend(dir);
  const ids = async (extra: Parameters<typeof itemsQuery>[2]) => (await backend().items(itemsQuery(...period, extra))).rows.map((r) => r.orderId);

  it('narrows items by every parameter, AND-ed', async () => {
    expect(await ids({ sourceId: 'k1' })).toEqual(['1', '2', '5']);
    expect(await ids({ sourceId: 'k1', sourceType: 'campaign' })).toEqual(['1', '2']);
    expect(await ids({ sourceType: 'smartflow' })).toEqual(['4', '5']);
    expect(await ids({ smartflowId: 'sf1' })).toEqual(['4']);
    expect(await ids({ deliveryId: 'd1' })).toEqual(['4']);
    expect(await ids({ contactId: 'a' })).toEqual(['1', '2']);
    expect(await ids({ orderId: '3' })).toEqual(['3']);
    expect(await ids({ country: ['SK', 'DE'] })).toEqual(['2', '3', '4']);
    expect(await ids({ currency: ['CZK'] })).toEqual(['2']);
    expect(await ids({ country: ['SK'], currency: ['EUR'] })).toEqual(['3']);
    expect(await ids({ campaignId: 'k1' })).toEqual(['1', '2']);
    expect(await ids({ orderId: "1' OR '1'='1" })).toEqual([]);
  });

  it('filters transactions by country and currency before aggregating', async () => {
    const rows = (await backend().report(reportQuery(...period, { country: ['SK'] }))).rows;
    expect(rows.map((r) => [r.id, r.conversionsNumber, r.conversionsAmountWTax])).toEqual([
      ['a1', 1, 121],
      ['k1', 1, 40],
    ]);
  });

  it('q matches the row name or its smartflow name, case-insensitively, as plain text', async () => {
    const q = async (text: string) =>
      (await backend().report(reportQuery(...period, { q: text }))).rows.map((r) => `${r.source.type}:${r.id}`);
    expect(await q('SPRING')).toEqual(['campaign:k1']);
    expect(await q('welcome flow')).toEqual(['smartflow:n1']);
    expect(await q('%')).toEqual([]);
    expect(await q("'; DROP TABLE x; --")).toEqual([]);
  });

  it('rule 6: the non-smartflow rows add up exactly to the campaign and automation items', async () => {
    const rows = (await backend().report(reportQuery(...period))).rows.filter((r) => r.source.type !== 'smartflow');
    const items = (await backend().items(itemsQuery(...period))).rows.filter((i) => i.source.type !== 'smartflow');
    const cents = (n: number) => Math.round(n * 100);
    expect(rows.reduce((s, r) => s + cents(r.conversionsAmountWTax), 0)).toBe(
      items.filter((i) => !i.isRefund).reduce((s, i) => s + cents(i.conversionsReferenceAmount), 0),
    );
    expect(rows.reduce((s, r) => s + r.conversionsNumber, 0)).toBe(items.filter((i) => !i.isRefund).length);
  });
});

describe('4.12 paging and sort', () => {
  const dir = shop({
    touches: [click('2024-03-01T00:00:00Z')],
    // five orders at the same instant and amount: only the tie-break orders them
    orders: ['e', 'b', 'd', 'a', 'c'].map((id) => ({ id, at: '2024-03-02T10:00:00Z' })),
  });

  it('reports start, count and totalCount, and pages never overlap or skip', async () => {
    await withBackend(dir, async (b) => {
      const seen: string[] = [];
      for (let offset = 0; offset < 6; offset += 2) {
        const page = await b.items(itemsQuery('2024-03-01', '2024-03-31', { limit: 2, offset, sort: [{ field: 'datetime', descending: true }] }));
        expect(page.paging).toEqual({ start: offset, count: Math.min(2, 5 - offset), totalCount: 5, dataVersion: expect.any(String) });
        seen.push(...page.rows.map((r) => r.orderId));
      }
      expect(seen).toEqual(['e', 'b', 'd', 'a', 'c']); // file order as the tie-break
      const beyond = await b.items(itemsQuery('2024-03-01', '2024-03-31', { offset: 10 }));
      expect(beyond.paging).toEqual({ start: 10, count: 0, totalCount: 5, dataVersion: expect.any(String) });
    });
  });

  it('sorts by any top-level scalar, ascending or descending', async () => {
    const sorted = await withBackend(dir, async (b) => (await b.items(itemsQuery('2024-03-01', '2024-03-31', { sort: [{ field: 'orderId', descending: true }] }))).rows);
    expect(sorted.map((r) => r.orderId)).toEqual(['e', 'd', 'c', 'b', 'a']);
  });

  it('streams every row in the same order as the pages', async () => {
    await withBackend(dir, async (b) => {
      const stream = await b.allItems(itemsQuery('2024-03-01', '2024-03-31', { offset: 1 }));
      const rows = [];
      for await (const row of stream.rows) rows.push(row.orderId);
      expect(stream.totalCount).toBe(5);
      expect(rows).toEqual(['b', 'd', 'a', 'c']);
    });
  });
});

describe('plugins (section 3)', () => {
  const dir = dataset(twoPluginFiles());

  it('needs --plugin when there are several, and lists them', async () => {
    const error = await withBackend(dir, async () => undefined).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UsageError);
    expect((error as Error).message).toMatch(/holds 2 plugins \(A, B\); choose one with --plugin/);
    await expect(withBackend(dir, async () => undefined, { plugin: 'C' })).rejects.toThrow(/plugin "C" not found.*plugins found: A, B/);
  });

  it('keeps each plugin to its own rows', async () => {
    for (const [plugin, order, currency] of [['A', 'oa', 'EUR'], ['B', 'ob', 'CZK']] as const) {
      const items = await withBackend(dir, async (b) => (await b.items(itemsQuery('2024-03-01', '2024-03-31'))).rows, { plugin });
      expect(items.map((i) => [i.orderId, i.conversionsCurrency, i.referenceCurrency])).toEqual([[order, currency, currency]]);
    }
  });
});

describe('an order look-up sorted and paged in JavaScript (its few rows read whole)', () => {
  const dir = shop({
    touches: [click('2024-03-01T00:00:00Z'), click('2024-03-01T00:00:00Z', 'k2', { contact: 'c2' })],
    orders: [
      { id: 'o1', at: '2024-03-01T10:00:00Z', net: 100, gross: 121 },
      { id: 'o1', at: '2024-03-03T10:00:00Z', net: 10, gross: '12.10', refund: true, country: '' },
      { id: 'o1', at: '2024-03-02T10:00:00Z', net: 50, gross: '60.50', refund: true, country: 'SK' },
      { id: 'o1', at: '2024-03-02T10:00:00Z', net: 50, gross: '60.50', refund: true, country: 'DE' },
      { id: 'o2', contact: 'c2', at: '2024-03-02T11:00:00Z', net: 5, gross: 6 },
    ],
  });

  it('gives every sort, either way, the rows and order the SQL gives the same records', async () => {
    await withBackend(dir, async (b) => {
      for (const field of ITEMS_SORT_FIELDS) {
        for (const descending of [false, true]) {
          const sort = [{ field, descending }];
          const all = (await b.items(itemsQuery('2024-03-01', '2024-03-31', { sort }))).rows.filter((r) => r.orderId === 'o1');
          const page = await b.items(itemsQuery('2024-03-01', '2024-03-31', { sort, orderId: 'o1' }));
          expect(page.rows, `${field} ${descending ? 'desc' : 'asc'}`).toEqual(all);
          expect(page.paging.totalCount).toBe(4);
          const second = await b.items(itemsQuery('2024-03-01', '2024-03-31', { sort, orderId: 'o1', limit: 2, offset: 1 }));
          expect(second.rows).toEqual(all.slice(1, 3));
          expect(second.paging).toMatchObject({ start: 1, count: 2, totalCount: 4 });
        }
      }
      const beyond = await b.items(itemsQuery('2024-03-01', '2024-03-31', { orderId: 'o1', offset: 10 }));
      expect(beyond.paging).toMatchObject({ start: 10, count: 0, totalCount: 4 });
    });
  });

  it('leaves an order of more rows than FEW_ROWS to DuckDB, with the same page', async () => {
    const refunds = Array.from({ length: FEW_ROWS }, (_, i) => ({
      id: 'big', at: new Date(Date.UTC(2024, 2, 2) + i * 60_000).toISOString(), net: '0.01', gross: '0.01', refund: true,
    }));
    const big = shop({ touches: [click('2024-03-01T00:00:00Z')], orders: [{ id: 'big', at: '2024-03-01T10:00:00Z', net: 100, gross: 121 }, ...refunds] });
    await withBackend(big, async (b) => {
      const sort = [{ field: 'datetime', descending: true }];
      const all = (await b.items(itemsQuery('2024-03-01', '2024-03-31', { sort, limit: 2000 }))).rows;
      const page = await b.items(itemsQuery('2024-03-01', '2024-03-31', { sort, orderId: 'big', limit: 5, offset: 3 }));
      expect(page.rows).toEqual(all.slice(3, 8));
      expect(page.paging).toMatchObject({ start: 3, count: 5, totalCount: FEW_ROWS + 1 });
    });
  });

  it('orders text by code point (as DuckDB compares UTF-8), nulls last either way, then row_id', () => {
    const rows = [
      { row_id: 3n, t: '\u{1F600}', n: 2, f: true },
      { row_id: 1n, t: '\uFFFF', n: null, f: false },
      { row_id: 2n, t: null, n: 1, f: false },
      { row_id: 0n, t: 'z', n: 1, f: true },
    ];
    const ids = (field: string, descending: boolean) => sortRows(rows, [{ field, descending }], ITEMS_TIE_BREAK).map((r) => r.row_id);
    expect(ids('t', false)).toEqual([0n, 1n, 3n, 2n]);
    expect(ids('t', true)).toEqual([3n, 1n, 0n, 2n]);
    expect(ids('n', false)).toEqual([0n, 2n, 3n, 1n]);
    expect(ids('n', true)).toEqual([3n, 0n, 2n, 1n]);
    expect(ids('f', false)).toEqual([1n, 2n, 0n, 3n]);
  });
});
