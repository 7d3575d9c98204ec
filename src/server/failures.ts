/**
 * Which problem answers a failure: an error thrown while handling a request,
 * or what Node's HTTP parser rejected before a request existed. Kept apart
 * from problem.ts, which auth.ts (and so `convx token`) loads without DuckDB.
 */
import { DataError, NoOrdersError, TooLargeError, UsageError } from '../errors.js';
import { QueryTimeoutError } from '../local/db.js';
import { RenderBudgetError } from '../validation/sandbox.js';
import { MAX_URL_LENGTH, RETRY_AFTER_UNAVAILABLE_SECONDS } from './limits.js';
import { BusyError, ClientGoneError } from './pool.js';
import { problem, ProblemError, retryLater, type Problem, type ProblemKind } from './problem.js';

/** What the server logs about a failure besides the access log line. */
export type FailureReport = 'data error' | 'query timeout' | 'unexpected error';

interface FrameworkError {
  code?: unknown;
  statusCode?: unknown;
  message: string;
  validation?: unknown;
  validationContext?: unknown;
}

const isFrameworkError = (error: unknown): error is FrameworkError => error instanceof Error;

/**
 * The problem answering an error raised while handling a request: by route
 * code, by the model, by DuckDB's time budget or by fastify itself. Whatever
 * is not recognised is a 500 whose detail says nothing about the cause.
 */
export function problemFor(error: unknown, bodyLimit: number): { failure: ProblemError; report?: FailureReport } {
  if (error instanceof ProblemError) return { failure: error };
  if (error instanceof UsageError) return { failure: new ProblemError(problem('invalidParameters', error.message, error.problems)) };
  if (error instanceof TooLargeError) return { failure: new ProblemError({ ...problem('limitExceeded', error.message), limit: error.limit }) };
  if (error instanceof NoOrdersError) {
    // A dataset for delivery validation only: no conversions here, and the server's paths stay its own.
    const detail = 'the dataset this server serves holds no orders, so it has no conversions to report; it answers delivery validation only (POST /v4/delivery/e-mail/validate)';
    return { failure: new ProblemError(problem('noOrders', detail)) };
  }
  if (error instanceof DataError) {
    const detail = error.message.replace(/\n\s*/g, '; ');
    const parts = error.details.length ? { summary: error.summary, details: error.details } : {};
    return { failure: new ProblemError({ ...problem('dataError', detail), ...parts }), report: 'data error' };
  }
  if (error instanceof QueryTimeoutError) {
    const detail = `${error.message}; narrow the period or the filters, or try again later`;
    return { failure: retryLater('queryTimeout', detail, RETRY_AFTER_UNAVAILABLE_SECONDS), report: 'query timeout' };
  }
  // Busy: the plugin's queue is full, or the template renderers stayed busy for the whole budget.
  // Never a finding about the request: a 503 to send again later.
  if (error instanceof ClientGoneError) return { failure: new ProblemError(problem('clientClosed', error.message)) };
  if (error instanceof BusyError) return { failure: retryLater('busy', error.message, error.retryAfterSeconds) };
  if (error instanceof RenderBudgetError) {
    return error.waiting
      ? { failure: retryLater('busy', error.message, RETRY_AFTER_UNAVAILABLE_SECONDS) }
      : { failure: retryLater('queryTimeout', `${error.message}; try again later`, RETRY_AFTER_UNAVAILABLE_SECONDS), report: 'query timeout' };
  }
  if (!isFrameworkError(error)) return { failure: new ProblemError(problem('internal', 'the server failed to answer; its log has the details')), report: 'unexpected error' };
  const framework = (kind: ProblemKind, detail = error.message) => ({ failure: new ProblemError(problem(kind, detail)) });
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return framework('bodyTooLarge', `the request body is over the limit of ${bodyLimit} bytes`);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return framework('unsupportedMediaType', 'send the request body as application/json');
    case 'FST_ERR_BAD_URL':
      return framework('badRequest', 'the URL is not valid (bad percent-encoding)');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return framework('uriTooLong', 'a path segment of the URL is too long');
  }
  const status = typeof error.statusCode === 'number' ? error.statusCode : 500;
  const byStatus: Partial<Record<number, ProblemKind>> = { 400: 'invalidBody', 404: 'notFound', 413: 'bodyTooLarge', 414: 'uriTooLong', 415: 'unsupportedMediaType' };
  if (status >= 400 && status < 500) return framework(byStatus[status] ?? 'badRequest');
  return { failure: new ProblemError(problem('internal', 'the server failed to answer; its log has the details')), report: 'unexpected error' };
}

/**
 * The problem for what Node's HTTP parser rejected before any request existed.
 * rawPacket is the data the parser gave up on: a request line that is itself
 * over the URL limit (or never ends) makes a header overflow a 414.
 */
export function connectionProblem(code: string, rawPacket: unknown): Problem {
  if (code === 'HPE_HEADER_OVERFLOW') {
    const packet = Buffer.isBuffer(rawPacket) ? rawPacket.toString('latin1') : '';
    const lineEnd = packet.indexOf('\r\n');
    return packet !== '' && (lineEnd < 0 || lineEnd > MAX_URL_LENGTH)
      ? problem('uriTooLong', `the URL is too long (at most ${MAX_URL_LENGTH} characters are answered)`)
      : problem('headersTooLarge', 'the request headers are larger than the server accepts');
  }
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return problem('requestTimeout', 'the request did not arrive in time');
  return problem('badRequest', 'the request is not valid HTTP');
}
