/**
 * The API client (issue 17, point 8) against small servers on loopback: which answers are asked
 * again, an unknown source type, and the secrets a token file or an API URL may hold. And
 * (point 9) every detailUrl leads to exactly its row's records, on a real `convx serve`.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isRetried, NOT_RETRIED, QUERY_TIMEOUT_PROBLEM } from '../src/api/client.js';
import type { AggregateRow, ConversionRecord } from '../src/model/types.js';
import { signDevelopmentToken } from '../src/server/auth.js';
import { PROBLEM_TYPES } from '../src/server/problem.js';
import { startServer, type RunningServer } from '../src/server/start.js';
import { cli, type CliResult, onTerminal, scripted, type Scripted, shop, tempDir } from './helpers.js';
import { keptBackends } from './kept-backends.js';

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const problem = status >= 400;
  res.writeHead(status, { 'content-type': problem ? 'application/problem+json' : 'application/json', ...headers });
  res.end(typeof body === 'string' ? body : JSON.stringify(body));
}

const problemOf = (kind: keyof typeof PROBLEM_TYPES, detail: string) => ({ ...PROBLEM_TYPES[kind], detail });

const SOURCE = {
  type: 'sms',
  id: 's-1',
  name: 'Text blast',
  campaignId: 's-1',
  smartflowId: null,
  smartflowName: null,
  deliveryId: null,
  deliveryName: null,
  detailUrl: '/v1/campaigns/s-1/conversions',
};

const ROW = {
  id: 's-1',
  name: 'Text blast',
  source: SOURCE,
  sourceStartedAt: null,
  firstConversionAt: '2024-03-02T10:00:00.000Z',
  lastConversionAt: '2024-03-02T10:00:00.000Z',
  conversionsAmountWoTax: 10,
  conversionsAmountWTax: 12.1,
  conversionsNumber: 1,
  referenceCurrency: 'EUR',
  uniqueContacts: 1,
  averageConversion: 12.1,
  averageUniqueConversion: 12.1,
  refundsAmountWoTax: 0,
  refundsAmountWTax: 0,
  refundsNumber: 0,
  grossConversionsAmountWoTax: 10,
  grossConversionsAmountWTax: 12.1,
  grossConversionsNumber: 1,
  breakdown: [],
};

const RECORD = {
  contactId: 'c1',
  clientContactId: null,
  datetime: '2024-03-02T10:00:00.000Z',
  orderId: 'o1',
  firstName: null,
  surname: null,
  conversionsAmount: 12.1,
  conversionsCurrency: 'EUR',
  conversionsReferenceAmount: 12.1,
  referenceCurrency: 'EUR',
  country: 'CZ',
  isRefund: false,
  attribution: { touch: 'click', datetime: '2024-03-01T10:00:00.000Z', hoursToConversion: 24, model: 'last-click', windowDays: 30 },
  source: SOURCE,
  activityUrl: '/v1/campaigns/s-1/recipients/c1/activity',
};

const PERIOD = ['--from', '2024-03-01', '--to', '2024-03-31'];
const TOKEN = 'tok-5a1b2c3d4e5f60718293a4b5c6d7e8f9';

function expectNowhere(result: CliResult, secret: string): void {
  expect(result.stdout).not.toContain(secret);
  expect(result.stderr).not.toContain(secret);
}

/** Every file under a directory, as text (the config directory: config.json, credentials.json). */
function filesUnder(dir: string): string {
  if (!existsSync(dir)) return '';
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => readFileSync(join(e.parentPath, e.name), 'utf8'))
    .join('\n');
}

describe('retries: what is asked again', () => {
  it("states the rule: 429 and 5xx are retried, but a query over the time budget and a plugin's file the server cannot open", () => {
    expect(Object.keys(NOT_RETRIED)).toEqual([QUERY_TIMEOUT_PROBLEM, PROBLEM_TYPES.pluginUnavailable.type]);
    expect(QUERY_TIMEOUT_PROBLEM).toBe(PROBLEM_TYPES.queryTimeout.type);
    expect(isRetried(503, PROBLEM_TYPES.queryTimeout.type)).toBe(false);
    expect(isRetried(503, PROBLEM_TYPES.pluginUnavailable.type)).toBe(false);
    expect(isRetried(503, PROBLEM_TYPES.shuttingDown.type)).toBe(true);
    expect(isRetried(503, 'urn:convx:problem:busy')).toBe(true);
    expect(isRetried(429, PROBLEM_TYPES.rateLimited.type)).toBe(true);
    expect(isRetried(502, undefined)).toBe(true);
    expect(isRetried(500, PROBLEM_TYPES.internal.type)).toBe(true);
    expect(isRetried(404, undefined)).toBe(false);
    expect(isRetried(400, PROBLEM_TYPES.invalidParameters.type)).toBe(false);
  });

  it('does not retry a 503 query-timeout problem, and says to narrow the period', async () => {
    const s = await scripted((_req, res) =>
      send(res, 503, problemOf('queryTimeout', 'the query ran over its time budget of 1 s'), { 'retry-after': '1' }),
    );
    try {
      const run = await cli(['report', '--api', s.url, ...PERIOD, '-o', 'json'], { env: { CONVX_TOKEN: TOKEN } });
      expect(run.code).toBe(5);
      expect(s.requests).toHaveLength(1);
      expect(run.stderr).toMatch(/time budget/);
      expect(run.stderr).toMatch(/narrow the period/);
      expect(run.stderr).not.toMatch(/retrying|check that the service is up/);
      expect(run.stdout).toBe('');
    } finally {
      await s.close();
    }
  });

  it('still retries a 503 shutting-down and a 429, honouring Retry-After, then prints the answer', async () => {
    const s = await scripted((_req, res, n) => {
      if (n === 1) send(res, 503, problemOf('shuttingDown', 'the server is shutting down'), { 'retry-after': '0' });
      else if (n === 2) send(res, 429, problemOf('rateLimited', 'too many requests'), { 'retry-after': '0' });
      else send(res, 200, { conversions: [ROW], paging: { start: 0, count: 1, totalCount: 1 } });
    });
    try {
      const run = await cli(['report', '--api', s.url, ...PERIOD, '-o', 'json'], { env: { CONVX_TOKEN: TOKEN } });
      expect(run.code, run.stderr).toBe(0);
      expect(s.requests).toHaveLength(3);
      expect(run.stderr).toMatch(/retrying in 0\.0 s \(HTTP 503/);
      expect(run.stderr).toMatch(/retrying in 0\.0 s \(HTTP 429/);
      expect(JSON.parse(run.stdout).conversions[0].id).toBe('s-1');
    } finally {
      await s.close();
    }
  });
});

describe('an upstream server with a source type convx does not know', () => {
  let s: Scripted;
  beforeAll(async () => {
    s = await scripted((req, res) => {
      const path = new URL(req.url!, 'http://x').pathname;
      if (path === '/v1/conversions') send(res, 200, { conversions: [ROW], paging: { start: 0, count: 1, totalCount: 1 } });
      // An upstream interface without convx's look-up of ids (GET /v1/ids/{id}): drill does without it.
      else if (path.startsWith('/v1/ids/')) send(res, 404, { type: 'about:blank', title: 'Not Found', status: 404 });
      else send(res, 200, { conversions: [RECORD], paging: { start: 0, count: 1, totalCount: 1 } });
    });
  });
  afterAll(() => s.close());

  it.each(['json', 'jsonl', 'csv', 'tsv', 'table'])('prints it as it is: report and items -o %s', async (format) => {
    for (const command of ['report', 'items']) {
      const run = await cli([command, '--api', s.url, ...PERIOD, '-o', format], { env: { CONVX_TOKEN: TOKEN } });
      expect(run.code, `${command} ${format}: ${run.stderr}`).toBe(0);
      expect(run.stdout).toContain('sms');
      if (format === 'json') expect(JSON.parse(run.stdout).conversions[0].source.type).toBe('sms');
      if (format === 'csv') expect(run.stdout.split('\n')[1]).toContain(',sms,');
    }
  });

  it('drill and order work too', async () => {
    const drill = await cli(['drill', 's-1', '--api', s.url, ...PERIOD, '-o', 'csv'], { env: { CONVX_TOKEN: TOKEN } });
    expect(drill.code, drill.stderr).toBe(0);
    expect(drill.stdout).toContain(',sms,');
  });
});

describe('secrets in a token file or an API URL', () => {
  let s: Scripted;
  beforeAll(async () => {
    s = await scripted((_req, res) => send(res, 200, { conversions: [ROW], paging: { start: 0, count: 1, totalCount: 1 } }));
  });
  afterAll(() => s.close());

  it('--token-file with a second line is a usage error that never shows the file', async () => {
    const dir = tempDir();
    const file = join(dir, 'token.txt');
    writeFileSync(file, `${TOKEN}\nsecond-line-0a9b8c7d\n`);
    const before = s.requests.length;
    const run = await cli(['report', '--api', s.url, '--token-file', file, ...PERIOD]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/token file has 2 lines; it should hold the token alone, on one line/);
    expectNowhere(run, TOKEN);
    expectNowhere(run, 'second-line-0a9b8c7d');
    expect(s.requests.length).toBe(before);
    // the same from stdin
    const piped = await cli(['report', '--api', s.url, '--token-file', '-', ...PERIOD], { stdin: `${TOKEN}\r\nsecond-line-0a9b8c7d` });
    expect(piped.code).toBe(2);
    expectNowhere(piped, TOKEN);
    expectNowhere(piped, 'second-line-0a9b8c7d');
    // a trailing newline (CRLF too) is not a second line: the token goes out alone
    writeFileSync(file, `${TOKEN}\r\n`);
    const ok = await cli(['report', '--api', s.url, '--token-file', file, ...PERIOD, '-o', 'json']);
    expect(ok.code, ok.stderr).toBe(0);
    expect(s.requests.at(-1)!.authorization).toBe(`Bearer ${TOKEN}`);
  });

  it('a password in --api, CONVX_API_URL or --delivery-api is a usage error that says to use a token and never shows the password', async () => {
    const password = 'pw-7f3e9d1c2b';
    const withPassword = s.url.replace('http://', `http://alice:${password}@`);
    const before = s.requests.length;
    const runs = [
      await cli(['report', '--api', withPassword, ...PERIOD], { env: { CONVX_TOKEN: TOKEN } }),
      await cli(['report', ...PERIOD], { env: { CONVX_TOKEN: TOKEN, CONVX_API_URL: withPassword } }),
      await cli(['validate', 'x.json', '--api', s.url, '--delivery-api', withPassword.replace('/v1', '/v4')], { env: { CONVX_TOKEN: TOKEN } }),
      await cli(['auth', 'status', '--api', withPassword], { env: { CONVX_TOKEN: TOKEN } }),
    ];
    for (const run of runs) {
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toMatch(/holds a password or user name \(http:\/\/alice:\*\*\*@127\.0\.0\.1:\d+\/v[14]\)/);
      expect(run.stderr).toMatch(/use a bearer token/);
      expectNowhere(run, password);
    }
    expect(s.requests.length).toBe(before);
  });

  it('init, config set and auth login refuse to store it; a profile that holds one is refused when used, and shown redacted', async () => {
    const password = 'pw-4c5d6e7f80';
    const withPassword = s.url.replace('http://', `http://bob:${password}@`);
    const config = tempDir('convx-config-');
    const env = { XDG_CONFIG_HOME: config };
    const set = await cli(['config', 'set', 'api', withPassword], { env });
    expect(set.code).toBe(2);
    expectNowhere(set, password);
    const setDelivery = await cli(['config', 'set', 'deliveryApi', withPassword.replace('/v1', '/v4')], { env });
    expect(setDelivery.code).toBe(2);
    expectNowhere(setDelivery, password);
    const login = await cli(['auth', 'login', '--api', withPassword, '--with-token', '--no-verify'], { env, stdin: TOKEN });
    expect(login.code).toBe(2);
    expectNowhere(login, password);
    expectNowhere(login, TOKEN);
    const init = await cli(['init'], { env });
    expect(init.code).toBe(2); // no terminal: init asks nothing
    expect(filesUnder(config)).not.toContain(password);
    expect(filesUnder(config)).not.toContain(TOKEN);
    // A profile written by hand (or by an older convx) with a password: refused when used, shown redacted.
    mkdirSync(join(config, 'convx'), { recursive: true });
    writeFileSync(join(config, 'convx', 'config.json'), JSON.stringify({ profiles: { default: { mode: 'api', api: withPassword } } }));
    const before = s.requests.length;
    const report = await cli(['report', ...PERIOD], { env: { ...env, CONVX_TOKEN: TOKEN } });
    expect(report.code).toBe(2);
    expect(report.stderr).toMatch(/bob:\*\*\*@/);
    expectNowhere(report, password);
    expect(s.requests.length).toBe(before);
    for (const argv of [['config', 'get', 'api'], ['config', 'list'], ['config', 'list', '-o', 'json'], ['config', 'profiles', '-o', 'json']]) {
      const shown = await cli(argv, { env });
      expect(shown.code, `${argv.join(' ')}: ${shown.stderr}`).toBe(0);
      expect(shown.stdout).toContain('bob:***@');
      expectNowhere(shown, password);
    }
    // and it can be replaced
    const fixed = await cli(['config', 'set', 'api', s.url], { env });
    expect(fixed.code, fixed.stderr).toBe(0);
    expect(filesUnder(config)).not.toContain(password);
  });

  it('a password that breaks the URL parse (/ ? @ in it) or a URL without a scheme is refused too, never stored or shown', async () => {
    const config = tempDir('convx-config-');
    const env = { XDG_CONFIG_HOME: config };
    const host = s.url.replace('http://', '');
    for (const [url, secret] of [
      [`http://bob:pa/ss-7a1@${host}`, 'pa/ss-7a1'],
      [`http://bob:pa?ss-7a2@${host}`, 'pa?ss-7a2'],
      [`http://bob:pa@ss-7a3@${host}`, 'ss-7a3'],
      [`alice:s3cret-7a4@${host}`, 's3cret-7a4'],
      [`//alice:s3cret-7a5@${host}`, 's3cret-7a5'],
    ] as const) {
      const set = await cli(['config', 'set', 'api', url], { env });
      expect(set.code, `${url}: ${set.stderr}`).toBe(2);
      expectNowhere(set, secret);
      const used = await cli(['--api', url, 'report', ...PERIOD], { env: { ...env, CONVX_TOKEN: TOKEN } });
      expect(used.code).toBe(2);
      expectNowhere(used, secret);
    }
    expect(filesUnder(config)).not.toMatch(/7a\d/);
  });

  it('CONVX_TOKEN or a profile token of two lines is a usage error that shows neither line', async () => {
    const run = await cli(['--api', s.url, 'report', ...PERIOD], { env: { XDG_CONFIG_HOME: tempDir('convx-config-'), CONVX_TOKEN: `${TOKEN}\nsecond-line-9b` } });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('CONVX_TOKEN: the token has 2 lines');
    expectNowhere(run, TOKEN);
    expectNowhere(run, 'second-line-9b');
  });

  it('auth login --with-token refuses a token of two lines and stores nothing', async () => {
    const config = tempDir('convx-config-');
    const login = await cli(['auth', 'login', '--api', s.url, '--with-token', '--no-verify'], {
      env: { XDG_CONFIG_HOME: config },
      stdin: `${TOKEN}\nsecond-line-0a9b8c7d\n`,
    });
    expect(login.code).toBe(2);
    expectNowhere(login, TOKEN);
    expect(filesUnder(config)).not.toContain(TOKEN);
  });
});

describe('detailUrl leads to exactly the row’s records (rule 7)', () => {
  const SECRET = 'api-client-test-secret';
  let dir = '';
  let server: RunningServer;
  let token = '';
  // The commands of local mode are lent one backend of the dataset (test/kept-backends.ts).
  const local = keptBackends();
  // A smartflow sf1 with a node without a delivery (n1) and one with a delivery (n2, d1); a
  // campaign "X" and an automation a1 whose campaign is "X" too; countries, currencies, refunds.
  beforeAll(async () => {
    const orders = [];
    const touches = [];
    const sources = ['n1', 'n2', 'X', 'a1'];
    const types = ['smartflow', 'smartflow', 'campaign', 'automation'];
    for (let i = 0; i < 48; i++) {
      const contact = `c${i}`;
      const k = i % 4;
      touches.push({ contact, at: `2024-03-${String(1 + (i % 20)).padStart(2, '0')}T08:00:00Z`, type: types[k], source: sources[k] });
      const day = String(2 + (i % 20)).padStart(2, '0');
      const currency = i % 3 === 0 ? 'CZK' : 'EUR';
      const net = currency === 'CZK' ? 250 + i : 10 + i / 4;
      orders.push({ id: `o${i}`, contact, at: `2024-03-${day}T09:00:00Z`, currency, net, gross: currency === 'CZK' ? 300 + i : 12.1 + i / 4, country: ['CZ', 'SK', 'PL'][i % 3] });
      if (i % 5 === 0) orders.push({ id: `o${i}`, contact, at: `2024-03-${day}T19:00:00Z`, currency, net: -5, gross: -6.05, country: ['CZ', 'SK', 'PL'][i % 3], refund: true });
    }
    const fx = [];
    for (let d = 1; d <= 31; d++) fx.push([`2024-03-${String(d).padStart(2, '0')}`, 'CZK', '0.0401', 'EUR'] as [string, string, string, string]);
    dir = shop({
      orders,
      touches,
      fx,
      sources: [
        ['smartflow', 'n1', 'Node without delivery', null, 'sf1', 'Flow', null, null, null],
        ['smartflow', 'n2', 'Node with delivery', null, 'sf1', 'Flow', 'd1', 'Mail', null],
        ['campaign', 'X', 'Campaign X', 'X', null, null, null, null, null],
        ['automation', 'a1', 'Automation of X', 'X', null, null, null, null, null],
      ],
    });
    server = await startServer({ dir, host: '127.0.0.1', port: 0, auth: { secret: SECRET }, log: () => undefined, version: 'test' });
    token = await signDevelopmentToken(SECRET, 'default', '1h');
  });
  afterAll(async () => {
    await server?.close();
  });

  /** Sums in cents, exactly. */
  const cents = (values: number[]) => values.reduce((sum, v) => sum + Math.round(v * 100), 0);

  function expectExactly(row: AggregateRow, records: ConversionRecord[], what: string): void {
    const sales = records.filter((r) => !r.isRefund);
    const refunds = records.filter((r) => r.isRefund);
    expect(records.every((r) => r.source.type === row.source.type && r.source.id === row.source.id), `${what}: only ${row.source.type} ${row.source.id}`).toBe(true);
    expect(sales.length, what).toBe(row.conversionsNumber);
    expect(refunds.length, what).toBe(row.refundsNumber);
    expect(cents(sales.map((r) => r.conversionsReferenceAmount)), what).toBe(cents([row.conversionsAmountWTax]));
    expect(cents(refunds.map((r) => r.conversionsReferenceAmount)), what).toBe(cents([row.refundsAmountWTax]));
  }

  const FILTERS: string[][] = [[], ['--country', 'CZ,SK'], ['--currency', 'CZK'], ['--country', 'sk', '--currency', 'EUR']];

  it.each(FILTERS.map((f) => [f.join(' ') || 'no filter', f] as const))('following it on convx serve, and with convx drill, gives the row’s records: %s', async (_name, filters) => {
    const report = await local(['report', '--data', dir, '--from', '2024-03-05', '--to', '2024-03-25', ...filters, '--all', '-o', 'json']);
    expect(report.code, report.stderr).toBe(0);
    const rows = (JSON.parse(report.stdout) as { conversions: AggregateRow[] }).conversions;
    // the four sources, two of which share a path with another source
    expect(rows.map((r) => r.source.id).sort()).toEqual(['X', 'a1', 'n1', 'n2']);
    const n1 = rows.find((r) => r.source.id === 'n1')!;
    expect(n1.source.detailUrl).toMatch(/^\/v1\/deliveries\/sf1\/conversions\?sourceType=smartflow&sourceId=n1&dateFrom=2024-03-05&dateTo=2024-03-25/);
    for (const row of rows) {
      // as it is, with the same token (and a page large enough)
      const res = await fetch(`${server.url}${row.source.detailUrl}&limit=1000`, { headers: { authorization: `Bearer ${token}` } });
      expect(res.status, `${row.source.detailUrl}: ${await res.clone().text()}`).toBe(200);
      expectExactly(row, ((await res.json()) as { conversions: ConversionRecord[] }).conversions, `GET ${row.source.detailUrl}`);
      // convx drill, local and API mode, without repeating the period or the filters
      for (const mode of [['--data', dir], ['--api', `${server.url}/v1`]]) {
        const drill = await local(['drill', row.source.detailUrl, ...mode, '--all', '-o', 'json'], { env: { CONVX_TOKEN: token } });
        expect(drill.code, drill.stderr).toBe(0);
        expectExactly(row, (JSON.parse(drill.stdout) as { conversions: ConversionRecord[] }).conversions, `drill ${row.source.detailUrl} ${mode[0]}`);
      }
    }
    // API mode prints the detailUrls local mode prints
    const api = await cli(['report', '--api', `${server.url}/v1`, '--from', '2024-03-05', '--to', '2024-03-25', ...filters, '--all', '-o', 'json'], { env: { CONVX_TOKEN: token } });
    expect(api.stdout).toBe(report.stdout);
  });

  it('drill: a flag overrides the detailUrl’s period or filter', async () => {
    const report = await local(['report', '--data', dir, '--from', '2024-03-05', '--to', '2024-03-25', '--country', 'CZ', '-o', 'json']);
    const row = (JSON.parse(report.stdout) as { conversions: AggregateRow[] }).conversions.find((r) => r.source.id === 'n1')!;
    const wider = await local(['report', '--data', dir, '--from', '2024-03-01', '--to', '2024-03-31', '--country', 'SK', '-o', 'json']);
    const other = (JSON.parse(wider.stdout) as { conversions: AggregateRow[] }).conversions.find((r) => r.source.id === 'n1')!;
    const drill = await local(['drill', row.source.detailUrl, '--data', dir, '--from', '2024-03-01', '--to', '2024-03-31', '--country', 'SK', '--all', '-o', 'json']);
    expect(drill.code, drill.stderr).toBe(0);
    expectExactly(other, (JSON.parse(drill.stdout) as { conversions: ConversionRecord[] }).conversions, 'drill with flags');
    const bad = await local(['drill', `${row.source.detailUrl}&smartflowId=sf2`, '--data', dir]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/smartflowId is not a parameter of a detailUrl/);
  });

  it('a long detailUrl still fits the terminal in a table (cut with …; --wide shows it whole)', async () => {
    const argv = ['report', '--data', dir, '--from', '2024-03-05', '--to', '2024-03-25', '--country', 'CZ,SK', '--currency', 'EUR,CZK', '--fields', 'name,source.detailUrl,conversionsNumber'];
    const run = await onTerminal(argv, 80);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('/v1/deliveries/sf1/conversions?');
    for (const line of run.stdout.split('\n')) expect([...line].length, line).toBeLessThanOrEqual(80);
    const wide = await onTerminal([...argv, '--wide'], 80);
    expect(wide.stdout).toContain('/v1/deliveries/sf1/conversions?sourceType=smartflow&sourceId=n1&dateFrom=2024-03-05&dateTo=2024-03-25&country=CZ%2CSK&currency=EUR%2CCZK');
  });
});
