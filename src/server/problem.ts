/**
 * RFC 9457 problem details: every error response of the server, the web
 * framework's own and the HTTP parser's included. Each kind has a stable
 * `type` URN; this module is the one place that builds problem bodies.
 */
import { STATUS_CODES } from 'node:http';
import type { ParameterProblem } from '../errors.js';

export const PROBLEM_TYPES = {
  invalidParameters: { type: 'urn:convx:problem:invalid-parameters', title: 'Invalid parameters', status: 400 },
  invalidBody: { type: 'urn:convx:problem:invalid-body', title: 'Invalid request body', status: 400 },
  badRequest: { type: 'urn:convx:problem:bad-request', title: 'Malformed request', status: 400 },
  credentialsInQuery: { type: 'urn:convx:problem:credentials-in-query', title: 'Credentials in the query string', status: 400 },
  missingCredentials: { type: 'urn:convx:problem:missing-credentials', title: 'Missing credentials', status: 403 },
  invalidToken: { type: 'urn:convx:problem:invalid-token', title: 'Invalid token', status: 403 },
  expiredToken: { type: 'urn:convx:problem:expired-token', title: 'Expired token', status: 403 },
  unknownPlugin: { type: 'urn:convx:problem:unknown-plugin', title: 'Unknown plugin', status: 403 },
  notFound: { type: 'urn:convx:problem:not-found', title: 'Not found', status: 404 },
  noOrders: { type: 'urn:convx:problem:no-orders', title: 'No orders in the dataset', status: 404 },
  methodNotAllowed: { type: 'urn:convx:problem:method-not-allowed', title: 'Method not allowed', status: 405 },
  requestTimeout: { type: 'urn:convx:problem:request-timeout', title: 'Request timeout', status: 408 },
  ambiguousKey: { type: 'urn:convx:problem:ambiguous-key', title: 'The key names several contacts', status: 409 },
  expectationFailed: { type: 'urn:convx:problem:expectation-failed', title: 'Expectation failed', status: 417 },
  dataVersionChanged: { type: 'urn:convx:problem:data-version-changed', title: 'Data version not served', status: 412 },
  bodyTooLarge: { type: 'urn:convx:problem:body-too-large', title: 'Request body too large', status: 413 },
  limitExceeded: { type: 'urn:convx:problem:limit-exceeded', title: 'Request over a limit', status: 413 },
  uriTooLong: { type: 'urn:convx:problem:uri-too-long', title: 'URI too long', status: 414 },
  unsupportedMediaType: { type: 'urn:convx:problem:unsupported-media-type', title: 'Unsupported media type', status: 415 },
  dataError: { type: 'urn:convx:problem:data-error', title: 'The dataset cannot answer this query', status: 422 },
  rateLimited: { type: 'urn:convx:problem:rate-limited', title: 'Too many requests', status: 429 },
  headersTooLarge: { type: 'urn:convx:problem:headers-too-large', title: 'Request headers too large', status: 431 },
  internal: { type: 'urn:convx:problem:internal', title: 'Internal server error', status: 500 },
  shuttingDown: { type: 'urn:convx:problem:shutting-down', title: 'Server shutting down', status: 503 },
  queryTimeout: { type: 'urn:convx:problem:query-timeout', title: 'Query time budget exceeded', status: 503 },
  busy: { type: 'urn:convx:problem:busy', title: 'Server busy', status: 503 },
  pluginUnavailable: { type: 'urn:convx:problem:plugin-unavailable', title: "The plugin's data cannot be opened", status: 503 },
  // Never received: the client closed its connection while its request waited for a turn (logged as 499, as nginx does).
  clientClosed: { type: 'urn:convx:problem:client-closed', title: 'Client closed the request', status: 499 },
} as const;

export type ProblemKind = keyof typeof PROBLEM_TYPES;

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  errors?: ParameterProblem[];
  /** For limit-exceeded: the limit's name as the documentation lists it. */
  limit?: string;
  /** For data-error: the message's first line, and each item it lists (detail joins them). */
  summary?: string;
  details?: string[];
  /** For data-version-changed: the version the request was pinned to (Convx-Data-Version), and the one served now. */
  requestedVersion?: string;
  currentVersion?: string;
  /** For ambiguous-key: what the key is of the contacts (email, clientContactId), and their contact ids. */
  matchedBy?: string;
  contactIds?: string[];
}

export const PROBLEM_CONTENT_TYPE = 'application/problem+json; charset=utf-8';

export function problem(kind: ProblemKind, detail: string, errors?: ParameterProblem[]): Problem {
  return { ...PROBLEM_TYPES[kind], detail, ...(errors?.length ? { errors } : {}) };
}

/** Thrown by route code to answer with a problem, with extra headers such as Retry-After or Allow. */
export class ProblemError extends Error {
  constructor(
    readonly problem: Problem,
    readonly headers: Record<string, string> = {},
  ) {
    super(problem.detail);
  }
}

/** A problem that asks the client to come back later (429, 503). */
export function retryLater(kind: 'rateLimited' | 'shuttingDown' | 'queryTimeout' | 'busy' | 'pluginUnavailable', detail: string, seconds: number): ProblemError {
  return new ProblemError(problem(kind, detail), { 'retry-after': String(Math.max(1, Math.ceil(seconds))) });
}

/** The token's plugin has no data on this server (the same answer whether a reload removed it or it never had any). */
export function unknownPlugin(plugin: string): ProblemError {
  return new ProblemError(problem('unknownPlugin', `the token's plugin "${plugin}" has no data on this server`));
}

/**
 * A complete HTTP/1.1 response carrying a problem, for the few errors Node's
 * HTTP parser reports before any request object exists (431, 400, 408): with a
 * Date, as every answer has, and the request id the log line names.
 */
export function rawProblemResponse(body: Problem, requestId?: string, date: Date = new Date()): string {
  const json = JSON.stringify(body);
  return [
    `HTTP/1.1 ${body.status} ${STATUS_CODES[body.status] ?? 'Error'}`,
    `Date: ${date.toUTCString()}`,
    ...(requestId ? [`X-Request-Id: ${requestId}`] : []),
    `Content-Type: ${PROBLEM_CONTENT_TYPE}`,
    `Content-Length: ${Buffer.byteLength(json)}`,
    'Connection: close',
    '',
    json,
  ].join('\r\n');
}
