/**
 * convx trend and total over HTTP (issue 19): GET /v1/conversions/timeframes, /daily and /total on
 * a real loopback server, byte for byte what the local backend answers, ETag and 304 like the
 * other reports, problem+json for bad values (the bucket limit too), and API mode printing
 * exactly what local mode prints.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseTotalQuery, parseTrendQuery, type RawParams } from '../src/model/query.js';
import { signDevelopmentToken } from '../src/server/auth.js';
import { startServer, type RunningServer } from '../src/server/start.js';
import { cli, SAMPLES, sharedBackend } from './helpers.js';
import { keptBackends } from './kept-backends.js';

const SECRET = 'trend-api-test-secret';

/** samples/shop opened once and lent to local mode's commands (kept-backends.ts). */
const kept = keptBackends();

describe('the series and total routes on samples/shop', () => {
  let server: RunningServer;
  let token: string;
  beforeAll(async () => {
    server = await startServer({ dir: SAMPLES, host: '127.0.0.1', port: 0, auth: { secret: SECRET }, log: () => undefined, version: 'test' });
    token = await signDevelopmentToken(SECRET, 'shop', '1h');
  });
  afterAll(async () => {
    await server?.close();
  });

  const get = (path: string, params: RawParams, headers: Record<string, string> = {}) =>
    fetch(`${server.url}${path}?${new URLSearchParams(params as Record<string, string>)}`, { headers: { authorization: `Bearer ${token}`, ...headers } });

  const shared = sharedBackend(SAMPLES);

  /** The local backend's answer to the same parameters, serialised as the server does. */
  async function local(kind: 'trend' | 'total', raw: RawParams, interval?: 'day'): Promise<string> {
    const backend = shared();
    const now = new Date();
    return JSON.stringify(kind === 'trend' ? await backend.trend(parseTrendQuery(raw, now, interval)) : await backend.total(parseTotalQuery(raw, now)));
  }

  const march = { dateFrom: '2024-03-01', dateTo: '2024-03-31' };

  it('answers timeframes, daily and total as the local backend does, with an ETag that revalidates', async () => {
    for (const [path, kind, raw, interval] of [
      ['/v1/conversions/timeframes', 'trend', { ...march, interval: 'week', country: 'CZ,SK' }],
      ['/v1/conversions/timeframes', 'trend', { ...march, interval: 'month', perSource: 'true', top: '3' }],
      ['/v1/conversions/daily', 'trend', { ...march, currency: 'EUR' }, 'day'],
      ['/v1/conversions/total', 'total', { ...march, q: 'sale' }],
    ] as const) {
      const res = await get(path, raw);
      expect(res.status, path).toBe(200);
      const body = await res.text();
      expect(body, path).toBe(await local(kind, raw, interval));
      const tag = res.headers.get('etag');
      expect(tag).toBeTruthy();
      expect(res.headers.get('convx-data-version')).toBeTruthy();
      const again = await get(path, raw, { 'if-none-match': tag! });
      expect(again.status).toBe(304);
    }
    const daily = JSON.parse(await (await get('/v1/conversions/daily', march)).text()) as { interval: string; buckets: unknown[] };
    expect(daily.interval).toBe('day');
    expect(daily.buckets).toHaveLength(31);
  });

  it('refuses bad values as problems, in the parser\'s words: the bucket limit, an unknown interval, an interval on /daily', async () => {
    const cases: [string, RawParams, string, string][] = [
      ['/v1/conversions/timeframes', { dateFrom: '2024-01-01', dateTo: '2024-03-01', interval: 'hour' }, 'interval', '2024-01-01..2024-03-01 holds 1,464 hour buckets, over the limit of 1,000 buckets'],
      ['/v1/conversions/timeframes', { ...march, interval: 'year' }, 'interval', '"year" is not one of hour, day, week, month'],
      ['/v1/conversions/timeframes', { ...march, perSource: 'yes', top: '0' }, 'perSource', '"yes" is not true or false'],
      ['/v1/conversions/timeframes', { ...march, top: '3' }, 'top', 'counts only with perSource=true: add it, or leave top out'],
      ['/v1/conversions/daily', { ...march, interval: 'week' }, 'interval', 'is not a parameter of this operation'],
      ['/v1/conversions/total', { ...march, interval: 'day' }, 'interval', 'is not a parameter of this operation'],
    ];
    for (const [path, raw, parameter, message] of cases) {
      const res = await get(path, raw);
      expect(res.status, `${path} ${JSON.stringify(raw)}`).toBe(400);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
      const problem = (await res.json()) as { errors: { parameter: string; message: string }[] };
      expect(problem.errors.find((e) => e.parameter === parameter)?.message).toContain(message);
    }
  });

  it('API mode prints exactly what local mode prints, trend and total, json, csv and html', async () => {
    const period = ['--from', '2024-02-20', '--to', '2024-04-10'];
    for (const argv of [
      ['trend', ...period, '-o', 'json'],
      ['trend', ...period, '-o', 'csv'],
      ['trend', ...period, '--by', 'week', '--country', 'cz,sk', '-o', 'json'],
      ['trend', ...period, '--by', 'month', '--per-source', '--top', '2', '-o', 'csv'],
      ['trend', '--from', '2024-03-01', '--to', '2024-03-02', '--by', 'hour', '--breakdown', '-o', 'tsv'],
      ['trend', ...period, '--source', 'k-1', '--source-type', 'campaign', '-o', 'jsonl'],
      ['trend', ...period, '-o', 'table'],
      ['trend', ...period, '--by', 'week', '--per-source', '--top', '2', '-o', 'html'],
      ['total', ...period, '-o', 'json'],
      ['total', ...period, '--currency', 'EUR', '-o', 'csv'],
      ['total', ...period, '--breakdown', '-o', 'table'],
    ]) {
      const fromFiles = await kept([...argv, '--data', SAMPLES]);
      const fromApi = await cli([...argv, '--api', `${server.url}/v1`], { env: { CONVX_TOKEN: token } });
      expect(fromFiles.code, `${argv.join(' ')}: ${fromFiles.stderr}`).toBe(0);
      expect(fromApi.code, `${argv.join(' ')}: ${fromApi.stderr}`).toBe(0);
      expect(fromApi.stdout, argv.join(' ')).toBe(fromFiles.stdout);
      expect(fromFiles.stdout.length).toBeGreaterThan(0);
    }
  });
});
