/**
 * CORS, for the origins of --cors-origin only: a preflight (OPTIONS with Access-Control-Request-Method)
 * from one of them to a path the server serves is answered 204 here, before authentication, with that
 * path's methods; a path it does not serve is the 404 problem; any other origin gets no CORS header.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ALLOWED_HEADERS, PREFLIGHT_MAX_AGE_SECONDS } from '../conventions.js';
import type { KnownRoutes } from './problems.js';

export class CorsPolicy {
  private readonly origins: Set<string>;

  constructor(origins: readonly string[] = []) {
    this.origins = new Set(origins);
  }

  /** Whether any origin is allowed (else no CORS header and no preflight at all). */
  get enabled(): boolean {
    return this.origins.size > 0;
  }

  /** The request's Origin when it is one allowed. */
  allowedOrigin(request: FastifyRequest): string | undefined {
    const origin = request.headers.origin;
    return typeof origin === 'string' && this.origins.has(origin) ? origin : undefined;
  }
}

export function registerCors(app: FastifyInstance, cors: CorsPolicy, known: KnownRoutes): void {
  if (!cors.enabled) return;
  app.addHook('onRequest', async (request, reply) => {
    const origin = cors.allowedOrigin(request);
    if (!origin || request.method !== 'OPTIONS' || request.headers['access-control-request-method'] === undefined) return;
    const methods = known.methods(request.url.split('?')[0]!);
    if (!methods?.length) return;
    return reply
      .code(204)
      .headers({
        'access-control-allow-methods': [...new Set(methods)].sort().join(', '),
        'access-control-allow-headers': ALLOWED_HEADERS.join(', '),
        'access-control-max-age': String(PREFLIGHT_MAX_AGE_SECONDS),
      })
      .send();
  });
}
