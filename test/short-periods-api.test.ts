/**
 * Issue 22, point 8, in API mode: a short period is resolved on the client, which sends dateFrom and
 * dateTo (the interface has no short periods), so API mode prints what local mode prints for those
 * dates, and names them on stderr the same way.
 */
import { describe, expect, it } from 'vitest';
import { cli, SAMPLES, scripted, servedSamples } from './helpers.js';

const NOW = '2024-03-20T12:00:00Z';

describe('short periods in API mode', () => {
  const { url, token } = servedSamples('short-periods-api-secret');

  it.each([
    [['report'], ['--month', '2024-03']],
    [['items'], ['--since', '2w']],
    [['trend'], ['--last-month', '--by', 'week']],
    [['total'], ['--ytd']],
    [['drill', 'k-1'], ['--month', '2024-02']],
  ])('%s %s prints what local mode prints', async (command, flags) => {
    const fromApi = await cli([...command, ...flags, '--api', `${url()}/v1`, '-o', 'json'], { env: { CONVX_TOKEN: token() }, now: NOW });
    const local = await cli([...command, ...flags, '--data', SAMPLES, '-o', 'json'], { now: NOW });
    expect(fromApi.code, fromApi.stderr).toBe(0);
    expect(fromApi.stdout).toBe(local.stdout);
    expect(fromApi.stdout.length).toBeGreaterThan(100);
    expect(fromApi.stderr).toBe(local.stderr);
    expect(fromApi.stderr).toContain(`(${flags.filter((f) => f !== '--by' && f !== 'week').join(' ')})`);
  });

  it('sends dateFrom and dateTo, and no parameter of its own', async () => {
    const api = await scripted((_req, res) => {
      res.writeHead(500, { 'content-type': 'application/problem+json' });
      res.end('{}');
    });
    try {
      await cli(['total', '--since', '7d', '--api', api.url, '-o', 'json'], { env: { CONVX_TOKEN: 'x' }, now: NOW });
      expect(api.requests.length).toBeGreaterThan(0);
      const query = new URL(api.requests[0]!.url, 'http://x').searchParams;
      expect(Object.fromEntries(query)).toEqual({ dateFrom: '2024-03-14', dateTo: '2024-03-20' });
    } finally {
      await api.close();
    }
  });
});
