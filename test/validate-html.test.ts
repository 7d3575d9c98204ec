/**
 * Issue 20, point 5: `convx validate -o html` in headless Chromium (test/chromium.ts, as the reports'
 * page in test/html-report.test.ts). The DOM holds the counts and the findings of `-o json`; each
 * sample is drawn in its sandboxed frame (the screenshot shows the sample's own background); a
 * template's script does not run, and neither its remote image nor its stylesheet leaves the page.
 * Without Chromium the file is skipped, except under CI, where it fails.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ValidateResponse } from '../src/model/validation.js';
import { chromium, CHROMIUM, ci, consoleLines, countingProxy, decodePng, pageRequests, present } from './chromium.js';
import { cli, csv, dataset, tempDir } from './helpers.js';

if (!present && !ci) console.warn(`validate-html.test.ts: skipped, no Chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM)`);

describe.runIf(!present && ci)('validate -o html in a browser, under CI', () => {
  it('needs Chromium (.ci/run installs it with apt-get)', () => {
    expect.fail(`no Chromium at ${CHROMIUM}: .ci/run installs Debian's chromium when it is missing`);
  });
});

/** The sample's background: a colour nothing else on the page has. */
const MAGENTA = [0xff, 0x00, 0xcc];
const HOSTILE = [
  '<html><head><link rel="stylesheet" href="http://convx.invalid/style.css"></head>',
  '<body style="background:#ff00cc;margin:0"><div style="height:400px">',
  '<h1>Hi {{ contact.firstName }}</h1><img src="http://convx.invalid/banner.png">',
  '<script>console.error("script ran"); fetch("http://convx.invalid/beacon")</script>',
  '<a href="https://x.dev/unsubscribe">Unsubscribe</a></div></body></html>',
].join('');

describe.runIf(present)('validate -o html in headless Chromium', () => {
  const dir = tempDir('convx-validate-html-');
  const page = join(dir, 'validation.html');
  let proxy: Awaited<ReturnType<typeof countingProxy>>;
  let json: ValidateResponse;

  beforeAll(async () => {
    proxy = await countingProxy();
    const data = dataset({
      'contacts.csv': csv(
        ['contact_id', 'email', 'first_name', 'language', 'consent', 'unsubscribed', 'lists'],
        [
          ['c1', 'a@x.dev', 'Ann', 'cs', true, false, 'l'],
          ['c2', 'b@x.dev', 'Bob', 'en', true, false, 'l'],
          ['c3', 'bad', 'Cy', 'en', true, false, 'l'],
        ],
      ),
    });
    const request = join(dir, 'request.json');
    writeFileSync(
      request,
      JSON.stringify({ audience: { lists: ['l'] }, assets: [{ language: 'cs', subject: 'Ahoj {{ contact.firstName }}', html: HOSTILE }, { language: 'en', subject: 'Hi', html: HOSTILE, text: 'Hi' }] }),
    );
    const written = await cli(['validate', request, '--data', data, '-o', 'html']);
    expect(written.code).toBe(0);
    writeFileSync(page, written.stdout);
    json = JSON.parse((await cli(['validate', request, '--data', data, '-o', 'json'])).stdout) as ValidateResponse;
  });
  afterAll(() => new Promise<void>((resolve) => proxy.server.close(() => resolve())));

  /** Console lines other than the browser saying it blocked what the page's policy and sandbox forbid. */
  const unexpected = (stderr: string) => consoleLines(stderr).filter((l) => !/Blocked script execution|violates the following Content Security Policy directive/.test(l));

  it('the DOM holds the counts and the findings of -o json, each sample in a sandboxed frame; nothing is requested', async () => {
    const { stdout, stderr } = await chromium(page, proxy.port, ['--dump-dom']);
    expect(stdout).toContain('<h1>Delivery validation</h1>');
    for (const field of ['intended', 'suppressed', 'deliverable'] as const) {
      expect(stdout).toContain(`data-field="${field}" data-value="${json.audience[field]}"`);
    }
    const codes = (severity: string) => [...(/<section class="findings [a-z]+" data-severity="([a-z]+)">[\s\S]*?<\/section>/g[Symbol.matchAll](stdout))]
      .filter((m) => m[1] === severity)
      .flatMap((m) => [...m[0].matchAll(/<tr data-code="([a-z_]+)"/g)].map((c) => c[1]));
    expect(codes('warnings')).toEqual(json.render.warnings.map((f) => f.code));
    expect(codes('errors')).toEqual(json.render.errors.map((f) => f.code));
    const frames = [...stdout.matchAll(/<iframe ([^>]*)>/g)].map((m) => m[1]!);
    expect(frames).toHaveLength(json.render.samples.length);
    for (const frame of frames) expect(frame).toMatch(/^sandbox="" /);
    expect(stdout).toContain('<li><code>http://convx.invalid/style.css</code></li><li><code>http://convx.invalid/banner.png</code></li>');
    expect(stdout).not.toContain('script ran</');
    expect(unexpected(stderr)).toEqual([]);
    expect(consoleLines(stderr).join('\n')).not.toContain('script ran');
    expect(pageRequests(proxy.requests)).toEqual([]);
  });

  it('the screenshot shows the samples drawn in their frames, and no script of theirs ran', async () => {
    const png = join(dir, 'validation.png');
    const { stderr } = await chromium(page, proxy.port, [`--screenshot=${png}`, '--window-size=1000,4000']);
    const { rgba } = decodePng(readFileSync(png));
    let magenta = 0;
    for (let i = 0; i < rgba.length; i += 4) if (rgba[i] === MAGENTA[0] && rgba[i + 1] === MAGENTA[1] && rgba[i + 2] === MAGENTA[2]) magenta++;
    // two frames of about 1000 x 400 drawn in the sample's background
    expect(magenta).toBeGreaterThan(2 * 300 * 300);
    expect(consoleLines(stderr).join('\n')).not.toContain('script ran');
    expect(unexpected(stderr)).toEqual([]);
    expect(pageRequests(proxy.requests)).toEqual([]);
  });

  it('the checks can fail: the same sample outside the frame runs its script and makes its requests', async () => {
    const bare = join(dir, 'bare.html');
    writeFileSync(bare, HOSTILE);
    const before = proxy.requests.length;
    const { stderr } = await chromium(bare, proxy.port, ['--dump-dom']);
    expect(consoleLines(stderr).join('\n')).toContain('script ran');
    expect(pageRequests(proxy.requests.slice(before)).join('\n')).toContain('convx.invalid');
    proxy.requests.splice(before);
  });
});
