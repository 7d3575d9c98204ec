/** convx serve: routes through fastify's inject(), auth, tenant scoping, injection, reload, and one real HTTP run. */
import { spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { exportJWK, SignJWT, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { parseItemsQuery, parseReportQuery, type RawParams } from '../src/model/query.js';
import { buildApp } from '../src/server/app.js';
import { createVerifier, secretKey, signDevelopmentToken, type AuthConfig } from '../src/server/auth.js';
import { ServedDataset } from '../src/server/plugins.js';
import { cli, csv, dataset, SAMPLES, serveInProcess, sharedBackend, shop, tempDir, twoPluginFiles } from './helpers.js';

const SECRET = 'test-secret-that-is-long-enough';
const NOW = new Date('2024-05-01T12:00:00Z');

/** samples/shop served, loaded once for the apps of the file on it (they only read it), retired after the file. */
let samples: Promise<ServedDataset> | undefined;
afterAll(async () => (await samples)?.retire());

/** An app on dir served (samples/shop's shared, any other loaded for it); close() closes the app and retires a dataset loaded for it. */
async function appFor(dir: string, auth: AuthConfig = { secret: SECRET }) {
  const shared = dir === SAMPLES;
  const served = await (shared ? (samples ??= ServedDataset.load(SAMPLES)) : ServedDataset.load(dir));
  const logs: Record<string, unknown>[] = [];
  const app = await buildApp({ dataset: () => served, verify: createVerifier(auth), log: (e) => logs.push(e), now: () => NOW, version: 'test' });
  const close = async () => {
    await app.close();
    if (!shared) await served.retire();
  };
  return { app, logs, close };
}

const bearer = async (plugin: string) => ({ authorization: `Bearer ${await signDevelopmentToken(SECRET, plugin, '1h')}` });
const qs = (params: RawParams) => new URLSearchParams(params as Record<string, string>).toString();

describe('reporting routes on samples/shop', () => {
  let ctx: Awaited<ReturnType<typeof appFor>>;
  let headers: Record<string, string>;
  beforeAll(async () => {
    ctx = await appFor(SAMPLES);
    headers = await bearer('shop');
  });
  afterAll(async () => {
    await ctx.close();
  });

  const get = (url: string) => ctx.app.inject({ method: 'GET', url, headers });

  const shared = sharedBackend(SAMPLES);

  /** The body the local backend gives for the same query, serialised the same way. */
  async function local(kind: 'report' | 'items', raw: RawParams): Promise<string> {
    const backend = shared();
    if (kind === 'report') {
      const page = await backend.report(parseReportQuery(raw, NOW));
      return JSON.stringify({ conversions: page.rows, paging: page.paging });
    }
    const page = await backend.items(parseItemsQuery(raw, { campaignId: true }));
    return JSON.stringify({ conversions: page.rows, paging: page.paging });
  }

  it('answers /v1/conversions byte for byte as the local backend, for every parameter', async () => {
    const cases: RawParams[] = [
      {},
      { dateFrom: '2024-01-01', dateTo: '2024-04-30' },
      { dateFrom: '2024-03-01', dateTo: '2024-03-31', country: 'CZ,SK', currency: 'EUR,CZK' },
      { dateFrom: '2024-01-01', dateTo: '2024-04-30', q: 'welcome', sort: 'name' },
      { dateFrom: '2024-01-01', dateTo: '2024-04-30', limit: '3', offset: '2', sort: '-refundsAmountWTax,id' },
      { dateTo: '2024-02-15' },
    ];
    for (const raw of cases) {
      const res = await get(`/v1/conversions?${qs(raw)}`);
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.body).toBe(await local('report', raw));
    }
  });

  it('answers /v1/conversions/items byte for byte as the local backend, for every parameter', async () => {
    const period = { dateFrom: '2024-01-01', dateTo: '2024-04-30' };
    const cases: RawParams[] = [
      period,
      { ...period, sourceId: 'k-1' },
      { ...period, sourceId: 'k-1', sourceType: 'campaign' },
      { ...period, sourceType: 'smartflow', smartflowId: 'sf-1', deliveryId: 'd-2' },
      { ...period, contactId: 'c-140' },
      { ...period, orderId: 'o-2' },
      { ...period, country: 'SK,DE', currency: 'EUR' },
      { ...period, limit: '7', offset: '14', sort: 'conversionsReferenceAmount' },
      { ...period, sort: '-orderId', limit: '1000' },
    ];
    for (const raw of cases) {
      const res = await get(`/v1/conversions/items?${qs(raw)}`);
      expect(res.statusCode, JSON.stringify(raw)).toBe(200);
      expect(res.body).toBe(await local('items', raw));
    }
    expect(JSON.parse((await get(`/v1/conversions/items?${qs({ ...period, limit: '5', offset: '5' })}`)).body).paging).toMatchObject({ start: 5, count: 5 });
  });

  it('serves the per-source aliases, so every row’s detailUrl resolves', async () => {
    const period = '?dateFrom=2024-01-01&dateTo=2024-04-30&limit=1000';
    const report = JSON.parse((await get(`/v1/conversions${period}`)).body);
    for (const row of report.conversions) {
      // the detailUrl carries the period: followed as it is, it gives exactly the row's records
      const res = await get(`${row.source.detailUrl}&limit=1000`);
      expect(res.statusCode).toBe(200);
      const items = JSON.parse(res.body).conversions;
      expect(items.every((i: { source: { id: string; type: string } }) => i.source.id === row.id && i.source.type === row.source.type)).toBe(true);
      expect(items.filter((i: { isRefund: boolean }) => !i.isRefund)).toHaveLength(row.conversionsNumber);
      expect(items.filter((i: { isRefund: boolean }) => i.isRefund)).toHaveLength(row.refundsNumber);
    }
    const raw = { dateFrom: '2024-01-01', dateTo: '2024-04-30' };
    expect((await get(`/v1/campaigns/k-1/conversions?${qs(raw)}`)).body).toBe(await local('items', { ...raw, campaignId: 'k-1' }));
    expect((await get(`/v1/deliveries/sf-1/d-2/conversions?${qs(raw)}`)).body).toBe(await local('items', { ...raw, smartflowId: 'sf-1', deliveryId: 'd-2' }));
    expect((await get(`/v1/deliveries/sf-2/conversions?${qs(raw)}`)).body).toBe(await local('items', { ...raw, smartflowId: 'sf-2' }));
    // The path is authoritative: sourceId/sourceType only narrow within it; the path's own ids are not query parameters.
    const fixed = await get(`/v1/campaigns/k-1/conversions?${qs({ ...raw, sourceId: 'k-2' })}`);
    expect(fixed.statusCode).toBe(200);
    expect(JSON.parse(fixed.body).conversions).toEqual([]);
    expect((await get(`/v1/deliveries/sf-2/conversions?${qs({ ...raw, smartflowId: 'sf-1' })}`)).statusCode).toBe(400);
  });

  it.each([
    ['/v1/conversions/items?dateTo=2024-01-31', 'dateFrom', /is required/],
    ['/v1/conversions/items?dateFrom=2024-01-01', 'dateTo', /is required/],
    ['/v1/conversions?dateFrom=2024-1-1', 'dateFrom', /YYYY-MM-DD/],
    ['/v1/conversions?dateFrom=2024-02-30', 'dateFrom', /not a date/],
    ['/v1/conversions?dateFrom=2024-03-02&dateTo=2024-03-01', 'dateFrom', /after dateTo/],
    ['/v1/conversions/items?dateFrom=2024-03-02&dateTo=2024-03-01', 'dateFrom', /after dateTo/],
    ['/v1/conversions?limit=0', 'limit', /whole number from 1 to 1000/],
    ['/v1/conversions?limit=1001', 'limit', /whole number from 1 to 1000/],
    ['/v1/conversions?limit=ten', 'limit', /whole number/],
    ['/v1/conversions?offset=-1', 'offset', />= 0/],
    ['/v1/conversions?sort=revenue', 'sort', /unknown field "revenue"/],
    ['/v1/conversions?sort=name,name', 'sort', /named twice/],
    ['/v1/conversions/items?dateFrom=2024-01-01&dateTo=2024-01-31&sort=datetime,orderId', 'sort', /one field/],
    ['/v1/conversions/items?dateFrom=2024-01-01&dateTo=2024-01-31&sourceType=sms', 'sourceType', /is not one of campaign, automation, smartflow/],
    ['/v1/conversions?bogus=1', 'bogus', /not a parameter/],
    ['/v1/conversions?limit=1&limit=2', 'limit', /given more than once/],
    // the parser is the one validation: what ajv used to refuse, it refuses; an empty value of any parameter, a filter too
    ['/v1/conversions?dateFrom=', 'dateFrom', /^is empty: give a value, or leave it out$/],
    ['/v1/conversions/items?dateFrom=2024-01-01&dateTo=2024-01-31&sourceType=', 'sourceType', /^is empty/],
    ['/v1/conversions/items?dateFrom=2024-01-01&dateTo=2024-01-31&sourceId=', 'sourceId', /^is empty/],
    ['/v1/conversions?country=,', 'country', /"," holds no two-letter country codes/],
    ['/v1/conversions?__proto__=x', '__proto__', /not a parameter/],
    ['/v1/conversions?country=cz&country=sk&limit=0', 'country', /given more than once \(a list is one value, comma-separated\)/],
    ['/v1/conversions?country=cz&country=sk&limit=0', 'limit', /whole number from 1 to 1000/],
    ['/v1/campaigns//conversions?dateFrom=2024-01-01&dateTo=2024-01-31', 'campaignId', /is empty in the path/],
    ['/v1/campaigns/k-1/conversions?dateFrom=2024-01-01&dateTo=2024-01-31&campaignId=k-2', 'campaignId', /not a parameter/],
    ['/v1/conversions/orders/o-1?limit=1', 'limit', /not a parameter/],
  ])('400 for %s, naming %s', async (url, parameter, message) => {
    const res = await get(url);
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    const body = JSON.parse(res.body);
    expect(body).toMatchObject({ type: 'urn:convx:problem:invalid-parameters', title: 'Invalid parameters', status: 400 });
    const named = body.errors.find((e: { parameter: string }) => e.parameter === parameter);
    expect(named?.message).toMatch(message);
  });

  it('answers unknown routes with 404, and health and OpenAPI without a token', async () => {
    const missing = await get('/v1/nothing');
    expect(missing.statusCode).toBe(404);
    expect(JSON.parse(missing.body).type).toBe('urn:convx:problem:not-found');
    const validate = await ctx.app.inject({ method: 'POST', url: '/v4/delivery/e-mail/validate', headers, payload: {} });
    expect(validate.statusCode).toBe(200); // an invalid request is a finding, in a 200
    expect(JSON.parse(validate.body).render.errors[0].code).toBe('invalid_request');
    const health = await ctx.app.inject({ method: 'GET', url: '/healthz' });
    expect(JSON.parse(health.body).status).toBe('ok');
    const openapi = JSON.parse((await ctx.app.inject({ method: 'GET', url: '/openapi.json' })).body);
    expect(Object.keys(openapi.paths).sort()).toEqual([
      '/healthz',
      '/v1/campaigns/{campaignId}/conversions',
      '/v1/campaigns/{campaignId}/recipients/{contactId}/activity',
      '/v1/contacts/{contact}/conversions',
      '/v1/conversions',
      '/v1/conversions/daily',
      '/v1/conversions/items',
      '/v1/conversions/orders/{orderId}',
      '/v1/conversions/timeframes',
      '/v1/conversions/total',
      '/v1/deliveries/{smartflowId}/conversions',
      '/v1/deliveries/{smartflowId}/recipients/{contactId}/activity',
      '/v1/deliveries/{smartflowId}/{deliveryId}/conversions',
      '/v1/deliveries/{smartflowId}/{deliveryId}/recipients/{contactId}/activity',
      '/v1/ids/{id}',
      '/v4/delivery/e-mail/validate',
    ]);
    const itemParams = openapi.paths['/v1/conversions/items'].get.parameters;
    expect(itemParams.find((p: { name: string }) => p.name === 'sourceType').schema.enum).toEqual(['campaign', 'automation', 'smartflow']);
    expect(itemParams.find((p: { name: string }) => p.name === 'dateFrom').required).toBe(true);
    expect(itemParams.find((p: { name: string }) => p.name === 'limit').schema).toMatchObject({ minimum: 1, maximum: 1000 });
    expect(openapi.paths['/v1/conversions'].get.responses['200'].content['application/json'].schema.$ref).toBe('#/components/schemas/ReportResponse');
    expect(openapi.components.schemas.AggregateRow.required).toContain('grossConversionsAmountWTax');
    expect(openapi.paths['/v4/delivery/e-mail/validate'].post.responses['200'].content['application/json'].schema.$ref).toBe('#/components/schemas/ValidateResponse');
  });

  it('answers concurrent requests, each on its own connection, with the same bodies as one by one', async () => {
    const urls = Array.from({ length: 24 }, (_, i) =>
      i % 2 ? `/v1/conversions?dateFrom=2024-01-01&dateTo=2024-04-30&limit=${1 + (i % 5)}` : `/v1/conversions/items?dateFrom=2024-02-01&dateTo=2024-03-31&offset=${i}`,
    );
    const together = await Promise.all(urls.map((url) => get(url)));
    for (const [i, res] of together.entries()) {
      expect(res.statusCode).toBe(200);
      expect(res.body).toBe((await get(urls[i]!)).body);
    }
  });

  it('writes one access-log line a request, without the token', async () => {
    await get('/v1/conversions?dateFrom=2024-03-01&dateTo=2024-03-31');
    const line = ctx.logs.filter((l) => l.msg === 'request').at(-1)!;
    expect(line).toMatchObject({ method: 'GET', path: '/v1/conversions?dateFrom=2024-03-01&dateTo=2024-03-31', status: 200, plugin: 'shop' });
    expect(typeof line.ms).toBe('number');
    expect(JSON.stringify(ctx.logs)).not.toContain(headers.authorization!.slice(7));
  });

  it('never answers a hostile parameter with a 500 or with rows that do not match', async () => {
    const period = 'dateFrom=2024-01-01&dateTo=2024-04-30';
    const hostile = ["'", "' OR '1'='1", "x'; DROP TABLE scope_0.conv; --", '%', '_', '"', '\\', 'k-1; SELECT 1', ') OR (1=1'];
    for (const value of hostile) {
      const v = encodeURIComponent(value);
      for (const url of [
        `/v1/conversions?${period}&q=${v}`,
        `/v1/conversions?${period}&country=${v}`,
        `/v1/conversions?${period}&sort=${v}`,
        `/v1/conversions/items?${period}&orderId=${v}`,
        `/v1/conversions/items?${period}&sourceId=${v}`,
        `/v1/campaigns/${v}/conversions?${period}`,
      ]) {
        const res = await get(url);
        expect([200, 400, 404], `${url} -> ${res.statusCode} ${res.body}`).toContain(res.statusCode);
        if (res.statusCode === 200) expect(JSON.parse(res.body).conversions, url).toEqual([]);
      }
    }
    // and the data is still there
    expect(JSON.parse((await get(`/v1/conversions?${period}`)).body).paging.totalCount).toBe(16);
  });
});

describe('authentication', () => {
  let ctx: Awaited<ReturnType<typeof appFor>>;
  const dir = SAMPLES;
  const url = '/v1/conversions?dateFrom=2024-03-01&dateTo=2024-03-31';
  const keys = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
  beforeAll(async () => {
    ctx = await appFor(dir);
  });
  afterAll(async () => {
    await ctx.close();
  });

  const call = (authorization?: string) =>
    ctx.app.inject({ method: 'GET', url, headers: authorization === undefined ? {} : { authorization } });
  const sign = (claims: Record<string, unknown>, key: Uint8Array = secretKey(SECRET)) =>
    new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).sign(key);
  const now = () => Math.floor(Date.now() / 1000);

  it('accepts a valid token', async () => {
    expect((await call((await bearer('shop')).authorization)).statusCode).toBe(200);
  });

  it.each([
    ['missing header', async () => undefined, 'missing-credentials', /Authorization: Bearer/],
    ['Basic scheme', async () => 'Basic dXNlcjpwYXNz', 'invalid-token', /not "Bearer <JWT>"/],
    ['garbage', async () => 'Bearer garbage', 'invalid-token', /not a JWT/],
    ['wrong secret', async () => `Bearer ${await sign({ plugin: 'shop' }, secretKey('another-secret'))}`, 'invalid-token', /signature/],
    ['expired', async () => `Bearer ${await sign({ plugin: 'shop', exp: now() - 120 })}`, 'expired-token', /expired/],
    ['not yet valid', async () => `Bearer ${await sign({ plugin: 'shop', nbf: now() + 600, exp: now() + 1200 })}`, 'invalid-token', /not valid yet/],
    ['alg none', async () => `Bearer ${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${Buffer.from(`{"plugin":"shop","exp":${now() + 600}}`).toString('base64url')}.`, 'invalid-token', /none are not accepted/],
    ['an algorithm not configured', async () => `Bearer ${await new SignJWT({ plugin: 'shop' }).setProtectedHeader({ alg: 'ES256' }).sign(keys.privateKey)}`, 'invalid-token', /ES256 are not accepted/],
    ['no plugin claim', async () => `Bearer ${await sign({ sub: 'x', exp: now() + 600 })}`, 'invalid-token', /no "plugin" claim/],
    ['a plugin the data does not hold', async () => (await bearer('other')).authorization, 'unknown-plugin', /"other" has no data/],
  ])('403 for %s', async (_name, header, type, detail) => {
    const res = await call(await header());
    expect(res.statusCode).toBe(403);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    const body = JSON.parse(res.body);
    expect(body.type).toBe(`urn:convx:problem:${type}`);
    expect(body.detail).toMatch(detail);
  });

  it('allows the clock tolerance on exp', async () => {
    expect((await call(`Bearer ${await sign({ plugin: 'shop', exp: now() - 5 })}`)).statusCode).toBe(200);
  });

  it('verifies RS256 with a PEM public key and ES256 with a JWKS file', async () => {
    const dirKeys = tempDir();
    const pem = join(dirKeys, 'rsa.pem');
    writeFileSync(pem, rsa.publicKey.export({ type: 'spki', format: 'pem' }));
    const jwk: JWK = { ...(await exportJWK(keys.publicKey)), kid: 'k1', alg: 'ES256' };
    const jwksFile = join(dirKeys, 'jwks.json');
    writeFileSync(jwksFile, JSON.stringify({ keys: [jwk] }));

    const withPem = await appFor(dir, { publicKeyFile: pem });
    const rsToken = await new SignJWT({ plugin: 'shop' }).setProtectedHeader({ alg: 'RS256' }).setExpirationTime('5m').sign(rsa.privateKey);
    expect((await withPem.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${rsToken}` } })).statusCode).toBe(200);
    const hsToken = (await bearer('shop')).authorization;
    expect((await withPem.app.inject({ method: 'GET', url, headers: { authorization: hsToken } })).statusCode).toBe(403);
    await withPem.close();

    const withJwks = await appFor(dir, { jwksFile });
    const esToken = await new SignJWT({ plugin: 'shop' }).setProtectedHeader({ alg: 'ES256', kid: 'k1' }).setExpirationTime('5m').sign(keys.privateKey);
    expect((await withJwks.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${esToken}` } })).statusCode).toBe(200);
    await withJwks.close();
  });

  it('reads its key files again on a reload (SIGHUP): a key removed from the JWKS is refused from then on; a broken file keeps the keys before', async () => {
    const dirKeys = tempDir();
    const jwksFile = join(dirKeys, 'jwks.json');
    const other = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const set = async (...pairs: [string, typeof keys][]) =>
      writeFileSync(jwksFile, JSON.stringify({ keys: await Promise.all(pairs.map(async ([kid, pair]) => ({ ...(await exportJWK(pair.publicKey)), kid, alg: 'ES256' }))) }));
    const tokenOf = (kid: string, pair: typeof keys) => new SignJWT({ plugin: 'shop' }).setProtectedHeader({ alg: 'ES256', kid }).setExpirationTime('5m').sign(pair.privateKey);
    await set(['k1', keys], ['k2', other]);
    const [one, two] = [await tokenOf('k1', keys), await tokenOf('k2', other)];
    const server = await serveInProcess(['--data', SAMPLES, '--port', '0', '--jwks', jwksFile]);
    const status = async (token: string) => (await fetch(`${server.url}${url}`, { headers: { authorization: `Bearer ${token}` } })).status;
    const reloads = () => (server.log().match(/"msg":"reload(ed|) failed|"msg":"reloaded"/g) ?? []).length;
    try {
      expect([await status(one), await status(two)]).toEqual([200, 200]);
      // k1 revoked: gone from the file, then a reload; its token (verified before, and remembered) is refused
      await set(['k2', other]);
      server.signal('SIGHUP');
      await vi.waitFor(() => expect(reloads()).toBe(1), { timeout: 20_000, interval: 50 });
      expect([await status(one), await status(two)]).toEqual([403, 200]);
      // a file that is no key set: the reload fails, the keys before stay
      writeFileSync(jwksFile, 'not JSON');
      server.signal('SIGHUP');
      await vi.waitFor(() => expect(reloads()).toBe(2), { timeout: 20_000, interval: 50 });
      expect(server.log()).toMatch(/"msg":"reload failed; still serving the data loaded before"/);
      expect([await status(one), await status(two)]).toEqual([403, 200]);
    } finally {
      await server.stop();
    }
  }, 60_000);

  it('refuses to build a verifier without a key', () => {
    expect(() => createVerifier({})).toThrow(/set CONVX_JWT_SECRET/);
  });
});

describe('tenant scoping with two plugins', () => {
  const dir = dataset({
    ...twoPluginFiles(),
    'sources.csv': csv(
      ['plugin_id', 'source_type', 'source_id', 'name', 'smartflow_id', 'delivery_id'],
      [
        ['A', 'campaign', 'shared', 'A campaign', '', ''],
        ['B', 'campaign', 'shared', 'B campaign', '', ''],
        ['B', 'smartflow', 'n1', 'B node', 'sf', 'd'],
      ],
    ),
  });

  it('never shows plugin B’s rows to a token for plugin A, on any route', async () => {
    const { app, close } = await appFor(dir);
    try {
      const period = 'dateFrom=2024-03-01&dateTo=2024-03-31';
      for (const [plugin, own, other] of [['A', 'oa', 'ob'], ['B', 'ob', 'oa']] as const) {
        const headers = await bearer(plugin);
        for (const url of [
          `/v1/conversions?${period}`,
          `/v1/conversions/items?${period}`,
          `/v1/conversions/items?${period}&orderId=${other}`,
          `/v1/campaigns/shared/conversions?${period}`,
          `/v1/deliveries/sf/conversions?${period}`,
          `/v1/deliveries/sf/d/conversions?${period}`,
        ]) {
          const res = await app.inject({ method: 'GET', url, headers });
          expect(res.statusCode).toBe(200);
          expect(res.body).not.toContain(`"${other}"`);
          expect(res.body).not.toContain(plugin === 'A' ? 'B campaign' : 'A campaign');
        }
        const items = JSON.parse((await app.inject({ method: 'GET', url: `/v1/conversions/items?${period}`, headers })).body);
        expect(items.conversions.map((c: { orderId: string }) => c.orderId)).toEqual([own]);
      }
    } finally {
      await close();
    }
  });
});

describe('two Authorization headers', () => {
  // Tokens of plugins A and B: which plugin would answer is not the server's to guess.
  let ctx: Awaited<ReturnType<typeof appFor>>;
  let tokens: string[];
  const url = '/v1/conversions/items?dateFrom=2024-03-01&dateTo=2024-03-31';
  beforeAll(async () => {
    ctx = await appFor(dataset(twoPluginFiles()));
    tokens = [(await bearer('A')).authorization, (await bearer('B')).authorization];
  });
  afterAll(async () => {
    await ctx.close();
  });

  const expectAmbiguous = (status: number | undefined, type: string | undefined, body: string) => {
    expect(status, body).toBe(400);
    expect(type).toMatch(/^application\/problem\+json/);
    const problem = JSON.parse(body);
    expect(problem.type).toBe('urn:convx:problem:bad-request');
    expect(problem.detail).toMatch(/one Authorization header/);
    expect(body).not.toContain('"oa"');
    for (const token of tokens) expect(body).not.toContain(token.slice(7));
  };

  it('are a 400 problem, not an answer for the first token (inject: joined into one, as a proxy joins them)', async () => {
    for (const authorization of [tokens.join(','), [...tokens].reverse().join(','), `${tokens[0]},${tokens[0]}`, tokens.join(', ')]) {
      const res = await ctx.app.inject({ method: 'GET', url, headers: { authorization } });
      expectAmbiguous(res.statusCode, String(res.headers['content-type']), res.body);
    }
    // one credential with commas of its own is one: not a bearer token (403), not two
    const digest = await ctx.app.inject({ method: 'GET', url, headers: { authorization: 'Digest username="a", realm="b"' } });
    expect(digest.statusCode, digest.body).toBe(403);
    // one is answered, for its own plugin
    const one = await ctx.app.inject({ method: 'GET', url, headers: { authorization: tokens[0]! } });
    expect(one.statusCode, one.body).toBe(200);
    expect(JSON.parse(one.body).conversions.map((c: { orderId: string }) => c.orderId)).toEqual(['oa']);
  });

  it('are a 400 problem when sent as two header lines over HTTP (Node keeps the first in request.headers)', async () => {
    const base = new URL(await ctx.app.listen({ host: '127.0.0.1', port: 0 }));
    const answer = await new Promise<{ status?: number; type?: string; body: string }>((resolve, reject) => {
      const req = httpRequest({ host: base.hostname, port: base.port, path: url }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode, type: res.headers['content-type'], body }));
      });
      req.setHeader('Authorization', tokens);
      req.on('error', reject).end();
    });
    expectAmbiguous(answer.status, answer.type, answer.body);
  });
});

describe('failures', () => {
  it('answers a missing FX rate with a 422 data-error problem naming the currency and day, and hides unexpected failures', async () => {
    const dir = shop({
      touches: [{ at: '2024-03-01T00:00:00Z' }],
      fx: [['2024-03-01', 'CZK', '0.04']],
      orders: [{ id: 'o', at: '2024-03-20T10:00:00Z', currency: 'CZK' }, { id: 'e', at: '2024-03-20T11:00:00Z', currency: 'EUR' }],
    });
    const { app, close, logs } = await appFor(dir);
    const headers = await bearer('default');
    const res = await app.inject({ method: 'GET', url: '/v1/conversions?dateFrom=2024-03-01&dateTo=2024-03-31', headers });
    expect(res.statusCode).toBe(422);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(JSON.parse(res.body)).toMatchObject({
      type: 'urn:convx:problem:data-error',
      status: 422,
      detail: expect.stringMatching(/exchange rates are missing.*CZK on 2024-03-20: no rate in fx.*1 transaction needs it/),
    });
    await close();

    const broken = await buildApp({
      dataset: () => {
        throw new Error('secret internal detail');
      },
      verify: createVerifier({ secret: SECRET }),
      log: (e) => logs.push(e),
      version: 'test',
    });
    const failed = await broken.inject({ method: 'GET', url: '/v1/conversions', headers });
    expect(failed.statusCode).toBe(500);
    expect(failed.body).not.toContain('secret internal detail');
    expect(JSON.parse(failed.body).type).toBe('urn:convx:problem:internal');
    expect(logs.some((l) => l.msg === 'unexpected error' && String(l.error).includes('secret internal detail'))).toBe(true);
    await broken.close();
  });
});

describe('reload', () => {
  it('serves new data after a reload while a request begun before it finishes on the old data', async () => {
    const orders = (rows: string[][]) => csv(['order_id', 'contact_id', 'datetime', 'currency', 'amount_wo_tax', 'amount_w_tax'], rows);
    const dir = dataset({
      'orders.csv': orders([['o1', 'c1', '2024-03-02T10:00:00Z', 'EUR', '1', '1']]),
      'touches.csv': csv(['contact_id', 'datetime', 'touch', 'source_type', 'source_id'], [['c1', '2024-03-01T00:00:00Z', 'click', 'campaign', 'k']]),
    });
    const { DatasetHolder } = await import('../src/server/plugins.js');
    const holder = new DatasetHolder(await ServedDataset.load(dir), {});
    const app = await buildApp({ dataset: () => holder.current, verify: createVerifier({ secret: SECRET }), log: () => undefined, version: 'test' });
    const headers = await bearer('default');
    const count = async () =>
      JSON.parse((await app.inject({ method: 'GET', url: '/v1/conversions/items?dateFrom=2024-03-01&dateTo=2024-03-31', headers })).body).paging.totalCount;
    expect(await count()).toBe(1);

    const inFlight = await holder.current.backend('default'); // a request that has begun
    writeFileSync(join(dir, 'orders.csv'), orders([['o1', 'c1', '2024-03-02T10:00:00Z', 'EUR', '1', '1'], ['o2', 'c1', '2024-03-03T10:00:00Z', 'EUR', '1', '1']]));
    const reloading = holder.reload();
    const old = await inFlight.items(parseItemsQuery({ dateFrom: '2024-03-01', dateTo: '2024-03-31' }));
    expect(old.paging.totalCount).toBe(1);
    await inFlight.close();
    await reloading;
    expect(await count()).toBe(2);

    writeFileSync(join(dir, 'orders.csv'), 'not,a\nvalid,orders file\n');
    await expect(holder.reload()).rejects.toThrow(/required column is missing/);
    expect(await count()).toBe(2);
    await app.close();
    await holder.close();
  });
});

describe('/healthz after a reload that failed', () => {
  /** /healthz's body, and every reload's outcome awaited from the log (reloaded or reload failed). */
  const health = async (url: string) => (await fetch(`${url}/healthz`)).json() as Promise<{ status: string; loadedAt: string; reloadFailedAt?: string; dataVersion?: string }>;
  async function reloaded(server: Awaited<ReturnType<typeof serveInProcess>>, outcome: RegExp): Promise<void> {
    const seen = (server.log().match(new RegExp(outcome.source, 'g')) ?? []).length;
    server.signal('SIGHUP');
    const began = Date.now();
    while ((server.log().match(new RegExp(outcome.source, 'g')) ?? []).length === seen) {
      if (Date.now() - began > 20_000) throw new Error(`no ${outcome} in ${server.log()}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  it('says when the latest reload failed, the data loaded before still served; a reload that succeeds clears it', async () => {
    const dir = dataset(twoPluginFiles());
    const server = await serveInProcess(['--data', dir, '--port', '0'], { CONVX_JWT_SECRET: SECRET });
    try {
      const first = await health(server.url);
      // the data served named by its version, as Convx-Data-Version names it
      const answered = await fetch(`${server.url}/v1/conversions?dateFrom=2024-03-01&dateTo=2024-03-31`, { headers: { authorization: `Bearer ${await signDevelopmentToken(SECRET, 'A', '1h')}` } });
      expect(first).toEqual({ status: 'ok', loadedAt: first.loadedAt, dataVersion: answered.headers.get('convx-data-version') });
      const good = readFileSync(join(dir, 'orders.csv'));
      writeFileSync(join(dir, 'orders.csv'), 'not,a\nvalid,orders file\n');
      const before = Date.now();
      await reloaded(server, /"msg":"reload failed; still serving the data loaded before"/);
      const failed = await health(server.url);
      expect(failed.status).toBe('ok');
      expect([failed.loadedAt, failed.dataVersion]).toEqual([first.loadedAt, first.dataVersion]);
      expect(Date.parse(failed.reloadFailedAt!)).toBeGreaterThanOrEqual(before - 1);
      writeFileSync(join(dir, 'orders.csv'), good);
      await reloaded(server, /"msg":"reloaded"/);
      const again = await health(server.url);
      expect(again).toEqual({ status: 'ok', loadedAt: again.loadedAt, dataVersion: again.dataVersion });
      // the file written again: another version (a file's time is part of it)
      expect(again.dataVersion).not.toBe(first.dataVersion);
      expect(Date.parse(again.loadedAt)).toBeGreaterThan(Date.parse(first.loadedAt));
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });

  it('of a directory of plugin files: a directory gone at the reload', async () => {
    const out = join(tempDir('convx-health-'), 'plugins');
    const imported = await cli(['data', 'import', dataset(twoPluginFiles()), '--split-plugins', '--into', `${out}/`]);
    expect(imported.code, imported.stderr).toBe(0);
    const server = await serveInProcess(['--data', out, '--port', '0'], { CONVX_JWT_SECRET: SECRET });
    try {
      expect(Object.keys(await health(server.url))).toEqual(['status', 'loadedAt']);
      renameSync(out, `${out}-away`);
      await reloaded(server, /"msg":"reload failed; still serving the data loaded before","error":"the plugin directory [^"]*plugins is gone \(no such directory\)"/);
      expect(Object.keys(await health(server.url))).toEqual(['status', 'loadedAt', 'reloadFailedAt']);
      // an empty directory in its place serves nothing, as at the start: a failed reload, the files listed before still served
      mkdirSync(out);
      await reloaded(server, /"msg":"reload failed; still serving the data loaded before","error":"[^"]* holds no plugin files/);
      expect(Object.keys(await health(server.url))).toEqual(['status', 'loadedAt', 'reloadFailedAt']);
      rmSync(out, { recursive: true });
      renameSync(`${out}-away`, out);
      await reloaded(server, /"msg":"reloaded"/);
      expect(Object.keys(await health(server.url))).toEqual(['status', 'loadedAt']);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });
});

describe('convx serve --no-health-log', () => {
  it("leaves the answers 200 to /healthz out of the access log, and logs every other answer", async () => {
    const requests = (log: string) => log.split('\n').filter((line) => line.includes('"msg":"request"')).map((line) => `${JSON.parse(line).path} ${JSON.parse(line).status}`);
    for (const [flags, logged] of [[[], ['/healthz 200', '/healthz/x 404', '/v1/conversions 403']], [['--no-health-log'], ['/healthz/x 404', '/v1/conversions 403']]] as const) {
      const server = await serveInProcess(['--data', SAMPLES, '--port', '0', ...flags], { CONVX_JWT_SECRET: SECRET });
      try {
        for (const path of ['/healthz', '/healthz/x', '/v1/conversions']) await (await fetch(`${server.url}${path}`)).arrayBuffer();
      } finally {
        expect(await server.stop()).toBe(0);
      }
      expect(requests(server.log()), flags.join(' ')).toEqual(logged);
    }
  });
});

describe('convx token', () => {
  it('prints a token the server accepts, for the plugin and lifetime asked', async () => {
    const run = await cli(['token', '--plugin', 'shop', '--expires', '2h'], { env: { CONVX_JWT_SECRET: SECRET }, now: new Date().toISOString() });
    expect(run.code).toBe(0);
    const token = run.stdout.trim();
    const verify = createVerifier({ secret: SECRET });
    expect(await verify(`Bearer ${token}`)).toMatchObject({ plugin: 'shop' });
    const payload = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString());
    expect(payload.exp - payload.iat).toBe(7200);
  });

  it.each([
    [['token', '--plugin', 'shop'], {}, /set CONVX_JWT_SECRET/],
    [['token'], { CONVX_JWT_SECRET: SECRET }, /--plugin <id> is required/],
    [['token', '--plugin', 'shop', '--expires', 'soon'], { CONVX_JWT_SECRET: SECRET }, /--expires: "soon" is not a duration/],
  ])('exits 2 for %j', async (argv, env, message) => {
    const run = await cli(argv, { env });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(message);
    expect(run.stdout).toBe('');
  });
});

describe('convx serve end to end', () => {
  it('starts on a free loopback port, answers a real HTTP client, reloads on SIGHUP and stops on SIGTERM', async () => {
    const bin = join(import.meta.dirname, '..', 'bin', 'convx.js');
    const env = { ...process.env, CONVX_JWT_SECRET: SECRET };
    const child = spawn(process.execPath, [bin, 'serve', '--data', SAMPLES, '--port', '0'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      const started = Date.now();
      while (!/"msg":"listening"/.test(stderr)) {
        if (Date.now() - started > 20_000) throw new Error(`server did not start: ${stderr}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      const url = /"url":"([^"]+)"/.exec(stderr)![1]!;
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const token = (await cli(['token', '--plugin', 'shop'], { env: { CONVX_JWT_SECRET: SECRET }, now: new Date().toISOString() })).stdout.trim();
      const query = '/v1/conversions?dateFrom=2024-01-01&dateTo=2024-04-30';
      const res = await fetch(`${url}${query}`, { headers: { authorization: `Bearer ${token}` } });
      expect(res.status).toBe(200);
      const body = await res.text();
      const local = JSON.parse((await cli(['report', '--data', SAMPLES, '--from', '2024-01-01', '--to', '2024-04-30', '-o', 'json'])).stdout);
      expect(JSON.parse(body)).toEqual(local);
      expect((await fetch(`${url}${query}`)).status).toBe(403);

      child.kill('SIGHUP');
      while (!/"msg":"reloaded"/.test(stderr)) await new Promise((r) => setTimeout(r, 50));
      expect((await fetch(`${url}${query}`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      expect(stderr).toMatch(/"msg":"shutting down: draining requests in flight","signal":"SIGTERM"/);
      expect(stderr).toMatch(/"msg":"drained and stopped"/);
      expect(stderr).not.toContain(token);
    } finally {
      child.kill('SIGKILL');
    }
  });
});

describe('the floor of the benchmark (node bench/bare.js serve)', () => {
  it('answers a report with the figures convx reports, and an order with its records, from an imported file', async () => {
    const file = join(tempDir(), 'shop.duckdb');
    expect((await cli(['data', 'import', SAMPLES, '--into', file, '--quiet'])).code).toBe(0);
    const floor = spawn(process.execPath, ['bench/bare.js', 'serve', '--data', file, '--port', '0', '--connections', '2'], { stdio: ['ignore', 'ignore', 'pipe'] });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let log = '';
        floor.stderr.on('data', (chunk: Buffer) => {
          log += chunk.toString();
          const line = log.split('\n').find((l) => l.includes('"listening"'));
          if (line) resolve((JSON.parse(line) as { url: string }).url);
        });
        floor.on('exit', (code) => reject(new Error(`the floor exited with ${code}: ${log}`)));
      });
      const period = '?dateFrom=2024-03-01&dateTo=2024-03-31';
      const report = (await (await fetch(`${url}/v1/conversions${period}`)).json()) as { conversions: unknown[]; paging: { totalCount: number } };
      const convx = JSON.parse((await cli(['report', '--data', file, '--from', '2024-03-01', '--to', '2024-03-31', '-o', 'json'])).stdout);
      expect(report.conversions.length).toBeGreaterThan(0);
      expect(report.conversions).toEqual(convx.conversions);
      expect(report.paging.totalCount).toBe(convx.paging.totalCount);
      const order = convx.conversions.length && JSON.parse((await cli(['items', '--data', file, '--from', '2024-03-01', '--to', '2024-03-31', '-o', 'json'])).stdout).conversions[0].orderId;
      const items = (await (await fetch(`${url}/v1/conversions/items${period}&orderId=${encodeURIComponent(order)}`)).json()) as { conversions: { orderId: string }[] };
      expect(items.conversions.length).toBeGreaterThan(0);
      expect(items.conversions.every((r) => r.orderId === order)).toBe(true);
    } finally {
      floor.kill('SIGTERM');
    }
  });
});
