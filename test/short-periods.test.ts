/**
 * Issue 22, point 8: the short periods (--month, --since, --last-month, --ytd) of every command that
 * takes --from/--to for a period. Each sets both dates from today, the date of the injected clock
 * (io.now) in the period's zone; it prints exactly what --from/--to of those dates print on stdout,
 * names the dates it chose on stderr, and goes with neither --from/--to nor another of them.
 */
import { describe, expect, it } from 'vitest';
import { shortPeriod } from '../src/model/query.js';
import { PERIOD_FLAGS, flagKey } from '../src/model/parameters.js';
import { COMMANDS } from '../src/commands/index.js';
import { cli, SAMPLES } from './helpers.js';
import { keptBackends } from './kept-backends.js';

/** 2024-03-20 in UTC (a leap year: February has 29 days). */
const NOW = '2024-03-20T12:00:00Z';
/** samples/shop opened once and lent to every command (kept-backends.ts): the tests are about the dates; the summary line's test opens it afresh. */
const kept = keptBackends();
const run = (argv: string[], now = NOW) => kept(argv, { now });

describe('the dates of a short period', () => {
  const at = new Date(NOW);
  it.each([
    ['month', '2024-02', { dateFrom: '2024-02-01', dateTo: '2024-02-29' }],
    ['month', '2023-12', { dateFrom: '2023-12-01', dateTo: '2023-12-31' }],
    ['since', '1d', { dateFrom: '2024-03-20', dateTo: '2024-03-20' }],
    ['since', '7d', { dateFrom: '2024-03-14', dateTo: '2024-03-20' }],
    ['since', '2w', { dateFrom: '2024-03-07', dateTo: '2024-03-20' }],
    ['since', '2W', { dateFrom: '2024-03-07', dateTo: '2024-03-20' }],
    ['lastMonth', true, { dateFrom: '2024-02-01', dateTo: '2024-02-29' }],
    ['ytd', true, { dateFrom: '2024-01-01', dateTo: '2024-03-20' }],
  ] as const)('%s %s', (name, value, dates) => {
    expect(shortPeriod(name, value, at)).toEqual(dates);
  });

  it("takes today in the period's zone, and January's last month is December", () => {
    // 2024-01-01T04:00Z is still December 31 in New York
    const newYear = new Date('2024-01-01T04:00:00Z');
    expect(shortPeriod('ytd', true, newYear, 'America/New_York')).toEqual({ dateFrom: '2023-01-01', dateTo: '2023-12-31' });
    expect(shortPeriod('lastMonth', true, newYear, 'America/New_York')).toEqual({ dateFrom: '2023-11-01', dateTo: '2023-11-30' });
    expect(shortPeriod('lastMonth', true, newYear)).toEqual({ dateFrom: '2023-12-01', dateTo: '2023-12-31' });
    expect(shortPeriod('since', '1d', new Date('2024-03-20T23:30:00Z'), 'Europe/Prague')).toEqual({ dateFrom: '2024-03-21', dateTo: '2024-03-21' });
  });

  it('names the flag of a value that is not one', () => {
    expect(() => shortPeriod('month', '2024-3', at)).toThrow('--month: "2024-3" is not a month of the form YYYY-MM (2024-03)');
    expect(() => shortPeriod('month', '2024-13', at)).toThrow(/is not a month/);
    expect(() => shortPeriod('since', '7', at)).toThrow('--since: "7" is not a number of days or weeks: 7d, 2w');
    expect(() => shortPeriod('since', '3m', at)).toThrow(/is not a number of days or weeks/);
    expect(() => shortPeriod('since', '0d', at)).toThrow('--since: "0d" must be 1d or more (1d: today)');
    expect(() => shortPeriod('since', '999999d', at)).toThrow('--since: "999999d" reaches before 0001-01-01');
  });

  it("names each by its flag's key (the handler reads flags[name])", () => {
    for (const p of PERIOD_FLAGS) expect(flagKey(p.flag)).toBe(p.name);
  });
});

describe('the short periods on the command line', () => {
  it('are flags of every command with a --from/--to period, and of no other', () => {
    const withPeriod = COMMANDS.filter((c) => (c.options ?? []).some((o) => o.flags.startsWith('--month '))).map((c) => c.name);
    expect(withPeriod).toEqual(['report', 'items', 'trend', 'total', 'order', 'drill']);
  });

  it('order looks in the period of a short period as in that of --from/--to', async () => {
    for (const format of ['json', 'csv', 'table']) {
      const short = await run(['order', 'o-1', '--data', SAMPLES, '--month', '2024-01', '-o', format]);
      const long = await run(['order', 'o-1', '--data', SAMPLES, '--from', '2024-01-01', '--to', '2024-01-31', '-o', format]);
      expect(short.code, short.stderr).toBe(0);
      expect(short.stdout).toBe(long.stdout);
      expect(short.stdout).toContain('o-1');
    }
    // o-1 is from January: March has none of it; today (the test's clock) sets --since and --last-month
    const outside = await run(['order', 'o-1', '--data', SAMPLES, '--last-month']);
    expect(outside.code).toBe(1);
    expect(outside.stderr).toContain('none of its transactions falls within 2024-02-01..2024-02-29 (the order is from 2024-01-20)');
    // usage errors come before the data is opened (a --data that does not exist is not what is said), for several ids too
    const both = await cli(['order', 'o-1', 'o-2', '--data', '/nonexistent/convx', '--month', '2024-01', '--to', '2024-01-31'], { now: NOW });
    expect(both.code).toBe(2);
    expect(both.stderr.split('\n')[0]).toBe('convx: error: --month and --to do not go together: --month sets both dates of the period');
    const date = await cli(['order', 'o-1', '--data', '/nonexistent/convx', '--from', '2024-02-30'], { now: NOW });
    expect([date.code, date.stderr]).toEqual([2, 'convx: error: --from: "2024-02-30" is not a date: February 2024 has 29 days\n']);
  });

  it.each([
    ['report', ['--month', '2024-03'], '2024-03-01', '2024-03-31'],
    ['items', ['--since', '7d'], '2024-03-14', '2024-03-20'],
    ['trend', ['--last-month'], '2024-02-01', '2024-02-29'],
    ['total', ['--ytd'], '2024-01-01', '2024-03-20'],
    ['drill', ['--since', '2w'], '2024-03-07', '2024-03-20'],
  ])('%s %s prints what --from/--to of its dates print, and names them on stderr', async (command, flags, from, to) => {
    const target = command === 'drill' ? ['drill', 'k-1'] : [command];
    for (const format of ['json', 'csv']) {
      const short = await run([...target, '--data', SAMPLES, ...flags, '-o', format]);
      const long = await run([...target, '--data', SAMPLES, '--from', from, '--to', to, '-o', format]);
      expect(short.code, short.stderr).toBe(0);
      expect(short.stdout).toBe(long.stdout);
      expect(short.stdout.length).toBeGreaterThan(100);
      // the dates it chose and the flag that chose them, whatever the format
      expect(short.stderr).toContain(`${from}..${to} (${flags.join(' ')})`);
      // trend and total print no other line: the period alone, worded as report's summary line (no full stop)
      if (command === 'trend' || command === 'total') expect(short.stderr).toBe(`${from}..${to} (${flags.join(' ')})\n`);
    }
  });

  it("a report's defaulted dates are named on stderr in any format (its JSON holds no period); both given, nothing", async () => {
    const from = await run(['report', '--data', SAMPLES, '--from', '2024-03-01', '-o', 'json']);
    expect(from.stderr).toBe('1-15 of 15 sources, 2024-03-01..2024-03-30 (no --to: the 30 days from --from)\n');
    const to = await run(['report', '--data', SAMPLES, '--to', '2024-03-30', '-o', 'csv']);
    expect(to.stderr).toBe('1-15 of 15 sources, 2024-03-01..2024-03-30 (no --from: the 30 days ending --to)\n');
    expect(to.stdout).toBe((await run(['report', '--data', SAMPLES, '--from', '2024-03-01', '--to', '2024-03-30', '-o', 'csv'])).stdout);
    const none = await run(['report', '--data', SAMPLES, '-o', 'json']);
    expect(none.stderr).toMatch(/^1-\d+ of \d+ sources, 2024-02-20\.\.2024-03-20 \(no --from\/--to: the 30 days ending today, UTC\)\n$/);
    // a zone asked is named once, beside the dates
    const zoned = await run(['report', '--data', SAMPLES, '--tz', 'Europe/Prague', '-o', 'json']);
    expect(zoned.stderr).toMatch(/^1-\d+ of \d+ sources, 2024-02-20\.\.2024-03-20 Europe\/Prague \(no --from\/--to: the 30 days ending today\)\n$/);
    expect((await run(['report', '--data', SAMPLES, '--from', '2024-03-01', '--to', '2024-03-31', '-o', 'json'])).stderr).toBe('');
  });

  it("trend's, total's and drill's defaulted dates are named as report's, in any format; a detailUrl's own dates, nothing", async () => {
    const trend = await run(['trend', '--data', SAMPLES, '--from', '2024-03-01', '-o', 'json']);
    expect(trend.stderr).toBe('2024-03-01..2024-03-30 (no --to: the 30 days from --from)\n');
    const total = await run(['total', '--data', SAMPLES, '--to', '2024-03-30', '-o', 'csv']);
    expect(total.stderr).toBe('2024-03-01..2024-03-30 (no --from: the 30 days ending --to)\n');
    expect(total.stdout).toBe((await run(['total', '--data', SAMPLES, '--from', '2024-03-01', '--to', '2024-03-30', '-o', 'csv'])).stdout);
    const drill = await run(['drill', 'k-1', '--data', SAMPLES, '--from', '2024-03-01', '-o', 'tsv']);
    expect(drill.stderr).toMatch(/^1-\d+ of \d+ conversions, 2024-03-01\.\.2024-03-30 \(no --to: the 30 days from --from\)\n$/);
    const none = await run(['drill', 'k-1', '--data', SAMPLES, '-o', 'json']);
    expect(none.stderr).toMatch(/^1-\d+ of \d+ conversions, 2024-02-20\.\.2024-03-20 \(no --from\/--to: the 30 days ending today, UTC\)\n$/);
    const url = '/v1/campaigns/k-1/conversions?sourceType=campaign&sourceId=k-1&dateFrom=2024-03-01&dateTo=2024-03-31';
    expect((await run(['drill', url, '--data', SAMPLES, '-o', 'json'])).stderr).toBe('');
    expect((await run(['trend', '--data', SAMPLES, '--from', '2024-03-01', '--to', '2024-03-31', '-o', 'json'])).stderr).toBe('');
  });

  it('says so in the summary line of a table, and in the explanation of an empty result', async () => {
    const table = await cli(['report', '--data', SAMPLES, '--month', '2024-03', '-o', 'table'], { now: NOW });
    expect(table.stderr).toBe('1-15 of 15 sources, 2024-03-01..2024-03-31 (--month 2024-03)\n');
    const empty = await run(['report', '--data', SAMPLES, '--since', '7d'], '2025-06-10T08:00:00Z');
    expect(empty.code).toBe(0);
    expect(empty.stderr).toMatch(/^No sources in 2025-06-04\.\.2025-06-10 \(--since 7d\)\.\n/);
    expect(empty.stderr).not.toContain('no --from/--to');
  });

  it("takes today in the zone of --tz or the profile's", async () => {
    // 2024-03-31T23:30Z is already April 1 in Prague: --last-month is March there, February in UTC
    const now = '2024-03-31T23:30:00Z';
    const prague = await run(['total', '--data', SAMPLES, '--last-month', '--tz', 'Europe/Prague', '-o', 'json'], now);
    expect(JSON.parse(prague.stdout)).toMatchObject({ dateFrom: '2024-03-01', dateTo: '2024-03-31', timeZone: 'Europe/Prague' });
    const env = await kept(['total', '--data', SAMPLES, '--last-month', '-o', 'json'], { now, env: { CONVX_TZ: 'Europe/Prague' } });
    expect(env.stdout).toBe(prague.stdout);
    const utc = await run(['total', '--data', SAMPLES, '--last-month', '-o', 'json'], now);
    expect(JSON.parse(utc.stdout)).toMatchObject({ dateFrom: '2024-02-01', dateTo: '2024-02-29' });
  });

  it('replaces the period of a detailUrl, as --from/--to do', async () => {
    const url = '/v1/campaigns/k-1/conversions?sourceType=campaign&sourceId=k-1&dateFrom=2024-01-01&dateTo=2024-04-30';
    const short = await run(['drill', url, '--data', SAMPLES, '--month', '2024-03', '-o', 'csv']);
    const long = await run(['drill', url, '--data', SAMPLES, '--from', '2024-03-01', '--to', '2024-03-31', '-o', 'csv']);
    expect(short.code).toBe(0);
    expect(short.stdout).toBe(long.stdout);
  });

  it.each([
    [['--month', '2024-03', '--from', '2024-03-01'], '--month and --from do not go together: --month sets both dates of the period'],
    [['--to', '2024-03-31', '--ytd'], '--ytd and --to do not go together: --ytd sets both dates of the period'],
    [['--month', '2024-03', '--since', '7d'], '--month and --since do not go together: each sets the whole period'],
    [['--last-month', '--ytd'], '--last-month and --ytd do not go together: each sets the whole period'],
    [['--month', 'March'], '--month: "March" is not a month of the form YYYY-MM (2024-03)'],
    [['--since', '7'], '--since: "7" is not a number of days or weeks: 7d, 2w'],
  ])('%s is a usage error (exit 2)', async (flags, message) => {
    for (const command of [['report'], ['items'], ['trend'], ['total'], ['drill', 'k-1']]) {
      const result = await run([...command, '--data', SAMPLES, ...flags]);
      expect(result.code).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr.split('\n')[0]).toBe(`convx: error: ${message}`);
    }
  });
});
