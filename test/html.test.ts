/** -o html (output/html.ts, svg.ts) and where the page goes (commands/page.ts): in process, on small data. */
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { changeOf } from '../src/model/compare.js';
import { getPath } from '../src/output/columns.js';
import { PAGE_CSP, reportHtml, TREND_PAGE_COLUMNS, trendHtml, type PageHeader } from '../src/output/html.js';
import { escapeHtml } from '../src/output/escape.js';
import { changeText } from '../src/output/table.js';
import { niceTicks } from '../src/output/svg.js';
import type { AggregateRow, TimeframesResponse, TrendBucket } from '../src/model/types.js';
import { Readable } from 'node:stream';
import { opener, printTrendPage } from '../src/commands/page.js';
import { createContext, type Io } from '../src/context.js';
import { PAGE_FORMATS } from '../src/output/formats.js';
import { packageVersion } from '../src/version.js';
import { Capture, cli, SAMPLES, shop, tempDir } from './helpers.js';
import { keptBackends } from './kept-backends.js';
import { expectFiguresOfJson, pageFigures } from './page-figures.js';

const PERIOD = ['--data', SAMPLES, '--from', '2024-03-01', '--to', '2024-03-31'];
/** Each dataset opened once and lent to every command on it (kept-backends.ts): the tests are about the pages; the empty report's opens it afresh. */
const kept = keptBackends();
const HEADER: PageHeader = { dateFrom: '2024-03-01', dateTo: '2024-03-31', referenceCurrency: 'EUR', version: '9.9.9' };
const HOSTILE = `<script>alert("x")</script> & 'q' <img src=x onerror=1>`;

function bucket(label: string, amount: number, extra: Partial<TrendBucket> = {}): TrendBucket {
  return {
    bucket: label,
    start: `${label}T00:00:00.000Z`,
    end: `${label}T23:59:59.999Z`,
    firstConversionAt: null,
    lastConversionAt: null,
    conversionsAmountWoTax: Math.round((amount / 1.21) * 100) / 100,
    conversionsAmountWTax: amount,
    conversionsNumber: amount ? 2 : 0,
    referenceCurrency: 'EUR',
    uniqueContacts: amount ? 1 : 0,
    averageConversion: amount / 2,
    averageUniqueConversion: amount,
    refundsAmountWoTax: 0,
    refundsAmountWTax: 0,
    refundsNumber: 0,
    grossConversionsAmountWoTax: 0,
    grossConversionsAmountWTax: amount,
    grossConversionsNumber: 0,
    breakdown: [],
    ...extra,
  } as TrendBucket;
}

const days = ['2024-03-01', '2024-03-02', '2024-03-03', '2024-03-04'];
const TREND: TimeframesResponse = {
  dateFrom: '2024-03-01',
  dateTo: '2024-03-04',
  timeZone: 'Europe/Prague',
  interval: 'day',
  buckets: days.map((d, i) => bucket(d, [10.5, 0, 1234.56, 0.1][i]!)),
};

function expectInert(html: string): void {
  expect(html.startsWith('<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n')).toBe(true);
  expect(html).toContain(`<meta http-equiv="Content-Security-Policy" content="${escapeHtml(PAGE_CSP)}">`);
  expect(PAGE_CSP).toBe("default-src 'none'; style-src 'unsafe-inline'; img-src data:");
  // no element loads or runs anything: no script, no src/href, no handler, no URL in the style
  const tags = html.match(/<[a-z][^>]*>/gi)!;
  expect(tags.filter((tag) => /^<(script|img|link|iframe|object|embed|a)\b|\s(src|href|on[a-z]+)=/i.test(tag))).toEqual([]);
  expect(html).not.toMatch(/url\(|@import|https?:/i);
}

describe('reportHtml', () => {
  it('is one inert document: CSP first, no script, no URL, the same bytes for the same rows', async () => {
    const json = JSON.parse((await kept(['report', ...PERIOD, '-o', 'json'])).stdout) as { conversions: AggregateRow[] };
    const page = reportHtml(json.conversions, HEADER);
    expectInert(page);
    expect(reportHtml(json.conversions, HEADER)).toBe(page);
    expect(reportHtml(structuredClone(json.conversions), { ...HEADER })).toBe(page);
    expect(page).toContain('<svg class="chart" role="img"');
    expect(page).toContain('<dt>Reference currency:</dt><dd>EUR</dd>');
    expect(page).toContain('convx 9.9.9');
    expectFiguresOfJson(pageFigures(page, 'data-source'), json.conversions);
  });

  it('escapes every text of the data, in the table, the chart and the header', async () => {
    const data = shop({
      orders: [{ id: 'o1', at: '2024-03-02T10:00:00Z' }, { id: 'o2', contact: 'c2', at: '2024-03-03T10:00:00Z', gross: 50 }],
      touches: [{ at: '2024-03-01T10:00:00Z', source: 'k1' }, { contact: 'c2', at: '2024-03-01T10:00:00Z', source: 'k"2' }],
      sources: [
        ['campaign', 'k1', HOSTILE, 'k1', '', '', '', '', '2024-01-01T00:00:00Z'],
        ['campaign', 'k"2', 'Tom & Jerry\'s "best"', 'k"2', '', '', '', '', '2024-01-01T00:00:00Z'],
      ],
    });
    const result = await kept(['report', '--data', data, '--from', '2024-03-01', '--to', '2024-03-31', '-o', 'html', '-q', '<b>']);
    expect(result.code).toBe(0);
    const empty = result.stdout;
    expect(empty).toContain('<dt>Filters:</dt><dd>-q &lt;b&gt;</dd>');
    const page = (await kept(['report', '--data', data, '--from', '2024-03-01', '--to', '2024-03-31', '-o', 'html'])).stdout;
    expectInert(page);
    expect(page).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;q&#39; &lt;img src=x onerror=1&gt;');
    expect(page).toContain('Tom &amp; Jerry&#39;s &quot;best&quot;');
    expect(page).toContain('data-source="campaign:k&quot;2"');
    expect(page).not.toContain('<img');
    // the chart cuts long names; the cut text is escaped as well
    expect(page).toMatch(/text-anchor="end">&lt;script&gt;alert\(&quot;x&quot;\)&lt;\/script&gt;…<\/text>/);
  });

  it('rows compared with another period get its revenue and the change beside theirs', async () => {
    const rows = (JSON.parse((await kept(['report', ...PERIOD, '--limit', '2', '-o', 'json'])).stdout) as { conversions: AggregateRow[] }).conversions;
    const change = { absolute: 12.5, relative: 0.25 };
    const compared = [{ ...rows[0]!, comparison: { dateFrom: '2024-01-30', dateTo: '2024-02-29', bucket: null, figures: { conversionsAmountWTax: 50 }, change: { conversionsAmountWTax: change } } }, rows[1]!];
    const page = reportHtml(compared as AggregateRow[], HEADER);
    expect(page).toContain('<th class="num" scope="col">Revenue before (EUR)</th><th class="num" scope="col">Change (EUR)</th><th class="num" scope="col">Change %</th>');
    expect(page).toContain('data-field="comparison.change.conversionsAmountWTax.absolute" data-value="12.5">12.50</td><td class="num" data-field="comparison.change.conversionsAmountWTax.relative" data-value="0.25">25.0 %</td>');
    expect(page).toContain('data-field="comparison.figures.conversionsAmountWTax" data-value="null"></td>');
    // no relative change, as the tables say it: a row the other period has not is "new", one whose other side is 0 "–"
    const fresh = { ...rows[0]!, comparison: { dateFrom: '2024-01-30', dateTo: '2024-02-29', bucket: null, figures: null, change: null } };
    const fromZero = { ...rows[0]!, comparison: { dateFrom: '2024-01-30', dateTo: '2024-02-29', bucket: null, figures: { conversionsAmountWTax: 0 }, change: { conversionsAmountWTax: { absolute: 10, relative: null } } } };
    expect(reportHtml([fresh] as unknown as AggregateRow[], HEADER)).toContain('data-field="comparison.change.conversionsAmountWTax.relative" data-value="null">new</td>');
    expect(reportHtml([fromZero] as unknown as AggregateRow[], HEADER)).toContain('data-field="comparison.change.conversionsAmountWTax.relative" data-value="null">–</td>');
    expect(changeText(null)).toBe('new');
    expect(changeText({ absolute: 10, relative: null, other: 0 })).toBe('–');
    // the percent from the two exact figures, rounded once (+12.345 % is 12.3 %, where its 4-decimal relative 0.1235 would give 12.4)
    const withChange = (current: number, other: number) =>
      reportHtml([{ ...rows[0]!, comparison: { dateFrom: '2024-01-30', dateTo: '2024-02-29', bucket: null, figures: { conversionsAmountWTax: other }, change: { conversionsAmountWTax: changeOf(current, other) } } }] as unknown as AggregateRow[], HEADER);
    expect(withChange(224.69, 200)).toContain('data-value="0.1235">12.3 %</td>');
    expect(withChange(1378.53, 50)).toContain('data-value="26.5706">2657.1 %</td>');
    expect(withChange(48, 50)).toContain('data-value="-0.04">-4.0 %</td>');
    expect(withChange(50, 50)).toContain('data-value="0">0 %</td>');
    expect(withChange(20_000.01, 20_000)).toContain('data-value="0">&lt;0.1 %</td>');
    expect(withChange(19_999.99, 20_000)).toContain('data-value="0">-&lt;0.1 %</td>');
    expect(reportHtml(rows, HEADER)).not.toContain('Revenue before');
  });

  it('an empty report is a page that says so, with the period (exit 0, the reason on stderr)', async () => {
    const result = await cli(['report', '--data', SAMPLES, '--from', '2030-01-01', '--to', '2030-01-31', '-o', 'html']);
    expect(result.code).toBe(0);
    expectInert(result.stdout);
    expect(result.stdout).toContain('<p class="empty">No conversions were attributed to a source in this period.</p>');
    expect(result.stdout).toContain('<dd>2030-01-01 to 2030-01-31</dd>');
    expect(result.stdout).toContain('<dt>Reference currency:</dt><dd>none (no conversions)</dd>');
    expect(result.stdout).not.toContain('<table');
    expect(result.stderr).toMatch(/^No sources in 2030-01-01\.\.2030-01-31/);
  });

  it('holds every row from --offset on, whatever --limit says, with totals of what adds up', async () => {
    const json = JSON.parse((await kept(['report', ...PERIOD, '--all', '-o', 'json'])).stdout) as { conversions: AggregateRow[] };
    const page = (await kept(['report', ...PERIOD, '--limit', '2', '-o', 'html'])).stdout;
    expect(json.conversions.length).toBeGreaterThan(2);
    expectFiguresOfJson(pageFigures(page, 'data-source'), json.conversions);
    const orders = json.conversions.reduce((sum, r) => sum + r.conversionsNumber, 0);
    expect(page).toMatch(new RegExp(`<tfoot><tr><td>Total</td><td></td><td class="num" data-total="conversionsNumber">${orders}</td>`));
    const offset = (await kept(['report', ...PERIOD, '--offset', '3', '-o', 'html'])).stdout;
    expect(pageFigures(offset, 'data-source').size).toBe(json.conversions.length - 3);
  });
});

describe('trendHtml', () => {
  it('renders every bucket, its figures as JSON writes them, a column per bucket, the zone and currency', () => {
    const page = trendHtml(TREND, { referenceCurrency: 'EUR', version: '9.9.9' });
    expectInert(page);
    expect(trendHtml(structuredClone(TREND), { referenceCurrency: 'EUR', version: '9.9.9' })).toBe(page);
    const figures = pageFigures(page, 'data-bucket');
    expect([...figures.keys()]).toEqual(days);
    TREND.buckets.forEach((b) => expect(figures.get(b.bucket)!.get('conversionsAmountWTax')).toBe(JSON.stringify(b.conversionsAmountWTax)));
    expect(figures.get('2024-03-03')!.get('conversionsAmountWTax')).toBe('1234.56');
    expect(page.match(/<rect /g)).toHaveLength(days.length);
    for (const d of days) expect(page).toContain(`>${d}</text>`);
    expect(page).toContain('<dt>Time zone:</dt><dd>Europe/Prague</dd>');
    expect(page).toContain('Revenue with tax per day (EUR)');
    expect(page).toContain('<th class="num" scope="col">Revenue (EUR)</th>');
  });

  it('draws a line and a legend entry per series, and shows the comparison columns when buckets have them', () => {
    const series = [
      ['campaign:k-1', `A <b>`],
      ['other', 'other'],
    ] as const;
    const comparison = {
      dateFrom: '2024-02-26',
      dateTo: '2024-02-29',
      bucket: '2024-02-26',
      figures: null,
      change: null,
    };
    const buckets = days.flatMap((d, i) => series.map(([key, name], k) => bucket(d, i * 10 + k, { series: key, seriesName: name, comparison })));
    const page = trendHtml({ ...TREND, buckets }, { referenceCurrency: 'EUR', version: '9.9.9' });
    expect(page.match(/<polyline /g)).toHaveLength(2);
    expect(page).toContain('>A &lt;b&gt;</text>');
    expect(page).toContain('stroke-dasharray="6 3"');
    expect(page.match(/<tr data-bucket=/g)).toHaveLength(8);
    expect(page).toContain('data-series="campaign:k-1"');
    expect(page).toContain('data-field="comparison.figures.conversionsAmountWTax" data-value="null"></td>');
  });

  it("trend's hook prints the page through a command's context: stdout, or --output", async () => {
    const stdout = new Capture();
    const stderr = new Capture();
    // the outside world of a command, no terminal: what a handler's ctx.io holds
    const [streams, flags] = [{ stdin: Readable.from([]), stdout, stderr }, { stdinIsTTY: false, stdoutIsTTY: false, stderrIsTTY: false }];
    const io: Io = { ...streams, ...flags, env: {}, cwd: tempDir(), now: () => new Date(0), onSignal: () => () => undefined };
    const ctx = await createContext(io, { color: false, format: 'html', formats: PAGE_FORMATS }, async () => {
      throw new Error('no backend');
    });
    await printTrendPage(ctx, TREND, {}, { dataVersion: 'v1', filters: ['--country cz'] });
    expect(stdout.text).toBe(trendHtml(TREND, { referenceCurrency: 'EUR', version: packageVersion(), dataVersion: 'v1', filters: ['--country cz'] }));
    await printTrendPage(ctx, TREND, { output: 'trend.html' });
    expect(readFileSync(join(io.cwd, 'trend.html'), 'utf8')).toBe(trendHtml(TREND, { referenceCurrency: 'EUR', version: packageVersion() }));
    expect(stderr.text).toBe('wrote trend.html\n');
  });

  it('an empty series is a page that says so', () => {
    const page = trendHtml({ ...TREND, buckets: [] }, { referenceCurrency: undefined, version: '1' });
    expectInert(page);
    expect(page).toContain('No buckets in this period.');
  });

  it('ticks are round numbers from 0 past the highest value', () => {
    expect(niceTicks(0, 1962.4)).toEqual([0, 500, 1000, 1500, 2000]);
    expect(niceTicks(0, 0.3)).toEqual([0, 0.1, 0.2, 0.3]);
    expect(niceTicks(-461.36, 1713.6)).toEqual([-500, 0, 500, 1000, 1500, 2000]);
    expect(niceTicks(0, 0)).toEqual([0, 1]);
  });
});

describe('-o html on the command line', () => {
  it('is a format of report and trend only: the others refuse it as before', async () => {
    for (const argv of [['items'], ['drill', 'k-3'], ['order', 'o-1'], ['contact', 'c-1'], ['total']]) {
      const result = await kept([...argv, ...PERIOD.slice(0, 2), '-o', 'html']);
      expect(result.code, argv[0]).toBe(2);
      // order and contact print markdown too (issue 22)
      const formats = ['order', 'contact'].includes(argv[0]!) ? 'table, json, jsonl, csv, tsv, markdown' : 'table, json, jsonl, csv, tsv';
      expect(result.stderr).toContain(`-o: "html" is not one of ${formats}\n`);
    }
    // report prints markdown too (issue 22): its list wraps
    for (const command of ['report', 'trend']) expect((await kept([command, '--help'])).stdout.replace(/\s+/g, ' ')).toMatch(/output format: table, json, jsonl, csv, tsv, html/);
    expect((await kept(['items', '--help'])).stdout).toMatch(/output format: table, json, jsonl, csv, tsv\n/);
  });

  it('trend -o html: every bucket with the figures of trend -o json', async () => {
    const argv = ['trend', ...PERIOD, '--country', 'cz'];
    const json = JSON.parse((await kept([...argv, '-o', 'json'])).stdout) as TimeframesResponse;
    const page = (await kept([...argv, '-o', 'html'])).stdout;
    expectInert(page);
    expect(page).toContain('<dt>Filters:</dt><dd>--country CZ</dd>');
    const figures = pageFigures(page, 'data-bucket');
    expect([...figures.keys()]).toEqual(json.buckets.map((b) => b.bucket));
    expect(json.buckets).toHaveLength(31);
    for (const b of json.buckets) {
      for (const column of TREND_PAGE_COLUMNS.slice(1)) expect(figures.get(b.bucket)!.get(column), `${b.bucket} ${column}`).toBe(JSON.stringify(getPath(b, column)));
    }
    const refused = await kept([...argv, '-o', 'html', '--breakdown']);
    expect([refused.code, refused.stderr]).toEqual([2, expect.stringContaining('--breakdown does not apply to -o html')]);
  });

  it('refuses flags that do not apply to a page', async () => {
    const refused = [
      [['-o', 'json', '--output', 'x.html'], '--output applies to -o html only'],
      [['--open'], '--open applies to -o html only'],
      [['-o', 'html', '--open'], '--open opens the page written by --output'],
      [['-o', 'html', '--breakdown'], '--breakdown does not apply to -o html'],
      [['-o', 'html', '--fields', 'name'], '--fields does not apply to -o html'],
    ] as const;
    for (const [flags, message] of refused) {
      const result = await kept(['report', ...PERIOD, ...flags]);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(message);
      expect(result.stdout).toBe('');
    }
  });

  it('--output writes the page whole (replacing a file), stdout stays empty; a failed write leaves no file', async () => {
    const dir = tempDir();
    const file = join(dir, 'report.html');
    writeFileSync(file, 'old');
    const result = await kept(['report', ...PERIOD, '-o', 'html', '--output', 'report.html'], { cwd: dir });
    expect(result.code).toBe(0);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe('wrote report.html\n');
    expect(readFileSync(file, 'utf8')).toBe((await kept(['report', ...PERIOD, '-o', 'html'])).stdout);
    // a period a flag chose is named as every format names it (no full stop of its own)
    const month = ['report', '--data', SAMPLES, '--month', '2024-03'];
    const chosen = await kept([...month, '-o', 'html', '--output', 'month.html'], { cwd: tempDir() });
    expect(chosen.stderr).toBe('wrote month.html\n2024-03-01..2024-03-31 (--month 2024-03)\n');
    expect((await kept([...month, '-o', 'json'])).stderr).toMatch(/ 2024-03-01\.\.2024-03-31 \(--month 2024-03\)\n$/);
    // a directory in the way: the rename fails, and neither it nor a temporary file is left changed
    mkdirSync(join(dir, 'taken.html'));
    const failed = await kept(['report', ...PERIOD, '-o', 'html', '--output', join(dir, 'taken.html')]);
    expect(failed.code).toBe(2);
    expect(failed.stderr).toMatch(/--output: cannot write .*taken\.html: (it is a folder|EEXIST|ENOTEMPTY)/);
    expect(readdirSync(dir).sort()).toEqual(['report.html', 'taken.html']);
    const missing = await kept(['report', ...PERIOD, '-o', 'html', '--output', join(dir, 'no', 'such', 'x.html')]);
    expect(missing.stderr).toMatch(/cannot write .*x\.html: its folder does not exist\n/);
    expect(existsSync(join(dir, 'no'))).toBe(false);
  });

  it('the opener of each platform', () => {
    expect(opener('linux', '/r.html')).toEqual({ command: 'xdg-open', args: ['/r.html'] });
    expect(opener('darwin', '/r.html')).toEqual({ command: 'open', args: ['/r.html'] });
    expect(opener('win32', 'C:\\r.html')).toEqual({ command: 'cmd', args: ['/c', 'start', '', 'C:\\r.html'] });
  });

  it.skipIf(process.platform !== 'linux')('--open starts the opener on a desktop only, and a missing one is a warning', async () => {
    const dir = tempDir();
    const bin = join(dir, 'bin');
    mkdirSync(bin);
    writeFileSync(join(bin, 'xdg-open'), `#!/bin/sh\necho "$1" > "${join(dir, 'opened')}"\n`);
    chmodSync(join(bin, 'xdg-open'), 0o755);
    const open = ['report', ...PERIOD, '-o', 'html', '--output', join(dir, 'r.html'), '--open', '--no-color'];
    const piped = await kept(open, { env: { PATH: bin } });
    expect(piped.stderr).toContain('not opening');
    expect(piped.stderr).toContain('in a browser: stdout is not a terminal');
    const ci = await kept(open, { env: { PATH: bin, CI: 'true' }, tty: true });
    expect(ci.stderr).toContain('in a browser: CI is set');
    expect(existsSync(join(dir, 'opened'))).toBe(false);
    const desktop = await kept(open, { env: { PATH: bin }, tty: true });
    expect(desktop.code).toBe(0);
    for (let i = 0; i < 100 && !existsSync(join(dir, 'opened')); i++) await new Promise((r) => setTimeout(r, 50));
    expect(readFileSync(join(dir, 'opened'), 'utf8')).toBe(`${join(dir, 'r.html')}\n`);
    const none = await kept(open, { env: { PATH: join(dir, 'empty') }, tty: true });
    expect(none.code).toBe(0);
    expect(none.stderr).toMatch(/warning: could not open .*r\.html in a browser: xdg-open was not found \(install xdg-utils\); open the file yourself/);
    // An opener that finds no browser fails at once (xdg-open exits 3): a warning too, not silence.
    const failing = join(dir, 'failing');
    mkdirSync(failing);
    writeFileSync(join(failing, 'xdg-open'), '#!/bin/sh\nexit 3\n');
    chmodSync(join(failing, 'xdg-open'), 0o755);
    const refused = await kept(open, { env: { PATH: failing }, tty: true });
    expect(refused.code).toBe(0);
    expect(refused.stderr).toMatch(/warning: could not open .*r\.html in a browser: xdg-open exited with 3; open the file yourself/);
  });
});

describe('the header of a page', () => {
  it('names the zone and the period compared with, where the command had them', async () => {
    const rows = (JSON.parse((await kept(['report', ...PERIOD, '--limit', '2', '-o', 'json'])).stdout) as { conversions: AggregateRow[] }).conversions;
    const plain = reportHtml(rows, HEADER);
    expect(plain).not.toContain('Time zone');
    expect(plain).not.toContain('Compared with');
    const page = reportHtml(rows, { ...HEADER, timeZone: 'Europe/Prague', compared: { dateFrom: '2024-01-30', dateTo: '2024-02-29' } });
    expect(page).toContain('Time zone:</dt><dd>Europe/Prague</dd>');
    expect(page).toContain('Compared with:</dt><dd>2024-01-30 to 2024-02-29</dd>');
    // through the command: report --compare --tz -o html
    const run = await kept(['report', ...PERIOD, '--compare', 'previous', '--tz', 'Europe/Prague', '-o', 'html']);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('Time zone:</dt><dd>Europe/Prague</dd>');
    expect(run.stdout).toContain('Compared with:</dt><dd>2024-01-30 to 2024-02-29</dd>');
  });
});
