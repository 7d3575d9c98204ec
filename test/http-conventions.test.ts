/**
 * The HTTP conventions of convx serve, apart from what it answers (issue 17, point 9):
 * a Date and an X-Request-Id on every answer (problems, 304s and the raw answers of the
 * HTTP parser included), ETags that do not depend on the order of the query parameters,
 * RateLimit-* headers and 304s that do not count, gzip/br compression negotiated from
 * Accept-Encoding (off with --no-compression), CORS only for a --cors-origin allow-list,
 * a __proto__ key of a validation body taken as data as local mode takes it, the
 * OpenAPI document saying so, and a shutdown drain that answers every request it
 * refuses with the 503 problem, on open keep-alive connections too, never a reset.
 */
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// The fastify types app.drain() and the like come from (the hooks' declarations; src/ is read through its built .d.ts files)
import type {} from '../src/server/hooks/drain.js';
import { buildApp, type AppOptions } from '../src/server/app.js';
import { createVerifier, signDevelopmentToken } from '../src/server/auth.js';
import { ServedDataset, servedFrom, type ServedData } from '../src/server/plugins.js';
import { startServer, type RunningServer } from '../src/server/start.js';
import { cli, SAMPLES, serveInProcess, tempDir } from './helpers.js';

const SECRET = 'test-secret-that-is-long-enough';
const NOW = new Date('2024-05-01T12:00:00Z');
const REPORT = '/v1/conversions?dateFrom=2024-01-01&dateTo=2024-04-30';
const ITEMS = '/v1/conversions/items?dateFrom=2024-01-01&dateTo=2024-04-30&limit=200';
const VALIDATE = '/v4/delivery/e-mail/validate';
const VALID_REQUEST = { audience: { contactIds: ['c-1'] }, assets: [{ html: '<p>Hi</p>', subject: 'Hi' }], options: { resolveOnly: true } };
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const HTTP_DATE = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/;

const bearer = async (plugin = 'shop') => ({ authorization: `Bearer ${await signDevelopmentToken(SECRET, plugin, '1h')}` });

let served: ServedDataset;
beforeAll(async () => {
  served = await ServedDataset.load(SAMPLES);
});
afterAll(async () => {
  await served.retire();
});

async function appWith(extra: Partial<AppOptions> = {}) {
  const logs: Record<string, unknown>[] = [];
  const app = await buildApp({ dataset: () => served, verify: createVerifier({ secret: SECRET }), log: (e) => logs.push(e), now: () => NOW, version: 'test', ...extra });
  return { app, logs };
}

interface RawAnswer {
  statusCode: number;
  headers: Record<string, string>;
  body: string;
}

function parseAnswer(text: string): RawAnswer {
  const end = text.indexOf('\r\n\r\n');
  const [status, ...lines] = text.slice(0, end).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) headers[line.slice(0, line.indexOf(':')).toLowerCase()] = line.slice(line.indexOf(':') + 1).trim();
  return { statusCode: Number(status!.split(' ')[1]), headers, body: text.slice(end + 4) };
}

/** A raw TCP connection: what it receives, whether it was reset, and when it closed. */
function open(url: string): Promise<{ socket: Socket; received: () => string; reset: () => boolean; closed: Promise<void> }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    let data = '';
    let reset = false;
    const socket = connect(Number(port), hostname);
    const closed = new Promise<void>((done) => socket.on('close', () => done()));
    socket.on('data', (chunk) => (data += chunk.toString('latin1')));
    socket.on('error', () => (reset = true));
    socket.once('connect', () => resolve({ socket, received: () => data, reset: () => reset, closed }));
    socket.once('error', reject);
  });
}

/** Waits until a condition holds (bounded: 100 checks). */
async function until(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (condition()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

async function rawExchange(url: string, request: string): Promise<RawAnswer> {
  const connection = await open(url);
  connection.socket.write(request);
  await connection.closed;
  return parseAnswer(connection.received());
}

describe('Date and X-Request-Id on every answer', () => {
  it('echoes a sane X-Request-Id, replaces an insane one, generates one when absent, and logs it', async () => {
    const { app, logs } = await appWith();
    try {
      const headers = await bearer();
      const echoed = await app.inject({ method: 'GET', url: REPORT, headers: { ...headers, 'x-request-id': 'trace-42/a:b' } });
      expect(echoed.headers['x-request-id']).toBe('trace-42/a:b');
      const generated = await app.inject({ method: 'GET', url: REPORT, headers });
      expect(generated.headers['x-request-id']).toMatch(UUID);
      const problem = await app.inject({ method: 'GET', url: '/nowhere', headers: { 'x-request-id': 'lost-1' } });
      expect(problem.statusCode).toBe(404);
      expect(problem.headers['x-request-id']).toBe('lost-1');
      for (const insane of ['x'.repeat(129), 'has space', 'jana.novak@example.com']) {
        const res = await app.inject({ method: 'GET', url: '/healthz', headers: { 'x-request-id': insane } });
        expect(res.headers['x-request-id']).toMatch(UUID);
      }
      const lines = logs.filter((l) => l.msg === 'request');
      expect(lines[0]!.requestId).toBe('trace-42/a:b');
      expect(lines[1]!.requestId).toBe(generated.headers['x-request-id']);
      expect(lines[2]).toMatchObject({ status: 404, requestId: 'lost-1' });
      expect(JSON.stringify(logs)).not.toContain('jana.novak@example.com');
    } finally {
      await app.close();
    }
    const { requestIdFrom } = await import('../src/server/conventions.js');
    expect(requestIdFrom(['a', 'b'])).toMatch(UUID);
  });
});

describe('entity tags', () => {
  it('tag one answer once, whatever the order or spelling of the query parameters', async () => {
    const { app } = await appWith();
    try {
      const headers = await bearer();
      const a = await app.inject({ method: 'GET', url: '/v1/conversions/items?dateFrom=2024-01-01&dateTo=2024-04-30&limit=5&sort=-conversionsAmount', headers });
      const b = await app.inject({ method: 'GET', url: '/v1/conversions/items?sort=%2DconversionsAmount&limit=5&dateTo=2024-04-30&dateFrom=2024-01-01', headers });
      expect(a.statusCode, a.body).toBe(200);
      expect(b.body).toBe(a.body);
      expect(b.headers.etag).toBe(a.headers.etag);
      const c = await app.inject({ method: 'GET', url: '/v1/conversions/items?dateTo=2024-04-30&limit=5&dateFrom=2024-01-01&sort=-conversionsAmount', headers: { ...headers, 'if-none-match': String(a.headers.etag) } });
      expect(c.statusCode).toBe(304);
      // a different answer keeps a different tag
      const d = await app.inject({ method: 'GET', url: '/v1/conversions/items?dateFrom=2024-01-01&dateTo=2024-04-30&limit=6&sort=-conversionsAmount', headers });
      expect(d.headers.etag).not.toBe(a.headers.etag);
    } finally {
      await app.close();
    }
  });
});

describe('rate-limit headers', () => {
  it('carry the quota on authenticated answers, 429 included, and a 304 does not count', async () => {
    const clock = 1_000_000;
    const { app } = await appWith({ limits: { rateLimitPerMinute: 4 }, clock: () => clock });
    try {
      const headers = await bearer();
      const first = await app.inject({ method: 'GET', url: REPORT, headers });
      expect(first.headers['ratelimit-limit']).toBe('4');
      expect(first.headers['ratelimit-remaining']).toBe('3');
      expect(first.headers['ratelimit-reset']).toBe('15');
      // ten 304s, more than the limit: none counts
      for (let i = 0; i < 10; i++) {
        const again = await app.inject({ method: 'GET', url: REPORT, headers: { ...headers, 'if-none-match': String(first.headers.etag) } });
        expect(again.statusCode).toBe(304);
        expect(again.headers['ratelimit-remaining']).toBe('3');
      }
      for (const remaining of ['2', '1', '0']) {
        const res = await app.inject({ method: 'GET', url: `${REPORT}&limit=1`, headers });
        expect(res.statusCode).toBe(200);
        expect(res.headers['ratelimit-remaining']).toBe(remaining);
      }
      const refused = await app.inject({ method: 'GET', url: `${REPORT}&limit=1`, headers });
      expect(refused.statusCode).toBe(429);
      expect(refused.headers['ratelimit-remaining']).toBe('0');
      expect(refused.headers['ratelimit-reset']).toBe(refused.headers['retry-after']);
      // an anonymous answer has none: no quota is known
      const anonymous = await app.inject({ method: 'GET', url: REPORT });
      expect(anonymous.headers['ratelimit-limit']).toBeUndefined();
      const health = await app.inject({ method: 'GET', url: '/healthz' });
      expect(health.headers['ratelimit-limit']).toBeUndefined();
    } finally {
      await app.close();
    }
  });
});

describe('compression', () => {
  it('negotiates br or gzip from Accept-Encoding with q-values', async () => {
    const { negotiateEncoding } = await import('../src/server/conventions.js');
    expect(negotiateEncoding(undefined)).toBeUndefined();
    expect(negotiateEncoding('gzip, deflate, br')).toBe('br');
    expect(negotiateEncoding('gzip;q=0.9, br;q=0.5')).toBe('gzip');
    expect(negotiateEncoding('br;q=0, gzip')).toBe('gzip');
    expect(negotiateEncoding('*;q=0.1, gzip;q=0')).toBe('br');
    expect(negotiateEncoding('identity, deflate')).toBeUndefined();
    expect(negotiateEncoding('br;q=0, gzip;q=0')).toBeUndefined();
  });

  it('compresses answers over 1 KiB as asked, with Vary and a weak ETag; not small ones, nor with compression off', async () => {
    const { app } = await appWith();
    const plain = await appWith({ compression: false });
    try {
      const headers = await bearer();
      const identity = await app.inject({ method: 'GET', url: ITEMS, headers });
      expect(identity.rawPayload.length).toBeGreaterThan(1024);
      expect(identity.headers['content-encoding']).toBeUndefined();
      expect(identity.headers.vary).toMatch(/Accept-Encoding/);
      const tag = String(identity.headers.etag);
      expect(tag).toMatch(/^"/);

      const gz = await app.inject({ method: 'GET', url: ITEMS, headers: { ...headers, 'accept-encoding': 'gzip' } });
      expect(gz.headers['content-encoding']).toBe('gzip');
      expect(gunzipSync(gz.rawPayload).toString()).toBe(identity.body);
      expect(gz.rawPayload.length).toBeLessThan(identity.rawPayload.length);
      expect(gz.headers.etag).toBe(`W/${tag}`);
      expect(gz.headers.vary).toMatch(/Accept-Encoding/);

      const br = await app.inject({ method: 'GET', url: ITEMS, headers: { ...headers, 'accept-encoding': 'gzip;q=0.5, br;q=0.8' } });
      expect(br.headers['content-encoding']).toBe('br');
      expect(brotliDecompressSync(br.rawPayload).toString()).toBe(identity.body);

      // the client holding the compressed answer revalidates with its weak tag
      const revalidated = await app.inject({ method: 'GET', url: ITEMS, headers: { ...headers, 'accept-encoding': 'gzip', 'if-none-match': `W/${tag}` } });
      expect(revalidated.statusCode).toBe(304);
      expect(revalidated.headers.etag).toBe(`W/${tag}`);
      expect(revalidated.headers.vary).toMatch(/Accept-Encoding/);
      // without Accept-Encoding, the 304 carries the identity's strong tag, whichever form the client sent
      const identityRevalidated = await app.inject({ method: 'GET', url: ITEMS, headers: { ...headers, 'if-none-match': `W/${tag}` } });
      expect(identityRevalidated.statusCode).toBe(304);
      expect(identityRevalidated.headers.etag).toBe(tag);
      expect(revalidated.rawPayload.length).toBe(0);

      const small = await app.inject({ method: 'GET', url: '/healthz', headers: { 'accept-encoding': 'gzip' } });
      expect(small.headers['content-encoding']).toBeUndefined();

      const off = await plain.app.inject({ method: 'GET', url: ITEMS, headers: { ...headers, 'accept-encoding': 'gzip, br' } });
      expect(off.headers['content-encoding']).toBeUndefined();
      expect(off.body).toBe(identity.body);
      expect(off.headers.etag).toBe(tag);
    } finally {
      await app.close();
      await plain.app.close();
    }
  });
});

describe('CORS', () => {
  const origin = 'https://app.example.com';

  it('is off by default; answers a listed origin, its preflight included, and nothing to another', async () => {
    const off = await appWith();
    try {
      const res = await off.app.inject({ method: 'GET', url: REPORT, headers: { ...(await bearer()), origin } });
      expect(Object.keys(res.headers).filter((h) => h.startsWith('access-control-'))).toEqual([]);
      const preflight = await off.app.inject({ method: 'OPTIONS', url: REPORT, headers: { origin, 'access-control-request-method': 'GET' } });
      expect(preflight.statusCode).toBe(405);
      expect(Object.keys(preflight.headers).filter((h) => h.startsWith('access-control-'))).toEqual([]);
    } finally {
      await off.app.close();
    }
    const { app } = await appWith({ corsOrigins: [origin, 'http://localhost:3000'] });
    try {
      const res = await app.inject({ method: 'GET', url: REPORT, headers: { ...(await bearer()), origin } });
      expect(res.statusCode).toBe(200);
      expect(res.headers['access-control-allow-origin']).toBe(origin);
      expect(res.headers.vary).toMatch(/Origin/);
      expect(String(res.headers['access-control-expose-headers']).split(/,\s*/)).toEqual(
        expect.arrayContaining(['ETag', 'Convx-Data-Version', 'X-Request-Id', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'Retry-After']),
      );
      // a problem too: the script must be able to read why it was refused
      const refused = await app.inject({ method: 'GET', url: REPORT, headers: { origin } });
      expect(refused.statusCode).toBe(403);
      expect(refused.headers['access-control-allow-origin']).toBe(origin);

      const preflight = await app.inject({
        method: 'OPTIONS',
        url: REPORT,
        headers: { origin, 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization, if-none-match' },
      });
      expect(preflight.statusCode).toBe(204);
      expect(preflight.headers['access-control-allow-origin']).toBe(origin);
      expect(String(preflight.headers['access-control-allow-methods'])).toMatch(/GET/);
      expect(String(preflight.headers['access-control-allow-headers']).split(/,\s*/)).toEqual(
        expect.arrayContaining(['Authorization', 'Content-Type', 'If-None-Match', 'X-Request-Id', 'Convx-Data-Version']),
      );
      expect(Number(preflight.headers['access-control-max-age'])).toBeGreaterThan(0);

      const other = await app.inject({ method: 'GET', url: REPORT, headers: { ...(await bearer()), origin: 'https://evil.example' } });
      expect(other.statusCode).toBe(200);
      expect(Object.keys(other.headers).filter((h) => h.startsWith('access-control-'))).toEqual([]);
      const otherPreflight = await app.inject({ method: 'OPTIONS', url: REPORT, headers: { origin: 'https://evil.example', 'access-control-request-method': 'GET' } });
      expect(otherPreflight.statusCode).toBe(405);
      expect(otherPreflight.headers['access-control-allow-origin']).toBeUndefined();
    } finally {
      await app.close();
    }
  });
});

describe('CORS preflight', () => {
  const origin = 'https://app.example.com';

  it('is answered for a path the server serves, with that path\'s methods; a path it does not serve is the 404 problem', async () => {
    const { app } = await appWith({ corsOrigins: [origin] });
    try {
      const preflight = (url: string, method: string) =>
        app.inject({ method: 'OPTIONS', url, headers: { origin, 'access-control-request-method': method } });
      const report = await preflight(REPORT, 'GET');
      expect(report.statusCode).toBe(204);
      const reportMethods = String(report.headers['access-control-allow-methods']).split(/,\s*/);
      expect(reportMethods).toContain('GET');
      expect(reportMethods).not.toContain('POST');
      const validate = await preflight(VALIDATE, 'POST');
      expect(validate.statusCode).toBe(204);
      expect(String(validate.headers['access-control-allow-methods']).split(/,\s*/)).toEqual(['POST']);
      const alias = await preflight('/v1/campaigns/cmp-1/conversions', 'GET');
      expect(alias.statusCode).toBe(204);
      const nowhere = await preflight('/nowhere', 'GET');
      expect(nowhere.statusCode).toBe(404);
      expect(nowhere.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(JSON.parse(nowhere.body)).toMatchObject({ type: 'urn:convx:problem:not-found' });
      expect(nowhere.headers['access-control-allow-methods']).toBeUndefined();
    } finally {
      await app.close();
    }
  });
});

describe('framework-error answers', () => {
  const origin = 'https://app.example.com';

  it('a bad percent-encoding 400 and an over-long path segment 414 carry the client\'s X-Request-Id, CORS headers and, in the drain, Connection: close', async () => {
    const { app, logs } = await appWith({ corsOrigins: [origin] });
    try {
      const badEncoding = await app.inject({ method: 'GET', url: '/v1/conversions/orders/%E0%A4%A', headers: { 'x-request-id': 'bad-enc-1', origin } });
      expect(badEncoding.statusCode).toBe(400);
      const tooLong = await app.inject({ method: 'GET', url: `/v1/conversions/orders/${'a'.repeat(1100)}`, headers: { 'x-request-id': 'long-1', origin } });
      expect(tooLong.statusCode).toBe(414);
      for (const [res, id] of [[badEncoding, 'bad-enc-1'], [tooLong, 'long-1']] as const) {
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(res.headers['x-request-id']).toBe(id);
        expect(res.headers.date).toMatch(HTTP_DATE);
        expect(res.headers['access-control-allow-origin']).toBe(origin);
        expect(res.headers.vary).toMatch(/Origin/);
      }
      const lines = logs.filter((l) => l.msg === 'request');
      expect(lines.map((l) => [l.status, l.requestId])).toEqual([
        [400, 'bad-enc-1'],
        [414, 'long-1'],
      ]);
      void app.drain();
      const draining = await app.inject({ method: 'GET', url: '/v1/conversions/orders/%E0%A4%A', headers: { 'x-request-id': 'bad-enc-2' } });
      expect(draining.statusCode).toBe(400);
      expect(draining.headers.connection).toBe('close');
      expect(draining.headers['x-request-id']).toBe('bad-enc-2');
    } finally {
      await app.close();
    }
  });
});

describe('Vary on report and items answers', () => {
  it('names Convx-Data-Version, beside Accept-Encoding and Origin, on 200s and 304s', async () => {
    const { app } = await appWith({ corsOrigins: ['https://app.example.com'] });
    try {
      const headers = { ...(await bearer()), origin: 'https://app.example.com' };
      const varyOf = (value: unknown) => String(value).split(/,\s*/);
      for (const url of [REPORT, ITEMS, '/v1/campaigns/cmp-1/conversions?dateFrom=2024-01-01&dateTo=2024-04-30']) {
        const ok = await app.inject({ method: 'GET', url, headers });
        expect(ok.statusCode, ok.body).toBe(200);
        expect(varyOf(ok.headers.vary)).toEqual(expect.arrayContaining(['Convx-Data-Version', 'Accept-Encoding', 'Origin']));
        expect(varyOf(ok.headers.vary).length).toBe(new Set(varyOf(ok.headers.vary).map((v) => v.toLowerCase())).size);
        const notModified = await app.inject({ method: 'GET', url, headers: { ...headers, 'if-none-match': String(ok.headers.etag) } });
        expect(notModified.statusCode).toBe(304);
        expect(varyOf(notModified.headers.vary)).toEqual(expect.arrayContaining(['Convx-Data-Version', 'Accept-Encoding', 'Origin']));
      }
      // answers that do not depend on it do not say so
      const health = await app.inject({ method: 'GET', url: '/healthz' });
      expect(String(health.headers.vary)).not.toMatch(/Convx-Data-Version/);
    } finally {
      await app.close();
    }
  });
});

describe('HEAD on a tagged route', () => {
  it('says what its GET says: Content-Encoding, the compressed Content-Length, the same weak ETag and Vary, no body', async () => {
    const { app } = await appWith();
    try {
      const headers = { ...(await bearer()), 'accept-encoding': 'gzip' };
      const get = await app.inject({ method: 'GET', url: ITEMS, headers });
      const head = await app.inject({ method: 'HEAD', url: ITEMS, headers });
      expect(get.headers['content-encoding']).toBe('gzip');
      expect(head.statusCode).toBe(200);
      expect(head.rawPayload.length).toBe(0);
      expect(head.headers['content-encoding']).toBe('gzip');
      expect(head.headers['content-length']).toBe(String(get.rawPayload.length));
      expect(head.headers.etag).toBe(get.headers.etag);
      expect(String(head.headers.etag)).toMatch(/^W\//);
      expect(head.headers.vary).toBe(get.headers.vary);
      // without Accept-Encoding: the identity, with its strong tag and length
      const plainGet = await app.inject({ method: 'GET', url: ITEMS, headers: await bearer() });
      const plainHead = await app.inject({ method: 'HEAD', url: ITEMS, headers: await bearer() });
      expect(plainHead.headers['content-encoding']).toBeUndefined();
      expect(plainHead.headers['content-length']).toBe(String(plainGet.rawPayload.length));
      expect(plainHead.headers.etag).toBe(plainGet.headers.etag);
    } finally {
      await app.close();
    }
  });
});

describe('a body that stops coming', () => {
  it('is answered once with the 408 naming the request: its X-Request-Id echoed and logged, its method and path, one log line', async () => {
    const logs: Record<string, unknown>[] = [];
    const server = await startServer({
      dir: SAMPLES,
      host: '127.0.0.1',
      port: 0,
      auth: { secret: SECRET },
      log: (entry) => logs.push(entry),
      version: 'test',
      limits: { bodyTimeoutMs: 250 },
    });
    try {
      const authorization = (await bearer()).authorization;
      const connection = await open(server.url);
      connection.socket.write(
        `POST ${VALIDATE}?q=jana.novak%40example.com HTTP/1.1\r\nHost: x\r\nAuthorization: ${authorization}\r\nContent-Type: application/json\r\nX-Request-Id: mine-1\r\nContent-Length: 1000\r\n\r\n{"audience":`,
      );
      await connection.closed;
      const answer = parseAnswer(connection.received());
      expect(answer.statusCode).toBe(408);
      expect(answer.headers['x-request-id']).toBe('mine-1');
      expect(JSON.parse(answer.body)).toMatchObject({ type: 'urn:convx:problem:request-timeout', status: 408 });
      // a later error of the parser on the ended connection writes no second line
      await new Promise((r) => setTimeout(r, 300));
      const lines = logs.filter((l) => l.msg === 'request');
      expect(lines, JSON.stringify(lines)).toHaveLength(1);
      expect(lines[0]).toMatchObject({ status: 408, requestId: 'mine-1', method: 'POST' });
      expect(String(lines[0]!.path)).toMatch(/^\/v4\/delivery\/e-mail\/validate/);
      expect(JSON.stringify(logs)).not.toContain('jana.novak');
    } finally {
      await server.close();
    }
  });
});

describe('a __proto__ key of a validation body', () => {
  it('is data, as local mode takes it: the server answers what convx validate prints', async () => {
    const file = join(tempDir(), 'proto.json');
    writeFileSync(
      file,
      '{"audience":{"contactIds":["c-1"]},"assets":[{"html":"<p>Hi</p>","subject":"Hi"}],"options":{"resolveOnly":true},"__proto__":{"polluted":true},"constructor":{"prototype":{"x":1}}}',
    );
    // From stdin: a request file's findings also carry their place in the file (file, line), which a server has not.
    const local = await cli(['validate', '-', '--data', SAMPLES, '-o', 'json'], { stdin: (await import('node:fs')).readFileSync(file, 'utf8') });
    expect(local.stdout).toMatch(/__proto__/);
    const { app } = await appWith();
    try {
      const res = await app.inject({
        method: 'POST',
        url: VALIDATE,
        headers: { ...(await bearer()), 'content-type': 'application/json' },
        payload: (await import('node:fs')).readFileSync(file, 'utf8'),
      });
      expect(res.statusCode, res.body).toBe(200);
      expect(JSON.parse(res.body)).toEqual(JSON.parse(local.stdout));
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    } finally {
      await app.close();
    }
  });
});

describe('the OpenAPI document', () => {
  it('declares the 304 without a body, If-None-Match, X-Request-Id and the RateLimit-* headers', async () => {
    const { app } = await appWith();
    try {
      const doc = JSON.parse((await app.inject({ method: 'GET', url: '/openapi.json' })).body);
      for (const path of ['/v1/conversions', '/v1/conversions/items', '/v1/campaigns/{campaignId}/conversions']) {
        const get = doc.paths[path].get;
        expect(get.responses['304'].content).toBeUndefined();
        expect(get.responses['304'].headers.ETag).toBeDefined();
        expect(get.responses['200'].headers.ETag).toBeDefined();
        expect(get.responses['200'].headers['X-Request-Id']).toBeDefined();
        expect(get.responses['200'].headers['RateLimit-Remaining']).toBeDefined();
        expect(get.responses['429'].headers['RateLimit-Reset']).toBeDefined();
        const headerParameters = get.parameters.filter((p: { in: string }) => p.in === 'header').map((p: { name: string }) => p.name);
        expect(headerParameters).toEqual(expect.arrayContaining(['If-None-Match', 'X-Request-Id']));
      }
      const validate = doc.paths['/v4/delivery/e-mail/validate'].post;
      expect(validate.responses['304']).toBeUndefined();
      expect(validate.responses['400'].headers['X-Request-Id']).toBeDefined();
      expect(doc.paths['/healthz'].get.responses['200'].headers['RateLimit-Limit']).toBeUndefined();
    } finally {
      await app.close();
    }
  });
});

describe('on a real loopback server', () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startServer({ dir: SAMPLES, host: '127.0.0.1', port: 0, auth: { secret: SECRET }, log: () => undefined, version: 'test' });
  });
  afterAll(async () => {
    await server.close();
  });

  it('sends Date and X-Request-Id on every answer: 200, 304, problems, the raw problems of the HTTP parser and the 417', async () => {
    const headers = await bearer();
    const ok = await fetch(`${server.url}${REPORT}`, { headers });
    const notModified = await fetch(`${server.url}${REPORT}`, { headers: { ...headers, 'if-none-match': ok.headers.get('etag')! } });
    const forbidden = await fetch(`${server.url}${REPORT}`);
    const missing = await fetch(`${server.url}/nowhere`);
    expect([ok.status, notModified.status, forbidden.status, missing.status]).toEqual([200, 304, 403, 404]);
    for (const res of [ok, notModified, forbidden, missing]) {
      await res.arrayBuffer();
      expect(res.headers.get('date')).toMatch(HTTP_DATE);
      expect(res.headers.get('x-request-id')).toMatch(UUID);
    }
    const tooLarge = await rawExchange(server.url, `GET ${REPORT} HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    expect(tooLarge.statusCode).toBe(431);
    expect(tooLarge.headers.date).toMatch(HTTP_DATE);
    expect(tooLarge.headers['x-request-id']).toMatch(UUID);
    const expectation = await rawExchange(server.url, 'GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\nX-Request-Id: tea-1\r\nConnection: close\r\n\r\n');
    expect(expectation.statusCode).toBe(417);
    expect(expectation.headers.date).toMatch(HTTP_DATE);
    expect(expectation.headers['x-request-id']).toBe('tea-1');
  });

  it('compresses on the wire: gzip bytes, Content-Encoding and no stale Content-Length', async () => {
    const headers = { ...(await bearer()), 'accept-encoding': 'gzip' };
    const { status, received, body } = await new Promise<{ status: number; received: http.IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
      http
        .get(`${server.url}${ITEMS}`, { headers }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, received: res.headers, body: Buffer.concat(chunks) }));
        })
        .on('error', reject);
    });
    expect(status).toBe(200);
    expect(received['content-encoding']).toBe('gzip');
    if (received['content-length'] !== undefined) expect(Number(received['content-length'])).toBe(body.length);
    expect(JSON.parse(gunzipSync(body).toString()).conversions.length).toBeGreaterThan(0);
  });
});

describe('the shutdown drain', () => {
  it('answers a request on an open keep-alive connection, and one on a new connection, with the 503 problem and Connection: close, never a reset', async () => {
    const server = await startServer({ dir: SAMPLES, host: '127.0.0.1', port: 0, auth: { secret: SECRET }, log: () => undefined, version: 'test' });
    const authorization = (await bearer()).authorization;
    // an idle keep-alive connection: one request answered, the connection kept
    const idle = await open(server.url);
    idle.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    await until(() => /\r\n\r\n\{.*\}$/s.test(idle.received()), 'the first answer');
    expect(parseAnswer(idle.received()).statusCode).toBe(200);
    const before = idle.received().length;
    // a request in flight: its body not yet complete
    const body = JSON.stringify(VALID_REQUEST);
    const inFlight = await open(server.url);
    inFlight.socket.write(
      `POST ${VALIDATE} HTTP/1.1\r\nHost: x\r\nAuthorization: ${authorization}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`,
    );
    await new Promise((r) => setTimeout(r, 150));
    let done = false;
    const closed = server.close().then(() => (done = true));
    await new Promise((r) => setTimeout(r, 200));
    expect(done).toBe(false);

    idle.socket.write(`GET ${REPORT} HTTP/1.1\r\nHost: x\r\nAuthorization: ${authorization}\r\nX-Request-Id: late-1\r\n\r\n`);
    await idle.closed;
    expect(idle.reset()).toBe(false);
    const refused = parseAnswer(idle.received().slice(before));
    expect(refused.statusCode).toBe(503);
    expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(JSON.parse(refused.body)).toMatchObject({ type: 'urn:convx:problem:shutting-down', status: 503 });
    expect(refused.headers.connection).toBe('close');
    expect(refused.headers['retry-after']).toBe('5');
    expect(refused.headers['x-request-id']).toBe('late-1');

    const fresh = await open(server.url);
    fresh.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    await fresh.closed;
    expect(fresh.reset()).toBe(false);
    expect(parseAnswer(fresh.received()).statusCode).toBe(503);

    // the request begun before is answered in full, on a connection then closed
    inFlight.socket.write(body.slice(10));
    await inFlight.closed;
    const finished = parseAnswer(inFlight.received());
    expect(finished.statusCode).toBe(200);
    expect(finished.headers.connection).toBe('close');
    await closed;
  });
});

describe('requests in flight', () => {
  it('app.requestsInFlight counts each request admitted and not yet answered once, whatever it holds meanwhile: what the drain waits for', async () => {
    // Requests that stop once they hold the data, until let go.
    const base = servedFrom(() => served);
    let holding = 0;
    let letGo!: () => void;
    const go = new Promise<void>((resolve) => (letGo = resolve));
    const paused: ServedData = {
      has: (plugin) => base.has(plugin),
      versionOf: (plugin) => base.versionOf(plugin),
      poolSize: base.poolSize,
      loadedAt: base.loadedAt,
      hold: async (plugin, version) => {
        const held = await base.hold(plugin, version);
        holding += 1;
        await go;
        return held;
      },
    };
    const { app } = await appWith({ served: paused });
    try {
      expect(app.requestsInFlight).toBe(0);
      const headers = await bearer();
      const answers = [app.inject({ method: 'GET', url: REPORT, headers }), app.inject({ method: 'GET', url: ITEMS, headers })];
      await until(() => holding === 2, 'both requests holding the data');
      expect(app.requestsInFlight).toBe(2);
      let drained = false;
      const drain = app.drain().then(() => (drained = true));
      await new Promise((r) => setTimeout(r, 50));
      expect(drained).toBe(false);
      letGo();
      for (const answer of await Promise.all(answers)) expect(answer.statusCode).toBe(200);
      await drain;
      expect(app.requestsInFlight).toBe(0);
      expect(served.requestsInFlight).toBe(0);
    } finally {
      letGo();
      await app.close();
    }
  });
});

describe('convx serve --no-compression and --cors-origin', () => {
  it('refuses a --cors-origin that is not an origin (exit 2)', async () => {
    for (const value of ['app.example.com', 'https://app.example.com/path', 'ftp://x.example', 'https://a.example,*']) {
      const run = await cli(['serve', '--data', SAMPLES, '--port', '0', '--cors-origin', value], { env: { CONVX_JWT_SECRET: SECRET } });
      expect(run.code, value).toBe(2);
      expect(run.stderr).toMatch(/--cors-origin: ".*" is not an origin/);
    }
  });

  it('passes both to the server', async () => {
    const server = await serveInProcess(['--data', SAMPLES, '--port', '0', '--no-compression', '--cors-origin', 'http://localhost:3000,https://App.Example.com'], { CONVX_JWT_SECRET: SECRET });
    try {
      const res = await fetch(`${server.url}${ITEMS}`, { headers: { ...(await bearer()), 'accept-encoding': 'gzip, br', origin: 'https://app.example.com' } });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-encoding')).toBeNull();
      expect(res.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
      await res.arrayBuffer();
    } finally {
      expect(await server.stop()).toBe(0);
    }
  }, 30_000);
});
