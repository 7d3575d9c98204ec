/**
 * -o html in a real browser: headless Chromium (Debian's `chromium`, /usr/bin/chromium or $CHROMIUM;
 * `.ci/run` installs it, nothing here does) loads the page convx wrote and is asked, with its own
 * flags, for the DOM (--dump-dom) and a screenshot (--screenshot). The figures in the DOM equal the
 * JSON of `report -o json`; the screenshot is not blank; the console holds no error; and no request
 * leaves the page (every request Chromium makes goes to a loopback proxy that counts them).
 * Without Chromium the file is skipped, except under CI, where it fails.
 * CONVX_UPDATE_SCREENSHOT=1 saves the screenshot as docs/images/report.png (the README's).
 */
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { inflateSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AggregateRow, TimeframesResponse } from '../src/model/types.js';
import { getPath } from '../src/output/columns.js';
import { TREND_PAGE_COLUMNS } from '../src/output/html.js';
import { cli, SAMPLES, tempDir } from './helpers.js';
import { expectFiguresOfJson, pageFigures } from './page-figures.js';

const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const present = existsSync(CHROMIUM);
const ci = !!process.env.CI && process.env.CI !== 'false' && process.env.CI !== '0';
const PERIOD = ['--data', SAMPLES, '--from', '2024-03-01', '--to', '2024-03-31'];
const SCREENSHOT = join(import.meta.dirname, '..', 'docs', 'images', 'report.png');

if (!present && !ci) console.warn(`html-report.test.ts: skipped, no Chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM)`);

describe.runIf(!present && ci)('html report in a browser, under CI', () => {
  it('needs Chromium (.ci/run installs it with apt-get)', () => {
    expect.fail(`no Chromium at ${CHROMIUM}: .ci/run installs Debian's chromium when it is missing`);
  });
});

/** A loopback "proxy" that only counts what reaches it: every request Chromium makes goes there. */
function countingProxy(): Promise<{ server: Server; port: number; requests: string[] }> {
  const requests: string[] = [];
  const server = createServer((socket) => {
    socket.once('data', (chunk) => requests.push(chunk.toString('latin1').split('\r\n')[0]!));
    socket.on('error', () => undefined);
    setTimeout(() => socket.destroy(), 50);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, port: (server.address() as { port: number }).port, requests })));
}

/**
 * Chromium's own requests, which its flags do not all turn off (the time and component update
 * services, sign-in): to Google's hosts, never a page's. Every other request is the page's.
 */
const BROWSER_OWN = /^[A-Z]+ (http:\/\/)?(clients\d*\.google\.com|update\.googleapis\.com|accounts\.google\.com|[a-z0-9.-]+\.gvt1\.com)[:/]/;
const pageRequests = (requests: string[]) => requests.filter((line) => !BROWSER_OWN.test(line));

/** Runs headless Chromium on a file with more flags; its stdout and stderr. */
function chromium(file: string, proxyPort: number, flags: string[]): Promise<{ stdout: string; stderr: string }> {
  const args = [
    '--headless',
    '--disable-gpu',
    '--no-sandbox',
    '--no-first-run',
    '--hide-scrollbars',
    // Chromium's own traffic (component updates, time, sign-in) off: a request the proxy sees is the page's
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--disable-default-apps',
    '--no-default-browser-check',
    '--disable-client-side-phishing-detection',
    `--user-data-dir=${tempDir('convx-chromium-')}`,
    `--proxy-server=http://127.0.0.1:${proxyPort}`,
    // loopback too goes through the proxy (Chromium bypasses it by default)
    '--proxy-bypass-list=<-loopback>',
    '--enable-logging=stderr',
    '--v=0',
    ...flags,
    `file://${file}`,
  ];
  return new Promise((resolve, reject) => {
    execFile(CHROMIUM, args, { timeout: 60_000, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) =>
      error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve({ stdout, stderr }),
    );
  });
}

/** The console lines of Chromium's log (console.* calls, CSP violations, failed loads). */
const consoleLines = (stderr: string) => stderr.split('\n').filter((line) => /:CONSOLE[:(]/.test(line));

/** A PNG's pixels as RGBA (8-bit RGB or RGBA, not interlaced: what Chromium writes). */
export function decodePng(png: Buffer): { width: number; height: number; rgba: Uint8Array } {
  expect(png.subarray(0, 8).toString('hex')).toBe('89504e470d0a1a0a');
  let offset = 8;
  let [width, height, colourType] = [0, 0, 0];
  const idat: Buffer[] = [];
  while (offset < png.length) {
    const length = png.readUInt32BE(offset);
    const type = png.toString('latin1', offset + 4, offset + 8);
    const data = png.subarray(offset + 8, offset + 8 + length);
    if (type === 'IHDR') {
      [width, height, colourType] = [data.readUInt32BE(0), data.readUInt32BE(4), data[9]!];
      expect([data[8], data[12]]).toEqual([8, 0]);
    } else if (type === 'IDAT') idat.push(data);
    offset += 12 + length;
  }
  const channels = colourType === 6 ? 4 : colourType === 2 ? 3 : 0;
  expect(channels).toBeGreaterThan(0);
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const pixels = new Uint8Array(height * stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)]!;
    for (let x = 0; x < stride; x++) {
      const value = raw[y * (stride + 1) + 1 + x]!;
      const a = x >= channels ? pixels[y * stride + x - channels]! : 0;
      const b = y > 0 ? pixels[(y - 1) * stride + x]! : 0;
      const c = x >= channels && y > 0 ? pixels[(y - 1) * stride + x - channels]! : 0;
      const paeth = () => {
        const p = a + b - c;
        const [pa, pb, pc] = [Math.abs(p - a), Math.abs(p - b), Math.abs(p - c)];
        return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      };
      const predicted = [0, a, b, (a + b) >> 1, paeth()][filter]!;
      pixels[y * stride + x] = (value + predicted) & 0xff;
    }
  }
  const rgba = new Uint8Array(width * height * 4);
  for (let i = 0; i < width * height; i++) {
    rgba.set(pixels.subarray(i * channels, i * channels + 3), i * 4);
    rgba[i * 4 + 3] = channels === 4 ? pixels[i * channels + 3]! : 255;
  }
  return { width, height, rgba };
}

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
