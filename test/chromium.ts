/**
 * Headless Chromium for the tests of -o html pages (test/html-report.test.ts, test/validate-html.test.ts):
 * Debian's `chromium` (/usr/bin/chromium or $CHROMIUM; `.ci/run` installs it, nothing here does), run
 * with its own flags for the DOM (--dump-dom) or a screenshot, every request it makes sent to a loopback
 * proxy that counts them, its console read from its log, and a PNG decoder for the screenshots.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { inflateSync } from 'node:zlib';
import { expect } from 'vitest';
import { tempDir } from './helpers.js';

export const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
export const present = existsSync(CHROMIUM);
export const ci = !!process.env.CI && process.env.CI !== 'false' && process.env.CI !== '0';

/** A loopback "proxy" that only counts what reaches it: every request Chromium makes goes there. */
export function countingProxy(): Promise<{ server: Server; port: number; requests: string[] }> {
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
export const pageRequests = (requests: string[]) => requests.filter((line) => !BROWSER_OWN.test(line));

/** Runs headless Chromium on a file with more flags; its stdout and stderr. */
export function chromium(file: string, proxyPort: number, flags: string[]): Promise<{ stdout: string; stderr: string }> {
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
    // newer Chromium (150) asks www.google.com at start (the AI Mode eligibility check, a preconnect to
    // the search engine) and the time service past the flag above: each is a feature turned off
    '--disable-features=AimEnabled,PreconnectToSearch,NetworkTimeServiceQuerying',
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
export const consoleLines = (stderr: string) => stderr.split('\n').filter((line) => /:CONSOLE[:(]/.test(line));

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
