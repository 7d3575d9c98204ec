/**
 * -o html in a real browser: headless Chromium (Debian's `chromium`, /usr/bin/chromium or $CHROMIUM;
 * `.ci/run` installs it, nothing here does) loads the page convx wrote and is asked, with its own
 * flags, for the DOM (--dump-dom) and a screenshot (--screenshot). The figures in the DOM equal the
 * JSON of `report -o json`; the screenshot is not blank; the console holds no error; and no request
 * leaves the page (every request Chromium makes goes to a loopback proxy that counts them).
 * Without Chromium the file is skipped, except under CI, where it fails.
 * CONVX_UPDATE_SCREENSHOT=1 saves the screenshot as docs/images/report.png (the README's).
 */
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AggregateRow, TimeframesResponse } from '../src/model/types.js';
import { getPath } from '../src/output/columns.js';
import { TREND_PAGE_COLUMNS } from '../src/output/html.js';
import { chromium, CHROMIUM, ci, consoleLines, countingProxy, decodePng, pageRequests, present } from './chromium.js';
import { cli, SAMPLES, tempDir } from './helpers.js';
import { expectFiguresOfJson, pageFigures } from './page-figures.js';

const PERIOD = ['--data', SAMPLES, '--from', '2024-03-01', '--to', '2024-03-31'];
const SCREENSHOT = join(import.meta.dirname, '..', 'docs', 'images', 'report.png');

if (!present && !ci) console.warn(`html-report.test.ts: skipped, no Chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM)`);

describe.runIf(!present && ci)('html report in a browser, under CI', () => {
  it('needs Chromium (.ci/run installs it with apt-get)', () => {
    expect.fail(`no Chromium at ${CHROMIUM}: .ci/run installs Debian's chromium when it is missing`);
  });
});

describe.runIf(present)('html report in headless Chromium', () => {
  const dir = tempDir('convx-html-');
  const page = join(dir, 'report.html');
  let proxy: Awaited<ReturnType<typeof countingProxy>>;
  let json: AggregateRow[];

  beforeAll(async () => {
    proxy = await countingProxy();
    const written = await cli(['report', ...PERIOD, '-o', 'html', '--output', page]);
    expect(written.code).toBe(0);
    json = (JSON.parse((await cli(['report', ...PERIOD, '--all', '-o', 'json'])).stdout) as { conversions: AggregateRow[] }).conversions;
  });
  afterAll(() => new Promise<void>((resolve) => proxy.server.close(() => resolve())));

  /** The report page in one run of Chromium, asked for both: its DOM (stdout) and a screenshot (png). */
  let reportRun: Promise<{ stdout: string; stderr: string; png: string }> | undefined;
  const reportPage = () =>
    (reportRun ??= (async () => {
      const png = join(dir, 'report.png');
      return { ...(await chromium(page, proxy.port, ['--dump-dom', `--screenshot=${png}`, '--window-size=900,700'])), png };
    })());

  it('the DOM holds the figures of -o json, with no console error and no request', async () => {
    const { stdout, stderr } = await reportPage();
    expect(stdout).toMatch(/^<!DOCTYPE html>/);
    expect(stdout).toContain('<h1>Conversions by source</h1>');
    expect(stdout).toContain('<svg class="chart"');
    expectFiguresOfJson(pageFigures(stdout, 'data-source'), json);
    expect(consoleLines(stderr)).toEqual([]);
    expect(pageRequests(proxy.requests)).toEqual([]);
  });

  it('the screenshot is a drawn page, not a blank one', async () => {
    const { stderr, png } = await reportPage();
    const { width, height, rgba } = decodePng(readFileSync(png));
    expect([width, height]).toEqual([900, 700]);
    const colours = new Set<number>();
    let inked = 0;
    for (let i = 0; i < rgba.length; i += 4) {
      colours.add((rgba[i]! << 16) | (rgba[i + 1]! << 8) | rgba[i + 2]!);
      if (rgba[i]! + rgba[i + 1]! + rgba[i + 2]! < 600) inked++;
    }
    // text (anti-aliased greys), the bars' blue, the rules: many colours, and ink on a good part of the page
    expect(colours.size).toBeGreaterThan(50);
    expect(inked / (width * height)).toBeGreaterThan(0.03);
    // the bars: a run of the chart's blue (#1f4e79) somewhere
    let blue = 0;
    for (let i = 0; i < rgba.length; i += 4) if (rgba[i] === 0x1f && rgba[i + 1] === 0x4e && rgba[i + 2] === 0x79) blue++;
    expect(blue).toBeGreaterThan(2000);
    expect(consoleLines(stderr)).toEqual([]);
    expect(pageRequests(proxy.requests)).toEqual([]);
    if (process.env.CONVX_UPDATE_SCREENSHOT === '1') {
      mkdirSync(join(SCREENSHOT, '..'), { recursive: true });
      copyFileSync(png, SCREENSHOT);
    }
  });

  it('a trend page: the DOM holds every bucket with the figures of trend -o json', async () => {
    const argv = ['trend', ...PERIOD, '--by', 'week'];
    const trendPage = join(dir, 'trend.html');
    expect((await cli([...argv, '-o', 'html', '--output', trendPage])).code).toBe(0);
    const buckets = (JSON.parse((await cli([...argv, '-o', 'json'])).stdout) as TimeframesResponse).buckets;
    const { stdout, stderr } = await chromium(trendPage, proxy.port, ['--dump-dom']);
    const figures = pageFigures(stdout, 'data-bucket');
    expect([...figures.keys()]).toEqual(buckets.map((b) => b.bucket));
    for (const b of buckets) {
      for (const column of TREND_PAGE_COLUMNS.slice(1)) expect(figures.get(b.bucket)!.get(column)).toBe(JSON.stringify(getPath(b, column)));
    }
    expect(consoleLines(stderr)).toEqual([]);
    expect(pageRequests(proxy.requests)).toEqual([]);
  });

  it('the checks can fail: a page that loads an image and logs an error is caught by both', async () => {
    const bad = join(dir, 'bad.html');
    writeFileSync(bad, '<!doctype html><p>x<img src="http://convx.invalid/x.png"><script>console.error("boom")</script>');
    const before = proxy.requests.length;
    const { stderr } = await chromium(bad, proxy.port, ['--dump-dom']);
    expect(consoleLines(stderr).join('\n')).toContain('boom');
    expect(pageRequests(proxy.requests.slice(before)).join('\n')).toContain('convx.invalid');
    proxy.requests.splice(before);
  });
});
