/**
 * What every answer carries, whatever answered it (a route, a problem, a 304, a preflight):
 * a Date, the request id, Connection: close while draining, the token's RateLimit-*, CORS
 * headers for an allowed origin; and the compression of answers over 1 KiB (onSend).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { COMPRESSION_THRESHOLD_BYTES, compress, EXPOSED_HEADERS, isCompressible, negotiateEncoding, varyWith } from '../conventions.js';
import type { Clients } from './authenticate.js';
import type { CorsPolicy } from './cors.js';
import type { Drain } from './drain.js';

export type AnswerHeaders = (request: FastifyRequest, reply: FastifyReply) => void;

export function answerHeaders(drain: Drain, clients: Clients, cors: CorsPolicy): AnswerHeaders {
  return (request, reply) => {
    reply.header('date', new Date().toUTCString());
    reply.header('x-request-id', request.id);
    if (drain.draining) reply.header('connection', 'close');
    clients.rateHeaders(request, reply);
    if (cors.enabled) {
      reply.header('vary', varyWith(reply.getHeader('vary'), 'Origin'));
      const origin = cors.allowedOrigin(request);
      if (origin) {
        reply.header('access-control-allow-origin', origin);
        reply.header('access-control-expose-headers', EXPOSED_HEADERS.join(', '));
      }
    }
  };
}

export function registerAnswerHeaders(app: FastifyInstance, headers: AnswerHeaders, compression: boolean): void {
  app.addHook('onSend', async (request, reply, payload) => {
    headers(request, reply);
    if (!compression || reply.statusCode === 204) return payload;
    // A 304 says what its 200 would (RFC 9110 15.4.5): that it varies with Accept-Encoding.
    if (reply.statusCode === 304 || isCompressible(reply.getHeader('content-type'))) reply.header('vary', varyWith(reply.getHeader('vary'), 'Accept-Encoding'));
    // HEAD too: fastify's HEAD route runs the GET's handler and hooks, then sends this payload's length
    // without it, so a HEAD says what its GET would (Content-Encoding, Content-Length, weak ETag, Vary).
    if (reply.statusCode === 304 || !isCompressible(reply.getHeader('content-type'))) return payload;
    if (typeof payload !== 'string' && !Buffer.isBuffer(payload)) return payload;
    const bytes = Buffer.isBuffer(payload) ? payload : Buffer.from(payload);
    const encoding = bytes.length >= COMPRESSION_THRESHOLD_BYTES ? negotiateEncoding(request.headers['accept-encoding']) : undefined;
    if (!encoding || reply.hasHeader('content-encoding')) return payload;
    const compressed = await compress(bytes, encoding);
    reply.header('content-encoding', encoding);
    reply.removeHeader('content-length');
    // Another representation of the same answer: its tag is weak (see representationTag in conditional.ts).
    const tag = reply.getHeader('etag');
    if (typeof tag === 'string' && !tag.startsWith('W/')) reply.header('etag', `W/${tag}`);
    return compressed;
  });
}
