/**
 * --compare (issue 19, comparison), on small datasets built here: the other period's bounds
 * (previous, year, February 29), exact changes and their rounding, a report over the sources of
 * both periods (a source only in one of them, paging over the union), trend and total compared,
 * the columns of csv and --fields, the table's arrows, and the property that the compare side
 * equals a separate report, total and trend of the other period.
 */
import { join } from 'node:path';
import { Chalk } from 'chalk';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { LocalBackend } from '../src/local/backend.js';
import { importDataset } from '../src/local/import-writer.js';
import { changeOf, otherPeriod } from '../src/model/compare.js';
import { parseReportQuery, parseTotalQuery, parseTrendQuery, type RawParams } from '../src/model/query.js';
import { COMPARED_FIGURES } from '../src/model/shapes.js';
import type { ComparedAggregateRow, PeriodFigures } from '../src/model/types.js';
import { changeText, renderTable } from '../src/output/table.js';
import { cli, SAMPLES, shop, tempDir, withBackend, type OrderRow, type TouchRow } from './helpers.js';
import { keptBackends } from './kept-backends.js';

const NOW = new Date('2024-05-01T12:00:00Z');
const reportOf = (raw: RawParams) => parseReportQuery({ limit: '1000', ...raw }, NOW);

type Order = OrderRow & { source?: string; type?: string };

/** A click of the order's contact on its source an hour before each order, so every order is attributed there. */
function clicked(orders: Order[]): TouchRow[] {
  return orders
    .filter((o) => !o.refund)
    .map((o) => ({ contact: o.contact ?? 'c1', at: new Date(Date.parse(o.at) - 3_600_000).toISOString(), source: o.source ?? 'k1', type: o.type ?? 'campaign' }));
}

const dataOf = (orders: Order[]) => shop({ orders, touches: clicked(orders) });

/**
 * Each dataset (and imported file) opened once and lent to the commands on it (kept-backends.ts): the
 * tests are about the comparison; the csv one's compared run opens afresh (its stderr is empty).
 */
const kept = keptBackends();

describe('the other period', () => {
  it.each([
    ['a 31-day March in a leap year: the 31 days ending February 29', '2024-03-01', '2024-03-31', 'previous', '2024-01-30', '2024-02-29'],
    ['a 31-day March: the 31 days ending February 28', '2023-03-01', '2023-03-31', 'previous', '2023-01-29', '2023-02-28'],
    ['a single day: the day before', '2024-03-01', '2024-03-01', 'previous', '2024-02-29', '2024-02-29'],
    ['over a year end', '2024-01-01', '2024-01-10', 'previous', '2023-12-22', '2023-12-31'],
    ['a year before', '2024-03-01', '2024-03-31', 'year', '2023-03-01', '2023-03-31'],
    ['a year before February 29: February 28', '2024-02-29', '2024-02-29', 'year', '2023-02-28', '2023-02-28'],
    ['a leap February a year before: a day shorter', '2024-02-01', '2024-02-29', 'year', '2023-02-01', '2023-02-28'],
  ] as const)('%s', (_, dateFrom, dateTo, compareTo, from, to) => {
    expect(otherPeriod({ dateFrom, dateTo }, compareTo)).toEqual({ dateFrom: from, dateTo: to });
  });
});

describe('a change', () => {
  it('is exact: this minus that as the decimal it is', () => {
    expect(changeOf(0.3, 0.1)).toEqual({ absolute: 0.2, relative: 2 });
    expect(changeOf(0.1, 0.3).absolute).toBe(-0.2);
    expect(changeOf(1_234_567_890.12, 1_234_567_890.01).absolute).toBe(0.11);
    expect(changeOf(1_000_000_000.3, 999_999_999.9)).toEqual({ absolute: 0.4, relative: 0 });
    expect(changeOf(5, 2)).toEqual({ absolute: 3, relative: 1.5 });
  });

  it('is relative to that, rounded half away from zero to 4 decimals, null when that is 0', () => {
    expect(changeOf(4, 3).relative).toBe(0.3333);
    expect(changeOf(1, 3).relative).toBe(-0.6667);
    expect(changeOf(200.01, 200).relative).toBe(0.0001);
    expect(changeOf(199.99, 200).relative).toBe(-0.0001);
    expect(changeOf(7, 0)).toEqual({ absolute: 7, relative: null });
    expect(changeOf(0, 0)).toEqual({ absolute: 0, relative: null });
    expect(changeOf(0, 2.5)).toEqual({ absolute: -2.5, relative: -1 });
  });
});

describe('report --compare: the sources of both periods', () => {
  // March 2024 against the previous 31 days (2024-01-30..2024-02-29)
  const dir = dataOf([
    { id: 'o1', at: '2024-03-05T10:00:00Z', net: 0.25, gross: 0.3, source: 'k1' },
    { id: 'o2', at: '2024-02-10T10:00:00Z', net: 0.08, gross: 0.1, source: 'k1' },
    { id: 'o3', at: '2024-03-06T10:00:00Z', net: 1_000_000_000, gross: 1_210_000_000.1, source: 'k2', contact: 'c2' },
    { id: 'o4', at: '2024-01-30T00:30:00Z', net: 10, gross: 12.1, source: 'k3', contact: 'c3' },
    // before the other period: in neither
    { id: 'o5', at: '2024-01-29T23:30:00Z', net: 10, gross: 12.1, source: 'k4', contact: 'c4' },
  ]);
  const march = { dateFrom: '2024-03-01', dateTo: '2024-03-31', compareTo: 'previous' };

  it('sets each row beside its other side, a row of one period only with the other side empty', async () => {
    const page = await withBackend(dir, (b) => b.report(reportOf(march)));
    const rows = page.rows as ComparedAggregateRow[];
    expect(rows.map((r) => r.id)).toEqual(['k2', 'k1', 'k3']);
    expect(page.paging.totalCount).toBe(3);
    const [k2, k1, k3] = rows as [ComparedAggregateRow, ComparedAggregateRow, ComparedAggregateRow];
    expect(k2.comparison).toEqual({ dateFrom: '2024-01-30', dateTo: '2024-02-29', bucket: null, figures: null, change: null });
    expect(k1.comparison.figures).toMatchObject({ conversionsAmountWTax: 0.1, conversionsAmountWoTax: 0.08, conversionsNumber: 1, uniqueContacts: 1 });
    expect(k1.comparison.change!.conversionsAmountWTax).toEqual({ absolute: 0.2, relative: 2 });
    expect(k1.comparison.change!.conversionsNumber).toEqual({ absolute: 0, relative: 0 });
    // only in the other period: zeros, no first or last conversion, no breakdown, a detailUrl of this period
    expect(k3).toMatchObject({
      firstConversionAt: null,
      lastConversionAt: null,
      conversionsAmountWTax: 0,
      conversionsNumber: 0,
      uniqueContacts: 0,
      averageConversion: 0,
      breakdown: [],
      referenceCurrency: 'EUR',
    });
    expect(k3.source.detailUrl).toBe('/v1/campaigns/k3/conversions?sourceType=campaign&sourceId=k3&dateFrom=2024-03-01&dateTo=2024-03-31');
    expect(k3.comparison.figures!.conversionsAmountWTax).toBe(12.1);
    expect(k3.comparison.change!.conversionsAmountWTax).toEqual({ absolute: -12.1, relative: -1 });
    // the keys of a row: today's, then comparison
    expect(Object.keys(k3).at(-1)).toBe('comparison');
    expect(Object.keys(k3.comparison.figures!)).toEqual([...COMPARED_FIGURES]);
  });

  it('sorts and pages over the union by the current figures', async () => {
    await withBackend(dir, async (b) => {
      const whole = (await b.report(reportOf({ ...march, sort: 'name' }))).rows.map((r) => r.id);
      const paged: string[] = [];
      for (let offset = 0; offset < 3; offset++) {
        const page = await b.report(reportOf({ ...march, sort: 'name', limit: '1', offset: String(offset) }));
        expect(page.paging.totalCount).toBe(3);
        paged.push(...page.rows.map((r) => r.id));
      }
      expect(paged).toEqual(whole);
      const all = [];
      for await (const row of (await b.allReport(reportOf({ ...march, sort: '-conversionsNumber,name' }))).rows) all.push(row.id);
      expect(all).toEqual(['k1', 'k2', 'k3']);
    });
  });

  it('prints the comparison as csv columns after today\'s, and --fields picks them', async () => {
    const argv = ['report', '--data', dir, '--from', '2024-03-01', '--to', '2024-03-31'];
    const plain = await kept([...argv, '-o', 'csv']);
    const compared = await cli([...argv, '--compare', 'previous', '-o', 'csv']);
    expect(compared.code, compared.stderr).toBe(0);
    const header = compared.stdout.split('\n')[0]!.split(',');
    const today = plain.stdout.split('\n')[0]!.split(',');
    expect(header.slice(0, today.length)).toEqual(today);
    expect(header.slice(today.length, today.length + 5)).toEqual([
      'comparison.dateFrom',
      'comparison.dateTo',
      'comparison.figures.conversionsAmountWoTax',
      'comparison.change.conversionsAmountWoTax.absolute',
      'comparison.change.conversionsAmountWoTax.relative',
    ]);
    expect(header).toHaveLength(today.length + 2 + 3 * COMPARED_FIGURES.length);
    const picked = await kept([...argv, '--compare', 'previous', '-o', 'tsv', '--fields', 'id,comparison.figures.conversionsAmountWTax,comparison.change.conversionsAmountWTax.absolute,comparison.change.conversionsAmountWTax.relative']);
    expect(picked.stdout).toBe(
      'id\tcomparison.figures.conversionsAmountWTax\tcomparison.change.conversionsAmountWTax.absolute\tcomparison.change.conversionsAmountWTax.relative\nk2\t\t\t\nk1\t0.1\t0.2\t2\nk3\t12.1\t-12.1\t-1\n',
    );
    const json = JSON.parse((await kept([...argv, '--compare', 'previous', '-o', 'json', '--fields', 'id,comparison'])).stdout) as { conversions: object[] };
    expect(json.conversions[0]).toEqual({ id: 'k2', comparison: { dateFrom: '2024-01-30', dateTo: '2024-02-29', bucket: null, figures: null, change: null } });
    expect(compared.stderr).toBe('');
    const table = await kept([...argv, '--compare', 'previous', '-o', 'table', '--wide']);
    expect(table.stderr).toContain('1-3 of 3 sources, 2024-03-01..2024-03-31 compared with 2024-01-30..2024-02-29 (the previous period)');
    expect(table.stdout).toContain('Δ Revenue');
  });

  it('answers the same from an imported file (the per-day sums of both periods)', async () => {
    const file = join(tempDir(), 'shop.duckdb');
    await importDataset(dir, file);
    for (const compareTo of ['previous', 'year']) {
      const argv = ['report', '--from', '2024-03-01', '--to', '2024-03-31', '--compare', compareTo, '-o', 'csv'];
      const fromDir = await kept([...argv, '--data', dir]);
      expect(fromDir.code, fromDir.stderr).toBe(0);
      expect((await kept([...argv, '--data', file])).stdout).toBe(fromDir.stdout);
    }
  });

  it('refuses a bad --compare as a usage error', async () => {
    const bad = await cli(['report', '--data', dir, '--compare', 'last-year']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--compare: "last-year" is not one of previous, year');
  });

  it('per source, lines a series up with the same source there, and `other` with the rest of the sources there', async () => {
    await withBackend(dir, async (b) => {
      const res = await b.trend(parseTrendQuery({ ...march, interval: 'month', perSource: 'true', top: '1' }, NOW));
      // the current period's series: k2 (by revenue), the rest (k1); there: k2 nothing, the rest k1 and k3
      expect(res.buckets.map((x) => [x.series, x.conversionsNumber, x.comparison?.bucket, x.comparison?.figures?.conversionsAmountWTax])).toEqual([
        ['campaign:k2', 1, '2024-01', 0],
        ['other', 1, '2024-01', 12.1],
      ]);
      // a source's side, day by day, is the other period's series of that source alone
      const alone = await b.trend(parseTrendQuery({ dateFrom: '2024-01-30', dateTo: '2024-02-29', sourceId: 'k1', sourceType: 'campaign' }, NOW));
      const days = await b.trend(parseTrendQuery({ ...march, perSource: 'true', top: '2' }, NOW));
      const k1 = days.buckets.filter((x) => x.series === 'campaign:k1');
      expect(k1.map((x) => [x.comparison!.bucket, x.comparison!.figures])).toEqual(alone.buckets.map((x) => [x.bucket, compared(x)]));
      expect(k1.find((x) => x.comparison!.bucket === '2024-02-10')!.comparison!.figures!.conversionsAmountWTax).toBe(0.1);
    });
  });
});

describe('the percentage a person reads', () => {
  // 200.00 on March 1, 224.69 on March 2: +12.345 %, which is +12.3 % (the JSON's relative is 0.1235)
  const dir = dataOf([
    { id: 'o1', at: '2024-03-01T12:00:00Z', net: 200, gross: 200 },
    { id: 'o2', at: '2024-03-02T12:00:00Z', net: 224.69, gross: 224.69 },
  ]);
  const argv = ['report', '--data', dir, '--from', '2024-03-02', '--to', '2024-03-02', '--compare', 'previous'];

  it('is rounded once in the table, markdown and html, from the exact figures', async () => {
    const json = JSON.parse((await kept([...argv, '-o', 'json'])).stdout) as { conversions: ComparedAggregateRow[] };
    expect(json.conversions[0]!.comparison!.change!.conversionsAmountWTax).toEqual({ absolute: 24.69, relative: 0.1235 });
    const table = await kept([...argv, '-o', 'table']);
    expect(table.stdout).toContain('▲ +12.3 %');
    expect(table.stdout).not.toContain('12.4');
    const markdown = await kept([...argv, '-o', 'markdown']);
    expect(markdown.stdout).toContain('▲ +12.3 %');
    expect(markdown.stdout).not.toContain('12.4');
    const html = await kept([...argv, '-o', 'html']);
    expect(html.stdout).toContain('data-field="comparison.change.conversionsAmountWTax.relative" data-value="0.1235">12.3 %</td>');
  });
});

describe('trend and total --compare', () => {
  const dir = dataOf([
    { id: 'o1', at: '2024-02-29T10:00:00Z', net: 10, gross: 12.1 },
    { id: 'o2', at: '2023-02-28T10:00:00Z', net: 5, gross: 6.05 },
    { id: 'o3', at: '2023-03-01T10:00:00Z', net: 5, gross: 6.05, contact: 'c2' },
  ]);

  it('with year, lines a bucket up with the one of the same date a year before (29 February with the 28th); a bucket without one has figures null', async () => {
    const res = await withBackend(dir, (b) => b.trend(parseTrendQuery({ dateFrom: '2024-02-28', dateTo: '2024-03-01', compareTo: 'year' }, NOW)));
    expect(res.buckets.map((b) => [b.bucket, b.comparison?.bucket, b.comparison?.figures?.conversionsNumber ?? null])).toEqual([
      ['2024-02-28', '2023-02-28', 1],
      ['2024-02-29', '2023-02-28', 1],
      ['2024-03-01', '2023-03-01', 1],
    ]);
    expect(res.buckets[0]!.comparison).toMatchObject({ dateFrom: '2023-02-28', dateTo: '2023-03-01' });
    expect(res.buckets[1]!.comparison!.change!.conversionsAmountWTax).toEqual({ absolute: 6.05, relative: 1 });
    expect(res.buckets[2]!.comparison!.change!.conversionsAmountWTax).toEqual({ absolute: -6.05, relative: -1 });
    // The year after a 29 February: each day beside its own date, the 29th beside none; a month beside the same month.
    await withBackend(dir, async (b) => {
      const after = await b.trend(parseTrendQuery({ dateFrom: '2025-02-27', dateTo: '2025-03-02', compareTo: 'year' }, NOW));
      expect(after.buckets.map((x) => [x.bucket, x.comparison?.bucket])).toEqual([
        ['2025-02-27', '2024-02-27'],
        ['2025-02-28', '2024-02-28'],
        ['2025-03-01', '2024-03-01'],
        ['2025-03-02', '2024-03-02'],
      ]);
      const months = await b.trend(parseTrendQuery({ dateFrom: '2024-01-15', dateTo: '2024-03-31', interval: 'month', compareTo: 'year' }, NOW));
      expect(months.buckets.map((x) => [x.bucket, x.comparison?.bucket, x.comparison?.figures?.conversionsNumber])).toEqual([
        ['2024-01', '2023-01', 0],
        ['2024-02', '2023-02', 1],
        ['2024-03', '2023-03', 1],
      ]);
      // An ISO week beside the same week number a year before (not the other period's first, 2023-W08's one Sunday).
      const weeks = await b.trend(parseTrendQuery({ dateFrom: '2024-02-26', dateTo: '2024-03-03', interval: 'week', compareTo: 'year' }, NOW));
      expect(weeks.buckets.map((x) => [x.bucket, x.comparison?.bucket, x.comparison?.figures?.conversionsNumber])).toEqual([['2024-W09', '2023-W09', 2]]);
      // With previous: bucket i beside bucket i, in time order.
      const previous = await b.trend(parseTrendQuery({ dateFrom: '2024-03-01', dateTo: '2024-03-03', compareTo: 'previous' }, NOW));
      expect(previous.buckets.map((x) => [x.bucket, x.comparison?.bucket])).toEqual([
        ['2024-03-01', '2024-02-27'],
        ['2024-03-02', '2024-02-28'],
        ['2024-03-03', '2024-02-29'],
      ]);
    });
  });

  it('with year, an hour the clocks repeat lines up by its turn: the second hour 00 of a Havana day has none a year before', async () => {
    // America/Havana sets its clocks back from 01:00 to 00:00 on 2024-11-03; on 2023-11-03 it did not.
    const havana = dataOf([
      { id: 'h1', at: '2024-11-03T04:30:00Z' },
      { id: 'h2', at: '2024-11-03T05:30:00Z', contact: 'c2' },
      { id: 'h0', at: '2023-11-03T04:30:00Z', contact: 'c3' },
    ]);
    const res = await withBackend(havana, (b) => b.trend(parseTrendQuery({ dateFrom: '2024-11-03', dateTo: '2024-11-03', interval: 'hour', timeZone: 'America/Havana', compareTo: 'year' }, NOW)));
    expect(res.buckets.slice(0, 3).map((x) => [x.bucket, x.start, x.comparison?.bucket ?? null, x.comparison?.figures?.conversionsNumber ?? null])).toEqual([
      ['2024-11-03T00', '2024-11-03T04:00:00.000Z', '2023-11-03T00', 1],
      ['2024-11-03T00', '2024-11-03T05:00:00.000Z', null, null],
      ['2024-11-03T01', '2024-11-03T06:00:00.000Z', '2023-11-03T01', 0],
    ]);
  });

  it("with previous by week or month, a table names the bucket beside each (Against), and a note says where a period cuts one; none where both are whole", async () => {
    const table = await kept(['trend', '--data', dir, '--from', '2024-02-01', '--to', '2024-02-29', '--by', 'month', '--compare', 'previous', '-o', 'table']);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toContain('│ Bucket  │ Against │ Orders │ Δ Orders │');
    expect(table.stdout).toContain('│ 2024-02 │ 2024-01 │      1 │        – │');
    const note = (column: string) =>
      `note: --compare previous sets each month beside the month in its place in 2024-01-03..2024-01-31 (${column}), and a month that either period cuts counts only its days in it; --compare year sets each beside the same month a year before\n`;
    expect(table.stderr).toContain(note('Against'));
    const csv = await kept(['trend', '--data', dir, '--from', '2024-02-01', '--to', '2024-02-29', '--by', 'month', '--compare', 'previous', '-o', 'csv']);
    expect(csv.stderr).toBe(note('comparison.bucket'));
    // a period that cuts its weeks: with year too, a cut week is beside one cut otherwise
    const cut = await kept(['trend', '--data', dir, '--from', '2024-02-28', '--to', '2024-03-03', '--by', 'week', '--compare', 'year', '-o', 'csv']);
    expect(cut.stderr).toBe(
      'note: --compare sets each week beside the week in its place in 2023-02-28..2023-03-03 (comparison.bucket); a week the period cuts counts only its days in it, and the one beside it its days in the other period; a period from a Monday to a Sunday compares whole weeks\n',
    );
    // an empty result: its explanation alone names the periods (no summary line before it, no note)
    const empty = await kept(['trend', '--data', dir, '--from', '2024-06-03', '--to', '2024-06-30', '--by', 'month', '--compare', 'previous', '-o', 'table']);
    expect(empty.stderr).toMatch(/^No conversions in 2024-06-03\.\.2024-06-30 compared with 2024-05-06\.\.2024-06-02 \(the previous period\)\.\n/);
    // whole weeks on both sides (2024-02-19..2024-02-25 before 2024-02-26..2024-03-03), and --compare year: no note
    for (const compare of ['previous', 'year']) {
      const whole = await kept(['trend', '--data', dir, '--from', '2024-02-26', '--to', '2024-03-03', '--by', 'week', '--compare', compare, '-o', 'csv']);
      expect([whole.code, whole.stderr], compare).toEqual([0, '']);
    }
  });

  it('gives the total its comparison at the top level, in json and as columns', async () => {
    const argv = ['total', '--data', dir, '--from', '2024-02-01', '--to', '2024-02-29', '--compare', 'year'];
    const json = JSON.parse((await kept([...argv, '-o', 'json'])).stdout) as { total: PeriodFigures; comparison: { dateTo: string; figures: { conversionsNumber: number } } };
    expect(Object.keys(json)).toEqual(['dateFrom', 'dateTo', 'timeZone', 'total', 'comparison']);
    expect(json.comparison).toMatchObject({ dateFrom: '2023-02-01', dateTo: '2023-02-28', bucket: null, figures: { conversionsNumber: 1 } });
    const tsv = await kept([...argv, '-o', 'tsv', '--fields', 'conversionsNumber,comparison.dateTo,comparison.change.conversionsNumber.absolute']);
    expect(tsv.stdout).toBe('conversionsNumber\tcomparison.dateTo\tcomparison.change.conversionsNumber.absolute\n1\t2023-02-28\t0\n');
    const trend = await kept(['trend', '--data', dir, '--from', '2024-02-28', '--to', '2024-03-01', '--compare', 'year', '-o', 'csv', '--fields', 'bucket,comparison.bucket,comparison.figures.conversionsNumber']);
    expect(trend.stdout).toBe('bucket,comparison.bucket,comparison.figures.conversionsNumber\n2024-02-28,2023-02-28,1\n2024-02-29,2023-02-28,1\n2024-03-01,2023-03-01,1\n');
  });
});

describe('the table of a comparison', () => {
  it('words a change with a sign and an arrow, new where the other side is absent, – where it is 0', () => {
    const text = (current: number, other: number) => changeText({ ...changeOf(current, other), other });
    expect(text(112.34, 100)).toBe('▲ +12.3 %');
    expect(text(96, 100)).toBe('▼ −4.0 %');
    expect(text(100.05, 100)).toBe('▲ +0.1 %');
    expect(text(100, 100)).toBe('= 0 %');
    expect(text(3, 0)).toBe('–');
    expect(changeText(null)).toBe('new');
  });

  it('rounds the percentage once, from the exact figures, not from the 4-decimal relative change', () => {
    const text = (current: number, other: number) => changeText({ ...changeOf(current, other), other });
    // +12.345 %: 0.1235 as relative, which rounded again would be +12.4 %
    expect(changeOf(224.69, 200).relative).toBe(0.1235);
    expect(text(224.69, 200)).toBe('▲ +12.3 %');
    expect(text(175.31, 200)).toBe('▼ −12.3 %');
    // the boundaries of a tenth: +0.05 % is +0.1 %, +0.0499… % is below it
    expect(text(20_010, 20_000)).toBe('▲ +0.1 %');
    expect(text(20_009.99, 20_000)).toBe('▲ <0.1 %');
    // a change of a cent is not "= 0 %": the relative change rounds to 0 at 4 decimals, the figures differ
    expect(changeOf(20_000.01, 20_000).relative).toBe(0);
    expect(text(20_000.01, 20_000)).toBe('▲ <0.1 %');
    expect(text(19_999.99, 20_000)).toBe('▼ <0.1 %');
    // a negative other side: the direction is the relative change's sign, as in -o json
    expect(text(-50, -100)).toBe('▼ −50.0 %');
  });

  it('draws the change columns beside the headline figures, green and red only with colour', () => {
    const row = (name: string, revenue: number, change: { absolute: number; relative: number | null } | null) => ({
      id: name,
      name,
      source: { type: 'campaign' },
      conversionsAmountWTax: revenue,
      referenceCurrency: 'EUR',
      comparison: { figures: change === null ? null : { conversionsAmountWTax: revenue - change.absolute }, change: change === null ? null : { conversionsAmountWTax: change } },
    });
    const records = [row('up', 12, { absolute: 2, relative: 0.2 }), row('down', 8, { absolute: -2, relative: -0.2 }), row('fresh', 5, null), row('from zero', 3, { absolute: 3, relative: null })];
    const columns = ['name', 'conversionsAmountWTax', 'comparison.change.conversionsAmountWTax'];
    const plain = renderTable(records, columns, new Chalk({ level: 0 }));
    expect(plain).toContain('│ Source    │ Revenue (EUR) │ Δ Revenue │');
    expect(plain).toContain('│ up        │         12.00 │ ▲ +20.0 % │');
    expect(plain).toContain('│ down      │          8.00 │ ▼ −20.0 % │');
    expect(plain).toContain('│ fresh     │          5.00 │       new │');
    expect(plain).toContain('│ from zero │          3.00 │         – │');
    expect(plain).not.toContain('\u001b[');
    const coloured = renderTable(records, columns, new Chalk({ level: 1 }));
    expect(coloured).toContain('\u001b[32m▲ +20.0 %\u001b[39m');
    expect(coloured).toContain('\u001b[31m▼ −20.0 %\u001b[39m');
  });
});

// ---------------------------------------------------------------------------------------------
// Property: the compare side equals a separate report, total and trend of the other period

const SOURCES = [
  ['campaign', 'k1'],
  ['campaign', 'k2'],
  ['automation', 'a1'],
] as const;
const BASE = Date.UTC(2024, 0, 20);
const iso = (minute: number) => new Date(BASE + minute * 60_000).toISOString();
const day = (n: number) => iso(n * 24 * 60).slice(0, 10);

const orderArb = fc.record({
  contact: fc.constantFrom('c1', 'c2', 'c3'),
  minute: fc.integer({ min: 0, max: 60 * 24 * 60 }),
  cents: fc.integer({ min: 1, max: 5_000_000 }),
  country: fc.constantFrom('CZ', 'SK'),
  source: fc.integer({ min: 0, max: SOURCES.length - 1 }),
  refund: fc.boolean(),
});

const cases = fc.record({
  orders: fc.array(orderArb, { minLength: 1, maxLength: 12 }),
  start: fc.integer({ min: 10, max: 55 }),
  length: fc.integer({ min: 0, max: 12 }),
  filters: fc.record({ country: fc.option(fc.constant('SK')), q: fc.option(fc.constant('k')) }),
});

/**
 * Days 10 to 22 compared with days -3 to 9: orders at the last minute of day 9 and the first of
 * day 10, on the periods' first and last days, before the data and a refund; every source, both countries.
 */
const EDGES: typeof cases extends fc.Arbitrary<infer T> ? T : never = {
  orders: [
    { contact: 'c1', minute: 10 * 1440 - 1, cents: 12_345, country: 'CZ', source: 0, refund: false },
    { contact: 'c1', minute: 10 * 1440, cents: 54_321, country: 'CZ', source: 0, refund: true },
    { contact: 'c2', minute: 0, cents: 1, country: 'SK', source: 1, refund: false },
    { contact: 'c2', minute: 22 * 1440 + 1439, cents: 5_000_000, country: 'SK', source: 2, refund: false },
    { contact: 'c3', minute: 23 * 1440, cents: 777, country: 'CZ', source: 1, refund: false },
    { contact: 'c3', minute: 5 * 1440 + 30, cents: 250_050, country: 'SK', source: 2, refund: true },
  ],
  start: 10,
  length: 12,
  filters: { country: null, q: null },
};

/** The figures a comparison sets beside: those of a row, a bucket or a total. */
const compared = (figures: PeriodFigures) => Object.fromEntries(COMPARED_FIGURES.map((f) => [f, figures[f]]));

describe('property: the compare side is the other period\'s own report, total and trend', () => {
  it('for random data, periods and filters', async () => {
    await fc.assert(
      fc.asyncProperty(
        cases,
        async ({ orders, start, length, filters }) => {
          const rows = orders.flatMap((o, i) => {
            const [type, source] = SOURCES[o.source]!;
            const amount = (units: number) => (units / 100).toFixed(2);
            const order = { id: `o${i}`, contact: o.contact, at: iso(o.minute), net: amount(o.cents), gross: amount(o.cents * 1.21), country: o.country, source, type };
            return o.refund ? [order, { ...order, at: iso(o.minute + 600), net: amount(-o.cents), gross: amount(-o.cents * 1.21), refund: true }] : [order];
          });
          const dir = dataOf(rows);
          const raw: RawParams = { dateFrom: day(start), dateTo: day(start + length) };
          if (filters.country !== null) raw.country = filters.country;
          if (filters.q !== null) raw.q = filters.q;
          const other = otherPeriod({ dateFrom: raw.dateFrom!, dateTo: raw.dateTo! }, 'previous');
          await withBackend(dir, async (b: LocalBackend) => {
            const report = (await b.report(reportOf({ ...raw, compareTo: 'previous' }))).rows as ComparedAggregateRow[];
            const separate = (await b.report(reportOf({ ...raw, ...other }))).rows;
            const sides = report.filter((r) => r.comparison.figures !== null).map((r) => [r.source.type, r.id, r.comparison.figures]);
            const key = (x: unknown[]) => `${String(x[0])}:${String(x[1])}`;
            expect(sides.sort((x, y) => key(x).localeCompare(key(y)))).toEqual(separate.map((r) => [r.source.type, r.id, compared(r)]).sort((x, y) => key(x).localeCompare(key(y))));
            // the current side is the plain report's, over the same union less the rows of the other period only
            const plain = (await b.report(reportOf(raw))).rows;
            const current = report.filter((r) => r.conversionsNumber + r.refundsNumber > 0 || plain.some((p) => p.id === r.id && p.source.type === r.source.type));
            expect(current.map(({ comparison: _c, ...rest }) => rest)).toEqual(plain);
            const total = await b.total(parseTotalQuery({ ...raw, compareTo: 'previous' }, NOW));
            expect(total.comparison!.figures).toEqual(compared((await b.total(parseTotalQuery({ ...raw, ...other }, NOW))).total));
            const trend = await b.trend(parseTrendQuery({ ...raw, compareTo: 'previous' }, NOW));
            const otherTrend = await b.trend(parseTrendQuery({ ...raw, ...other }, NOW));
            expect(trend.buckets.map((x) => [x.comparison!.bucket, x.comparison!.figures])).toEqual(otherTrend.buckets.map((x) => [x.bucket, compared(x)]));
          });
        },
      ),
      // 11 runs (20 before): 10 random ones, which hold one-day periods, the last start (55) and each filter
      // alone, and first the example of the edges they miss: the earliest start, the longest period, no filter,
      // with transactions on both sides of the periods' edges.
      { seed: 20241127, numRuns: 11, endOnFailure: true, examples: [[EDGES]] },
    );
  });
});

describe('--compare with --breakdown', () => {
  it('is refused on report, trend and total: a comparison is of a whole row, bucket or total, not of one currency', async () => {
    for (const command of ['report', 'trend', 'total']) {
      const run = await cli([command, '--data', SAMPLES, '--from', '2024-03-01', '--to', '2024-03-31', '--breakdown', '--compare', 'previous', '-o', 'csv']);
      expect(run.code, command).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toContain('--breakdown and --compare do not go together');
    }
  });
});
