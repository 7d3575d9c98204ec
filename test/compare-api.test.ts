/**
 * --compare over HTTP (issue 19, comparison): compareTo on GET /v1/conversions, /timeframes, /daily
 * and /total of a real loopback server, byte for byte what the local backend answers, ETag and 304
 * as the other reports, a bad value as a problem, API mode printing exactly what local mode prints,
 * and API mode refusing a compared answer without its comparison.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseReportQuery, parseTotalQuery, parseTrendQuery, type RawParams } from '../src/model/query.js';
import { COMPARED_FIGURES } from '../src/model/shapes.js';
import { cli, SAMPLES, servedSamples, sharedBackend } from './helpers.js';
import { keptBackends } from './kept-backends.js';

/** samples/shop opened once and lent to local mode's commands (kept-backends.ts). */
const kept = keptBackends();

describe('compareTo on the reporting routes of samples/shop', () => {
  const { get, url, token } = servedSamples('compare-api-test-secret');

  const shared = sharedBackend(SAMPLES);

  /** The local backend's answer to the same parameters, serialised as the server does. */
  async function local(kind: 'report' | 'trend' | 'total', raw: RawParams, interval?: 'day'): Promise<string> {
    const backend = shared();
    const now = new Date();
    if (kind === 'report') {
      const page = await backend.report(parseReportQuery(raw, now));
      return JSON.stringify({ conversions: page.rows, paging: page.paging });
    }
    return JSON.stringify(kind === 'trend' ? await backend.trend(parseTrendQuery(raw, now, interval)) : await backend.total(parseTotalQuery(raw, now)));
  }

  const march = { dateFrom: '2024-03-01', dateTo: '2024-03-31' };

  it('answers each route with its comparison as the local backend does, with an ETag of its own that revalidates', async () => {
    const tags = new Set<string>();
    for (const [path, kind, raw, interval] of [
      ['/v1/conversions', 'report', { ...march, compareTo: 'previous', limit: '4', offset: '2' }],
      ['/v1/conversions', 'report', { ...march, compareTo: 'year', country: 'CZ,SK' }],
      ['/v1/conversions/timeframes', 'trend', { ...march, interval: 'week', compareTo: 'previous' }],
      ['/v1/conversions/timeframes', 'trend', { ...march, perSource: 'true', top: '3', compareTo: 'year' }],
      ['/v1/conversions/daily', 'trend', { ...march, compareTo: 'year' }, 'day'],
      ['/v1/conversions/total', 'total', { ...march, compareTo: 'previous', q: 'sale' }],
    ] as const) {
      const res = await get(path, raw);
      expect(res.status, path).toBe(200);
      const body = await res.text();
      expect(body, path).toBe(await local(kind, raw, interval));
      expect(body).toContain('"comparison":');
      const tag = res.headers.get('etag')!;
      expect(tag).toBeTruthy();
      tags.add(tag);
      expect((await get(path, raw, { 'if-none-match': tag })).status).toBe(304);
    }
    // without compareTo the answer is another, tagged apart
    const plain = await get('/v1/conversions/total', { ...march, q: 'sale' });
    expect(await plain.text()).not.toContain('comparison');
    expect(tags.has(plain.headers.get('etag')!)).toBe(false);
  });

  it('refuses a bad compareTo as a problem in the parser\'s words', async () => {
    const cases: [string, RawParams, string][] = [
      ['/v1/conversions', { ...march, compareTo: 'last' }, '"last" is not one of previous, year'],
      ['/v1/conversions/total', { ...march, compareTo: '' }, 'is empty: give a value, or leave it out'],
    ];
    for (const [path, raw, message] of cases) {
      const res = await get(path, raw);
      expect(res.status, `${path} ${JSON.stringify(raw)}`).toBe(400);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
      const problem = (await res.json()) as { errors: { parameter: string; message: string }[] };
      expect(problem.errors.find((e) => e.parameter === 'compareTo')?.message).toContain(message);
    }
  });

  it('API mode prints exactly what local mode prints: report, trend and total compared, every format', async () => {
    const period = ['--from', '2024-03-01', '--to', '2024-03-31'];
    for (const argv of [
      ['report', ...period, '--compare', 'previous', '-o', 'json'],
      ['report', ...period, '--compare', 'previous', '--all', '-o', 'csv'],
      ['report', ...period, '--compare', 'year', '--limit', '3', '--offset', '2', '-o', 'jsonl'],
      ['report', ...period, '--compare', 'previous', '-o', 'table', '--wide'],
      ['report', ...period, '--compare', 'previous', '--fields', 'name,comparison.change.conversionsAmountWTax.relative', '-o', 'tsv'],
      ['trend', ...period, '--compare', 'previous', '-o', 'csv'],
      ['trend', ...period, '--by', 'week', '--compare', 'year', '-o', 'json'],
      ['trend', ...period, '--per-source', '--top', '2', '--compare', 'previous', '-o', 'csv'],
      ['trend', ...period, '--compare', 'previous', '-o', 'table', '--wide'],
      ['total', ...period, '--compare', 'previous', '-o', 'json'],
      ['total', ...period, '--compare', 'year', '-o', 'csv'],
    ]) {
      const fromFiles = await kept([...argv, '--data', SAMPLES]);
      const fromApi = await cli([...argv, '--api', `${url()}/v1`], { env: { CONVX_TOKEN: token() } });
      expect(fromFiles.code, `${argv.join(' ')}: ${fromFiles.stderr}`).toBe(0);
      expect(fromApi.code, `${argv.join(' ')}: ${fromApi.stderr}`).toBe(0);
      expect(fromApi.stdout, argv.join(' ')).toBe(fromFiles.stdout);
      expect(fromFiles.stdout).toMatch(/omparison|Δ Revenue/);
    }
  });
});

describe('API mode checks a compared answer', () => {
  let upstream: Server;
  let url: string;
  beforeAll(async () => {
    // an API that ignores compareTo: its rows carry no comparison
    upstream = createServer((_req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ dateFrom: '2024-03-01', dateTo: '2024-03-31', timeZone: 'UTC', total: TOTAL }));
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`;
  });
  afterAll(async () => {
    await new Promise((resolve) => upstream.close(resolve));
  });

  it('refuses an answer to compareTo without its comparison (exit 5), and takes it without compareTo', async () => {
    const argv = ['total', '--from', '2024-03-01', '--to', '2024-03-31', '--api', url, '-o', 'json'];
    const compared = await cli([...argv, '--compare', 'previous'], { env: { CONVX_TOKEN: 'x' } });
    expect(compared.code).toBe(5);
    expect(compared.stderr).toContain('is not a compared conversions/total response');
    expect(compared.stderr).toContain("must have required property 'comparison'");
    const plain = await cli(argv, { env: { CONVX_TOKEN: 'x' } });
    expect(plain.code, plain.stderr).toBe(0);
  });
});

/** An empty period's figures, as a server answers them. */
const TOTAL = { firstConversionAt: null, lastConversionAt: null, referenceCurrency: 'EUR', breakdown: [], ...Object.fromEntries(COMPARED_FIGURES.map((f) => [f, 0])) };
