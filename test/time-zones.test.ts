/**
 * Time zones (docs/reporting.md, Time zones): --tz / timeZone makes the period's dates days of
 * that zone; UTC stays byte for byte what it was; the zone is validated once; the profile's tz
 * is the default; API mode prints what local mode prints.
 */
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalZone, ICU_OLD_NAMES, periodInstants, utcDaysOf, zoneDate, zoneDayStart, zoneNames } from '../src/model/period.js';
import { parseItemsQuery } from '../src/model/query.js';
import type { AggregateRow, ConversionRecord } from '../src/model/types.js';
import { buildApp } from '../src/server/app.js';
import { createVerifier, signDevelopmentToken } from '../src/server/auth.js';
import { ServedDataset } from '../src/server/plugins.js';
import { cli, servedDataset, shop, tempDir, withBackend } from './helpers.js';
import { keptBackends } from './kept-backends.js';

/** Each dataset (and imported file) opened once and lent to every command on it (kept-backends.ts): the tests are about the periods, not the open. */
const kept = keptBackends();

const hours = ({ start, end }: { start: Date; end: Date }) => (end.getTime() - start.getTime()) / 3_600_000;
const iso = (d: Date) => d.toISOString();

describe('a day of a zone as instants (model/period.ts)', () => {
  it('Europe/Prague: a winter day, the 23-hour and the 25-hour DST days', () => {
    expect(iso(zoneDayStart('2024-03-02', 'Europe/Prague'))).toBe('2024-03-01T23:00:00.000Z');
    const short = periodInstants('2024-03-31', '2024-03-31', 'Europe/Prague');
    expect([iso(short.start), iso(short.end), hours(short)]).toEqual(['2024-03-30T23:00:00.000Z', '2024-03-31T22:00:00.000Z', 23]);
    const long = periodInstants('2024-10-27', '2024-10-27', 'Europe/Prague');
    expect([iso(long.start), iso(long.end), hours(long)]).toEqual(['2024-10-26T22:00:00.000Z', '2024-10-27T23:00:00.000Z', 25]);
  });

  it('odd offsets and DST of 30 minutes: Asia/Kathmandu (+05:45), Pacific/Chatham (+12:45/+13:45), Australia/Lord_Howe', () => {
    expect(iso(zoneDayStart('2024-03-01', 'Asia/Kathmandu'))).toBe('2024-02-29T18:15:00.000Z');
    const chatham = periodInstants('2024-09-29', '2024-09-29', 'Pacific/Chatham');
    expect([iso(chatham.start), hours(chatham)]).toEqual(['2024-09-28T11:15:00.000Z', 23]);
    expect(hours(periodInstants('2024-10-06', '2024-10-06', 'Australia/Lord_Howe'))).toBe(23.5);
    expect(hours(periodInstants('2024-04-07', '2024-04-07', 'Australia/Lord_Howe'))).toBe(24.5);
  });

  it('America/Santiago: where midnight does not exist, the day starts at the first instant that does (01:00 -03)', () => {
    const gap = periodInstants('2024-09-08', '2024-09-08', 'America/Santiago');
    expect([iso(gap.start), iso(gap.end), hours(gap)]).toEqual(['2024-09-08T04:00:00.000Z', '2024-09-09T03:00:00.000Z', 23]);
    // the day before ends where it starts: no instant is lost or counted twice
    expect(iso(periodInstants('2024-09-07', '2024-09-07', 'America/Santiago').end)).toBe('2024-09-08T04:00:00.000Z');
    expect(hours(periodInstants('2024-04-07', '2024-04-07', 'America/Santiago'))).toBe(24);
  });

  it('the days of a year tile time: each ends where the next starts, each holds its own date, 23 to 25 hours', () => {
    for (const zone of ['Europe/Prague', 'America/Santiago', 'Australia/Lord_Howe', 'Pacific/Chatham', 'Asia/Kathmandu', 'America/St_Johns', 'Africa/Casablanca']) {
      let day = '2024-01-01';
      for (let i = 0; i < 366; i++) {
        const { start, end } = periodInstants(day, day, zone);
        expect(zoneDate(start, zone), `${zone} ${day}`).toBe(day);
        expect(zoneDate(new Date(end.getTime() - 1), zone), `${zone} ${day}`).toBe(day);
        expect(hours({ start, end }), `${zone} ${day}`).toBeGreaterThanOrEqual(23);
        expect(hours({ start, end }), `${zone} ${day}`).toBeLessThanOrEqual(25);
        // the end is the start of the next calendar day
        const following = zoneDate(end, zone);
        expect(following, `${zone} after ${day}`).toBe(new Date(Date.parse(`${day}T12:00:00Z`) + 86_400_000).toISOString().slice(0, 10));
        expect(zoneDayStart(following, zone).getTime(), `${zone} after ${day}`).toBe(end.getTime());
        day = following;
      }
    }
  });

  it('the UTC days that hold a period, the date of an instant, UTC itself', () => {
    expect(utcDaysOf('2024-03-02', '2024-03-02', 'Europe/Prague')).toEqual({ dateFrom: '2024-03-01', dateTo: '2024-03-02' });
    expect(utcDaysOf('2024-03-02', '2024-03-05', 'America/New_York')).toEqual({ dateFrom: '2024-03-02', dateTo: '2024-03-06' });
    expect(utcDaysOf('0001-01-01', '9999-12-31', 'Pacific/Kiritimati')).toEqual({ dateFrom: '0001-01-01', dateTo: '9999-12-31' });
    // past the four-digit years (New York's last day ends on 10000-01-01 UTC, Tokyo's first starts on 0000-12-31): every day
    expect(utcDaysOf('9999-12-01', '9999-12-31', 'America/New_York')).toBeUndefined();
    expect(utcDaysOf('0001-01-01', '0001-01-31', 'Asia/Tokyo')).toBeUndefined();
    expect(zoneDate(new Date('2024-03-01T23:30:00Z'), 'Europe/Prague')).toBe('2024-03-02');
    expect(zoneDate(new Date('2024-03-01T23:30:00Z'), 'UTC')).toBe('2024-03-01');
    expect(hours(periodInstants('2024-03-31', '2024-03-31', 'UTC'))).toBe(24);
  });

  it("DuckDB's ICU knows every zone by the name Intl gives it, and starts its days at the same instants", async () => {
    const connection = await (await DuckDBInstance.create()).connect();
    try {
      const known = new Set((await connection.runAndReadAll('SELECT name FROM pg_timezone_names()')).getRows().map((r) => String(r[0])));
      const zones = Intl.supportedValuesOf('timeZone').map((z) => canonicalZone(z)!);
      expect(zones.filter((z) => !known.has(z))).toEqual([]);
      for (const [day, zone] of [['2024-03-31', 'Europe/Prague'], ['2024-10-27', 'Europe/Prague'], ['2024-03-01', 'Asia/Kathmandu'], ['2024-10-06', 'Australia/Lord_Howe']] as const) {
        await connection.run(`SET TimeZone = '${zone}'`);
        const reader = await connection.runAndReadAll(`SELECT strftime(CAST(TIMESTAMPTZ '${day} 00:00:00' AS TIMESTAMPTZ) AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%S.000Z')`);
        expect(String(reader.getRows()[0]![0]), `${zone} ${day}`).toBe(iso(zoneDayStart(day, zone)));
      }
    } finally {
      connection.closeSync();
    }
  });

  it('names: any case, the canonical spelling; offsets and unknown names are not zones', () => {
    expect(canonicalZone('europe/prague')).toBe('Europe/Prague');
    expect(canonicalZone('utc')).toBe('UTC');
    expect(canonicalZone('+02:00')).toBeUndefined();
    expect(canonicalZone('UTC+2')).toBeUndefined();
    expect(canonicalZone('Mars/Olympus')).toBeUndefined();
    // the parser holds UTC as absent (nothing carries it on) and another zone canonically
    expect(parseItemsQuery({ dateFrom: '2024-03-01', dateTo: '2024-03-01', timeZone: 'Etc/UTC' }).timeZone).toBeUndefined();
    expect(parseItemsQuery({ dateFrom: '2024-03-01', dateTo: '2024-03-01', timeZone: 'europe/PRAGUE' }).timeZone).toBe('Europe/Prague');
  });

  it('names asked again answer alike, also after more names than the answers kept (256) were asked', () => {
    const asked = ['europe/prague', 'Mars/Olympus', '+02:00', 'US/Eastern'];
    const first = asked.map((name) => canonicalZone(name));
    expect(first).toEqual(['Europe/Prague', undefined, undefined, 'America/New_York']);
    // Case variants of real zones, and names that are none: each a name of its own.
    const zones = Intl.supportedValuesOf('timeZone').slice(0, 200);
    for (const [i, zone] of zones.entries()) {
      expect(canonicalZone(zone.toUpperCase())).toBe(canonicalZone(zone));
      expect(canonicalZone(`Nowhere/${i}`)).toBeUndefined();
    }
    expect(asked.map((name) => canonicalZone(name))).toEqual(first);
  });

  it("names IANA has renamed: ICU's old spelling (Asia/Katmandu) is answered by the current one, whichever is given; the list of zones holds only current names", () => {
    const icu = (zone: string) => new Intl.DateTimeFormat('en-US', { timeZone: zone }).resolvedOptions().timeZone;
    for (const [old, current] of Object.entries(ICU_OLD_NAMES)) {
      // each pair is one zone to Intl (Node 20 resolves the current name to the old one)
      expect([old, current], current).toContain(icu(current));
      expect(icu(old), old).toBe(icu(current));
      for (const given of [current, old, old.toLowerCase(), current.toUpperCase()]) expect(canonicalZone(given), given).toBe(current);
    }
    expect(['Asia/Kathmandu', 'Asia/Kolkata', 'Europe/Kyiv', 'America/Nuuk', 'Asia/Ho_Chi_Minh', 'Asia/Yangon', 'Atlantic/Faroe', 'Pacific/Pohnpei', 'Pacific/Kanton'].map((z) => canonicalZone(z))).toEqual([
      'Asia/Kathmandu', 'Asia/Kolkata', 'Europe/Kyiv', 'America/Nuuk', 'Asia/Ho_Chi_Minh', 'Asia/Yangon', 'Atlantic/Faroe', 'Pacific/Pohnpei', 'Pacific/Kanton',
    ]);
    // a zone IANA merged into a renamed one is named by the current name too
    expect(canonicalZone('Europe/Uzhgorod')).toBe('Europe/Kyiv');
    const names = zoneNames();
    expect(names.filter((z) => z in ICU_OLD_NAMES)).toEqual([]);
    expect(names).toEqual(expect.arrayContaining(Object.values(ICU_OLD_NAMES)));
    expect(names.every((z) => canonicalZone(z) === z)).toBe(true);
    expect(parseItemsQuery({ dateFrom: '2024-03-01', dateTo: '2024-03-01', timeZone: 'Asia/Calcutta' }).timeZone).toBe('Asia/Kolkata');
  });
});

/** One click a month before each group of orders; every order is c1's, attributed to k1. */
const DATA = () =>
  shop({
    touches: [{ at: '2024-02-20T12:00:00Z' }, { at: '2024-03-20T12:00:00Z' }, { at: '2024-10-10T12:00:00Z' }],
    orders: [
      { id: 'start-exact', at: '2024-03-01T23:00:00.000Z' }, // Prague 2024-03-02 00:00:00.000
      { id: 'late-utc', at: '2024-03-01T23:30:00Z', net: '10.00', gross: '12.10' }, // Prague 2024-03-02 00:30
      { id: 'end-exact', at: '2024-03-02T23:00:00.000Z' }, // Prague 2024-03-03 00:00: not of 03-02
      { id: 'before-start', at: '2024-03-01T22:59:59.999Z' }, // Prague 2024-03-01 23:59:59.999
      { id: 'short-early', at: '2024-03-30T23:30:00Z' }, // Prague 2024-03-31 00:30 CET
      { id: 'short-late', at: '2024-03-31T21:30:00Z' }, // Prague 2024-03-31 23:30 CEST
      { id: 'after-short', at: '2024-03-31T22:00:00Z' }, // Prague 2024-04-01 00:00 CEST
      { id: 'long-early', at: '2024-10-26T22:30:00Z' }, // Prague 2024-10-27 00:30 CEST
      { id: 'long-late', at: '2024-10-27T22:30:00Z' }, // Prague 2024-10-27 23:30 CET
      { id: 'after-long', at: '2024-10-27T23:00:00Z' }, // Prague 2024-10-28 00:00 CET
      { id: 'ktm-last', at: '2024-03-01T18:14:59.999Z' }, // Kathmandu 2024-03-01 23:59:59.999
      { id: 'ktm-first', at: '2024-03-01T18:15:00Z' }, // Kathmandu 2024-03-02 00:00
    ],
  });

/** A dataset of one click of c1 on k1 and c1's orders, by id. */
const clickThenOrders = (click: string, orders: Record<string, string>) =>
  shop({ touches: [{ at: click }], orders: Object.entries(orders).map(([id, at]) => ({ id, at })) });

async function orderIds(dir: string, from: string, to: string, zone?: string): Promise<string[]> {
  const argv = ['items', '--data', dir, '--from', from, '--to', to, '--all', '-o', 'json', ...(zone ? ['--tz', zone] : [])];
  const result = await kept(argv);
  expect(result.code, result.stderr).toBe(0);
  return (JSON.parse(result.stdout) as { conversions: ConversionRecord[] }).conversions.map((r) => r.orderId).sort();
}

describe('the period in a zone, local mode', () => {
  const dir = DATA();

  it('a transaction at 23:30 UTC on Mar 1 is of Mar 2 in Europe/Prague, not of Mar 1; the start is in, the end out', async () => {
    expect(await orderIds(dir, '2024-03-02', '2024-03-02', 'Europe/Prague')).toEqual(['late-utc', 'start-exact']);
    expect(await orderIds(dir, '2024-03-01', '2024-03-01', 'Europe/Prague')).toEqual(['before-start', 'ktm-first', 'ktm-last']);
    // in UTC it is Mar 1's
    expect(await orderIds(dir, '2024-03-01', '2024-03-01')).toEqual(['before-start', 'ktm-first', 'ktm-last', 'late-utc', 'start-exact']);
  });

  it('the DST days: 23 hours on 2024-03-31, 25 on 2024-10-27, each with its first and last half hour', async () => {
    expect(await orderIds(dir, '2024-03-31', '2024-03-31', 'Europe/Prague')).toEqual(['short-early', 'short-late']);
    expect(await orderIds(dir, '2024-10-27', '2024-10-27', 'Europe/Prague')).toEqual(['long-early', 'long-late']);
    expect(await orderIds(dir, '2024-04-01', '2024-04-01', 'Europe/Prague')).toEqual(['after-short']);
  });

  it('a zone of +05:45: Asia/Kathmandu', async () => {
    // 2024-03-02 in Kathmandu: from 2024-03-01T18:15Z to 2024-03-02T18:15Z
    expect(await orderIds(dir, '2024-03-02', '2024-03-02', 'Asia/Kathmandu')).toEqual(['before-start', 'ktm-first', 'late-utc', 'start-exact']);
    expect(await orderIds(dir, '2024-03-01', '2024-03-01', 'asia/kathmandu')).toEqual(['ktm-last']);
  });

  it('the report of a zone counts what its items list, and its detailUrl carries the zone; drill on it gives the row’s records', async () => {
    const args = ['--data', dir, '--from', '2024-03-02', '--to', '2024-03-02', '--tz', 'europe/prague', '-o', 'json'];
    const report = await kept(['report', ...args]);
    expect(report.code, report.stderr).toBe(0);
    const [row] = (JSON.parse(report.stdout) as { conversions: AggregateRow[] }).conversions;
    expect(row).toMatchObject({ id: 'k1', conversionsNumber: 2, conversionsAmountWTax: 133.1, uniqueContacts: 1 });
    expect(row!.source.detailUrl).toBe('/v1/campaigns/k1/conversions?sourceType=campaign&sourceId=k1&dateFrom=2024-03-02&dateTo=2024-03-02&timeZone=Europe%2FPrague');
    const drill = await kept(['drill', row!.source.detailUrl, '--data', dir, '--all', '-o', 'json']);
    expect(drill.code, drill.stderr).toBe(0);
    const records = (JSON.parse(drill.stdout) as { conversions: ConversionRecord[] }).conversions;
    expect(records.map((r) => r.orderId).sort()).toEqual(['late-utc', 'start-exact']);
    // record timestamps stay UTC
    expect(records.map((r) => r.datetime).sort()).toEqual(['2024-03-01T23:00:00.000Z', '2024-03-01T23:30:00.000Z']);
    // --tz overrides the detailUrl's zone
    const utc = await kept(['drill', row!.source.detailUrl, '--tz', 'UTC', '--data', dir, '--all', '-o', 'json']);
    expect((JSON.parse(utc.stdout) as { conversions: ConversionRecord[] }).conversions.map((r) => r.orderId).sort()).toEqual(['end-exact']);
  });

  it('UTC is today’s output byte for byte: no flag, --tz UTC, --tz utc and --tz Etc/UTC print the same, with no timeZone in a detailUrl', async () => {
    for (const command of ['report', 'items']) {
      const base = [command, '--data', dir, '--from', '2024-03-01', '--to', '2024-03-31', '-o', 'json'];
      const plain = await kept(base);
      expect(plain.code, plain.stderr).toBe(0);
      expect(plain.stdout).not.toContain('timeZone');
      for (const zone of ['UTC', 'utc', 'Etc/UTC']) expect((await kept([...base, '--tz', zone])).stdout).toBe(plain.stdout);
      const table = [command, '--data', dir, '--from', '2024-03-01', '--to', '2024-03-31'];
      const tablePlain = await kept(table);
      expect(await kept([...table, '--tz', 'UTC'])).toEqual(tablePlain);
    }
  });

  it('trend and total: the zone’s days and hours as buckets (23 and 25 hours on the DST days), adding up to the report', async () => {
    const json = async (argv: string[]) => {
      const result = await kept([...argv, '--data', dir, '--tz', 'Europe/Prague', '-o', 'json']);
      expect(result.code, result.stderr).toBe(0);
      return JSON.parse(result.stdout);
    };
    type Bucket = { bucket: string; conversionsNumber: number; conversionsAmountWTax: number };
    const days = (await json(['trend', '--from', '2024-03-01', '--to', '2024-03-31'])) as { timeZone: string; buckets: Bucket[] };
    expect(days.timeZone).toBe('Europe/Prague');
    const byDay = Object.fromEntries(days.buckets.filter((b) => b.conversionsNumber).map((b) => [b.bucket, b.conversionsNumber]));
    expect(byDay).toEqual({ '2024-03-01': 3, '2024-03-02': 2, '2024-03-03': 1, '2024-03-31': 2 });
    for (const [day, n] of [['2024-03-31', 23], ['2024-10-27', 25]] as const) {
      expect(((await json(['trend', '--by', 'hour', '--from', day, '--to', day])) as { buckets: Bucket[] }).buckets).toHaveLength(n);
    }
    const total = (await json(['total', '--from', '2024-03-01', '--to', '2024-03-31'])) as { total: Bucket };
    const report = (await json(['report', '--from', '2024-03-01', '--to', '2024-03-31', '--all'])) as { conversions: AggregateRow[] };
    const sum = (rows: { conversionsNumber: number }[]) => rows.reduce((n, r) => n + r.conversionsNumber, 0);
    expect([sum(days.buckets), total.total.conversionsNumber]).toEqual([8, 8]);
    expect(sum(report.conversions)).toBe(8);
  });

  it('--compare previous compares with the previous days of the same zone', async () => {
    // the previous day (Mar 1 in Prague) starts on Feb 29 in UTC: attributed too
    const edge = clickThenOrders('2024-02-20T12:00:00Z', { edge: '2024-02-29T23:30:00Z', now: '2024-03-02T10:00:00Z' });
    const args = ['--data', edge, '--tz', 'Europe/Prague', '-o', 'json'];
    const compared = await kept(['report', ...args, '--from', '2024-03-02', '--to', '2024-03-02', '--compare', 'previous']);
    expect(compared.code, compared.stderr).toBe(0);
    const [row] = (JSON.parse(compared.stdout) as { conversions: (AggregateRow & { comparison: { dateFrom: string; figures: { conversionsNumber: number } } })[] }).conversions;
    expect([row!.conversionsNumber, row!.comparison.dateFrom, row!.comparison.figures.conversionsNumber]).toEqual([1, '2024-03-01', 1]);
    const total = JSON.parse((await kept(['total', ...args, '--from', '2024-03-02', '--to', '2024-03-02', '--compare', 'previous'])).stdout);
    expect(total.comparison.figures.conversionsNumber).toBe(1);
  });

  it('an imported file (with its UTC per-day sums) answers a zone from the transactions, as the directory does', async () => {
    const file = `${tempDir('convx-tz-import-')}/shop.duckdb`;
    const imported = await cli(['data', 'import', dir, '--into', file]);
    expect(imported.code, imported.stderr).toBe(0);
    for (const zone of ['Europe/Prague', 'Asia/Kathmandu']) {
      const args = ['--from', '2024-03-02', '--to', '2024-03-31', '--tz', zone, '--all', '-o', 'csv'];
      const [fromFile, fromDir] = [await kept(['report', '--data', file, ...args]), await kept(['report', '--data', dir, ...args])];
      expect([fromFile.code, fromDir.code], fromFile.stderr + fromDir.stderr).toEqual([0, 0]);
      expect(fromFile.stdout).toBe(fromDir.stdout);
    }
    const [row] = (JSON.parse((await kept(['report', '--data', file, '--from', '2024-03-02', '--to', '2024-03-02', '--tz', 'Europe/Prague', '-o', 'json'])).stdout) as { conversions: AggregateRow[] }).conversions;
    expect(row!.conversionsNumber).toBe(2);
  });

  it('a default period ends today in the zone (report, drill of a source id)', async () => {
    // 2024-03-01T23:30Z is already 2024-03-02 in Prague
    const now = '2024-03-01T23:30:00Z';
    for (const command of [['report'], ['drill', 'k1']]) {
      const args = [...command, '--data', dir, '--tz', 'Europe/Prague', '--all', '-o', 'json'];
      const defaulted = await kept(args, { now });
      expect(defaulted.code, defaulted.stderr).toBe(0);
      expect(defaulted.stdout).toBe((await kept([...args, '--from', '2024-02-02', '--to', '2024-03-02'], { now })).stdout);
      expect(defaulted.stdout).toContain('dateTo=2024-03-02');
    }
  });

  it('the attribution window is absolute time, the same in every zone', async () => {
    // a click 30 days and 30 minutes before an order never attributes it, whatever the zone's calendar says
    const windowed = clickThenOrders('2024-01-31T23:00:00Z', { inside: '2024-03-01T22:30:00Z', outside: '2024-03-01T23:30:00Z' });
    expect(await orderIds(windowed, '2024-03-01', '2024-03-02', 'Europe/Prague')).toEqual(['inside']);
    expect(await orderIds(windowed, '2024-03-01', '2024-03-02', 'Pacific/Kiritimati')).toEqual(['inside']);
    expect(await orderIds(windowed, '2024-03-01', '2024-03-02')).toEqual(['inside']);
  });

  it('the exchange rate stays that of the conversion’s UTC day', async () => {
    const priced = shop({
      touches: [{ at: '2024-02-20T12:00:00Z' }],
      orders: [{ id: 'czk', at: '2024-03-01T23:30:00Z', currency: 'CZK', net: '1000.00', gross: '1000.00' }],
      fx: [
        ['2024-03-01', 'CZK', '0.04'],
        ['2024-03-02', 'CZK', '0.05'],
      ],
    });
    const rows = await withBackend(priced, async (b) => (await b.items(parseItemsQuery({ dateFrom: '2024-03-02', dateTo: '2024-03-02', timeZone: 'Europe/Prague' }))).rows);
    expect(rows.map((r) => [r.orderId, r.conversionsReferenceAmount])).toEqual([['czk', 40]]);
  });

  it("a zone's period that reaches past 9999 in UTC: the directory and its imported file list the same records, paged as --all sorts their times' text; an order there is explained, not an error", async () => {
    // New York's 9999-12-31 ends at 10000-01-01T05:00Z: y10000's time is written with five digits, and
    // its text sorts before 9999's ('1' < '9'), unlike its instant. Pages sort as every other answer does.
    const edge = shop({
      touches: [{ at: '9999-12-20T12:00:00Z' }],
      orders: [
        { id: 'y9999', at: '9999-12-31T20:00:00Z' },
        { id: 'y10000', at: '9999-12-31T23:30:00-05:00' },
        { id: 'tie-b', at: '9999-12-31T19:00:00.000Z' },
        { id: 'tie-a', at: '9999-12-31T19:00:00Z' },
      ],
    });
    const file = `${tempDir('convx-tz-edge-')}/edge.duckdb`;
    const imported = await cli(['data', 'import', edge, '--into', file]);
    expect(imported.code, imported.stderr).toBe(0);
    const period = ['--from', '9999-12-31', '--to', '9999-12-31', '--tz', 'America/New_York'];
    const ids = (stdout: string) => (JSON.parse(stdout) as { conversions: ConversionRecord[] }).conversions.map((r) => `${r.orderId} ${r.datetime}`);
    const expected = ['y9999 9999-12-31T20:00:00.000Z', 'tie-b 9999-12-31T19:00:00.000Z', 'tie-a 9999-12-31T19:00:00.000Z', 'y10000 10000-01-01T04:30:00.000Z'];
    for (const data of [edge, file]) {
      const all = await kept(['items', '--data', data, ...period, '--all', '-o', 'json']);
      expect(all.code, all.stderr).toBe(0);
      expect(ids(all.stdout), data).toEqual(expected);
      const pages: string[] = [];
      for (let offset = 0; offset < expected.length; offset++) {
        const page = await kept(['items', '--data', data, ...period, '--limit', '1', '--offset', String(offset), '-o', 'json']);
        expect(page.code, page.stderr).toBe(0);
        pages.push(...ids(page.stdout));
      }
      expect(pages, data).toEqual(expected);
      const order = await kept(['order', 'y10000', '--data', data]);
      expect([order.code, order.stderr], data).toEqual([1, expect.stringContaining("the order's time, 10000-01-01T04:30:00.000Z, is on a UTC day past the dates a period names (0001-01-01..9999-12-31), which this look-up reads in UTC; a period of a time zone whose days reach it lists")]);
    }
    // the hint of an empty period names the data's days as they are written
    const empty = await kept(['items', '--data', edge, '--from', '2024-01-01', '--to', '2024-01-31']);
    expect(empty.stderr).toContain('the dataset holds orders from 9999-12-31 to 10000-01-01 and touches');
    expect(empty.stderr).toContain('try: convx items --data');
    expect(empty.stderr).toContain('--from 9999-12-01 --to 9999-12-31');
  });
});

describe('bad zones and the profile’s default', () => {
  const dir = DATA();

  it.each([
    ['Europe/Prag', /--tz: "Europe\/Prag" is not a time zone \(an IANA name such as Europe\/Prague\); did you mean Europe\/Prague/],
    ['+02:00', /--tz: "\+02:00" is an offset, not a time zone: give an IANA name/],
    ['Mars/Olympus', /--tz: "Mars\/Olympus" is not a time zone/],
  ])('--tz %s is a usage error (exit 2)', async (zone, message) => {
    for (const command of ['report', 'items']) {
      const result = await kept([command, '--data', dir, '--from', '2024-03-01', '--to', '2024-03-02', '--tz', zone]);
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(message);
      expect(result.stdout).toBe('');
    }
  });

  it('shell completion offers the zones', async () => {
    expect((await kept(['__complete', 'report', '--tz', 'Europe/Pr'])).stdout).toBe('Europe/Prague\n');
    expect((await kept(['__complete', 'drill', 'k1', '--tz', 'America/New_Y'])).stdout).toBe('America/New_York\n');
    // by their current names, not ICU's old ones
    expect((await kept(['__complete', 'trend', '--tz', 'Europe/Ky'])).stdout).toBe('Europe/Kyiv\n');
    expect((await kept(['__complete', 'trend', '--tz', 'Europe/Ki'])).stdout).toBe('Europe/Kirov\n');
    expect((await kept(['__complete', 'report', '--tz', 'Asia/Kat'])).stdout).toBe('Asia/Kathmandu\n');
    expect((await kept(['__complete', 'report', '--tz', 'Asia/Calc'])).stdout).toBe('');
  });

  it('an unknown zone near a renamed one is offered the current name (also near the old spelling)', async () => {
    for (const [typo, near] of [['Europe/Kyv', 'Europe/Kyiv'], ['Asia/Calcuta', 'Asia/Kolkata'], ['Asia/Katmandoo', 'Asia/Kathmandu']]) {
      const result = await kept(['report', '--data', dir, '--from', '2024-03-01', '--to', '2024-03-02', '--tz', typo!]);
      expect(result.code).toBe(2);
      const offered = /did you mean (.*)\?/.exec(result.stderr)![1]!.split(', ');
      expect(offered, typo).toContain(near);
      expect(offered.filter((z) => z in ICU_OLD_NAMES), typo).toEqual([]);
    }
  });

  it('config set tz stores the canonical name; reports use it; CONVX_TZ beats it; --tz beats both', async () => {
    const env = { XDG_CONFIG_HOME: tempDir('convx-tz-config-') };
    expect((await kept(['config', 'set', 'tz', 'Europe/Prag'], { env })).code).toBe(2);
    const set = await kept(['config', 'set', 'tz', 'europe/prague'], { env });
    expect(set.code, set.stderr).toBe(0);
    expect((await kept(['config', 'get', 'tz'], { env })).stdout).toBe('Europe/Prague\n');
    const args = ['--data', dir, '--from', '2024-03-02', '--to', '2024-03-02', '--all', '-o', 'json'];
    const prague = await kept(['items', ...args, '--tz', 'Europe/Prague']);
    expect((await kept(['items', ...args], { env })).stdout).toBe(prague.stdout);
    expect((await kept(['report', ...args], { env })).stdout).toBe((await kept(['report', ...args, '--tz', 'Europe/Prague'])).stdout);
    const utc = await kept(['items', ...args]);
    expect(utc.stdout).not.toBe(prague.stdout);
    expect((await kept(['items', ...args, '--tz', 'UTC'], { env })).stdout).toBe(utc.stdout);
    expect((await kept(['items', ...args], { env: { ...env, CONVX_TZ: 'UTC' } })).stdout).toBe(utc.stdout);
    expect((await kept(['items', ...args], { env: { CONVX_TZ: 'Europe/Prague' } })).stdout).toBe(prague.stdout);
    // a bad default names where it came from
    const bad = await kept(['report', ...args], { env: { CONVX_TZ: 'Europe/Prag' } });
    expect([bad.code, bad.stderr]).toEqual([2, expect.stringContaining('CONVX_TZ: "Europe/Prag" is not a time zone')]);
    expect((await kept(['report', ...args, '--tz', 'UTC'], { env: { CONVX_TZ: 'Europe/Prag' } })).stdout).toBe((await kept(['report', ...args])).stdout);
    // a name IANA replaced is stored by the current one
    expect((await kept(['config', 'set', 'tz', 'asia/calcutta'], { env })).code).toBe(0);
    expect((await kept(['config', 'get', 'tz'], { env })).stdout).toBe('Asia/Kolkata\n');
  });

  it('--help of every command with --tz says where its default comes from, as the code takes it', async () => {
    for (const command of ['report', 'items', 'trend', 'total']) {
      const help = (await cli([command, '--help'])).stdout.replace(/\s+/g, ' ');
      expect(help, command).toMatch(/--tz <zone> [^-]*default: CONVX_TZ or the profile's tz, else UTC/);
      expect(help, command).not.toMatch(/--tz, default UTC/);
    }
    // drill: a detailUrl's zone comes first (only --tz overrides it)
    const drill = (await cli(['drill', '--help'])).stdout.replace(/\s+/g, ' ');
    expect(drill).toContain("default: a detailUrl's own zone (none: UTC), else CONVX_TZ or the profile's tz, else UTC");
  });
});

/** The dataset served on loopback, with a token of its one plugin. */
async function serve(dir: string) {
  const secret = 'time-zones-secret-long-enough';
  const served = await ServedDataset.load(dir, { poolSize: 2 });
  const app = await buildApp({ dataset: () => served, verify: createVerifier({ secret }), log: () => undefined, version: 'test', limits: { rateLimitPerMinute: 0 } });
  return { served, app, token: await signDevelopmentToken(secret, 'default', '1h'), url: await app.listen({ host: '127.0.0.1', port: 0 }) };
}

describe('the server and API mode', () => {
  const dir = DATA();
  let server: Awaited<ReturnType<typeof serve>>;
  let token: string;
  let url: string;
  beforeAll(async () => {
    server = await serve(dir);
    ({ token, url } = server);
  });
  afterAll(async () => {
    await server.app.close();
    await server.served.retire();
  });

  const get = (path: string) => server.app.inject({ method: 'GET', url: path, headers: { authorization: `Bearer ${token}` } });

  it('API mode prints byte for byte what local mode prints, in zones with DST and odd offsets', async () => {
    for (const [from, to, zone] of [
      ['2024-03-02', '2024-03-02', 'Europe/Prague'],
      ['2024-03-31', '2024-10-27', 'Europe/Prague'],
      ['2024-03-01', '2024-03-02', 'Asia/Kathmandu'],
    ] as const) {
      for (const command of ['report', 'items', 'trend', 'total']) {
        const args = [command, '--from', from, '--to', to, '--tz', zone, ...(command === 'report' || command === 'items' ? ['--all'] : []), '-o', 'json'];
        const local = await kept([...args, '--data', dir]);
        expect(local.code, local.stderr).toBe(0);
        const api = await kept([...args, '--api', `${url}/v1`], { env: { CONVX_TOKEN: token } });
        expect(api.code, api.stderr).toBe(0);
        expect(api.stdout).toBe(local.stdout);
      }
    }
  });

  it("a zone IANA renamed is answered by its current name, given by it or by ICU's old one: JSON, detailUrl and stderr, local, API mode and the server alike", async () => {
    for (const [given, name] of [['Asia/Kathmandu', 'Asia/Kathmandu'], ['Asia/Katmandu', 'Asia/Kathmandu'], ['asia/calcutta', 'Asia/Kolkata'], ['Europe/Kiev', 'Europe/Kyiv']]) {
      for (const command of ['report', 'trend', 'total']) {
        // a period with conversions (json) and one without (the empty result's note on stderr)
        for (const [from, to] of [['2024-03-01', '2024-03-02'], ['2024-06-01', '2024-06-02']]) {
          const args = [command, '--from', from!, '--to', to!, '--tz', given!, '-o', 'json'];
          const local = await kept([...args, '--data', dir]);
          expect(local.code, local.stderr).toBe(0);
          const api = await kept([...args, '--api', `${url}/v1`], { env: { CONVX_TOKEN: token } });
          expect(api.code, api.stderr).toBe(0);
          expect(api.stdout).toBe(local.stdout);
          const old = Object.keys(ICU_OLD_NAMES).find((o) => ICU_OLD_NAMES[o] === name)!;
          for (const text of [local.stdout, local.stderr, api.stderr]) expect(text).not.toContain(old);
          if (command === 'report' && from === '2024-03-01') {
            expect(local.stdout).toContain(`timeZone=${encodeURIComponent(name!)}`);
          } else if (command !== 'report') {
            expect((JSON.parse(local.stdout) as { timeZone: string }).timeZone).toBe(name);
          }
          if (from === '2024-06-01') expect(local.stderr).toContain(` ${name}`);
        }
      }
      const served = await get(`/v1/conversions/total?dateFrom=2024-03-01&dateTo=2024-03-02&timeZone=${encodeURIComponent(given!)}`);
      expect((JSON.parse(served.body) as { timeZone: string }).timeZone).toBe(name);
    }
  });

  it('a served report in a zone reads the transactions (not the UTC per-day sums); its detailUrl on the alias route gives its records', async () => {
    const res = await get('/v1/conversions?dateFrom=2024-03-02&dateTo=2024-03-02&timeZone=europe/prague');
    expect(res.statusCode, res.body).toBe(200);
    const [row] = (JSON.parse(res.body) as { conversions: AggregateRow[] }).conversions;
    expect(row!.conversionsNumber).toBe(2);
    const items = await get(`${row!.source.detailUrl}&limit=1000`);
    expect(items.statusCode, items.body).toBe(200);
    expect((JSON.parse(items.body) as { conversions: ConversionRecord[] }).conversions.map((r) => r.orderId).sort()).toEqual(['late-utc', 'start-exact']);
    // UTC, named or not, is the same answer, with no timeZone in it
    const plain = await get('/v1/conversions?dateFrom=2024-03-02&dateTo=2024-03-02');
    expect((await get('/v1/conversions?dateFrom=2024-03-02&dateTo=2024-03-02&timeZone=UTC')).body).toBe(plain.body);
    expect(plain.body).not.toContain('timeZone');
  });

  it.each([
    ['/v1/conversions?timeZone=Europe/Prag', /"Europe\/Prag" is not a time zone .*did you mean Europe\/Prague/],
    ['/v1/conversions/items?dateFrom=2024-03-01&dateTo=2024-03-01&timeZone=%2B02:00', /"\+02:00" is an offset, not a time zone/],
    ['/v1/campaigns/k1/conversions?dateFrom=2024-03-01&dateTo=2024-03-01&timeZone=Mars/Olympus', /"Mars\/Olympus" is not a time zone/],
    ['/v1/conversions/timeframes?dateFrom=2024-03-01&dateTo=2024-03-01&timeZone=Europe/Prag', /"Europe\/Prag" is not a time zone/],
    ['/v1/conversions/total?timeZone=UTC%2B2', /"UTC\+2" is an offset/],
  ])('%s: a 400 problem naming timeZone, in the CLI’s words', async (path, message) => {
    const res = await get(path);
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    const problem = (JSON.parse(res.body) as { errors: { parameter: string; message: string }[] }).errors.find((e) => e.parameter === 'timeZone');
    expect(problem?.message).toMatch(message);
    const zone = decodeURIComponent(/timeZone=([^&]*)/.exec(path)![1]!);
    const local = await kept(['items', '--data', dir, '--from', '2024-03-01', '--to', '2024-03-01', '--tz', zone]);
    expect(local.code).toBe(2);
    expect(local.stderr).toContain(`--tz: ${problem!.message}`);
  });
});

describe("a day a zone's clocks skipped: Pacific/Apia's 2011-12-30 (Samoa crossed the date line, from 2011-12-29 23:59:59 -10:00 to 2011-12-31 00:00 +14:00)", () => {
  // o1 on 2011-12-29 02:00 in Apia, o2 on 2012-01-01 02:00: the data spans the day that does not exist
  const served = servedDataset(() => clickThenOrders('2011-12-28T12:00:00Z', { o1: '2011-12-29T12:00:00Z', o2: '2011-12-31T12:00:00Z' }));
  const apia = ['--tz', 'Pacific/Apia'];
  const jump = '2011-12-30 does not exist in Pacific/Apia (its clocks went from 2011-12-29 23:59:59 to 2011-12-31 00:00:00)';
  type Bucket = { bucket: string; start: string; end: string; conversionsNumber: number };

  it("a daily series keeps the day's bucket, with zeros and no time (its start its end), and a note says the day does not exist; the figures add up", async () => {
    const args = ['trend', '--from', '2011-12-28', '--to', '2012-01-01', ...apia, '-o', 'json'];
    const local = await served.local(args);
    expect(local.code, local.stderr).toBe(0);
    const { buckets } = JSON.parse(local.stdout) as { buckets: Bucket[] };
    expect(buckets.map((b) => b.bucket)).toEqual(['2011-12-28', '2011-12-29', '2011-12-30', '2011-12-31', '2012-01-01']);
    expect(buckets[2]).toMatchObject({ start: '2011-12-30T10:00:00.000Z', end: '2011-12-30T10:00:00.000Z', conversionsNumber: 0 });
    buckets.slice(1).forEach((b, i) => expect(b.start).toBe(buckets[i]!.end));
    expect(buckets.map((b) => b.conversionsNumber)).toEqual([0, 1, 0, 0, 1]);
    expect(local.stderr).toBe(`${jump}: its bucket holds no time\n`);
    // API mode: the same answer and the same note
    const api = await served.api(args);
    expect([api.code, api.stdout, api.stderr]).toEqual([0, local.stdout, local.stderr]);
    expect((await served.local([...args, '--quiet'])).stderr).toBe('');
  });

  it.each(['trend', 'trend --by hour', 'total', 'report', 'items'])(
    '%s of that day alone: empty, and the note says the period holds no time (not that no order of it is attributed)',
    async (line) => {
      const command = line.split(' ');
      const args = [...command, '--from', '2011-12-30', '--to', '2011-12-30', ...apia, '-o', 'json'];
      for (const result of [await served.local(args), await served.api(args)]) {
        expect(result.code, result.stderr).toBe(0);
        expect(result.stderr).toContain(`\n  ${jump}: the period holds no time\n`);
        expect(result.stderr).not.toContain('attributed');
        expect(result.stderr).not.toContain('its bucket');
      }
      // an hourly series of it has no hour at all
      if (command.includes('hour')) expect((JSON.parse((await served.local(args)).stdout) as { buckets: Bucket[] }).buckets).toEqual([]);
    },
  );

  it('a period that holds the day and time around it is explained as any other empty one', async () => {
    const result = await served.local(['trend', '--from', '2011-12-30', '--to', '2011-12-31', ...apia, '--country', 'SK']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain(`${jump}: its bucket holds no time\n`);
    expect(result.stderr).not.toContain('the period holds no time');
    expect(result.stderr).toContain('without the filters: ');
  });
});
