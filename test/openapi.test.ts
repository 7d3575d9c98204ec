/**
 * The served /openapi.json is good enough for a generated client: Redocly's
 * recommended rules find nothing, every operation has an operationId, the
 * validate operation a request body, and every real response of every route,
 * errors included, matches a response the document declares for it.
 */
import { createConfig, lintFromString } from '@redocly/openapi-core';
import { Ajv } from 'ajv';
import type { FastifyInstance } from 'fastify';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import type { ActivityResponse, ContactReport, OrderLookup } from '../src/backend.js';
import type { ConversionRecord } from '../src/model/types.js';
import { buildApp } from '../src/server/app.js';
import { createVerifier, signDevelopmentToken } from '../src/server/auth.js';
import type { ServerLimits } from '../src/server/limits.js';
import { ServedDataset } from '../src/server/plugins.js';
import { dataset, SAMPLES, shop } from './helpers.js';

const SECRET = 'test-secret-that-is-long-enough';
const NOW = new Date('2024-05-01T12:00:00Z');
const METHODS = ['get', 'post', 'put', 'delete', 'patch', 'head', 'options'] as const;

interface MediaType {
  schema: Record<string, unknown>;
}
interface ResponseObject {
  description: string;
  headers?: Record<string, unknown>;
  content?: Record<string, MediaType>;
}
interface Operation {
  operationId?: string;
  parameters?: { name: string; schema: Record<string, unknown> }[];
  security?: unknown[];
  requestBody?: { required?: boolean; content: Record<string, MediaType> };
  responses: Record<string, ResponseObject>;
}
interface Document {
  openapi: string;
  servers?: { url: string }[];
  paths: Record<string, Partial<Record<(typeof METHODS)[number], Operation>>>;
  components: { schemas: Record<string, unknown> };
}

let served: ServedDataset;
let noFx: ServedDataset;
/** A dataset of contacts and assets only (delivery validation): its reports are 404 no-orders. */
let contactsOnly: ServedDataset;
const apps: FastifyInstance[] = [];
let doc: Document;
let raw: string;

async function app(dataset: ServedDataset, limits: Partial<ServerLimits> = {}): Promise<FastifyInstance> {
  const built = await buildApp({ dataset: () => dataset, verify: createVerifier({ secret: SECRET }), log: () => undefined, now: () => NOW, version: 'test', limits });
  apps.push(built);
  return built;
}

beforeAll(async () => {
  served = await ServedDataset.load(SAMPLES);
  noFx = await ServedDataset.load(
    shop({
      touches: [{ at: '2024-03-01T00:00:00Z' }],
      fx: [['2024-03-01', 'CZK', '0.04']],
      orders: [{ id: 'o', at: '2024-03-20T10:00:00Z', currency: 'CZK' }],
    }),
  );
  contactsOnly = await ServedDataset.load(dataset({ 'contacts.csv': 'contact_id,email\nc-1,a@example.com\n' }));
  raw = (await (await app(served)).inject({ method: 'GET', url: '/openapi.json' })).body;
  doc = JSON.parse(raw) as Document;
});
afterAll(async () => {
  for (const a of apps) await a.close();
  await served.retire();
  await noFx.retire();
  await contactsOnly.retire();
});

describe('the OpenAPI document', () => {
  it('passes Redocly lint with the recommended rules, without errors or warnings', async () => {
    const config = await createConfig({ extends: ['recommended'] });
    const problems = await lintFromString({ source: raw, absoluteRef: 'openapi.json', config });
    expect(problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`)).toEqual([]);
  });

  it('says that a text parameter takes no empty value (minLength 1), as the server answers one with a 400', () => {
    const items = doc.paths['/v1/conversions/items']!.get!;
    const schema = (name: string) => items.parameters?.find((p) => p.name === name)?.schema;
    for (const name of ['sourceId', 'smartflowId', 'country', 'currency', 'sort', 'timeZone', 'orderId']) {
      expect(schema(name), name).toMatchObject({ type: 'string', minLength: 1 });
    }
  });

  it('names every operation, lists servers, documents the validate body, and leaves /healthz open', () => {
    expect(doc.servers?.length).toBeGreaterThan(0);
    const operations = Object.values(doc.paths).flatMap((item) => METHODS.flatMap((m) => (item[m] ? [item[m]!] : [])));
    const ids = operations.map((o) => o.operationId);
    expect(ids.every((id) => typeof id === 'string' && id.length > 0)).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    const validate = doc.paths['/v4/delivery/e-mail/validate']!.post!;
    expect(validate.requestBody).toMatchObject({ required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/ValidateRequest' } } } });
    expect(doc.paths['/healthz']!.get!.security).toEqual([]);
    for (const [status, kinds] of Object.entries({ 413: ['validate'], 415: ['validate'], 422: ['report', 'validate'], 429: ['report', 'validate'], 503: ['report', 'validate'] })) {
      for (const kind of kinds) {
        const operation = kind === 'report' ? doc.paths['/v1/conversions']!.get! : validate;
        expect(operation.responses[status]?.content?.['application/problem+json'], `${kind} ${status}`).toBeDefined();
      }
    }
  });

  it('documents a request body that the real validation requests match', () => {
    const check = compile({ $ref: '#/components/schemas/ValidateRequest' });
    expect(check({ audience: { lists: ['l-1'], excludeLists: ['l-2'] }, assets: [{ assetId: 'welcome' }, { language: 'cs', subject: 'Ahoj', html: '<p>x</p>' }], options: { sampleSize: 3 } })).toBe(true);
    expect(check({ audience: {}, assets: [] })).toBe(false);
  });
});

let ajv: Ajv | undefined;
function compile(schema: Record<string, unknown>) {
  ajv ??= new Ajv({ strict: false, allErrors: true }).addFormat('date-time', /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/);
  return ajv.compile({ ...schema, components: doc.components });
}

/** The operation of the document that serves method and path, if any. */
function operationFor(method: string, path: string): Operation | undefined {
  for (const [template, item] of Object.entries(doc.paths)) {
    const pattern = new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}/?$`);
    if (pattern.test(path)) return item[method.toLowerCase() as (typeof METHODS)[number]];
  }
  return undefined;
}

interface Case {
  name: string;
  app: () => Promise<FastifyInstance>;
  method?: 'GET' | 'POST' | 'DELETE' | 'PUT';
  url: string;
  auth?: boolean;
  /** The token's plugin (default shop). */
  plugin?: string;
  headers?: Record<string, string>;
  payload?: string;
  status: number;
}

const period = 'dateFrom=2024-01-01&dateTo=2024-04-30';
const validRequest = JSON.stringify({ audience: { contactIds: ['c-1', 'c-2'] }, assets: [{ html: '<p>Hi {{ contact.firstName }}</p>', subject: 'Hi' }] });
const json = { 'content-type': 'application/json' };
let rateLimited: FastifyInstance | undefined;

const CASES: Case[] = [
  { name: 'report', app: () => app(served), url: `/v1/conversions?${period}`, auth: true, status: 200 },
  { name: 'report, bad parameter', app: () => app(served), url: `/v1/conversions?${period}&limit=0x10`, auth: true, status: 400 },
  { name: 'report, token in query', app: () => app(served), url: `/v1/conversions?${period}&access_token=x`, status: 400 },
  { name: 'report, no token', app: () => app(served), url: `/v1/conversions?${period}`, status: 403 },
  { name: 'report, URL too long', app: () => app(served), url: `/v1/conversions?${period}&q=${'a'.repeat(9000)}`, auth: true, status: 414 },
  { name: 'report, no FX', app: () => app(noFx), url: '/v1/conversions?dateFrom=2024-03-01&dateTo=2024-03-31', auth: true, plugin: 'default', status: 422 },
  { name: 'report, no orders', app: () => app(contactsOnly), url: '/v1/conversions?dateFrom=2024-03-01&dateTo=2024-03-31', auth: true, plugin: 'default', status: 404 },
  { name: 'items, no orders', app: () => app(contactsOnly), url: '/v1/conversions/items?dateFrom=2024-03-01&dateTo=2024-03-31', auth: true, plugin: 'default', status: 404 },
  { name: 'campaign alias, no orders', app: () => app(contactsOnly), url: '/v1/campaigns/k-1/conversions?dateFrom=2024-03-01&dateTo=2024-03-31', auth: true, plugin: 'default', status: 404 },
  { name: 'items, no FX', app: () => app(noFx), url: '/v1/conversions/items?dateFrom=2024-03-01&dateTo=2024-03-31', auth: true, plugin: 'default', status: 422 },
  { name: 'report, over the time budget', app: () => app(served, { queryTimeoutMs: 0.001 }), url: `/v1/conversions?${period}`, auth: true, status: 503 },
  { name: 'items', app: () => app(served), url: `/v1/conversions/items?${period}&limit=5`, auth: true, status: 200 },
  { name: 'items, missing dates', app: () => app(served), url: '/v1/conversions/items', auth: true, status: 400 },
  { name: 'items, over the time budget', app: () => app(served, { queryTimeoutMs: 0.001 }), url: `/v1/conversions/items?${period}`, auth: true, status: 503 },
  { name: 'campaign alias', app: () => app(served), url: `/v1/campaigns/k-1/conversions?${period}`, auth: true, status: 200 },
  { name: 'campaign alias, id too long', app: () => app(served), url: `/v1/campaigns/${'k'.repeat(1100)}/conversions?${period}`, auth: true, status: 414 },
  { name: 'smartflow alias', app: () => app(served), url: `/v1/deliveries/sf-2/conversions?${period}`, auth: true, status: 200 },
  { name: 'delivery alias', app: () => app(served), url: `/v1/deliveries/sf-1/d-2/conversions?${period}`, auth: true, status: 200 },
  { name: 'delivery alias, bad sort', app: () => app(served), url: `/v1/deliveries/sf-1/d-2/conversions?${period}&sort=nope`, auth: true, status: 400 },
  { name: 'validate', app: () => app(served), method: 'POST', url: '/v4/delivery/e-mail/validate', auth: true, headers: json, payload: validRequest, status: 200 },
  { name: 'validate, invalid request', app: () => app(served), method: 'POST', url: '/v4/delivery/e-mail/validate', auth: true, headers: json, payload: '{"audience":{}}', status: 200 },
  { name: 'validate, not JSON', app: () => app(served), method: 'POST', url: '/v4/delivery/e-mail/validate', auth: true, headers: json, payload: '{', status: 400 },
  { name: 'validate, text/plain', app: () => app(served), method: 'POST', url: '/v4/delivery/e-mail/validate', auth: true, headers: { 'content-type': 'text/plain' }, payload: validRequest, status: 415 },
  { name: 'validate, over the body limit', app: () => app(served, { bodyLimit: 100 }), method: 'POST', url: '/v4/delivery/e-mail/validate', auth: true, headers: json, payload: validRequest, status: 413 },
  {
    name: 'validate, over the rate limit',
    app: async () => (rateLimited ??= await app(served, { rateLimitPerMinute: 1 })),
    method: 'POST',
    url: '/v4/delivery/e-mail/validate',
    auth: true,
    headers: json,
    payload: validRequest,
    status: 200,
  },
  {
    name: 'validate, over the rate limit (second)',
    app: async () => (rateLimited ??= await app(served, { rateLimitPerMinute: 1 })),
    method: 'POST',
    url: '/v4/delivery/e-mail/validate',
    auth: true,
    headers: json,
    payload: validRequest,
    status: 429,
  },
  { name: 'validate, no token', app: () => app(served), method: 'POST', url: '/v4/delivery/e-mail/validate', headers: json, payload: validRequest, status: 403 },
  { name: 'health', app: () => app(served), url: '/healthz', status: 200 },
  { name: 'health, token in query', app: () => app(served), url: '/healthz?token=x', status: 400 },
  { name: 'unknown path', app: () => app(served), url: '/v2/anything', status: 404 },
  { name: 'method not allowed', app: () => app(served), method: 'DELETE', url: `/v1/conversions?${period}`, status: 405 },
];

describe('the document is made once', () => {
  it('each coding of it too: every request gets the same bytes, as JSON, in the coding it asks for, without building the document again, and a 304 for the tag it holds', async () => {
    const built = await app(served);
    let made = 0;
    // The route reads app.swagger() (@fastify/swagger's decoration) when it answers: counted from here on, on an app that has answered nothing yet.
    const decorated = built as unknown as { swagger: () => unknown };
    const swagger = decorated.swagger.bind(built);
    decorated.swagger = () => {
      made++;
      return swagger();
    };
    const get = (encoding: string) => built.inject({ method: 'GET', url: '/openapi.json', headers: { 'accept-encoding': encoding } });
    for (let round = 0; round < 3; round++) {
      for (const [encoding, decode] of [['identity', (b: Buffer) => b], ['br', brotliDecompressSync], ['gzip', gunzipSync]] as const) {
        const res = await get(encoding);
        expect(res.statusCode).toBe(200);
        expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
        expect(res.headers['content-encoding']).toBe(encoding === 'identity' ? undefined : encoding);
        expect(res.headers.vary).toBe('Accept-Encoding');
        expect(decode(res.rawPayload).toString()).toBe(raw);
      }
    }
    expect(made).toBe(1);
    // tagged by its text (weak where coded): a client holding it gets a 304 without the document, in either coding
    const plainTag = (await get('identity')).headers.etag as string;
    expect(plainTag).toMatch(/^"[\w-]{32}"$/);
    expect((await get('br')).headers.etag).toBe(`W/${plainTag}`);
    for (const [encoding, tag] of [['identity', plainTag], ['br', `W/${plainTag}`], ['gzip', plainTag]]) {
      const again = await built.inject({ method: 'GET', url: '/openapi.json', headers: { 'accept-encoding': encoding!, 'if-none-match': tag! } });
      expect([again.statusCode, again.body, again.headers.vary], encoding).toEqual([304, '', 'Accept-Encoding']);
    }
    expect((await built.inject({ method: 'GET', url: '/openapi.json', headers: { 'if-none-match': '"another"' } })).statusCode).toBe(200);
    // --no-compression: the same text, never coded
    const plain = await buildApp({ dataset: () => served, verify: createVerifier({ secret: SECRET }), log: () => undefined, now: () => NOW, version: 'test', compression: false });
    apps.push(plain);
    const res = await plain.inject({ method: 'GET', url: '/openapi.json', headers: { 'accept-encoding': 'br' } });
    expect(res.headers['content-encoding']).toBeUndefined();
    expect(res.body).toBe(raw);
  });
});

describe('real responses match the document', () => {
  it.each(CASES)('$name: $status', async (c) => {
    const authorization = c.auth ? { authorization: `Bearer ${await signDevelopmentToken(SECRET, c.plugin ?? 'shop', '1h')}` } : {};
    const res = await (await c.app()).inject({ method: c.method ?? 'GET', url: c.url, headers: { ...authorization, ...c.headers }, ...(c.payload !== undefined ? { payload: c.payload } : {}) });
    expect(res.statusCode, res.body).toBe(c.status);
    const path = c.url.split('?')[0]!;
    const operation = operationFor(c.method ?? 'GET', path);
    const contentType = String(res.headers['content-type']).split(';')[0]!.trim();
    let declared: ResponseObject | undefined;
    if (operation) {
      // a status the operation can answer is declared as such, not left to "default"
      declared = operation.responses[String(res.statusCode)];
      expect(declared, `${c.method ?? 'GET'} ${path} answers ${res.statusCode}, which the document does not declare`).toBeDefined();
    } else {
      expect([404, 405]).toContain(res.statusCode);
      declared = { description: 'no operation', content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } } };
    }
    const media = declared!.content?.[contentType];
    expect(media, `${res.statusCode} as ${contentType}`).toBeDefined();
    const check = compile(media!.schema);
    const body: unknown = JSON.parse(res.body);
    expect(check(body), JSON.stringify(check.errors)).toBe(true);
    if (res.statusCode >= 400) expect(body).toMatchObject({ type: expect.stringMatching(/^urn:convx:problem:[a-z-]+$/), status: res.statusCode });
    if (res.statusCode === 429 || res.statusCode === 503) {
      expect(res.headers['retry-after']).toMatch(/^\d+$/);
      expect(declared!.headers?.['Retry-After']).toBeDefined();
    }
  });
});

describe('the look-ups answer the types their schemas say (one definition: the types are read from them)', () => {
  it('types each field as its schema does, nullable ones included', () => {
    expectTypeOf<OrderLookup>().toEqualTypeOf<{ orderId: string; conversions: ConversionRecord[]; reasons: string[] }>();
    expectTypeOf<ContactReport['contact']>().toEqualTypeOf<{
      contactId: string;
      clientContactId: string | null;
      email: string | null;
      firstName: string | null;
      surname: string | null;
    }>();
    expectTypeOf<ContactReport['matchedBy']>().toEqualTypeOf<'contactId' | 'email' | 'clientContactId'>();
    expectTypeOf<ContactReport['orders'][number]>().toEqualTypeOf<{ orderId: string; datetime: string; conversion: boolean; reasons: string[] }>();
    expectTypeOf<ContactReport['clicks'][number]['reason']>().toEqualTypeOf<string | null>();
    expectTypeOf<ActivityResponse['touches'][number]>().toEqualTypeOf<{ datetime: string; touch: string; source: { type: string; id: string; name: string } }>();
  });
});
