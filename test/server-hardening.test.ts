/**
 * convx serve's HTTP surface under abuse: every non-2xx answer a problem (the
 * framework's and the HTTP parser's own included), limits on body size, rate
 * and query time, strict integer parameters, tokens only in the header and
 * never in the log, and the 503 of a draining server.
 */
import { createHmac } from 'node:crypto';
import { SignJWT } from 'jose';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { TooLargeError } from '../src/errors.js';
import { LocalBackend } from '../src/local/backend.js';
import { Database, QueryTimeoutError, withQueryBudget } from '../src/local/db.js';
import { MAX_ASSETS, MAX_AUDIENCE_IDS } from '../src/model/validation.js';
import { credentialParameters, JWT_SHAPE, jwtShapes, redactUrl } from '../src/server/accesslog.js';
import { buildApp, type AppOptions } from '../src/server/app.js';
import { createVerifier, signDevelopmentToken } from '../src/server/auth.js';
import { RateLimiter, rateKey } from '../src/server/ratelimit.js';
import { startServer, type RunningServer } from '../src/server/start.js';
import { ServedDataset } from '../src/server/plugins.js';
import { cli, csv, dataset, SAMPLES, serveInProcess, shop, twoPluginFiles } from './helpers.js';
import { sql } from '../src/local/sql.js';

const SECRET = 'test-secret-that-is-long-enough';
const NOW = new Date('2024-05-01T12:00:00Z');
const REPORT = '/v1/conversions?dateFrom=2024-01-01&dateTo=2024-04-30';
const ITEMS = '/v1/conversions/items?dateFrom=2024-01-01&dateTo=2024-04-30';
const VALIDATE = '/v4/delivery/e-mail/validate';
const VALID_REQUEST = { audience: { contactIds: ['c-1'] }, assets: [{ html: '<p>Hi</p>', subject: 'Hi' }], options: { resolveOnly: true } };

const token = (plugin = 'shop') => signDevelopmentToken(SECRET, plugin, '1h');
const bearer = async (plugin = 'shop') => ({ authorization: `Bearer ${await token(plugin)}` });

let served: ServedDataset;
beforeAll(async () => {
  served = await ServedDataset.load(SAMPLES);
});
afterAll(async () => {
  await served.retire();
});

async function appWith(extra: Partial<AppOptions> = {}, dataset = () => served) {
  const logs: Record<string, unknown>[] = [];
  const app = await buildApp({
    dataset,
    verify: createVerifier({ secret: SECRET }),
    log: (e) => logs.push(e),
    now: () => NOW,
    version: 'test',
    ...extra,
  });
  return { app, logs };
}

interface Answer {
  statusCode: number;
  headers: Record<string, string | string[] | number | undefined>;
  body: string;
}

/** A problem+json answer with a stable type; returns the parsed problem. */
function expectProblem(res: Answer, status: number, type: string) {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  const body = JSON.parse(res.body);
  expect(body).toMatchObject({ type: `urn:convx:problem:${type}`, status });
  expect(typeof body.title).toBe('string');
  expect(typeof body.detail).toBe('string');
  return body as { type: string; title: string; status: number; detail: string; errors?: { parameter: string; message: string }[]; limit?: string };
}

describe('framework errors as problems (inject)', () => {
  let ctx: Awaited<ReturnType<typeof appWith>>;
  let headers: Record<string, string>;
  beforeAll(async () => {
    ctx = await appWith();
    headers = await bearer();
  });
  afterAll(async () => {
    await ctx.app.close();
  });

  it('answers an unknown path 404 and a method the path does not allow 405 with Allow', async () => {
    expectProblem(await ctx.app.inject({ method: 'GET', url: '/v1/nothing', headers }), 404, 'not-found');
    const del = await ctx.app.inject({ method: 'DELETE', url: REPORT, headers });
    expectProblem(del, 405, 'method-not-allowed');
    expect(del.headers.allow).toBe('GET, HEAD');
    const get = await ctx.app.inject({ method: 'GET', url: VALIDATE, headers });
    expectProblem(get, 405, 'method-not-allowed');
    expect(get.headers.allow).toBe('POST');
    expectProblem(await ctx.app.inject({ method: 'PUT', url: '/v1/campaigns/k-1/conversions/', headers }), 405, 'method-not-allowed');
  });

  it('answers a body over the default 1 MiB limit 413, before reading it', async () => {
    const big = JSON.stringify({ ...VALID_REQUEST, variables: { pad: 'x'.repeat(1024 * 1024) } });
    const body = expectProblem(
      await ctx.app.inject({ method: 'POST', url: VALIDATE, headers: { ...headers, 'content-type': 'application/json' }, payload: big }),
      413,
      'body-too-large',
    );
    expect(body.detail).toMatch(/1048576 bytes/);
  });

  it.each([
    ['text/plain', 'text/plain'],
    ['application/xml', 'application/xml'],
    ['form data', 'application/x-www-form-urlencoded'],
    ['JSON-ish vendor type', 'application/vnd.api+json'],
  ])('answers a validation body sent as %s 415', async (_name, type) => {
    const res = await ctx.app.inject({ method: 'POST', url: VALIDATE, headers: { ...headers, 'content-type': type }, payload: JSON.stringify(VALID_REQUEST) });
    expectProblem(res, 415, 'unsupported-media-type');
  });

  it('answers a validation request without a content type 415, and JSON with a charset 200', async () => {
    expectProblem(await ctx.app.inject({ method: 'POST', url: VALIDATE, headers }), 415, 'unsupported-media-type');
    const ok = await ctx.app.inject({
      method: 'POST',
      url: VALIDATE,
      headers: { ...headers, 'content-type': 'application/json; charset=utf-8' },
      payload: JSON.stringify(VALID_REQUEST),
    });
    expect(ok.statusCode).toBe(200);
  });

  it('answers malformed JSON with the invalid-body problem', async () => {
    const res = await ctx.app.inject({ method: 'POST', url: VALIDATE, headers: { ...headers, 'content-type': 'application/json' }, payload: '{"audience":' });
    expectProblem(res, 400, 'invalid-body');
  });

  it('answers a path segment over the parameter length 414, and a URL over 8 KiB 414', async () => {
    expectProblem(await ctx.app.inject({ method: 'GET', url: `/v1/campaigns/${'k'.repeat(1100)}/conversions`, headers }), 414, 'uri-too-long');
    expectProblem(await ctx.app.inject({ method: 'GET', url: `${REPORT}&q=${'a'.repeat(9000)}`, headers }), 414, 'uri-too-long');
  });

  it('answers a validation request over the audience or asset limits 413, naming the limit', async () => {
    const post = (payload: unknown) =>
      ctx.app.inject({ method: 'POST', url: VALIDATE, headers: { ...headers, 'content-type': 'application/json' }, payload: JSON.stringify(payload) });
    const ids = Array.from({ length: MAX_AUDIENCE_IDS + 1 }, (_, i) => String(i));
    const audience = expectProblem(await post({ ...VALID_REQUEST, audience: { contactIds: ids } }), 413, 'limit-exceeded');
    expect(audience).toMatchObject({ limit: 'maxAudienceIds', detail: expect.stringMatching(/at most 100,000/) });
    const assets = Array.from({ length: MAX_ASSETS + 1 }, (_, i) => ({ language: `l${i}`, subject: 's', html: '<p>x</p>' }));
    expect(expectProblem(await post({ ...VALID_REQUEST, assets }), 413, 'limit-exceeded').limit).toBe('maxAssets');
  });

  it('maps any TooLargeError of the backend to a 413 problem', async () => {
    const spy = vi.spyOn(LocalBackend.prototype, 'validateEmail').mockRejectedValue(new TooLargeError('over a limit', 'maxSomething'));
    try {
      const res = await ctx.app.inject({ method: 'POST', url: VALIDATE, headers: { ...headers, 'content-type': 'application/json' }, payload: VALID_REQUEST });
      expect(expectProblem(res, 413, 'limit-exceeded')).toMatchObject({ limit: 'maxSomething', detail: 'over a limit' });
    } finally {
      spy.mockRestore();
    }
  });
});

describe('a dataset of several plugins is served only where every row of orders, touches and contacts names its plugin', () => {
  it("contacts without plugin_id (every plugin's token would read every contact) are refused, unless --shared-tables", async () => {
    const contacts = csv(['contact_id', 'email', 'first_name'], [['c1', 'ann@x.dev', 'Ann']]);
    const dir = dataset({ ...twoPluginFiles(), 'contacts.csv': contacts });
    await expect(ServedDataset.load(dir, {})).rejects.toThrow(
      new RegExp(`^the dataset at ${dir} holds 2 plugins, and its contacts has no plugin_id: every plugin's token would read all of its rows\n  give each row its plugin in a plugin_id column, or pass --shared-tables`),
    );
    const run = await cli(['serve', '--data', dir, '--port', '0'], { env: { CONVX_JWT_SECRET: 'a-secret-of-at-least-32-characters!!' } });
    expect([run.code, run.stderr.split('\n')[0]]).toEqual([2, `convx: error: the dataset at ${dir} holds 2 plugins, and its contacts has no plugin_id: every plugin's token would read all of its rows`]);
    const shared = await ServedDataset.load(dir, { sharedTables: true });
    try {
      expect(shared.plugins).toEqual(['A', 'B']);
    } finally {
      await shared.retire();
    }
    // each row naming its plugin, and fx (rates every plugin shares) without the column: served
    const scoped = dataset({ ...twoPluginFiles(), 'contacts.csv': csv(['plugin_id', 'contact_id', 'email'], [['A', 'c1', 'ann@x.dev']]), 'fx.csv': csv(['date', 'currency', 'rate', 'reference_currency'], [['2024-03-01', 'CZK', '0.04', 'EUR']]) });
    const served = await ServedDataset.load(scoped, {});
    await served.retire();
    expect((await cli(['serve', '--help'])).stdout).toContain('--shared-tables');
  });
});

describe('connections open at once are bounded (--max-connections)', () => {
  it('one more than the bound is closed as it comes, before a request is read; a free place serves again', async () => {
    const server = await serveInProcess(['--data', SAMPLES, '--port', '0', '--max-connections', '2'], { CONVX_JWT_SECRET: 'a-secret-of-at-least-32-characters!!' });
    const { hostname, port } = new URL(server.url);
    const open = () =>
      new Promise<{ socket: ReturnType<typeof connect>; closed: Promise<string> }>((resolve, reject) => {
        const socket = connect(Number(port), hostname, () => resolve({ socket, closed }));
        let data = '';
        const closed = new Promise<string>((done) => socket.on('close', () => done(data)));
        socket.on('data', (chunk) => (data += chunk.toString('latin1')));
        socket.on('error', reject);
      });
    try {
      const idle = [await open(), await open()];
      const third = await open();
      third.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      expect(await third.closed).toBe(''); // closed unanswered
      idle[0]!.socket.destroy();
      await idle[0]!.closed;
      await vi.waitFor(async () => expect((await fetch(`${server.url}/healthz`, { headers: { connection: 'close' } })).status).toBe(200), { timeout: 5000 });
      idle[1]!.socket.destroy();
    } finally {
      await server.stop();
    }
    for (const bad of ['-1', 'x', '2000000']) {
      const run = await cli(['serve', '--data', SAMPLES, '--max-connections', bad]);
      expect([run.code, run.stderr], bad).toEqual([2, `convx: error: --max-connections: "${bad}" is not a whole number up to 1000000 (0: no limit)\n`]);
    }
  });
});

describe('answers a client does not read are not held (--send-timeout, large answers on their way)', () => {
  // a series per source by day over a year beside the year before: some 9 MB, more than the kernel's buffers of a client that reads nothing take
  const path = '/v1/conversions/timeframes?dateFrom=2023-06-01&dateTo=2024-05-31&interval=day&perSource=true&top=20&compareTo=previous';
  /** convx serve with these flags, a token of its plugin, and a request of path whose answer the client reads none of (paused) until `received`. */
  async function serving(flags: string[]) {
    const server = await serveInProcess(['--data', SAMPLES, '--port', '0', ...flags], { CONVX_JWT_SECRET: SECRET });
    const { hostname, port } = new URL(server.url);
    const auth = `Bearer ${await token()}`;
    const answered = () => (server.log().match(/timeframes[^\n]*"status":200/g) ?? []).length;
    const unread = () =>
      new Promise<{ socket: ReturnType<typeof connect>; received: () => Promise<number> }>((resolve, reject) => {
        let bytes = 0;
        const socket = connect(Number(port), hostname, () => {
          socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: ${auth}\r\n\r\n`);
          socket.pause();
          resolve({ socket, received: () => new Promise<number>((done) => (socket.on('close', () => done(bytes)), socket.resume())) });
        });
        socket.on('data', (chunk: Buffer) => (bytes += chunk.length));
        socket.on('error', reject);
      });
    return { server, auth, answered, unread };
  }

  it("closes the connection of an answer the client takes none of for --send-timeout, most of it never sent", async () => {
    const { server, answered, unread } = await serving(['--send-timeout', '0.5']);
    try {
      const stalled = await unread();
      await vi.waitFor(() => expect(answered()).toBe(1), { timeout: 20_000, interval: 50 });
      // within two checks of 0.5 s
      await new Promise((resolve) => setTimeout(resolve, 2000));
      expect(await stalled.received()).toBeLessThan(9_000_000);
    } finally {
      await server.stop();
    }
  }, 60_000);

  it("refuses a plugin's large answer with a 503 while as many as it runs at once are on their way, and sends it again once one is gone", async () => {
    const { server, auth, answered, unread } = await serving(['--send-timeout', '0', '--plugin-concurrency', '1']);
    let held: Awaited<ReturnType<typeof unread>> | undefined;
    try {
      held = await unread();
      // its answer is on its way once its first bytes wait in the paused socket (the access log names it only when it is sent)
      const socket = held.socket;
      await vi.waitFor(() => expect(socket.readableLength).toBeGreaterThan(0), { timeout: 20_000, interval: 50 });
      const refused = await fetch(`${server.url}${path}`, { headers: { authorization: auth } });
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBe('5');
      expect(((await refused.json()) as { detail: string }).detail).toMatch(/^this plugin has 1 large answers on their way to clients already \(at most 1\)/);
      // read, it is whole; then the plugin's large answers go out again
      expect(await held.received()).toBeGreaterThan(9_000_000);
      expect((await fetch(`${server.url}${path}`, { headers: { authorization: auth } })).status).toBe(200);
      expect(answered()).toBe(2);
    } finally {
      held?.socket.destroy();
      await server.stop();
    }
  }, 60_000);
});

describe('integer parameters accept decimal digits only', () => {
  let ctx: Awaited<ReturnType<typeof appWith>>;
  let headers: Record<string, string>;
  beforeAll(async () => {
    ctx = await appWith();
    headers = await bearer();
  });
  afterAll(async () => {
    await ctx.app.close();
  });

  it.each([
    ['limit', '0x10'],
    ['limit', '1e3'],
    ['limit', '1.0'],
    ['limit', '+5'],
    ['limit', ' 5'],
    ['limit', '0b11'],
    ['limit', ''],
    ['offset', '1e1'],
    ['offset', '0x0'],
    ['offset', '2.5'],
  ])('400 for %s=%j, naming it', async (parameter, value) => {
    for (const base of [REPORT, ITEMS, '/v1/campaigns/k-1/conversions?dateFrom=2024-01-01&dateTo=2024-04-30']) {
      const res = await ctx.app.inject({ method: 'GET', url: `${base}&${parameter}=${encodeURIComponent(value)}`, headers });
      const body = expectProblem(res, 400, 'invalid-parameters');
      // an empty value is refused as every parameter's is (model/query.ts)
      expect(body.errors?.find((e) => e.parameter === parameter)?.message).toMatch(value === '' ? /^is empty: give a value, or leave it out$/ : /whole number/);
    }
  });

  it('still takes plain digits, leading zeros included, and rejects offsets past the largest safe integer', async () => {
    const res = await ctx.app.inject({ method: 'GET', url: `${ITEMS}&limit=016&offset=00`, headers });
    expect(res.statusCode).toBe(200);
    expect(JSON.parse(res.body).paging).toMatchObject({ start: 0, count: 16 });
    const huge = await ctx.app.inject({ method: 'GET', url: `${ITEMS}&offset=99999999999999999999`, headers });
    expect(expectProblem(huge, 400, 'invalid-parameters').errors?.[0]?.parameter).toBe('offset');
  });
});

describe('tokens only in the Authorization header, never in the log', () => {
  it('refuses a token in the query string with a problem saying to use the header, without authenticating', async () => {
    const { app, logs } = await appWith();
    try {
      const jwt = await token();
      for (const name of ['access_token', 'token', 'jwt', 'key', 'Access_Token', 'TOKEN', 'access%5Ftoken']) {
        const res = await app.inject({ method: 'GET', url: `${REPORT}&${name}=${jwt}` });
        const body = expectProblem(res, 400, 'credentials-in-query');
        expect(body.detail).toMatch(/Authorization: Bearer header/);
      }
      // also with a valid header: a token in the query is refused, never used
      const both = await app.inject({ method: 'GET', url: `${REPORT}&access_token=${jwt}`, headers: await bearer() });
      expectProblem(both, 400, 'credentials-in-query');
      const lines = logs.filter((l) => l.msg === 'request');
      expect(lines).toHaveLength(8);
      expect(lines.every((l) => l.plugin === undefined)).toBe(true);
      expect(lines[0]!.path).toBe('/v1/conversions?dateFrom=2024-01-01&dateTo=2024-04-30&access_token=[REDACTED]');
      expect(JSON.stringify(logs)).not.toContain(jwt);
      expect(JSON.stringify(logs)).not.toContain(jwt.split('.')[1]);
    } finally {
      await app.close();
    }
  });

  it('redacts credential parameters and JWT-shaped text from logged URLs, unknown paths and failures included', async () => {
    expect(redactUrl('/v1/x?a=1&access_token=abc&B=2&Key=k&jwt&token=')).toBe('/v1/x?a=1&access_token=[REDACTED]&B=2&Key=[REDACTED]&jwt&token=[REDACTED]');
    expect(redactUrl('/v1/campaigns/eyJhbGciOi.eyJwbHVnaW4iOi.c2lnbmF0dXJl/conversions')).toBe('/v1/campaigns/[REDACTED]/conversions');
    // a contact looked up by e-mail: personal data stays out of the log, spelled either way
    expect(redactUrl('/v1/contacts/Jana.Novak@example.com/conversions')).toBe('/v1/contacts/[E-MAIL]/conversions');
    expect(redactUrl('/v1/contacts/jana%40example.com/conversions')).toBe('/v1/contacts/[E-MAIL]/conversions');
    expect(redactUrl('/v1/contacts/c-12/conversions')).toBe('/v1/contacts/c-12/conversions');
    expect(credentialParameters('/v1/x?q=token&sort=key&dateFrom=2024-01-01&orderId=o-1')).toEqual([]);
    // names spelled otherwise, and JWTs hidden by percent-encoding
    expect(credentialParameters('/v1/x?accessToken=1&x-api-key=2&auth=3&Secret_Key=4&sessionToken=5')).toEqual([
      'accessToken',
      'x-api-key',
      'auth',
      'Secret_Key',
      'sessionToken',
    ]);
    expect(redactUrl('/v1/x?accessToken=opaque&auth=zzz&q=1')).toBe('/v1/x?accessToken=[REDACTED]&auth=[REDACTED]&q=1');
    expect(redactUrl('/v1/x?q=eyJhbGciOi%2EeyJwbHVnaW4iOi%2Ec2lnbmF0dXJl&limit=5')).toBe('/v1/x?q=[REDACTED]&limit=5');
    expect(redactUrl('/v1/campaigns/eyJhbGciOi%2EeyJwbHVnaW4iOi%2Ec2lnbmF0dXJl/conversions')).toBe('/v1/campaigns/[REDACTED]/conversions');
    expect(credentialParameters('/v1/x?id_token=1&API_KEY=2')).toEqual(['id_token', 'API_KEY']);

    const jwt = await token();
    const { app, logs } = await appWith({}, () => {
      throw new Error('boom');
    });
    try {
      await app.inject({ method: 'GET', url: `/v1/campaigns/${jwt}/conversions?dateFrom=2024-01-01&dateTo=2024-01-31`, headers: await bearer() });
      await app.inject({ method: 'GET', url: `/nowhere/${jwt}` });
      expect(logs.some((l) => l.msg === 'unexpected error')).toBe(true);
      expect(JSON.stringify(logs)).not.toContain(jwt.split('.')[1]);
    } finally {
      await app.close();
    }
  });
});

describe('the access log holds no e-mail address and no token, whatever their spelling (issue 17, point 7)', () => {
  /** A JWT signed with SECRET whose JSON header is spelled as given (so its base64url need not begin with eyJ). */
  const jwtWithHeader = (header: string) => {
    const part = (text: string) => Buffer.from(text).toString('base64url');
    const signed = `${part(header)}.${part(JSON.stringify({ plugin: 'shop', exp: Math.floor(Date.now() / 1000) + 3600 }))}`;
    return `${signed}.${createHmac('sha256', SECRET).update(signed).digest('base64url')}`;
  };

  it('redacts e-mail addresses in the path and in query values, after decoding, and keeps the shape of the URL', () => {
    expect(redactUrl('/v1/contacts/a+b@x.cz/conversions')).toBe('/v1/contacts/[E-MAIL]/conversions');
    expect(redactUrl('/v1/contacts/jan%2Bnovak%40x.cz/conversions')).toBe('/v1/contacts/[E-MAIL]/conversions');
    expect(redactUrl('/v1/conversions/items?q=jan@x.cz&limit=5')).toBe('/v1/conversions/items?q=[E-MAIL]&limit=5');
    expect(redactUrl('/v1/conversions/items?q=Jan+Nov%C3%A1k+%3Cjan%40x.cz%3E')).toBe('/v1/conversions/items?q=[E-MAIL]');
    expect(redactUrl('/v1/conversions/items?contactId=jan%40x.cz&dateFrom=2024-01-01')).toBe('/v1/conversions/items?contactId=[E-MAIL]&dateFrom=2024-01-01');
    expect(redactUrl('/v1/conversions/items?contactId=a+b@x.cz')).toBe('/v1/conversions/items?contactId=[E-MAIL]');
    // Encoded twice (or three times) over, as a client or a proxy may: judged by what it decodes to in the end.
    expect(redactUrl('/v1/conversions/items?q=jan%2540x.cz&limit=5')).toBe('/v1/conversions/items?q=[E-MAIL]&limit=5');
    expect(redactUrl('/v1/contacts/jan%252540x.cz/conversions')).toBe('/v1/contacts/[E-MAIL]/conversions');
    expect(redactUrl('/v1/conversions/items?q=100%2525&limit=5')).toBe('/v1/conversions/items?q=100%2525&limit=5');
    // A quoted local part (RFC 5321), as it is and encoded.
    expect(redactUrl('/v1/ids/%22felix%22@example.com')).toBe('/v1/ids/[E-MAIL]');
    expect(redactUrl('/v1/conversions/items?q=%22felix+n%22%40example.com')).toBe('/v1/conversions/items?q=[E-MAIL]');
    // nothing else is touched
    const plain = '/v1/campaigns/c-1/conversions?dateFrom=2024-01-01&q=shoes+%26+socks&sort=-datetime&contactId=c-12';
    expect(redactUrl(plain)).toBe(plain);
  });

  it('recognises a JWT by its structure, not by an eyJ prefix, also split over two parameters', () => {
    const jwt = jwtWithHeader('\n{"alg":"HS256","typ":"JWT"}');
    expect(jwt.startsWith('eyJ')).toBe(false);
    const spaced = jwtWithHeader('{ "alg": "HS256" }');
    expect(spaced.startsWith('eyJ')).toBe(false);
    const [header, payload, signature] = jwt.split('.') as [string, string, string];
    expect(redactUrl(`/v1/campaigns/${jwt}/conversions`)).toBe('/v1/campaigns/[REDACTED]/conversions');
    expect(redactUrl(`/v1/conversions?q=${spaced}&limit=5`)).toBe('/v1/conversions?q=[REDACTED]&limit=5');
    expect(redactUrl(`/v1/conversions?q=Bearer%20${encodeURIComponent(jwt)}`)).toBe('/v1/conversions?q=[REDACTED]');
    expect(redactUrl(`/v1/conversions?a=${header}.${payload}&b=${signature}`)).toBe(`/v1/conversions?a=[REDACTED]&b=${signature}`);
    expect(redactUrl(`/v1/conversions?a=${header}&b=${payload}.${signature}`)).toBe('/v1/conversions?a=[REDACTED]&b=[REDACTED]');
    expect(redactUrl(`/v1/conversions?h=${header}&p=${payload}&s=${signature}`)).toBe(`/v1/conversions?h=[REDACTED]&p=[REDACTED]&s=${signature}`);
  });

  it('finds what the patterns find, in time linear in the URL: an anonymous 8 kB URL of "eyJ" runs froze the server 240 ms a request', () => {
    let seed = 5;
    const random = () => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32;
    const alphabet = ['e', 'y', 'J', 'eyJ', 'eyJ', 'a', 'Z', '0', '_', '-', '.', '.', ' ', '/', 'x'];
    for (let i = 0; i < 4_000; i++) {
      const text = Array.from({ length: Math.floor(random() * 20) }, () => alphabet[Math.floor(random() * alphabet.length)]).join('');
      expect(jwtShapes(text), JSON.stringify(text)).toEqual([...text.matchAll(JWT_SHAPE)].map((m) => [m.index, m.index + m[0].length]));
    }
    // an address whose local part is longer than 64 characters is still one (by its last 64)
    expect(redactUrl(`/v1/contacts/${'a'.repeat(100)}@example.com`)).toBe('/v1/contacts/[E-MAIL]');
    const began = performance.now();
    for (const hostile of [`/v1/conversions?q=%25252525${'eyJ'.repeat(2700)}`, `/v1/x?q=${'a'.repeat(16_000)}@`, `/v1/${'eyJ'.repeat(5300)}`, `/v1/x?q=${'a.'.repeat(8000)}`]) redactUrl(hostile);
    expect(performance.now() - began).toBeLessThan(200);
  });

  it('never writes them in the access log of a served request', async () => {
    const jwt = jwtWithHeader('\n{"alg":"HS256","typ":"JWT"}');
    const [header, payload] = jwt.split('.') as [string, string, string];
    const { app, logs } = await appWith();
    try {
      const headers = await bearer();
      const urls = [
        '/v1/contacts/a+b@x.cz/conversions',
        `${ITEMS}&q=jan@x.cz`,
        `${ITEMS}&contactId=jan%40x.cz`,
        `/v1/campaigns/${jwt}/conversions?dateFrom=2024-01-01&dateTo=2024-01-31`,
        `${ITEMS}&a=${header}.${payload}`,
        `${ITEMS}&q=${header}&x=${payload}`,
      ];
      for (const url of urls) await app.inject({ method: 'GET', url, headers });
      const written = JSON.stringify(logs);
      expect(logs.filter((l) => l.msg === 'request')).toHaveLength(urls.length);
      for (const secret of ['a+b@x.cz', 'a b@x.cz', 'jan@x.cz', 'jan%40x.cz', header, payload]) expect(written).not.toContain(secret);
      expect(written).toContain('/v1/contacts/[E-MAIL]/conversions');
    } finally {
      await app.close();
    }
  });
});

describe('CONNECT', () => {
  it('is answered with a 405 problem and logged (Node closed the connection unanswered)', async () => {
    const { app, logs } = await appWith();
    try {
      await app.listen({ host: '127.0.0.1', port: 0 });
      const { port } = app.server.address() as { port: number };
      const answer = await new Promise<string>((resolve, reject) => {
        const socket = connect(port, '127.0.0.1', () => socket.write('CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n'));
        let data = '';
        socket.on('data', (chunk) => (data += chunk.toString('latin1')));
        socket.on('close', () => resolve(data));
        socket.on('error', reject);
      });
      expect(answer).toMatch(/^HTTP\/1\.1 405 Method Not Allowed\r\n/);
      expect(answer).toContain('Content-Type: application/problem+json');
      expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toMatchObject({ type: 'urn:convx:problem:method-not-allowed', status: 405 });
      expect(logs.filter((l) => l.msg === 'request').map((l) => [l.method, l.status, l.problem])).toEqual([['CONNECT', 405, 'method-not-allowed']]);
    } finally {
      await app.close();
    }
  });
});

describe('the access log names the problem an answer was', () => {
  it('by its type (an expired token, a wrong signature, an unknown plugin, a path none serves), never its detail', async () => {
    const { app, logs } = await appWith();
    try {
      const expired = await new SignJWT({ plugin: 'shop', exp: Math.floor(Date.now() / 1000) - 600 }).setProtectedHeader({ alg: 'HS256' }).sign(new TextEncoder().encode(SECRET));
      const cases: [string, Record<string, string>, string | undefined][] = [
        [REPORT, { authorization: `Bearer ${expired}` }, 'expired-token'],
        [REPORT, { authorization: `Bearer ${await signDevelopmentToken('another-secret-that-is-long-enough', 'shop', '1h')}` }, 'invalid-token'],
        [REPORT, await bearer('nobody'), 'unknown-plugin'],
        ['/v1/nothing-here', {}, 'not-found'],
        [REPORT, await bearer(), undefined],
      ];
      for (const [url, headers] of cases) await app.inject({ method: 'GET', url, headers });
      const lines = logs.filter((l) => l.msg === 'request');
      expect(lines.map((l) => [l.status, l.problem])).toEqual([[403, 'expired-token'], [403, 'invalid-token'], [403, 'unknown-plugin'], [404, 'not-found'], [200, undefined]]);
      expect(JSON.stringify(lines)).not.toMatch(/"detail"/);
    } finally {
      await app.close();
    }
  });
});

describe('per-token rate limit', () => {
  it('answers 429 with Retry-After past the limit, per token subject, and lets the bucket refill', async () => {
    let clock = 1_000_000;
    const { app, logs } = await appWith({ limits: { rateLimitPerMinute: 3 }, clock: () => clock });
    try {
      const shopHeaders = await bearer('shop');
      const call = (h: Record<string, string>) => app.inject({ method: 'GET', url: `${REPORT}&limit=1`, headers: h });
      for (let i = 0; i < 3; i++) expect((await call(shopHeaders)).statusCode).toBe(200);
      const limited = await call(shopHeaders);
      const body = expectProblem(limited, 429, 'rate-limited');
      expect(limited.headers['retry-after']).toBe('20');
      expect(body.detail).toMatch(/3 requests a minute/);
      // another token of the same plugin and subject shares the bucket (a new token is no way around it)
      expect((await call(await bearer('shop'))).statusCode).toBe(429);
      // anonymous and refused requests never reach the limiter
      expect((await app.inject({ method: 'GET', url: REPORT })).statusCode).toBe(403);
      clock += 20_000;
      expect((await call(shopHeaders)).statusCode).toBe(200);
      expect((await call(shopHeaders)).statusCode).toBe(429);
      expect(JSON.stringify(logs)).not.toContain(shopHeaders.authorization!.slice(7));
    } finally {
      await app.close();
    }
  });

  it('keys tokens without a subject by a digest, and forgets buckets that have refilled', () => {
    const key = rateKey('shop', undefined, 'eyJ.secret.token');
    expect(key).not.toContain('secret');
    expect(key).toBe(rateKey('shop', undefined, 'eyJ.secret.token'));
    expect(key).not.toBe(rateKey('shop', undefined, 'eyJ.other.token'));
    // the same token with its signature spelled another way (base64url's spare bits) shares the bucket
    expect(rateKey('shop', undefined, 'eyJ.secret.sigA')).toBe(rateKey('shop', undefined, 'eyJ.secret.sigB'));
    expect(rateKey('shop', 'alice', 'a')).toBe(rateKey('shop', 'alice', 'b'));
    expect(rateKey('shop', 'alice', 'a')).not.toBe(rateKey('other', 'alice', 'a'));

    let now = 0;
    const limiter = new RateLimiter(60, () => now);
    for (let i = 0; i < 60; i++) expect(limiter.take('a').allowed).toBe(true);
    expect(limiter.take('a')).toEqual({ allowed: false, retryAfterSeconds: 1 });
    for (let i = 0; i < 100; i++) limiter.take(`k${i}`);
    expect(limiter.size).toBe(101);
    now += 61_000;
    limiter.take('b');
    expect(limiter.size).toBe(1);
  });
});

describe('query time budget', () => {
  it('interrupts a DuckDB query that runs over its budget, leaving the connection usable', async () => {
    const db = await Database.open();
    try {
      const began = Date.now();
      await expect(withQueryBudget(50, () => db.all(sql`SELECT sum(i) FROM range(100000000000) t(i)`))).rejects.toBeInstanceOf(QueryTimeoutError);
      expect(Date.now() - began).toBeLessThan(5000);
      expect(await db.all(sql`SELECT 42 AS x`)).toEqual([{ x: 42 }]);
      expect(await withQueryBudget(5000, () => db.all(sql`SELECT 1 AS y`))).toEqual([{ y: 1 }]);
    } finally {
      db.close();
    }
  });

  it('answers a report or items request over a tiny budget 503 with Retry-After, and keeps serving', async () => {
    // A budget spent before the first query starts (a millisecond may be enough for a report from
    // reused prepared statements on the samples).
    const tiny = await appWith({ limits: { queryTimeoutMs: 0.001 } });
    const normal = await appWith();
    try {
      const headers = await bearer();
      for (const url of [REPORT, ITEMS]) {
        const res = await tiny.app.inject({ method: 'GET', url, headers });
        const body = expectProblem(res, 503, 'query-timeout');
        expect(res.headers['retry-after']).toBe('5');
        expect(body.detail).toMatch(/time budget of 0.000001 s/);
      }
      expect(tiny.logs.filter((l) => l.msg === 'query timeout')).toHaveLength(2);
      // the same server still answers, on DuckDB too, and the same data answers in full without the budget
      expect((await tiny.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
      // the validation's SQL (its audience) runs under the same budget
      expectProblem(await tiny.app.inject({ method: 'POST', url: VALIDATE, headers, payload: VALID_REQUEST }), 503, 'query-timeout');
      const validated = await normal.app.inject({ method: 'POST', url: VALIDATE, headers, payload: VALID_REQUEST });
      expect(validated.statusCode).toBe(200);
      const report = await normal.app.inject({ method: 'GET', url: REPORT, headers });
      expect(report.statusCode).toBe(200);
      expect(JSON.parse(report.body).paging.totalCount).toBe(16);
      expect(served.requestsInFlight).toBe(0);
    } finally {
      await tiny.app.close();
      await normal.app.close();
    }
  });
});

describe('a reload between authentication and the query', () => {
  it('answers 403 unknown-plugin, not 500, when the new data no longer holds the token\'s plugin', async () => {
    const { twoPluginFiles, dataset } = await import('./helpers.js');
    const without = await ServedDataset.load(dataset(twoPluginFiles()));
    let calls = 0;
    // the first look (authentication) sees the samples; every later one the reloaded data, without plugin "shop"
    const { app, logs } = await appWith({}, () => (calls++ === 0 ? served : without));
    try {
      const res = await app.inject({ method: 'GET', url: REPORT, headers: await bearer('shop') });
      expectProblem(res, 403, 'unknown-plugin');
      expect(logs.some((l) => l.msg === 'unexpected error')).toBe(false);
    } finally {
      await app.close();
      await without.retire();
    }
  });
});

describe('data the request cannot be answered from', () => {
  it('answers items and report over a period without FX 422, naming the currency and days, never 500', async () => {
    const dir = shop({
      touches: [{ at: '2024-03-01T00:00:00Z' }],
      fx: [['2024-03-01', 'CZK', '0.04']],
      orders: [
        { id: 'o', at: '2024-03-20T10:00:00Z', currency: 'CZK' },
        { id: 'p', at: '2024-03-21T10:00:00Z', currency: 'CZK' },
      ],
    });
    const data = await ServedDataset.load(dir);
    const { app, logs } = await appWith({}, () => data);
    try {
      const headers = await bearer('default');
      for (const url of ['/v1/conversions?dateFrom=2024-03-01&dateTo=2024-03-31', '/v1/conversions/items?dateFrom=2024-03-01&dateTo=2024-03-31']) {
        const body = expectProblem(await app.inject({ method: 'GET', url, headers }), 422, 'data-error');
        expect(body.detail).toMatch(/CZK on 2024-03-20.*CZK on 2024-03-21/);
        expect(body.detail).not.toContain('\n');
      }
      expect(logs.filter((l) => l.msg === 'data error')).toHaveLength(2);
      // a period the rates cover answers
      expect((await app.inject({ method: 'GET', url: '/v1/conversions?dateFrom=2024-03-01&dateTo=2024-03-10', headers })).statusCode).toBe(200);
    } finally {
      await app.close();
      await data.retire();
    }
  });
});

/** One HTTP/1.1 exchange over a raw socket, for requests no HTTP client would send. */
function rawExchange(url: string, request: string): Promise<Answer> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let data = '';
    socket.on('data', (chunk) => (data += chunk.toString('latin1')));
    socket.on('error', reject);
    socket.on('close', () => resolve(parseAnswer(data)));
    socket.write(request);
  });
}

function parseAnswer(data: string): Answer {
  const end = data.indexOf('\r\n\r\n');
  const [statusLine, ...lines] = data.slice(0, end).split('\r\n');
  const headers: Answer['headers'] = {};
  for (const line of lines) {
    const at = line.indexOf(':');
    headers[line.slice(0, at).trim().toLowerCase()] = line.slice(at + 1).trim();
  }
  return { statusCode: Number(statusLine?.split(' ')[1]), headers, body: data.slice(end + 4) };
}

describe('errors of the HTTP parser and of a draining server, on a real loopback server', () => {
  let server: RunningServer;
  const logs: Record<string, unknown>[] = [];
  beforeAll(async () => {
    server = await startServer({ dir: SAMPLES, host: '127.0.0.1', port: 0, auth: { secret: SECRET }, log: (e) => logs.push(e), version: 'test' });
  });
  afterAll(async () => {
    await server.close();
  });

  it('answers headers over 16 KB 431 as a problem', async () => {
    const res = await rawExchange(server.url, `GET ${REPORT} HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    expectProblem(res, 431, 'headers-too-large');
    expect(res.headers.connection).toBe('close');
  });

  it('answers a URL too long for the parser 414, and one under it but over 8 KiB 414, both as problems', async () => {
    expectProblem(await rawExchange(server.url, `GET /v1/conversions?q=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`), 414, 'uri-too-long');
    const res = await fetch(`${server.url}${REPORT}&q=${'a'.repeat(10_000)}`, { headers: await bearer() });
    expect(res.status).toBe(414);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  });

  it('answers a malformed URL and a request that is not HTTP 400 as problems', async () => {
    const bad = await rawExchange(server.url, 'GET /v1/% HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(expectProblem(bad, 400, 'bad-request').detail).toMatch(/not valid/);
    expectProblem(await rawExchange(server.url, 'HELLO\r\n\r\n'), 400, 'bad-request');
    expect(logs.some((l) => l.msg === 'request' && l.status === 400 && l.path === '/v1/%')).toBe(true);
  });

  it('answers an HTTP/1.1 request without Host 400 and an unsupported Expect 417, as problems', async () => {
    expect(expectProblem(await rawExchange(server.url, 'GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n'), 400, 'bad-request').detail).toMatch(/Host/);
    expectProblem(await rawExchange(server.url, 'GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\nConnection: close\r\n\r\n'), 417, 'expectation-failed');
    expect((await rawExchange(server.url, 'GET /healthz HTTP/1.0\r\n\r\n')).statusCode).toBe(200);
  });

  it('answers requests that arrive while it drains 503 with Retry-After, and finishes the one in flight', async () => {
    const draining = await startServer({ dir: SAMPLES, host: '127.0.0.1', port: 0, auth: { secret: SECRET }, log: () => undefined, version: 'test' });
    const { hostname, port } = new URL(draining.url);
    const open = () =>
      new Promise<{ send: (text: string) => void; answer: Promise<string> }>((resolve, reject) => {
        const socket = connect(Number(port), hostname, () => resolve({ send: (text) => socket.write(text), answer }));
        let data = '';
        const answer = new Promise<string>((done) => socket.on('close', () => done(data)));
        socket.on('data', (chunk) => (data += chunk.toString('latin1')));
        socket.on('error', reject);
      });
    const body = JSON.stringify(VALID_REQUEST);
    const inFlight = await open();
    inFlight.send(
      `POST ${VALIDATE} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${await token()}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${body.length}\r\nConnection: close\r\n\r\n${body.slice(0, 10)}`,
    );
    const late = await open();
    late.send(`GET ${REPORT} HTTP/1.1\r\nHost: x\r\n`); // a request begun, not yet complete
    await new Promise((r) => setTimeout(r, 150));
    const closed = draining.close();
    await new Promise((r) => setTimeout(r, 150));
    late.send(`Authorization: Bearer ${await token()}\r\n\r\n`);
    const refused = parseAnswer(await late.answer);
    expectProblem(refused, 503, 'shutting-down');
    expect(refused.headers['retry-after']).toBe('5');
    inFlight.send(body.slice(10));
    const finished = parseAnswer(await inFlight.answer);
    expect(finished.statusCode).toBe(200);
    await closed;
  });
});

describe('convx serve limit flags', () => {
  it.each([
    [['--body-limit', 'lots'], /--body-limit: "lots" is not a size/],
    [['--body-limit', '0'], /--body-limit/],
    [['--rate-limit', '1e3'], /--rate-limit: "1e3" is not a whole number/],
    [['--query-timeout', '-1'], /--query-timeout: "-1" is not a number of seconds/],
  ])('exits 2 for %j', async (flags, message) => {
    const run = await cli(['serve', '--data', SAMPLES, '--port', '0', ...flags], { env: { CONVX_JWT_SECRET: SECRET } });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(message);
  });

  it('passes --body-limit, --rate-limit and --query-timeout to the server', async () => {
    const server = await serveInProcess(['--data', SAMPLES, '--port', '0', '--body-limit', '1k', '--rate-limit', '3', '--query-timeout', '0.000001'], { CONVX_JWT_SECRET: SECRET });
    const { url } = server;
    try {
      const headers = { ...(await bearer()), 'content-type': 'application/json' };
      const big = await fetch(`${url}${VALIDATE}`, { method: 'POST', headers, body: JSON.stringify({ ...VALID_REQUEST, name: 'x'.repeat(2000) }) });
      expect(big.status).toBe(413);
      expect(((await big.json()) as { detail: string }).detail).toMatch(/1024 bytes/);
      const slow = await fetch(`${url}${REPORT}`, { headers });
      expect(slow.status).toBe(503);
      expect(slow.headers.get('retry-after')).toBe('5');
      expect((await fetch(`${url}${REPORT}`, { headers })).status).toBe(503); // the third request of the token
      const limited = await fetch(`${url}${REPORT}`, { headers });
      expect(limited.status).toBe(429);
      expect(limited.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });
});
