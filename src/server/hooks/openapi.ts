/**
 * The OpenAPI document (@fastify/swagger), served at /openapi.json: each route documented by
 * the kind of its operation (model/schemas.ts: its responses and request headers).
 */
import swagger from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import { requestHeadersFor, responsesFor, withConventionHeaders, type OperationKind } from '../../model/schemas.js';
import { COMPONENT_SCHEMAS, ref } from '../../model/shapes.js';

/** The kind of each documented path's operation, filled as the routes are registered (router.ts). */
export type OperationKinds = Map<string, OperationKind>;

export async function registerOpenApi(app: FastifyInstance, version: string): Promise<OperationKinds> {
  const docs: OperationKinds = new Map();
  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'convx conversion reporting and delivery validation',
        version,
        license: { name: 'MIT', url: 'https://opensource.org/licenses/MIT' },
        description:
          'Served by `convx serve` from a local dataset. Every path but /openapi.json and /healthz needs a bearer JWT, ' +
          'in the Authorization header only, whose "plugin" claim names the plugin (the tenant) whose data it may read. Every error is an RFC 9457 ' +
          'application/problem+json body with a stable urn:convx:problem:* type, including 404 for a path no operation ' +
          'serves and 405 (with Allow) for a method a path does not allow.',
      },
      servers: [{ url: '/', description: 'the server that serves this document' }],
      components: {
        securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
        // A plain JSON copy of the interface's schemas (model/shapes.ts): ours are typed as read-only
        // literals, from which the response types derive, and the OpenAPI types are mutable ones.
        schemas: JSON.parse(JSON.stringify(COMPONENT_SCHEMAS)),
      },
    },
    transform: ({ schema, url }) => {
      const kind = docs.get(url);
      // The validate body is documented only: the validation checks it and answers with findings, not a 400.
      const body = kind === 'validate' ? { body: ref('ValidateRequest') } : {};
      const documented = kind ? { ...schema, ...body, ...requestHeadersFor(kind), response: withConventionHeaders(kind, responsesFor(kind)) } : schema;
      return { schema: documented, url };
    },
  });
  return docs;
}

/** The document itself, undocumented. */
export function registerOpenApiRoute(app: FastifyInstance): void {
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
