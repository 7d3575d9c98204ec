/**
 * The OpenAPI document (@fastify/swagger), served at /openapi.json: each route documented by
 * the kind of its operation (model/schemas.ts: its responses and request headers).
 */
import { createHash } from 'node:crypto';
import swagger from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import { requestHeadersFor, responsesFor, withConventionHeaders, type OperationKind } from '../../model/schemas.js';
import { COMPONENT_SCHEMAS, ref } from '../../model/shapes.js';
import { COMPRESSION_THRESHOLD_BYTES, compress, negotiateEncoding, type Encoding } from '../conventions.js';
import { noneMatch } from '../etag.js';

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

/**
 * The document itself, undocumented. It needs no token and never changes while the server runs:
 * its text (some 200 kB) is made once, and each coding of it once (`compression`), so that a
 * request costs what sending it costs (made afresh, 2.4 ms of CPU a request, 3.6 ms with brotli).
 * Its tag is the text's hash (weak for a coded copy, as every answer's is: conditional.ts), so a
 * client holding it gets a 304. The answer-headers hook (headers.ts) leaves an answer with a
 * Content-Encoding as it is.
 */
export function registerOpenApiRoute(app: FastifyInstance, compression: boolean): void {
  let made: { text: Buffer; tag: string } | undefined;
  const coded = new Map<Encoding, Promise<Buffer>>();
  const codedAs = (encoding: Encoding, body: Buffer): Promise<Buffer> => {
    let pending = coded.get(encoding);
    if (!pending) {
      pending = compress(body, encoding);
      coded.set(encoding, pending);
      // a failed compression is tried again by the next request, not kept
      pending.catch(() => coded.delete(encoding));
    }
    return pending;
  };
  app.get('/openapi.json', { schema: { hide: true } }, async (request, reply) => {
    if (!made) {
      const text = Buffer.from(JSON.stringify(app.swagger()));
      made = { text, tag: `"${createHash('sha256').update(text).digest('base64url').slice(0, 32)}"` };
    }
    const { text, tag } = made;
    const encoding = compression && text.length >= COMPRESSION_THRESHOLD_BYTES ? negotiateEncoding(request.headers['accept-encoding']) : undefined;
    void reply.header('etag', encoding ? `W/${tag}` : tag);
    if (noneMatch(request.headers['if-none-match'], tag)) return reply.code(304).send();
    void reply.type('application/json; charset=utf-8');
    if (!encoding) return text;
    const body = await codedAs(encoding, text);
    void reply.header('content-encoding', encoding);
    return body;
  });
}
