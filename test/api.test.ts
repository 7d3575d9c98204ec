/** API mode: parity with local mode against a real `convx serve`, faults from scripted servers, configuration. */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveSettings } from '../src/config.js';
import { generateDataset } from '../src/local/generate.js';
import { signDevelopmentToken } from '../src/server/auth.js';
import { startServer, type RunningServer } from '../src/server/start.js';
import { cli, type CliResult, SAMPLES, scripted, shop, tempDir } from './helpers.js';
import { keptBackends } from './kept-backends.js';

const SECRET = 'api-test-secret';

async function serve(dir: string): Promise<RunningServer> {
  return startServer({ dir, host: '127.0.0.1', port: 0, auth: { secret: SECRET }, log: () => undefined, version: 'test' });
}

/** samples/shop served, started by the first describe that asks, for the file's tests against it (closed after the file). */
let samples: Promise<RunningServer> | undefined;
const servedSamples = () => (samples ??= serve(SAMPLES));
afterAll(async () => (await samples)?.close());

/**
 * API mode against a server that never answers in time, begun with the file (its four attempts
 * pass while the other tests run; the pauses between them are recorded, not waited). "faults"
 * checks the result and that each attempt gave up at --timeout.
 */
let slowServerRun: Promise<CliResult & { ms: number }> | undefined;
beforeAll(() => {
  slowServerRun = (async () => {
    const s = await scripted((_req, res) => setTimeout(() => json(res, 200, REPORT_BODY), 5000));
    try {
      const began = performance.now();
      const result = await cli(['report', '--api', s.url, '--timeout', '0.3'], { env: { CONVX_TOKEN: 'fault-test-token-0123456789' } });
      return { ...result, ms: performance.now() - began };
    } finally {
      await s.close();
    }
  })();
});

function expectNoToken(result: CliResult, token: string): void {
  expect(result.stdout).not.toContain(token);
  expect(result.stderr).not.toContain(token);
}

describe('parity: API mode against convx serve prints what local mode prints', () => {
  let server: RunningServer;
  let twoPlugins: RunningServer;
  let generated = '';
  const tokens: Record<string, string> = {};
  // local mode's side opens each dataset (and plugin) once and is lent it for every command (kept-backends.ts)
  const kept = keptBackends();
  beforeAll(async () => {
    generated = join(tempDir(), 'gen');
    await generateDataset({ out: generated, seed: 3, contacts: 600, orders: 2500, touches: 15000, from: '2024-01-01', to: '2024-06-30', format: 'csv', plugins: 2 });
    [server, twoPlugins] = await Promise.all([servedSamples(), serve(generated)]);
    for (const plugin of ['shop', 'shop-1', 'shop-2']) tokens[plugin] = await signDevelopmentToken(SECRET, plugin, '1h');
  });
  afterAll(async () => {
    await twoPlugins?.close();
  });

  async function compare(dir: string, running: RunningServer, plugin: string | undefined, argv: string[]): Promise<void> {
    const local = await kept([...argv, '--data', dir, ...(plugin && plugin !== 'shop' ? ['--plugin', plugin] : [])]);
    const token = tokens[plugin ?? 'shop']!;
    const api = await cli([...argv, '--api', `${running.url}/v1`], { env: { CONVX_TOKEN: token } });
    expect(local.code, `${argv.join(' ')}: ${local.stderr}`).toBe(0);
    expect(api.code, `${argv.join(' ')}: ${api.stderr}`).toBe(0);
    expect(api.stdout, argv.join(' ')).toBe(local.stdout);
    expect(local.stdout.length).toBeGreaterThan(0);
    expectNoToken(api, token);
  }

  const period = ['--from', '2024-01-01', '--to', '2024-04-30'];
  const cases: string[][] = [
    ['report', ...period, '-o', 'json'],
    ['report', ...period, '-o', 'jsonl'],
    ['report', ...period, '-o', 'csv'],
    ['report', ...period, '-o', 'tsv'],
    ['report', ...period, '-o', 'table'],
    ['report', '--from', '2024-03-01', '--to', '2024-03-31', '--country', 'CZ,SK', '--currency', 'EUR,PLN', '-o', 'json'],
    ['report', ...period, '-q', 'welcome', '--sort', 'name', '-o', 'csv'],
    ['report', ...period, '--sort', '-refundsAmountWTax,id', '--limit', '4', '--offset', '3', '-o', 'json'],
    ['report', ...period, '--breakdown', '-o', 'tsv'],
    ['report', ...period, '--all', '--fields', 'id,source.type,conversionsAmountWTax', '-o', 'json'],
    ['report', ...period, '-o', 'html'],
    ['report', ...period, '-q', 'welcome', '--sort', 'name', '--offset', '1', '-o', 'html'],
    ['items', ...period, '-o', 'json'],
    ['items', ...period, '--all', '-o', 'jsonl'],
    ['items', ...period, '--all', '-o', 'json'],
    ['items', ...period, '--source', 'k-1', '--source-type', 'campaign', '--sort', 'conversionsAmount', '-o', 'csv'],
    ['items', ...period, '--smartflow', 'sf-1', '--delivery', 'd-2', '-o', 'tsv'],
    ['items', ...period, '--contact', 'c-140', '--currency', 'EUR', '-o', 'json'],
    ['items', '--from', '2024-02-01', '--to', '2024-02-29', '--limit', '7', '--offset', '21', '--sort', '-orderId', '-o', 'table'],
    ['order', 'o-2', ...period, '-o', 'json'],
    ['order', 'o-2', ...period, '-o', 'table'],
    ['drill', '/v1/campaigns/k-1/conversions', ...period, '--all', '-o', 'json'],
    ['drill', '/v1/deliveries/sf-2/conversions', ...period, '-o', 'csv'],
    ['drill', 'a-1', ...period, '-o', 'jsonl'],
  ];

  it.each(cases)('samples: %s', async (...argv) => {
    await compare(SAMPLES, server, undefined, argv);
  });

  it('a generated two-plugin dataset, each plugin, walking more than one page concurrently', async () => {
    for (const plugin of ['shop-1', 'shop-2']) {
      for (const argv of [
        ['items', '--from', '2024-01-01', '--to', '2024-06-30', '--all', '-o', 'jsonl'],
        ['items', '--from', '2024-01-01', '--to', '2024-06-30', '--all', '--offset', '5', '-o', 'json'],
        ['report', '--from', '2024-02-01', '--to', '2024-05-31', '--breakdown', '-o', 'csv'],
        ['report', '--from', '2024-06-01', '--to', '2024-06-30', '-o', 'json'],
      ]) {
        await compare(generated, twoPlugins, plugin, argv);
      }
    }
    const lines = (await cli(['items', '--from', '2024-01-01', '--to', '2024-06-30', '--all', '-o', 'jsonl', '--api', `${twoPlugins.url}/v1`], { env: { CONVX_TOKEN: tokens['shop-1']! } })).stdout.split('\n').length;
    expect(lines).toBeGreaterThan(1001); // more than one page of 1000
  });

  it('order looks the order up by id over every date in API mode, and says why it is not a conversion', async () => {
    const run = await cli(['order', 'o-37', '--api', `${server.url}/v1`], { env: { CONVX_TOKEN: tokens.shop! } });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/order o-37 is not a conversion:\n.*cancelled \(status "cancelled"\)/);
  });
});

const REPORT_BODY = JSON.stringify({ conversions: [], paging: { start: 0, count: 0, totalCount: 0 } });
const json = (res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}) => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(body);
};

describe('a period the data cannot answer', () => {
  it('prints the same data error and exits 2 in API mode as in local mode (the server answers 422)', async () => {
    const dir = shop({
      touches: [{ at: '2024-03-01T00:00:00Z' }],
      fx: [['2024-03-01', 'CZK', '0.04']],
      orders: [{ id: 'o', at: '2024-03-20T10:00:00Z', currency: 'CZK' }, { id: 'e', at: '2024-03-20T11:00:00Z', currency: 'EUR' }],
    });
    const running = await serve(dir);
    try {
      const token = await signDevelopmentToken(SECRET, 'default', '1h');
      const argv = ['report', '--from', '2024-03-01', '--to', '2024-03-31', '-o', 'json'];
      const local = await cli([...argv, '--data', dir]);
      const api = await cli([...argv, '--api', `${running.url}/v1`], { env: { CONVX_TOKEN: token } });
      expect(local.code).toBe(2);
      expect(api.code).toBe(2);
      expect(api.stdout).toBe('');
      expect(local.stderr).toMatch(/CZK on 2024-03-20/);
      expect(api.stderr).toBe(local.stderr);
    } finally {
      await running.close();
    }
  });
});

describe('faults', () => {
  const token = 'fault-test-token-0123456789';
  const run = (url: string, argv: string[] = ['report', '-o', 'json']) =>
    cli([...argv, '--api', url, '--timeout', '1'], { env: { CONVX_TOKEN: token } });

  it('retries a 503 and succeeds', async () => {
    const s = await scripted((_req, res, n) => (n === 1 ? json(res, 503, '{"detail":"busy"}') : json(res, 200, REPORT_BODY)));
    const result = await run(s.url);
    await s.close();
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout).paging.totalCount).toBe(0);
    expect(result.stderr).toMatch(/retrying in .* \(HTTP 503: busy; attempt 2\)/);
    // The report twice; then the empty result asks for the API's range of conversions (items).
    expect(s.requests.filter(({ url }) => !url.includes('/conversions/items'))).toHaveLength(2);
    expectNoToken(result, token);
  });

  it('waits as long as Retry-After says on a 429', async () => {
    const s = await scripted((_req, res, n) => (n === 1 ? json(res, 429, '{}', { 'retry-after': '1' }) : json(res, 200, REPORT_BODY)));
    const result = await run(s.url);
    await s.close();
    expect(result.code).toBe(0);
    expect(result.slept).toEqual([1000]); // the pause asked of the clock (the test's is short)
    expect(result.stderr).toMatch(/retrying in 1\.0 s \(HTTP 429/);
  });

  it('retries a connection dropped mid-body, and gives up with exit 5 when it keeps dropping', async () => {
    const drop = (res: ServerResponse) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '500' });
      res.write('{"conversions":[{"id":');
      setTimeout(() => res.socket?.destroy(), 20);
    };
    const once = await scripted((_req, res, n) => (n === 1 ? drop(res) : json(res, 200, REPORT_BODY)));
    expect((await run(once.url)).code).toBe(0);
    await once.close();

    const always = await scripted((_req, res) => drop(res));
    const result = await run(always.url);
    await always.close();
    expect(result.code).toBe(5);
    expect(result.stderr).toMatch(/the connection was dropped \(after 4 attempts\)/);
    expect(result.stdout).toBe('');
    expect(always.requests).toHaveLength(4);
  });

  it('takes a --timeout longer than a timer of Node holds (24.8 days) as that long, not as 1 ms (found by a reviewer)', async () => {
    const s = await scripted((_req, res) => json(res, 200, REPORT_BODY));
    try {
      const run = await cli(['report', '--api', s.url, '--timeout', '2147484', '-o', 'json'], { env: { CONVX_TOKEN: 'fault-test-token-0123456789' } });
      expect(run.code, run.stderr).toBe(0);
    } finally {
      await s.close();
    }
  });

  it('times out on a slow server with exit 5', async () => {
    const result = await slowServerRun!;
    expect(result.code).toBe(5);
    expect(result.stderr).toMatch(/the answer timed out \(after 4 attempts\)/);
    expect(result.stdout).toBe('');
    // Four attempts of 0.3 s each: undici's own answer timeout, on its coarse clock, took about a second each (4 s or more).
    expect(result.ms).toBeGreaterThanOrEqual(4 * 300);
    expect(result.ms).toBeLessThan(3000);
  });

  it('refuses a 200 that is not the interface’s shape, saying what is wrong', async () => {
    const bad = JSON.stringify({ conversions: [{ id: 'k', name: 'x' }], paging: { start: 0, count: 1, totalCount: 1 } });
    const s = await scripted((_req, res) => json(res, 200, bad));
    const result = await run(s.url);
    const html = await scripted((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html>login</html>');
    });
    const htmlResult = await run(html.url);
    await s.close();
    await html.close();
    expect(result.code).toBe(5);
    expect(result.stderr).toMatch(/is not a conversions response: conversions\[0\] must have required property 'source'/);
    expect(result.stdout).toBe('');
    expect(htmlResult.code).toBe(5);
    expect(htmlResult.stderr).toMatch(/is not JSON/);
  });

  it('refuses a look-up answer of the wrong shape, saying what is wrong', async () => {
    const s = await scripted((_req, res) => json(res, 200, JSON.stringify({ orderId: 'o-1', conversions: [], reasons: [7] })));
    const result = await cli(['order', 'o-1', '--api', s.url], { env: { CONVX_TOKEN: 't' } });
    await s.close();
    expect(result.code).toBe(5);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/is not an order look-up: reasons\[0\] must be string \(got 7\)/);
  });

  it('exits 4 on a 403 with a hint about the token, and 2 on a 400, without retrying', async () => {
    const forbidden = await scripted((_req, res) => json(res, 403, '{"detail":"the token has expired"}'));
    const result = await run(forbidden.url);
    expect(result.code).toBe(4);
    expect(result.stderr).toMatch(/refused the request \(403\): the token has expired\nhint: check the token with `convx auth status --api http:\/\/[^`]+`: it is CONVX_TOKEN's, which comes before the profile's\n/);
    expect(forbidden.requests).toHaveLength(1);

    // The hint checks the token the command sent, as it came: a profile's, logged in again with that profile; a file's.
    const home = tempDir();
    const env = { XDG_CONFIG_HOME: home };
    expect((await cli(['auth', 'login', '--api', forbidden.url, '--with-token', '--no-verify', '--profile', 'my prod'], { env, stdin: 'tok-1' })).code).toBe(0);
    const profiles = await cli(['report', '-o', 'json', '--profile', 'my prod'], { env });
    expect(profiles.code).toBe(4);
    expect(profiles.stderr).toMatch(/\nhint: check the token with `convx auth status --profile 'my prod'`, or log in again with `convx auth login --profile 'my prod'`\n$/);
    const file = join(tempDir(), 'the token');
    writeFileSync(file, 'tok-2\n');
    const files = await cli(['report', '-o', 'json', '--api', forbidden.url, '--token-file', file], { env });
    expect(files.code).toBe(4);
    expect(files.stderr).toContain(`\nhint: check the token with \`convx auth status --api ${forbidden.url} --token-file '${file}'\`: it is the one that '${file}' holds\n`);
    // an empty CONVX_TOKEN is unset: the profile's token went
    const emptyEnv = await cli(['report', '-o', 'json', '--profile', 'my prod'], { env: { ...env, CONVX_TOKEN: '' } });
    expect(emptyEnv.code).toBe(4);
    expect(emptyEnv.stderr).toMatch(/\nhint: check the token with `convx auth status --profile 'my prod'`, or log in again with `convx auth login --profile 'my prod'`\n$/);
    // the delivery API's refusal: auth status would ask the reporting API, which may accept the token
    const request = join(import.meta.dirname, '..', 'samples', 'deliveries', 'welcome.json');
    const delivery = await cli(['validate', request, '--api', forbidden.url, '--delivery-api', `${forbidden.url}/v4`, '--token-file', file], { env });
    expect(delivery.code).toBe(4);
    expect(delivery.stderr).toContain(`\nhint: the token is the one that '${file}' holds, and the delivery API must accept it too (\`convx auth status\` asks the reporting API only)\n`);
    await forbidden.close();

    const badRequest = await scripted((_req, res) => json(res, 400, '{"detail":"limit: must be <= 1000"}'));
    const bad = await run(badRequest.url);
    await badRequest.close();
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/the API rejected the request: limit: must be <= 1000/);
    expect(badRequest.requests).toHaveLength(1);
  });

  it('exits 5 when nothing listens, and 4 when there is no token', async () => {
    const gone = await scripted(() => undefined);
    const url = gone.url;
    await gone.close();
    const result = await run(url);
    expect(result.code).toBe(5);
    expect(result.stderr).toMatch(/connection refused \(after 4 attempts\)/);
    // Three pauses, each from half to all of 250 ms doubled per attempt.
    expect(result.slept).toHaveLength(3);
    result.slept!.forEach((ms, i) => {
      expect(ms).toBeGreaterThanOrEqual(125 * 2 ** i);
      expect(ms).toBeLessThanOrEqual(250 * 2 ** i);
    });
    const noToken = await cli(['report', '--api', url]);
    expect(noToken.code).toBe(4);
    expect(noToken.stderr).toMatch(/no API token/);
  });

  it('does not pass off a walk that failed on a later page as complete', async () => {
    const page = (start: number, count: number) =>
      JSON.stringify({
        conversions: Array.from({ length: count }, () => ({
          id: 'k', name: 'k', source: { type: 'campaign', id: 'k', name: 'k', campaignId: 'k', smartflowId: null, smartflowName: null, deliveryId: null, deliveryName: null, detailUrl: '/v1/campaigns/k/conversions' },
          sourceStartedAt: null, firstConversionAt: null, lastConversionAt: null, conversionsAmountWoTax: 1, conversionsAmountWTax: 1, conversionsNumber: 1,
          referenceCurrency: 'EUR', uniqueContacts: 1, averageConversion: 1, averageUniqueConversion: 1, refundsAmountWoTax: 0, refundsAmountWTax: 0, refundsNumber: 0,
          grossConversionsAmountWoTax: 1, grossConversionsAmountWTax: 1, grossConversionsNumber: 1, breakdown: [],
        })),
        paging: { start, count, totalCount: 2500 },
      });
    const s = await scripted((req, res) => {
      const offset = Number(new URL(req.url!, 'http://x').searchParams.get('offset'));
      if (offset === 0) json(res, 200, page(0, 1000));
      else if (offset === 1000) json(res, 500, '{"detail":"disk on fire"}');
      else json(res, 200, page(offset, 500));
    });
    const result = await run(s.url, ['report', '--all', '-o', 'json']);
    await s.close();
    expect(result.code).toBe(5);
    expect(result.stderr).toMatch(/HTTP 500: disk on fire \(after 4 attempts\)/);
    expect(() => JSON.parse(result.stdout)).toThrow(); // an unfinished document, not a short one
  });

  it('stops on Ctrl-C with exit 130', async () => {
    const s = await scripted(() => undefined); // never answers
    const bin = join(import.meta.dirname, '..', 'bin', 'convx.js');
    const child = spawn(process.execPath, [bin, 'report', '--api', s.url], { env: { ...process.env, CONVX_TOKEN: token }, stdio: ['ignore', 'pipe', 'pipe'] });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    while (s.requests.length === 0) await new Promise((r) => setTimeout(r, 50));
    child.kill('SIGINT');
    expect(await exited).toBe(130);
    await s.close();
  });
});

describe('configuration', () => {
  it('takes flags over environment over the config profile', () => {
    const profile = { mode: 'api' as const, api: 'https://config/v1', token: 'config-token', format: 'json' };
    const env = { CONVX_API_URL: 'https://env/v1', CONVX_TOKEN: 'env-token' };
    expect(resolveSettings({ flags: {}, env: {}, profile, profileName: 'p' })).toMatchObject({ mode: 'api', api: 'https://config/v1', token: 'config-token', format: 'json' });
    expect(resolveSettings({ flags: {}, env, profile, profileName: 'p' })).toMatchObject({ mode: 'api', api: 'https://env/v1', token: 'env-token' });
    expect(resolveSettings({ flags: { api: 'https://flag/v1', token: 'flag-token', format: 'csv' }, env, profile, profileName: 'p' })).toMatchObject({
      api: 'https://flag/v1',
      token: 'flag-token',
      format: 'csv',
    });
    // a dataset in the environment beats an API in the config, and a flag beats both
    expect(resolveSettings({ flags: {}, env: { CONVX_DATA: '/data' }, profile, profileName: 'p' })).toMatchObject({ mode: 'local', data: '/data' });
    expect(resolveSettings({ flags: { api: 'https://flag/v1' }, env: { CONVX_DATA: '/data' }, profile, profileName: 'p' })).toMatchObject({ mode: 'api' });
    expect(() => resolveSettings({ flags: { data: 'd', api: 'a' }, env: {}, profile: {}, profileName: 'p' })).toThrow(/--data and --api both set/);
  });

  describe('with a server', () => {
    let server: RunningServer;
    let token = '';
    beforeAll(async () => {
      server = await servedSamples();
      token = await signDevelopmentToken(SECRET, 'shop', '1h');
    });

    it('auth login stores the token 0600 in a 0700 directory; status masks it; logout removes it', async () => {
      const home = tempDir();
      const env = { XDG_CONFIG_HOME: home };
      const api = `${server.url}/v1`;
      const login = await cli(['auth', 'login', '--api', api, '--with-token'], { env, stdin: `${token}\n` });
      expect(login.code, login.stderr).toBe(0);
      expect(login.stderr).toMatch(/logged in to .* as profile "default", plugin shop, token expires/);
      const file = join(home, 'convx', 'config.json');
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(statSync(join(home, 'convx')).mode & 0o777).toBe(0o700);
      expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ profiles: { default: { mode: 'api', api } } });
      // the token goes only to the credentials file, 0600 (issue 12, item 14)
      const credentials = join(home, 'convx', 'credentials.json');
      expect(JSON.parse(readFileSync(credentials, 'utf8'))).toEqual({ profiles: { default: { token } } });
      expect(statSync(credentials).mode & 0o777).toBe(0o600);
      expectNoToken(login, token);

      // the stored profile is used without flags, and gives the same report as local mode
      const viaConfig = await cli(['report', '--from', '2024-01-01', '--to', '2024-04-30', '-o', 'json'], { env });
      expect(viaConfig.stdout).toBe((await cli(['report', '--data', SAMPLES, '--from', '2024-01-01', '--to', '2024-04-30', '-o', 'json'])).stdout);

      const status = await cli(['auth', 'status', '-o', 'json'], { env });
      expect(status.code).toBe(0);
      expect(JSON.parse(status.stdout)).toMatchObject({ profile: 'default', mode: 'api', api, plugin: 'shop', accepted: true, token: `****${token.slice(-4)} (${token.length} characters)` });
      expectNoToken(status, token);
      // an API that does not answer tells nothing of the token: unknown, not refused (exit 5)
      const unreached = await cli(['auth', 'status', '--api', 'http://127.0.0.1:9/v1', '-o', 'json'], { env: { ...env, CONVX_TOKEN: token } });
      expect(unreached.code).toBe(5);
      expect(JSON.parse(unreached.stdout)).toMatchObject({ accepted: null });
      expect((await cli(['auth', 'status', '--api', 'http://127.0.0.1:9/v1', '--no-color'], { env: { ...env, CONVX_TOKEN: token } })).stdout).toMatch(/^accepted +unknown \(no answer from the API\)$/m);

      const logout = await cli(['auth', 'logout'], { env });
      expect(logout.code).toBe(0);
      expect(JSON.parse(readFileSync(file, 'utf8')).profiles.default.token).toBeUndefined();
      expect(existsSync(join(home, 'convx', 'credentials.json'))).toBe(false);
      const after = await cli(['auth', 'status', '-o', 'json'], { env });
      expect(after.code).toBe(4);
      expect(JSON.parse(after.stdout)).toMatchObject({ token: null, accepted: false });
    });

    it('auth login refuses a token the server rejects, and stores nothing', async () => {
      const home = tempDir();
      const bad = await signDevelopmentToken('another-secret', 'shop', '1h');
      const login = await cli(['auth', 'login', '--api', `${server.url}/v1`, '--with-token'], { env: { XDG_CONFIG_HOME: home }, stdin: bad });
      expect(login.code).toBe(4);
      expect(login.stderr).toMatch(/not stored: the API refused the request \(403\): the token signature does not verify/);
      // nothing was stored: no hint at `auth status` (another token, if any) or at logging in again (what just failed)
      expect(login.stderr).toMatch(/\nhint: give a token this API accepts: .*`convx token` made with the server's CONVX_JWT_SECRET, for a plugin it holds\n$/);
      expect(login.stderr).not.toMatch(/auth status|log in again/);
      expect(existsSync(join(home, 'convx', 'config.json'))).toBe(false);
      expectNoToken(login, bad);
    });

    it('profiles: --profile and CONVX_PROFILE choose, an unknown one is an error', async () => {
      const home = tempDir();
      const env = { XDG_CONFIG_HOME: home };
      await cli(['auth', 'login', '--api', `${server.url}/v1`, '--with-token', '--profile', 'dev'], { env, stdin: token });
      const config = JSON.parse(readFileSync(join(home, 'convx', 'config.json'), 'utf8'));
      config.profiles.local = { mode: 'local', data: SAMPLES, format: 'csv' };
      writeFileSync(join(home, 'convx', 'config.json'), JSON.stringify(config));
      const dev = await cli(['auth', 'status', '-o', 'json', '--profile', 'dev'], { env });
      expect(JSON.parse(dev.stdout)).toMatchObject({ profile: 'dev', mode: 'api', accepted: true });
      const local = await cli(['report', '--from', '2024-03-01', '--to', '2024-03-31'], { env: { ...env, CONVX_PROFILE: 'local' } });
      expect(local.stdout.split('\n')[0]).toMatch(/^id,name,source\.type/); // the profile's csv
      // validate prints no csv: the profile's default does not apply there, a flag would be refused
      const validate = await cli(['validate', join(SAMPLES, '..', 'deliveries', 'welcome.json')], { env: { ...env, CONVX_PROFILE: 'local' } });
      expect(validate.code).toBe(0);
      expect(JSON.parse(validate.stdout).channel).toBe('email');
      const unknown = await cli(['report', '--profile', 'nope'], { env });
      expect(unknown.code).toBe(2);
      expect(unknown.stderr).toMatch(/no profile "nope" in .*; profiles: dev, local/);
    });

    it('reads the token from --token-file FILE or stdin', async () => {
      const file = join(tempDir(), 'token.txt');
      writeFileSync(file, `${token}\n`);
      const argv = ['report', '--api', `${server.url}/v1`, '--from', '2024-03-01', '--to', '2024-03-31', '-o', 'json'];
      const fromFile = await cli([...argv, '--token-file', file]);
      const fromStdin = await cli([...argv, '--token-file', '-'], { stdin: token });
      expect(fromFile.code).toBe(0);
      expect(fromStdin.stdout).toBe(fromFile.stdout);
      expectNoToken(fromFile, token);
      const missing = await cli([...argv, '--token-file', '/nonexistent/token']);
      expect(missing.code).toBe(2);
      expect(missing.stderr).toBe(
        'convx: error: not found: /nonexistent/token\nhint: --token-file names a file that holds the bearer token, or - for stdin\n',
      );
    });
  });

  it('init asks for the mode, the URLs or dataset, a hidden token and a format, and saves the profile', async () => {
    const { run } = await import('../src/cli.js');
    const { Capture } = await import('./helpers.js');
    const { PassThrough } = await import('node:stream');
    const answer = async (keys: string[], profileArgs: string[] = []) => {
      const home = tempDir();
      const stdin = new PassThrough();
      // A terminal's stderr stays open: each prompt ends the stream it is given when it closes, and an ended
      // capture would see nothing of the next prompt (the typing below would wait out its 10 s for each).
      const stderr = new (class extends Capture {
        override end(): this {
          return this;
        }
      })();
      // Each key once the prompt has drawn what the last one asked for (a slow machine may take a while to load the prompts).
      const typing = (async () => {
        let drawn = 0;
        for (const key of keys) {
          const since = Date.now();
          while (stderr.text.length === drawn && Date.now() - since < 10_000) await new Promise((r) => setTimeout(r, 20));
          await new Promise((r) => setTimeout(r, 40));
          drawn = stderr.text.length;
          stdin.write(key);
        }
      })();
      const io = { stdin, stdinIsTTY: true, stdout: new Capture(), stderr, stdoutIsTTY: false, stderrIsTTY: false, env: { XDG_CONFIG_HOME: home }, cwd: process.cwd(), now: () => new Date(), onSignal: () => () => undefined };
      const code = await run(['init', ...profileArgs], io);
      await typing;
      return { code, stderr: stderr.text, file: join(home, 'convx', 'config.json') };
    };
    const DOWN = '\x1b[B';
    // API mode, default format, a delivery URL, a token
    const api = await answer([DOWN, '\r', '\r', 'http://127.0.0.1:9/v1\r', 'http://127.0.0.1:9/v4\r', 'typed-secret-token\r'], ['--no-verify']);
    expect(api.code).toBe(0);
    expect(JSON.parse(readFileSync(api.file, 'utf8'))).toEqual({
      profiles: { default: { mode: 'api', api: 'http://127.0.0.1:9/v1', deliveryApi: 'http://127.0.0.1:9/v4' } },
    });
    expect(JSON.parse(readFileSync(join(api.file, '..', 'credentials.json'), 'utf8'))).toEqual({ profiles: { default: { token: 'typed-secret-token' } } });
    expect(statSync(api.file).mode & 0o777).toBe(0o600);
    expect(api.stderr).not.toContain('typed-secret-token');
    // local mode with csv as the default format, into a new named profile
    const local = await answer(['\r', `${DOWN}${DOWN}${DOWN}${DOWN}\r`, `${SAMPLES}\r`], ['--profile', 'mine']);
    expect(local.code).toBe(0);
    expect(JSON.parse(readFileSync(local.file, 'utf8')).profiles.mine).toEqual({ mode: 'local', data: SAMPLES, format: 'csv' });
  });

  it('init refuses without a terminal and names the flags to use', async () => {
    const run = await cli(['init']);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/needs a terminal.*convx auth login --api URL --with-token < token.txt.*CONVX_API_URL and CONVX_TOKEN/);
  });
});

describe('convx completion', () => {
  // The bash script through bash and the built binary: config-install.test.ts (shell completion);
  // the engine it calls (commands, subcommands, every command's flags): complete.test.ts.
  it('prints zsh and fish scripts over the same engine, and rejects other shells', async () => {
    expect((await cli(['completion', 'zsh'])).stdout).toMatch(/^#compdef convx\n[\s\S]*bashcompinit[\s\S]*__complete[\s\S]*complete -o default -F _convx convx/);
    const fish = (await cli(['completion', 'fish'])).stdout;
    expect(fish).toContain("complete -c convx -f -a '(__convx_complete)'");
    expect((await cli(['__complete', 'auth', ''])).stdout).toBe('login\nstatus\nlogout\n');
    const bad = await cli(['completion', 'tcsh']);
    expect(bad.code).toBe(2);
  });
});
