/**
 * convx trend and total (issue 19, series and total), on small datasets built here: every bucket
 * present, ISO weeks, buckets cut by the period, hours, refunds by their own time, unique contacts
 * within a bucket, per-source series, filters, the bucket limit, an imported file, and the
 * property that the buckets add up exactly to the report's and the total's figures.
 */
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { LocalBackend } from '../src/local/backend.js';
import { importDataset } from '../src/local/import-writer.js';
import { periodInstants } from '../src/model/period.js';
import { bucketCount, formatQuery, parseTotalQuery, parseTrendQuery, type RawParams } from '../src/model/query.js';
import { INTERVALS, type Interval } from '../src/model/parameters.js';
import type { AggregateRow, PeriodFigures, TrendBucket } from '../src/model/types.js';
import { cli, reportQuery, SAMPLES, shop, tempDir, withBackend, type OrderRow, type TouchRow } from './helpers.js';
import { keptBackends } from './kept-backends.js';

const NOW = new Date('2024-05-01T12:00:00Z');
/** Each dataset (and imported file) opened once and lent to every command on it (kept-backends.ts): the tests are about the buckets. */
const kept = keptBackends();
const trendQuery = (raw: RawParams) => parseTrendQuery(raw, NOW);
const totalQuery = (raw: RawParams) => parseTotalQuery(raw, NOW);

/** A click of a contact on a source an hour before each order, so every order is attributed there. */
function clicked(orders: (OrderRow & { source?: string; type?: string })[]): TouchRow[] {
  return orders
    .filter((o) => !o.refund)
    .map((o) => ({ contact: o.contact ?? 'c1', at: new Date(Date.parse(o.at) - 3_600_000).toISOString(), source: o.source ?? 'k1', type: o.type ?? 'campaign' }));
}

/** CZK rates every five days from December 2023 to February 2025 (a rate is carried at most 7 days). */
const FX: [string, string, string][] = Array.from({ length: 90 }, (_, i) => [new Date(Date.UTC(2023, 11, 1 + 5 * i)).toISOString().slice(0, 10), 'CZK', (0.04 + i / 10_000).toFixed(4)]);

function dataOf(orders: (OrderRow & { source?: string; type?: string })[], extra: { sources?: (string | null)[][] } = {}): string {
  return shop({ orders, touches: clicked(orders), fx: FX, ...extra });
}

const labels = (buckets: TrendBucket[]) => buckets.map((b) => b.bucket);
const span = (b: TrendBucket) => `${b.start}..${b.end}`;

describe('trend: the buckets of a period', () => {
  const dir = dataOf([
    { id: 'o1', at: '2024-03-02T10:00:00Z', net: 100, gross: 121 },
    { id: 'o2', at: '2024-03-05T13:30:00Z', net: 50, gross: 60.5, contact: 'c2' },
  ]);

  it('holds every day of the period, zeros (null first and last conversion, no breakdown) where nothing converted', async () => {
    const res = await withBackend(dir, (b) => b.trend(trendQuery({ dateFrom: '2024-03-01', dateTo: '2024-03-06' })));
    expect(res).toMatchObject({ dateFrom: '2024-03-01', dateTo: '2024-03-06', timeZone: 'UTC', interval: 'day' });
    expect(labels(res.buckets)).toEqual(['2024-03-01', '2024-03-02', '2024-03-03', '2024-03-04', '2024-03-05', '2024-03-06']);
    const empty = res.buckets[0]!;
    expect(empty).toEqual({
      bucket: '2024-03-01',
      start: '2024-03-01T00:00:00.000Z',
      end: '2024-03-02T00:00:00.000Z',
      firstConversionAt: null,
      lastConversionAt: null,
      conversionsAmountWoTax: 0,
      conversionsAmountWTax: 0,
      conversionsNumber: 0,
      referenceCurrency: 'EUR',
      uniqueContacts: 0,
      averageConversion: 0,
      averageUniqueConversion: 0,
      refundsAmountWoTax: 0,
      refundsAmountWTax: 0,
      refundsNumber: 0,
      grossConversionsAmountWoTax: 0,
      grossConversionsAmountWTax: 0,
      grossConversionsNumber: 0,
      breakdown: [],
    });
    expect(Object.keys(empty)).not.toContain('series');
    expect(res.buckets[1]).toMatchObject({ conversionsNumber: 1, conversionsAmountWTax: 121, firstConversionAt: '2024-03-02T10:00:00.000Z', uniqueContacts: 1 });
    expect(res.buckets[1]!.breakdown).toHaveLength(1);
    expect(res.buckets[4]).toMatchObject({ conversionsNumber: 1, conversionsAmountWTax: 60.5, averageConversion: 60.5 });
  });

  it.each([
    [
      'ISO weeks from Monday: a period from a Wednesday cuts its first week and its last',
      { dateFrom: '2024-02-28', dateTo: '2024-03-12', interval: 'week' },
      ['2024-W09 2024-02-28T00:00:00.000Z..2024-03-04T00:00:00.000Z 1', '2024-W10 2024-03-04T00:00:00.000Z..2024-03-11T00:00:00.000Z 1', '2024-W11 2024-03-11T00:00:00.000Z..2024-03-13T00:00:00.000Z 0'],
    ],
    [
      'ISO weeks over a year end: 2024-12-30 is in 2025-W01',
      { dateFrom: '2024-12-25', dateTo: '2025-01-08', interval: 'week' },
      ['2024-W52 2024-12-25T00:00:00.000Z..2024-12-30T00:00:00.000Z 0', '2025-W01 2024-12-30T00:00:00.000Z..2025-01-06T00:00:00.000Z 0', '2025-W02 2025-01-06T00:00:00.000Z..2025-01-09T00:00:00.000Z 0'],
    ],
    [
      // the order of 03-05 lies after the period
      'months cut at both ends of the period',
      { dateFrom: '2024-01-15', dateTo: '2024-03-03', interval: 'month' },
      ['2024-01 2024-01-15T00:00:00.000Z..2024-02-01T00:00:00.000Z 0', '2024-02 2024-02-01T00:00:00.000Z..2024-03-01T00:00:00.000Z 0', '2024-03 2024-03-01T00:00:00.000Z..2024-03-04T00:00:00.000Z 1'],
    ],
  ])('labels and spans %s', async (_, raw: RawParams, expected: string[]) => {
    const res = await withBackend(dir, (b) => b.trend(trendQuery(raw)));
    expect(res.buckets.map((b) => `${b.bucket} ${span(b)} ${b.conversionsNumber}`)).toEqual(expected);
  });

  it('has 24 hour buckets a day, the order in the hour of its time', async () => {
    const res = await withBackend(dir, (b) => b.trend(trendQuery({ dateFrom: '2024-03-05', dateTo: '2024-03-05', interval: 'hour' })));
    expect(res.buckets).toHaveLength(24);
    expect(res.buckets[0]!.bucket).toBe('2024-03-05T00');
    expect(res.buckets[23]!.bucket).toBe('2024-03-05T23');
    expect(span(res.buckets[13]!)).toBe('2024-03-05T13:00:00.000Z..2024-03-05T14:00:00.000Z');
    expect(res.buckets.filter((b) => b.conversionsNumber > 0).map((b) => b.bucket)).toEqual(['2024-03-05T13']);
  });
});

describe('trend: zones whose clocks repeat a midnight or skip half an hour', () => {
  // America/Havana sets its clocks back from 01:00 to 00:00 on 2024-11-03 (midnight twice: 04:00Z and 05:00Z);
  // Atlantic/Azores on 2024-10-27 (00:00Z and 01:00Z); Australia/Lord_Howe jumps from 02:00 to 02:30 on 2024-10-06.
  const dir = dataOf([
    { id: 'h0', at: '2024-11-02T10:00:00Z', net: 9, gross: 10.89 },
    { id: 'h1', at: '2024-11-03T04:30:00Z', net: 7, gross: 8.47 },
    { id: 'h2', at: '2024-11-03T05:30:00Z', net: 8, gross: 9.68, contact: 'c2' },
    { id: 'a1', at: '2024-10-27T00:30:00Z', net: 1, gross: 1.21, contact: 'c3' },
    { id: 'a2', at: '2024-10-27T01:30:00Z', net: 2, gross: 2.42, contact: 'c4' },
    { id: 'l1', at: '2024-10-05T15:10:00Z', net: 3, gross: 3.63, contact: 'c5' },
    { id: 'l2', at: '2024-10-05T15:45:00Z', net: 4, gross: 4.84, contact: 'c6' },
  ]);
  const count = (buckets: TrendBucket[]) => buckets.reduce((n, b) => n + b.conversionsNumber, 0);
  /** The buckets of a trend of the dataset (its kept backend lent and given back). */
  const bucketsOf = async (raw: RawParams) => {
    const b = await kept.backend(dir);
    try {
      return (await b.trend(trendQuery(raw))).buckets;
    } finally {
      await b.close();
    }
  };

  it.each([
    ['America/Havana', '2024-11-03', '2024-11-03T04:00:00.000Z', 2],
    ['Atlantic/Azores', '2024-10-27', '2024-10-27T00:00:00.000Z', 2],
  ])('%s, %s: 25 hours from the first midnight, the first hour holding its order; days that start there', async (zone, date, first, orders) => {
    const { start, end } = periodInstants(date, date, zone);
    expect(start.toISOString()).toBe(first);
    const hours = await bucketsOf({ dateFrom: date, dateTo: date, interval: 'hour', timeZone: zone });
    expect(hours).toHaveLength(25);
    expect(hours.map((h) => h.bucket.slice(11)).slice(0, 3)).toEqual(['00', '00', '01']);
    expect(hours[0]!.start).toBe(first);
    expect(hours[0]!.conversionsNumber).toBe(1);
    expect(hours.at(-1)!.end).toBe(end.toISOString());
    hours.slice(1).forEach((h, i) => expect(h.start).toBe(hours[i]!.end));
    expect(count(hours)).toBe(orders);
    // Days around it: each from its first instant (periodInstants) to the next's, its orders within.
    const dates = [-1, 0, 1].map((d) => new Date(Date.parse(`${date}T12:00:00Z`) + d * 86_400_000).toISOString().slice(0, 10));
    const days = await bucketsOf({ dateFrom: dates[0]!, dateTo: dates[2]!, interval: 'day', timeZone: zone });
    for (const [i, d] of days.entries()) {
      const instants = periodInstants(dates[i]!, dates[i]!, zone);
      expect(span(d), d.bucket).toBe(`${instants.start.toISOString()}..${instants.end.toISOString()}`);
      if (d.firstConversionAt !== null) expect(d.firstConversionAt >= d.start && d.lastConversionAt! < d.end, d.bucket).toBe(true);
    }
  });

  // Midnights the clocks pass twice by other steps than an hour: 30 minutes (Asia/Colombo, 2006), two hours (Antarctica/Vostok, 2023), three (Antarctica/Casey, 2023).
  it.each([
    ['Asia/Colombo', '2006-04-15', '2006-04-14T18:00:00.000Z', 25],
    ['Antarctica/Vostok', '2023-12-18', '2023-12-17T17:00:00.000Z', 26],
    ['Antarctica/Casey', '2023-03-09', '2023-03-08T13:00:00.000Z', 27],
  ])('%s, %s: the hours and the day start at the first of its midnights', async (zone, date, first, n) => {
    const b = await kept.backend(dir);
    try {
      const { start, end } = periodInstants(date, date, zone);
      expect(start.toISOString()).toBe(first);
      const hours = (await b.trend(trendQuery({ dateFrom: date, dateTo: date, interval: 'hour', timeZone: zone }))).buckets;
      expect(hours).toHaveLength(n);
      expect([hours[0]!.start, hours.at(-1)!.end]).toEqual([first, end.toISOString()]);
      const day = (await b.trend(trendQuery({ dateFrom: date, dateTo: date, timeZone: zone }))).buckets;
      expect(day.map(span)).toEqual([`${first}..${end.toISOString()}`]);
    } finally {
      await b.close();
    }
  });

  it('Australia/Lord_Howe: the half hour after the jump to 02:30 is the hour 02, each hour labelled by its first instant', async () => {
    const b = await kept.backend(dir);
    try {
      const hours = (await b.trend(trendQuery({ dateFrom: '2024-10-06', dateTo: '2024-10-06', interval: 'hour', timeZone: 'Australia/Lord_Howe' }))).buckets;
      expect(hours.map((h) => h.bucket.slice(11))).toEqual(Array.from({ length: 24 }, (_, h) => String(h).padStart(2, '0')));
      expect(hours.slice(1, 4).map((h) => `${h.bucket} ${span(h)} ${h.conversionsNumber}`)).toEqual([
        '2024-10-06T01 2024-10-05T14:30:00.000Z..2024-10-05T15:30:00.000Z 1',
        '2024-10-06T02 2024-10-05T15:30:00.000Z..2024-10-05T16:00:00.000Z 1',
        '2024-10-06T03 2024-10-05T16:00:00.000Z..2024-10-05T17:00:00.000Z 0',
      ]);
    } finally {
      await b.close();
    }
  });

  it('--compare lines up bucket i with bucket i by their starts: the two hours 00 of a day the clocks go back each beside its own', async () => {
    const b = await kept.backend(dir);
    try {
      const zone = 'Atlantic/Azores';
      const hour = (date: string, compareTo?: string) => b.trend(trendQuery({ dateFrom: date, dateTo: date, interval: 'hour', timeZone: zone, ...(compareTo ? { compareTo } : {}) }));
      // The day of 25 hours beside the one before, and the day after beside it: bucket i beside bucket i.
      for (const [date, before] of [['2024-10-27', '2024-10-26'], ['2024-10-28', '2024-10-27']] as const) {
        const [compared, other] = [(await hour(date, 'previous')).buckets, (await hour(before)).buckets];
        compared.forEach((x, i) => {
          expect(x.comparison!.bucket, `${date} ${i}`).toBe(other[i]?.bucket ?? null);
          expect(x.comparison!.figures?.conversionsNumber ?? null, `${date} ${i}`).toBe(other[i]?.conversionsNumber ?? null);
        });
      }
      // The day after has 24 hours: its hours 00 and 01 beside the two hours 00 of the 25, so the orders of both appear once each.
      const after = (await hour('2024-10-28', 'previous')).buckets;
      expect(after.slice(0, 2).map((x) => x.comparison!.figures!.conversionsNumber)).toEqual([1, 1]);
    } finally {
      await b.close();
    }
  });
});

describe('trend: the rules hold per bucket', () => {
  it('counts a refund in the bucket of its own time, apart from its order', async () => {
    const dir = dataOf([
      { id: 'o1', at: '2024-03-01T10:00:00Z', net: 100, gross: 121 },
      { id: 'o1', at: '2024-03-03T09:00:00Z', net: -40, gross: -48.4, refund: true },
    ]);
    const res = await withBackend(dir, (b) => b.trend(trendQuery({ dateFrom: '2024-03-01', dateTo: '2024-03-03' })));
    expect(res.buckets.map((b) => [b.conversionsNumber, b.refundsNumber, b.refundsAmountWTax, b.grossConversionsAmountWTax])).toEqual([
      [1, 0, 0, 121],
      [0, 0, 0, 0],
      [0, 1, -48.4, -48.4],
    ]);
    // only a refund in the bucket: no first or last conversion
    expect(res.buckets[2]!.firstConversionAt).toBeNull();
  });

  it('counts a contact once within a bucket (whatever the source), once in each bucket it converts in', async () => {
    const dir = dataOf([
      { id: 'o1', at: '2024-03-01T08:00:00Z', contact: 'c1', source: 'k1' },
      { id: 'o2', at: '2024-03-01T18:00:00Z', contact: 'c1', source: 'k2' },
      { id: 'o3', at: '2024-03-02T08:00:00Z', contact: 'c1', source: 'k1' },
      { id: 'o4', at: '2024-03-02T09:00:00Z', contact: 'c2', source: 'k1' },
    ]);
    const res = await withBackend(dir, (b) => b.trend(trendQuery({ dateFrom: '2024-03-01', dateTo: '2024-03-02' })));
    expect(res.buckets.map((b) => [b.conversionsNumber, b.uniqueContacts])).toEqual([
      [2, 1],
      [2, 2],
    ]);
    // the week: c1 and c2 once each; the total likewise, while report's rows count c1 under k1 and k2
    const week = await withBackend(dir, (b) => b.trend(trendQuery({ dateFrom: '2024-03-01', dateTo: '2024-03-02', interval: 'week' })));
    expect(week.buckets.map((b) => b.uniqueContacts)).toEqual([2]);
    await withBackend(dir, async (b) => {
      const total = await b.total(totalQuery({ dateFrom: '2024-03-01', dateTo: '2024-03-02' }));
      const rows = (await b.report(reportQuery('2024-03-01', '2024-03-02'))).rows;
      expect(total.total.uniqueContacts).toBe(2);
      expect(rows.reduce((n, r) => n + r.uniqueContacts, 0)).toBe(3);
    });
  });
});

describe('trend --per-source', () => {
  // k1 earns most, then a2 (automation) and k3 tie, then k4 and k5; c9 converts through k4 and k5 on one day
  const dir = dataOf(
    [
      { id: 'o1', at: '2024-03-01T08:00:00Z', source: 'k1', net: 500, gross: 500 },
      { id: 'o2', at: '2024-03-02T08:00:00Z', source: 'a2', type: 'automation', net: 200, gross: 200, contact: 'c2' },
      { id: 'o3', at: '2024-03-02T09:00:00Z', source: 'k3', net: 200, gross: 200, contact: 'c3' },
      { id: 'o4', at: '2024-03-02T10:00:00Z', source: 'k4', net: 10, gross: 10, contact: 'c9' },
      { id: 'o5', at: '2024-03-02T11:00:00Z', source: 'k5', net: 20, gross: 20, contact: 'c9' },
    ],
    { sources: [['campaign', 'k1', 'First', '', '', '', '', '', '']] },
  );

  it('shows the top sources by the period revenue (ties by type and id) and sums the rest as other, every bucket for every series', async () => {
    const res = await withBackend(dir, (b) => b.trend(trendQuery({ dateFrom: '2024-03-01', dateTo: '2024-03-02', perSource: 'true', top: '2' })));
    expect(res.buckets.map((b) => `${b.bucket} ${b.series} ${b.seriesName} ${b.conversionsAmountWTax} ${b.uniqueContacts}`)).toEqual([
      '2024-03-01 campaign:k1 First 500 1',
      '2024-03-01 automation:a2 a2 0 0',
      '2024-03-01 other other 0 0',
      '2024-03-02 campaign:k1 First 0 0',
      '2024-03-02 automation:a2 a2 200 1',
      // k3, k4 and k5: c3 and c9 (who converted through two of them) are two contacts
      '2024-03-02 other other 230 2',
    ]);
    const other = res.buckets[5]!;
    expect(other.conversionsNumber).toBe(3);
  });

  it('has no other series when every source is among the top', async () => {
    const res = await withBackend(dir, (b) => b.trend(trendQuery({ dateFrom: '2024-03-01', dateTo: '2024-03-01', perSource: 'true', top: '20' })));
    expect(res.buckets.map((b) => b.series)).toEqual(['campaign:k1']);
  });
});

describe('trend and total: filters', () => {
  const dir = dataOf([
    { id: 'o1', at: '2024-03-01T08:00:00Z', source: 'k1', country: 'CZ' },
    { id: 'o2', at: '2024-03-01T09:00:00Z', source: 'k2', country: 'SK', contact: 'c2' },
    { id: 'o3', at: '2024-03-02T09:00:00Z', source: 'sf1', type: 'smartflow', country: 'SK', currency: 'CZK', net: 1000, gross: 1210, contact: 'c3' },
  ], { sources: [['campaign', 'k2', 'Spring SALE', '', '', '', '', '', '']] });
  const counts = (buckets: TrendBucket[]) => buckets.map((b) => b.conversionsNumber);
  const period = { dateFrom: '2024-03-01', dateTo: '2024-03-02' };

  it('narrows by source id and type, smartflow, country, currency and q', async () => {
    await withBackend(dir, async (b) => {
      const trend = async (raw: RawParams) => counts((await b.trend(trendQuery({ ...period, ...raw }))).buckets);
      expect(await trend({})).toEqual([2, 1]);
      expect(await trend({ sourceId: 'k1' })).toEqual([1, 0]);
      expect(await trend({ sourceType: 'smartflow' })).toEqual([0, 1]);
      expect(await trend({ smartflowId: 'sf1' })).toEqual([0, 1]);
      expect(await trend({ country: 'sk' })).toEqual([1, 1]);
      expect(await trend({ currency: 'CZK' })).toEqual([0, 1]);
      expect(await trend({ q: 'sale' })).toEqual([1, 0]);
      expect(await trend({ deliveryId: 'nope' })).toEqual([0, 0]);
      const total = async (raw: RawParams) => (await b.total(totalQuery({ ...period, ...raw }))).total.conversionsNumber;
      expect([await total({}), await total({ country: 'SK' }), await total({ currency: 'czk' }), await total({ q: 'SALE' })]).toEqual([3, 2, 1, 1]);
    });
  });

  it('prints through the one writer: csv columns from the schema, --breakdown one line per bucket and currency', async () => {
    const plain = await kept(['trend', '--data', dir, '--from', '2024-03-01', '--to', '2024-03-02', '-o', 'csv']);
    expect(plain.code, plain.stderr).toBe(0);
    const [header, ...lines] = plain.stdout.trimEnd().split('\n');
    expect(header).toBe(
      'bucket,start,end,firstConversionAt,lastConversionAt,conversionsAmountWoTax,conversionsAmountWTax,conversionsNumber,referenceCurrency,uniqueContacts,averageConversion,averageUniqueConversion,refundsAmountWoTax,refundsAmountWTax,refundsNumber,grossConversionsAmountWoTax,grossConversionsAmountWTax,grossConversionsNumber',
    );
    expect(lines).toHaveLength(2);
    const broken = await kept(['trend', '--data', dir, '--from', '2024-03-01', '--to', '2024-03-02', '--breakdown', '-o', 'tsv', '--fields', 'bucket,breakdown.currency,breakdown.conversionsNumber']);
    expect(broken.stdout).toBe('bucket\tbreakdown.currency\tbreakdown.conversionsNumber\n2024-03-01\tEUR\t2\n2024-03-02\tCZK\t1\n');
    const total = await kept(['total', '--data', dir, '--from', '2024-03-01', '--to', '2024-03-02', '-o', 'tsv', '--fields', 'dateFrom,conversionsNumber,uniqueContacts']);
    expect(total.stdout).toBe('dateFrom\tconversionsNumber\tuniqueContacts\n2024-03-01\t3\t3\n');
    const json = JSON.parse((await kept(['total', '--data', dir, '--from', '2024-03-01', '--to', '2024-03-02', '-o', 'json'])).stdout) as { total: PeriodFigures };
    expect(Object.keys(json)).toEqual(['dateFrom', 'dateTo', 'timeZone', 'total']);
    expect(json.total.conversionsNumber).toBe(3);
  });
});

describe('trend: the bucket limit', () => {
  it('counts buckets of each interval', () => {
    expect(bucketCount('day', '2024-01-01', '2024-12-31')).toBe(366);
    expect(bucketCount('hour', '2024-03-01', '2024-04-10')).toBe(41 * 24);
    expect(bucketCount('week', '2024-02-28', '2024-03-12')).toBe(3);
    expect(bucketCount('week', '2024-12-30', '2025-01-05')).toBe(1);
    expect(bucketCount('month', '2023-11-30', '2024-02-01')).toBe(4);
  });

  it('refuses more than 1,000 buckets as a usage error naming the limit and the count', async () => {
    expect(() => trendQuery({ dateFrom: '2024-03-01', dateTo: '2024-04-10', interval: 'hour' })).not.toThrow();
    expect(() => trendQuery({ dateFrom: '2024-03-01', dateTo: '2024-04-11', interval: 'hour' })).toThrow(/1,008 hour buckets, over the limit of 1,000/);
    const res = await cli(['trend', '--data', tempDir(), '--by', 'hour', '--from', '2024-01-01', '--to', '2024-03-01']);
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('--by: 2024-01-01..2024-03-01 holds 1,464 hour buckets, over the limit of 1,000 buckets');
    const bad = await cli(['trend', '--data', tempDir(), '--by', 'year', '--top', '21']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--by: "year" is not one of hour, day, week, month');
    expect(bad.stderr).toContain('--top: "21" must be a whole number from 1 to 20');
  });

  it("an empty series' try: suggests a command within the limit, of the interval asked, that runs (exit 0) and finds the latest conversions", async () => {
    // orders from 1900 to 2024: all their months are over 1,000 buckets of every interval
    const dir = dataOf([
      { id: 'o1900', at: '1900-01-15T10:00:00Z' },
      { id: 'o2000', at: '2000-01-15T10:00:00Z' },
      { id: 'o2024', at: '2024-06-02T10:00:00Z' },
    ]);
    const suggested: Record<string, string> = {};
    for (const interval of INTERVALS) {
      const empty = await kept(['trend', '--data', dir, '--by', interval, '--from', '2025-01-01', '--to', '2025-01-05', '--tz', 'Europe/Prague']);
      expect(empty.code, empty.stderr).toBe(0);
      const command = /^ {2}try: convx (.*)$/m.exec(empty.stderr)![1]!;
      suggested[interval] = command.replace(/--data \S+/, '--data DIR');
      const run = await kept([...command.split(' '), '-o', 'json']);
      expect(run.code, `${command}\n${run.stderr}`).toBe(0);
      const series = JSON.parse(run.stdout) as { interval: string; timeZone: string; buckets: TrendBucket[] };
      expect([series.interval, series.timeZone]).toEqual([interval, 'Europe/Prague']);
      expect(series.buckets.length).toBeLessThanOrEqual(1000);
      expect(series.buckets.reduce((n, b) => n + b.conversionsNumber, 0), command).toBeGreaterThan(0);
      // the line before it says why it is not all the data's months
      expect(empty.stderr).toContain(`its months 1900-01..2024-06 are ${bucketCount(interval as Interval, '1900-01-01', '2024-06-30').toLocaleString('en-US')} ${interval} buckets, over the 1,000`);
    }
    expect(suggested).toEqual({
      hour: 'trend --data DIR --from 2024-06-01 --to 2024-06-30 --tz Europe/Prague --by hour',
      day: 'trend --data DIR --from 2021-11-01 --to 2024-06-30 --tz Europe/Prague',
      week: 'trend --data DIR --from 2005-06-01 --to 2024-06-30 --tz Europe/Prague --by week',
      month: 'trend --data DIR --from 1941-03-01 --to 2024-06-30 --tz Europe/Prague --by month',
    });
  });
});

describe('trend and total: an imported file answers as the directory', () => {
  it('prints the same json and csv', async () => {
    const dir = dataOf([
      { id: 'o1', at: '2024-03-01T08:00:00Z', source: 'k1' },
      { id: 'o1', at: '2024-03-09T08:00:00Z', refund: true, net: -10, gross: -12.1 },
      { id: 'o2', at: '2024-03-04T09:00:00Z', source: 'k2', currency: 'CZK', net: 999.99, gross: 1209.99, contact: 'c2' },
    ]);
    const file = join(tempDir(), 'shop.duckdb');
    await importDataset(dir, file);
    for (const argv of [
      ['trend', '--by', 'week', '-o', 'json'],
      ['trend', '--per-source', '--top', '1', '-o', 'csv'],
      ['trend', '--by', 'month', '--country', 'cz', '-o', 'json'],
      ['total', '-o', 'json'],
      ['total', '--breakdown', '-o', 'csv'],
    ]) {
      const period = ['--from', '2024-02-26', '--to', '2024-03-10'];
      const fromDir = await kept([...argv, ...period, '--data', dir]);
      const fromFile = await kept([...argv, ...period, '--data', file]);
      expect(fromDir.code, fromDir.stderr).toBe(0);
      expect(fromFile.stdout, argv.join(' ')).toBe(fromDir.stdout);
    }
  });
});

// ---------------------------------------------------------------------------------------------
// Property: the buckets add up exactly to the report's and the total's figures

const CONTACTS = ['c1', 'c2', 'c3'];
const SOURCES = [
  ['campaign', 'k1'],
  ['campaign', 'k2'],
  ['automation', 'k1'],
  ['smartflow', 's1'],
] as const;

const orderArb = fc.record({
  contact: fc.constantFrom(...CONTACTS),
  minute: fc.integer({ min: 0, max: 60 * 24 * 70 }),
  currency: fc.constantFrom('EUR', 'CZK'),
  cents: fc.integer({ min: 1, max: 5_000_000 }),
  country: fc.constantFrom('CZ', 'SK'),
  source: fc.integer({ min: 0, max: SOURCES.length - 1 }),
  refundAfterMinutes: fc.option(fc.integer({ min: 1, max: 60 * 24 * 20 }), { freq: 3 }),
});

/** Where the generated orders start: before a year end, or before the DST changes of March (US, then EU). */
const BASES = [Date.UTC(2023, 11, 10), Date.UTC(2024, 1, 20)];
/** Zones with DST (an hour, Lord Howe's half hour), one without and 45 minutes off the hour, and UTC. */
const ZONES = ['UTC', 'Europe/Prague', 'America/New_York', 'Asia/Kathmandu', 'Australia/Lord_Howe'];
const iso = (base: number, minute: number) => new Date(base + minute * 60_000).toISOString();
const day = (base: number, n: number) => iso(base, n * 24 * 60).slice(0, 10);

/** Exact sums: amounts in units of 0.0001 as BigInt (the doubles are the nearest of exact decimals). */
const units = (x: number) => BigInt(Math.round(x * 10_000));
const FIGURES = ['conversionsNumber', 'refundsNumber', 'grossConversionsNumber', 'conversionsAmountWoTax', 'conversionsAmountWTax', 'refundsAmountWoTax', 'refundsAmountWTax', 'grossConversionsAmountWoTax', 'grossConversionsAmountWTax'] as const;

function sums(rows: readonly (PeriodFigures | AggregateRow | TrendBucket)[]): Record<string, bigint> {
  const out: Record<string, bigint> = Object.fromEntries(FIGURES.map((f) => [f, 0n]));
  for (const row of rows) {
    for (const f of FIGURES) out[f] = (out[f] ?? 0n) + units(row[f]);
    for (const b of row.breakdown) {
      for (const f of ['conversionsAmountWTax', 'refundsAmountWoTax', 'conversionAmountWTaxReference', 'conversionsNumber'] as const) {
        const key = `${b.currency}.${f}`;
        out[key] = (out[key] ?? 0n) + units(b[f]);
      }
    }
  }
  return out;
}

/** The first start (0) over five weeks of days, and the last start (60) as one day of a month, on orders of a fixed sample. */
const EDGE_ORDERS = fc.sample(fc.array(orderArb, { minLength: 8, maxLength: 14 }), { seed: 20241126, numRuns: 1 })[0]!;
const NO_FILTER = { country: null, currency: null, q: null, perSource: false };
const EDGE_STARTS: [typeof EDGE_ORDERS, number, number, 'day' | 'month', typeof NO_FILTER, number, string][] = [
  [EDGE_ORDERS, 0, 36, 'day', NO_FILTER, BASES[1]!, 'Australia/Lord_Howe'],
  [EDGE_ORDERS, 60, 0, 'month', { ...NO_FILTER, perSource: true }, BASES[0]!, 'UTC'],
];

describe('property: a series adds up to the report and the total, exactly', () => {
  it('for random data, periods, intervals, filters and time zones (DST changes and a year end among them)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(orderArb, { minLength: 1, maxLength: 14 }),
        fc.integer({ min: 0, max: 60 }),
        fc.integer({ min: 0, max: 40 }),
        fc.constantFrom('hour', 'day', 'week', 'month'),
        fc.record({ country: fc.option(fc.constantFrom('cz', 'SK')), currency: fc.option(fc.constant('CZK')), q: fc.option(fc.constantFrom('K1', 's')), perSource: fc.boolean() }),
        fc.constantFrom(...BASES),
        fc.constantFrom(...ZONES),
        async (orders, start, length, interval, filters, base, zone) => {
          const rows = orders.flatMap((o, i) => {
            const [type, source] = SOURCES[o.source]!;
            // amounts as the file writes them: units of 0.0001, exact
            const amount = (units: number) => (units / 10_000).toFixed(4);
            const order = { id: `o${i}`, contact: o.contact, at: iso(base, o.minute), currency: o.currency, net: amount(o.cents * 100), gross: amount(o.cents * 121), country: o.country, source, type };
            const refund = o.refundAfterMinutes === null ? [] : [{ ...order, at: iso(base, o.minute + o.refundAfterMinutes), net: amount(-o.cents * 50), gross: amount(-o.cents * 100), refund: true }];
            return [order, ...refund];
          });
          const dir = dataOf(rows);
          const days = interval === 'hour' ? Math.min(length, 5) : length;
          const raw: RawParams = { dateFrom: day(base, start), dateTo: day(base, start + days), ...(zone === 'UTC' ? {} : { timeZone: zone }) };
          if (filters.country !== null) raw.country = filters.country;
          if (filters.currency !== null) raw.currency = filters.currency;
          if (filters.q !== null) raw.q = filters.q;
          await withBackend(dir, async (b: LocalBackend) => {
            const trend = await b.trend(trendQuery({ ...raw, interval, ...(filters.perSource ? { perSource: 'true', top: '2' } : {}) }));
            const total = await b.total(totalQuery(raw));
            const report = await b.report({ ...reportQuery(raw.dateFrom!, raw.dateTo!), ...(raw.timeZone ? { timeZone: raw.timeZone } : {}), ...(raw.country ? { country: [raw.country.toUpperCase()] } : {}), ...(raw.currency ? { currency: [raw.currency] } : {}), ...(raw.q ? { q: raw.q } : {}) });
            // Hours: a DST day has 23 or 25 of them, so only the other intervals' count is fixed.
            if (interval !== 'hour') expect(trend.buckets.length).toBe(bucketCount(interval, raw.dateFrom!, raw.dateTo!) * new Set(trend.buckets.map((x) => x.series)).size);
            // The buckets tile the period's instants in the zone, end to end.
            // (A per-source series of a period without conversions has no series, so no rows.)
            const { start: from, end: to } = periodInstants(raw.dateFrom!, raw.dateTo!, zone);
            const ends = [...new Set(trend.buckets.map((x) => `${x.start} ${x.end}`))].map((x) => x.split(' '));
            if (ends.length) {
              expect(ends[0]![0]).toBe(from.toISOString());
              expect(ends.at(-1)![1]).toBe(to.toISOString());
              ends.slice(1).forEach(([start], i) => expect(start).toBe(ends[i]![1]));
            }
            // Every conversion lies in its bucket's [start, end).
            for (const x of trend.buckets.filter((x) => x.firstConversionAt !== null)) {
              expect(x.firstConversionAt! >= x.start && x.lastConversionAt! < x.end, `${x.bucket} ${x.start}..${x.end}`).toBe(true);
            }
            expect(sums(trend.buckets)).toEqual(sums([total.total]));
            expect(sums(report.rows)).toEqual(sums([total.total]));
          });
        },
      ),
      // 12 random runs (20 before, 30 before that): among them every base, zone, interval, filter
      // value and perSource, and a one-day period; and first the two edges they miss, the first
      // and the last start (0 and 60).
      { seed: 20241126, numRuns: 14, endOnFailure: true, examples: EDGE_STARTS },
    );
  });
});

describe('property: a series and a total from the per-day sums equal those from the transactions', () => {
  // A scope that holds every transaction (a server, an imported file) answers a series of UTC
  // days, weeks or months over every source, and a total, from the per-day sums (plugin_contact_day
  // for unique contacts); a scope attributed for the period alone answers from the transactions.
  it('for random data and periods, weeks and months cut by the period, contacts converting on several days through several sources', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(orderArb, { minLength: 1, maxLength: 16 }),
        fc.integer({ min: 0, max: 60 }),
        fc.integer({ min: 0, max: 45 }),
        fc.constantFrom(...BASES),
        async (orders, start, length, base) => {
          const rows = orders.map((o, i) => {
            const [type, source] = SOURCES[o.source]!;
            return { id: `o${i}`, contact: o.contact, at: iso(base, o.minute), currency: o.currency, net: (o.cents / 100).toFixed(2), gross: ((o.cents * 1.21) / 100).toFixed(2), source, type };
          });
          const raw: RawParams = { dateFrom: day(base, start), dateTo: day(base, start + length) };
          const dir = dataOf(rows);
          // one query at a time: a LocalBackend has one connection
          const ask = async (b: LocalBackend) => {
            const answers: unknown[] = [await b.total(totalQuery(raw))];
            for (const interval of ['day', 'week', 'month'] as const) answers.push(await b.trend(trendQuery({ ...raw, interval })));
            return answers;
          };
          // One open for both: asked first, the scope attributes the period alone (not summarised);
          // then every transaction, and with it the per-day sums (as a server does), and asked again.
          const [fromTransactions, fromSums] = await withBackend(dir, async (b) => {
            const scope = (b as unknown as { scope: { attribute(): Promise<void>; summarised: boolean } }).scope;
            const before = await ask(b);
            expect(scope.summarised).toBe(false);
            await scope.attribute();
            expect(scope.summarised).toBe(true);
            return [before, await ask(b)];
          });
          expect(fromSums).toEqual(fromTransactions);
        },
      ),
      { seed: 20261127, numRuns: 12, endOnFailure: true },
    );
  });
});

describe('the chart on a terminal', () => {
  const argv = ['trend', '--data', SAMPLES, '--from', '2024-02-01', '--to', '2024-03-31', '--by', 'week'];

  it('draws the revenue above the table on a terminal, fitted to its width; not with --no-chart, --fields or off a terminal', async () => {
    const drawn = await kept.terminal(argv, 100);
    expect(drawn.code).toBe(0);
    const [chart, table] = drawn.stdout.split(/\n(?=┌)/);
    // The y axis in the reference currency, ticks, bars, the first and last bucket under it.
    expect(chart).toMatch(/^ +EUR\n/);
    expect(chart).toMatch(/3,162\.61 ┤/);
    expect(chart).toContain('█');
    expect(chart).toMatch(/2024-W05 .* 2024-W13/);
    for (const line of drawn.stdout.split('\n')) expect(line.length).toBeLessThanOrEqual(100);
    // Then the table, as without the chart.
    const alone = await kept.terminal([...argv, '--no-chart'], 100);
    const axis = /\d ┤/; // a tick of the y axis (the table's own ┤ follows a ─)
    expect(chart).toMatch(axis);
    expect(alone.stdout).not.toMatch(axis);
    expect(table).toBe(alone.stdout);
    const fields = await kept.terminal([...argv, '--fields', 'bucket,conversionsNumber'], 100);
    expect(fields.stdout).not.toMatch(axis);
    const piped = await kept([...argv, '-o', 'table']);
    expect(piped.stdout).not.toMatch(axis);
  });

  it('has no escape codes with NO_COLOR, and a legend per source with --per-source', async () => {
    const perSource = await kept.terminal([...argv, '--per-source', '--top', '2'], 120);
    expect(perSource.code).toBe(0);
    expect(perSource.stdout).not.toMatch(/\u001b\[/);
    const legend = perSource.stdout.split('\n').find((l) => l.includes('●'))!;
    expect(legend).toContain('other');
    // Each series has its own mark in the legend.
    expect(new Set(legend.match(/[●◆▲■]/g)).size).toBe(3);
  });

  it("report's Trend column: each listed source's revenue per day, when the terminal is wide enough", async () => {
    const period = ['--data', SAMPLES, '--from', '2024-03-01', '--to', '2024-03-31'];
    const wide = await kept.terminal(['report', ...period, '--limit', '5'], 200);
    expect(wide.code).toBe(0);
    const header = wide.stdout.split('\n').find((l) => l.includes('Source'))!;
    expect(header).toMatch(/│ Trend +│$/);
    // The first row's sparkline is that source's daily revenue, as a per-source series gives it.
    const series = JSON.parse((await kept(['trend', ...period, '--per-source', '--top', '1', '-o', 'json'])).stdout) as { buckets: TrendBucket[] };
    const top = series.buckets.filter((b) => b.series !== 'other');
    const { sparkline } = await import('../src/output/sparkline.js');
    const first = wide.stdout.split('\n').find((l) => l.includes(top[0]!.seriesName!))!;
    expect(first).toContain(sparkline(top.map((b) => b.conversionsAmountWTax), 32).slice(0, 20));
    // In a zone, the days are the zone's: the same as its per-source series there.
    const zoned = [...period, '--tz', 'Pacific/Kiritimati'];
    const far = await kept.terminal(['report', ...zoned, '--limit', '5'], 200);
    const farSeries = (JSON.parse((await kept(['trend', ...zoned, '--per-source', '--top', '1', '-o', 'json'])).stdout) as { buckets: TrendBucket[] }).buckets.filter((b) => b.series !== 'other');
    const farLine = sparkline(farSeries.map((b) => b.conversionsAmountWTax), 32);
    expect(farLine.slice(0, 20)).not.toBe(sparkline(top.map((b) => b.conversionsAmountWTax), 32).slice(0, 20));
    expect(far.stdout.split('\n').find((l) => l.includes(farSeries[0]!.seriesName!))).toContain(farLine.slice(0, 20));
    // Narrower, piped, or with --fields: the table of today.
    for (const narrow of [await kept.terminal(['report', ...period, '--limit', '5'], 120), await kept.terminal(['report', ...period, '--limit', '5', '--fields', 'name,conversionsNumber'], 200)]) {
      expect(narrow.stdout).not.toContain('Trend');
    }
    expect((await kept(['report', ...period, '--limit', '5', '-o', 'table'])).stdout).not.toContain('Trend');
  });
});

describe('a per-source series on a narrow terminal', () => {
  it('keeps the series name beside the bucket (its rows differ by it alone)', async () => {
    const narrow = await kept.terminal(['trend', '--data', SAMPLES, '--from', '2024-03-01', '--to', '2024-03-03', '--per-source', '--top', '3', '--no-chart'], 45);
    expect(narrow.code).toBe(0);
    const lines = narrow.stdout.split('\n');
    expect(lines[1]).toMatch(/│ Bucket +│ Series +│ Revenue/);
    expect(lines.filter((l) => l.includes('2024-03-01')).map((l) => l.split('│')[2]!.trim())).toHaveLength(4);
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(45);
  });
});

describe('--top', () => {
  it('counts only with --per-source: alone it is a usage error naming both flags', async () => {
    const run = await kept(['trend', '--data', SAMPLES, '--from', '2024-03-01', '--to', '2024-03-03', '--top', '3']);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain('--top: counts only with --per-source: add --per-source, or leave --top out');
    expect((await kept(['trend', '--data', SAMPLES, '--from', '2024-03-01', '--to', '2024-03-03', '--top', '3', '--per-source', '-o', 'csv'])).code).toBe(0);
  });

  it('is held, and sent on by API mode, only with perSource (its default 5 too)', () => {
    const now = new Date('2024-05-01T00:00:00Z');
    const plain = parseTrendQuery({ dateFrom: '2024-03-01', dateTo: '2024-03-03' }, now);
    expect(plain.top).toBeUndefined();
    expect(formatQuery('trend', plain)).not.toHaveProperty('top');
    const perSource = parseTrendQuery({ dateFrom: '2024-03-01', dateTo: '2024-03-03', perSource: 'true' }, now);
    expect(formatQuery('trend', perSource)).toMatchObject({ perSource: 'true', top: '5' });
  });
});

describe('hours of a zone', () => {
  it('are the zone\'s own hours, off UTC by 45 minutes or across a change of half an hour, each holding its conversions', async () => {
    const hours = async (zone: string, from: string, to: string) =>
      (JSON.parse((await kept(['trend', '--data', SAMPLES, '--from', from, '--to', to, '--by', 'hour', '--tz', zone, '-o', 'json'])).stdout) as { buckets: TrendBucket[] }).buckets;
    // Asia/Kathmandu is UTC+05:45: its 00:00 is 18:15 UTC the day before, every hour starts at :15 UTC
    const kathmandu = await hours('Asia/Kathmandu', '2024-03-05', '2024-03-06');
    expect(kathmandu.map((b) => b.bucket)).toEqual([5, 6].flatMap((d) => Array.from({ length: 24 }, (_, h) => `2024-03-0${d}T${String(h).padStart(2, '0')}`)));
    expect(kathmandu[0]).toMatchObject({ start: '2024-03-04T18:15:00.000Z', end: '2024-03-04T19:15:00.000Z' });
    expect(kathmandu.every((b) => b.start.slice(14) === '15:00.000Z')).toBe(true);
    // Australia/Lord_Howe goes back from 02:00 (+11) to 01:30 (+10:30) on 2024-04-07: its hour 01 is
    // 14:00-15:00 UTC, then 01:30-02:00 again (15:00-15:30), then 02:00 at 15:30
    const lordHowe = await hours('Australia/Lord_Howe', '2024-04-07', '2024-04-07');
    expect(lordHowe.slice(1, 4).map((b) => [b.bucket, b.start, b.end])).toEqual([
      ['2024-04-07T01', '2024-04-06T14:00:00.000Z', '2024-04-06T15:00:00.000Z'],
      ['2024-04-07T01', '2024-04-06T15:00:00.000Z', '2024-04-06T15:30:00.000Z'],
      ['2024-04-07T02', '2024-04-06T15:30:00.000Z', '2024-04-06T16:30:00.000Z'],
    ]);
    expect(lordHowe).toHaveLength(25);
    for (const b of [...kathmandu, ...lordHowe].filter((x) => x.firstConversionAt !== null)) {
      expect(b.firstConversionAt! >= b.start && b.lastConversionAt! < b.end, b.bucket).toBe(true);
    }
    expect(kathmandu.some((b) => b.conversionsNumber > 0)).toBe(true);
  });
});
