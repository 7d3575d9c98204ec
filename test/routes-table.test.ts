/**
 * The routes table (src/server/routes.ts) is what the server serves and documents: every row
 * is an operation of the OpenAPI document, at its path and method, with its operation id and
 * security, and the document holds no operation the table lacks. No dataset is loaded: the
 * document is made without a request.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/server/app.js';
import { createVerifier } from '../src/server/auth.js';
import { ROUTES } from '../src/server/routes.js';

interface Operation {
  operationId?: string;
  security?: unknown[];
  parameters?: { in: string; name: string }[];
}
type Document = { paths: Record<string, Record<string, Operation>> };

const HTTP_METHODS = new Set(['get', 'post', 'put', 'delete', 'patch', 'head', 'options']);

let app: FastifyInstance;
let doc: Document;

beforeAll(async () => {
  app = await buildApp({
    dataset: () => {
      throw new Error('the document needs no dataset');
    },
    verify: createVerifier({ secret: 'test-secret-that-is-long-enough' }),
    log: () => undefined,
    version: 'test',
  });
  doc = JSON.parse((await app.inject({ method: 'GET', url: '/openapi.json' })).body) as Document;
});
afterAll(async () => {
  await app.close();
});

/** The OpenAPI form of a fastify path: /v1/campaigns/:campaignId/x -> /v1/campaigns/{campaignId}/x. */
const documented = (path: string) => path.replace(/:([A-Za-z]+)/g, '{$1}');

describe('the routes table', () => {
  it('has one row per operation id and per method and path', () => {
    expect(new Set(ROUTES.map((r) => r.operationId)).size).toBe(ROUTES.length);
    expect(new Set(ROUTES.map((r) => `${r.method} ${r.path}`)).size).toBe(ROUTES.length);
  });

  it('documents every row at its path and method, with its operation id, path parameters and security', () => {
    for (const row of ROUTES) {
      const operation = doc.paths[documented(row.path)]?.[row.method.toLowerCase()];
      expect(operation?.operationId, `${row.method} ${row.path}`).toBe(row.operationId);
      const pathParameters = (operation?.parameters ?? []).filter((p) => p.in === 'path').map((p) => p.name);
      expect(pathParameters.sort(), row.operationId).toEqual([...row.path.matchAll(/:([A-Za-z]+)/g)].map((m) => m[1]).sort());
      expect(operation?.security, row.operationId).toEqual(row.answer === 'public' ? [] : [{ bearer: [] }]);
    }
  });

  it('leaves no documented operation out of the table', () => {
    const operations = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.entries(item)
        .filter(([method]) => HTTP_METHODS.has(method))
        .map(([method, operation]) => `${method.toUpperCase()} ${path} ${operation.operationId}`),
    );
    expect(operations.sort()).toEqual(ROUTES.map((r) => `${r.method} ${documented(r.path)} ${r.operationId}`).sort());
  });

  it('answers every row, a method its path does not allow with a 405 naming the allowed ones', async () => {
    for (const row of ROUTES) {
      const url = row.path.replace(/:[A-Za-z]+/g, 'x');
      const res = await app.inject({ method: 'DELETE', url });
      expect(res.statusCode, row.operationId).toBe(405);
      expect(res.headers.allow, row.operationId).toContain(row.method);
    }
  });
});
