/**
 * The HTTP conventions every answer of the server follows, apart from what it
 * answers: a Date, a request id, CORS for an allow-list of origins (off by
 * default), and compression negotiated from Accept-Encoding; and the query string as the
 * shared parser takes it.
 */
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { brotliCompress, constants, gzip } from 'node:zlib';
import type { RequestParams } from '../model/query.js';
import { isLoggable } from './accesslog.js';

/** The longest request id taken from a client; a longer one is replaced. */
export const MAX_REQUEST_ID_LENGTH = 128;

/**
 * The request's id: the client's X-Request-Id when it is sane (1 to 128 visible ASCII
 * characters, one header, and neither a token nor an e-mail address: it is logged),
 * else a new UUID.
 */
export function requestIdFrom(header: string | string[] | undefined): string {
  if (typeof header === 'string' && header.length <= MAX_REQUEST_ID_LENGTH && /^[\x21-\x7e]+$/.test(header) && isLoggable(header)) return header;
  return randomUUID();
}

/** Answers shorter than this are sent as they are: compressing them saves too little. */
export const COMPRESSION_THRESHOLD_BYTES = 1024;

export type Encoding = 'br' | 'gzip';

/**
 * The content coding to answer with, from Accept-Encoding (RFC 9110 12.5.3): the
 * accepted coding of the highest q-value above 0 among br and gzip (`*` stands for
 * those not named; br on a tie: it is smaller), or undefined for the identity.
 */
export function negotiateEncoding(header: string | string[] | undefined): Encoding | undefined {
  if (header === undefined) return undefined;
  const weights = new Map<string, number>();
  for (const entry of (Array.isArray(header) ? header.join(',') : header).split(',')) {
    const [coding, ...params] = entry.trim().toLowerCase().split(';');
    if (!coding) continue;
    let q = 1;
    for (const param of params) {
      const match = /^\s*q\s*=\s*([0-9.]+)\s*$/.exec(param);
      if (match) q = Number(match[1]);
    }
    if (Number.isFinite(q)) weights.set(coding.trim(), Math.min(1, Math.max(0, q)));
  }
  const weightOf = (coding: Encoding) => weights.get(coding) ?? (coding === 'gzip' ? weights.get('x-gzip') : undefined) ?? weights.get('*') ?? 0;
  const br = weightOf('br');
  const gz = weightOf('gzip');
  if (br <= 0 && gz <= 0) return undefined;
  return br >= gz ? 'br' : 'gzip';
}

const brotli = promisify(brotliCompress);
const gzipAsync = promisify(gzip);

/** The payload compressed (brotli at quality 5: near gzip's speed, smaller). */
export function compress(payload: Buffer, encoding: Encoding): Promise<Buffer> {
  return encoding === 'br'
    ? brotli(payload, { params: { [constants.BROTLI_PARAM_QUALITY]: 5, [constants.BROTLI_PARAM_SIZE_HINT]: payload.length } })
    : gzipAsync(payload);
}

/** Media types worth compressing: JSON (problems and the OpenAPI document included) and text. */
export function isCompressible(contentType: unknown): boolean {
  return typeof contentType === 'string' && /^(application\/([a-z.+-]*\+)?json|text\/)/i.test(contentType);
}

/** The response headers a browser script may read (CORS). */
export const EXPOSED_HEADERS = ['ETag', 'Convx-Data-Version', 'X-Request-Id', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'Retry-After'];
/** The request headers a browser script may send (a preflight's answer). */
export const ALLOWED_HEADERS = ['Authorization', 'Content-Type', 'If-None-Match', 'X-Request-Id', 'Convx-Data-Version'];
/** How long a browser may keep a preflight's answer, in seconds. */
export const PREFLIGHT_MAX_AGE_SECONDS = 600;

/**
 * An origin as --cors-origin takes it (scheme://host[:port], no path), in the form
 * browsers send in Origin (lower case, no default port), or undefined when it is none.
 */
export function normalizeOrigin(text: string): string | undefined {
  const trimmed = text.trim();
  let url: URL;
  try {
    url = new URL(trimmed);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  if (url.username || url.password || url.search || url.hash || !/^[a-z][a-z0-9+.-]*:\/\/[^/]+\/?$/i.test(trimmed)) return undefined;
  return url.origin;
}

/** Appends a value to a Vary header's list, once. */
export function varyWith(current: unknown, value: string): string {
  const list = (Array.isArray(current) ? current.join(',') : typeof current === 'string' ? current : '')
    .split(',')
    .map((v) => v.trim())
    .filter(Boolean);
  if (!list.some((v) => v === '*' || v.toLowerCase() === value.toLowerCase())) list.push(value);
  return list.join(', ');
}

/**
 * The query string as the shared parser takes it (model/query.ts validates it, once: the
 * routes' schemas only document it): text, or the values of a parameter given more than
 * once (a problem the parser names with the others). No prototype: `__proto__` is a name
 * like any other, and unknown.
 */
export function requestParams(query: unknown): RequestParams {
  const raw: RequestParams = Object.create(null) as RequestParams;
  for (const [key, value] of Object.entries((query ?? {}) as Record<string, unknown>)) {
    if (Array.isArray(value)) raw[key] = value.map(String);
    else if (value !== undefined) raw[key] = String(value);
  }
  return raw;
}
