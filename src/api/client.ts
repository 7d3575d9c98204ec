/**
 * HTTP for API mode: bearer token, timeouts, retries with exponential backoff
 * and jitter on connection errors, 429 and 5xx (honouring Retry-After), never
 * on other 4xx nor on a problem that asking again would only repeat
 * (NOT_RETRIED: a query over the server's time budget); every failure becomes
 * an error with the right exit code.
 */
import { Agent } from 'undici';
import { credentialsInUrlError, hasCredentials, redactUrl } from '../config.js';
import { AmbiguousKeyError, ApiError, AuthError, DataError, NoOrdersError, UsageError } from '../errors.js';
import { checkTokenText } from '../model/token-text.js';

export interface ClientOptions {
  token: string;
  /** Connect, headers and body timeouts, each. */
  timeoutMs: number;
  retries: number;
  /** Backoff: the first delay before jitter, and the longest. */
  backoffMs?: number;
  maxBackoffMs?: number;
  /** The longest Retry-After honoured; a longer one fails at once. */
  maxRetryAfterMs?: number;
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
  onRetry?: (info: { url: string; attempt: number; delayMs: number; reason: string }) => void;
  userAgent?: string;
  /** The hint of a refused token (401, 403): the context's, which knows where the token came from (Context.tokenRefusedHint). */
  refusedHint?: string;
}

/** An application/problem+json body as a server answers it (RFC 9457). */
interface ProblemDocument {
  type?: string;
  detail?: string;
  title?: string;
}

/** The problem a server answers (404) for a report asked of a dataset without orders: it serves validation only. */
export const NO_ORDERS_PROBLEM = 'urn:convx:problem:no-orders';

/** The problem a server answers (412) for a request pinned to a data version it no longer serves. */
export const DATA_VERSION_CHANGED_PROBLEM = 'urn:convx:problem:data-version-changed';
/** The problem type of a look-up by a key several contacts carry (GET contacts/{key}/conversions: 409). */
export const AMBIGUOUS_KEY_PROBLEM = 'urn:convx:problem:ambiguous-key';

/** A 412 data-version-changed: the version pinned is no longer served; `current` is the one served now, when the server says. */
export class DataVersionChangedError extends ApiError {
  constructor(
    message: string,
    readonly current: string | undefined,
  ) {
    super(message);
  }
}

/** The longest delay a timer of Node's holds. */
const MAX_TIMER_MS = 2 ** 31 - 1;

const RETRYABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_CLOSED',
]);

function errorCode(error: unknown): string | undefined {
  const e = error as { code?: string; cause?: { code?: string } };
  return e?.code ?? e?.cause?.code;
}

/** A failed request's reason in words (connection refused, the answer timed out ...). */
export function describeFailure(error: unknown): string {
  const code = errorCode(error);
  if (code === 'UND_ERR_CONNECT_TIMEOUT') return 'connecting timed out';
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') return 'the answer timed out';
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code === 'UND_ERR_SOCKET' || code === 'ECONNRESET') return 'the connection was dropped';
  if (code === 'ENOTFOUND') return 'no such host (the name does not resolve: ENOTFOUND)';
  if (code === 'EAI_AGAIN') return 'the host name could not be looked up now (DNS: EAI_AGAIN)';
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return `the host is unreachable from here (${code})`;
  if (code === 'CERT_HAS_EXPIRED' || code === 'DEPTH_ZERO_SELF_SIGNED_CERT' || code === 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' || code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
    return `the server's TLS certificate is not trusted (${code})`;
  }
  return code ?? (error instanceof Error ? error.message : String(error));
}

/** Retry-After as seconds or an HTTP date, in milliseconds. */
export function retryAfterMs(header: string | string[] | undefined, now = Date.now()): number | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** A 404 that a look-up takes as its answer (lookupJson). */
class NotFoundAnswer {
  constructor(
    readonly detail: string,
    /** The problem's type, when the 404 was a problem document at all. */
    readonly type: string | undefined,
  ) {}
}

/** The problem type a server of this interface answers for an id its data does not hold. */
const NOT_FOUND_PROBLEM = 'urn:convx:problem:not-found';

/** The problem a server answers (503) for a query that ran over its time budget. */
export const QUERY_TIMEOUT_PROBLEM = 'urn:convx:problem:query-timeout';

/**
 * The problems of a 429 or 5xx answer that are not asked again, with what to tell the user instead.
 * Every other 429 and 5xx is retried (rate-limited, shutting-down, a busy server, a proxy's
 * 502/503/504 without a problem body), honouring Retry-After: waiting helps those. A query over
 * the time budget would take as long again, and a plugin file the server cannot open stays so until its operator replaces it.
 */
export const NOT_RETRIED: Readonly<Record<string, { what: string; hint: string }>> = {
  [QUERY_TIMEOUT_PROBLEM]: {
    what: "the query ran over the API's time budget",
    hint: 'narrow the period (--from/--to) or the filters (--country, --currency, a source); asking again would take as long, so convx did not retry',
  },
  'urn:convx:problem:plugin-unavailable': {
    what: "the API cannot open its data for the token's plugin",
    hint: "its operator finds why in the server's log (a plugin file that is damaged or holds another plugin); asking again would meet the same file, so convx did not retry",
  },
};

/** Whether an answer of this status and problem type (undefined: no problem body) is asked again. */
export function isRetried(status: number, problem: string | undefined): boolean {
  if (status !== 429 && status < 500) return false;
  return problem === undefined || !Object.hasOwn(NOT_RETRIED, problem);
}

class Retryable extends Error {
  constructor(
    readonly reason: string,
    readonly waitMs?: number,
  ) {
    super(reason);
  }
}

export class ApiClient {
  private readonly agent: Agent;
  private readonly origin: string;
  /** The base's path without a trailing slash ("/v1"). */
  private readonly basePath: string;

  constructor(
    /** The reporting base, e.g. https://host/v1 */
    readonly base: string,
    private readonly options: ClientOptions,
  ) {
    let url: URL;
    try {
      url = new URL(base);
    } catch {
      throw new UsageError(`--api: "${redactUrl(base)}" is not a URL (for example https://api.example.com/v1)`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`--api: "${redactUrl(base)}" is not an http(s) URL`);
    // Only a bearer token authenticates: credentials in the URL (a profile's, say) are refused, never sent or shown.
    if (hasCredentials(base)) throw credentialsInUrlError(base, 'the API URL (--api, CONVX_API_URL or the profile\'s api)');
    // a token no header can carry fails here, as a usage error, not in undici as an unreachable API
    checkTokenText(options.token, 'the API token (--token-file, CONVX_TOKEN or the profile\'s)');
    this.origin = url.origin;
    this.basePath = url.pathname.replace(/\/+$/, '');
    this.agent = new Agent({
      connectTimeout: options.timeoutMs,
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
    });
  }

  /**
   * A path under the base ("conversions/items") or an absolute path from the origin ("/v1/..."),
   * percent-encoded by the caller, joined as text: a URL parser would take an id's segment
   * `%2E%2E` (model/url.ts, urlSegment) for `..` and remove it with the segment before.
   */
  url(path: string, params: Record<string, string | undefined> = {}): string {
    const query = new URLSearchParams();
    for (const [key, value] of Object.entries(params)) if (value !== undefined) query.set(key, value);
    const search = query.toString();
    return `${this.origin}${path.startsWith('/') ? path : `${this.basePath}/${path}`}${search === '' ? '' : `?${search}`}`;
  }

  /** headers: extra request headers (e.g. Convx-Data-Version, which pins the data version). */
  async getJson(path: string, params: Record<string, string | undefined> = {}, headers: Record<string, string> = {}): Promise<unknown> {
    return this.send('GET', this.url(path, params), undefined, false, headers);
  }

  /**
   * A GET whose 404 is an answer, not a failure: a look-up by id (an order, a contact)
   * answers 404 with a not-found problem when the data does not hold the id. Any other 404
   * (convx serve's "no route for ...", a framework's or a proxy's plain 404) means the
   * server has no such route: `routeMissing`.
   */
  async lookupJson(path: string, params: Record<string, string | undefined> = {}): Promise<{ found: true; body: unknown } | { found: false; detail: string; routeMissing: boolean }> {
    const answer = await this.send('GET', this.url(path, params), undefined, true);
    if (answer instanceof NotFoundAnswer) {
      const routeMissing = answer.type !== NOT_FOUND_PROBLEM || /^no route for /.test(answer.detail);
      return { found: false, detail: answer.detail, routeMissing };
    }
    return { found: true, body: answer };
  }

  async postJson(path: string, body: unknown): Promise<unknown> {
    return this.send('POST', this.url(path), JSON.stringify(body));
  }

  private async send(method: 'GET' | 'POST', url: string, body?: string, answers404 = false, extraHeaders: Record<string, string> = {}): Promise<unknown> {
    const { retries } = this.options;
    const sleep = this.options.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
    const random = this.options.random ?? Math.random;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.once(method, url, body, answers404, extraHeaders);
      } catch (error) {
        if (!(error instanceof Retryable)) throw error;
        if (attempt >= retries) {
          throw new ApiError(
            `the API failed at ${url}: ${error.reason} (after ${attempt + 1} attempt${attempt ? 's' : ''})`,
            'check that the service is up and --api is its reporting base URL',
          );
        }
        const backoff = Math.min(this.options.maxBackoffMs ?? 5000, (this.options.backoffMs ?? 250) * 2 ** attempt);
        const delayMs = error.waitMs ?? Math.round(backoff * (0.5 + random() / 2));
        this.options.onRetry?.({ url, attempt: attempt + 1, delayMs, reason: error.reason });
        await sleep(delayMs);
      }
    }
  }

  /** One request sent and its answer read whole: its status, headers and text; a failure to get it is Retryable or an ApiError. */
  private async exchange(method: 'GET' | 'POST', url: string, body: string | undefined, extraHeaders: Record<string, string>): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string }> {
    // The answer's headers are due within the timeout of the request's start, to the millisecond:
    // undici's own headersTimeout ticks on a coarse clock (half a second), so --timeout 0.3 waited
    // about a second. Its connect and body timeouts stay.
    const deadline = new AbortController();
    // Node's timers hold at most 2^31 - 1 ms (about 24.8 days): a longer timeout waits that long.
    const timer = setTimeout(() => deadline.abort(Object.assign(new Error('the answer timed out'), { code: 'UND_ERR_HEADERS_TIMEOUT' })), Math.min(this.options.timeoutMs, MAX_TIMER_MS));
    try {
      // The agent's own request takes the path as it is (undici's request() would parse the URL: see url()).
      const response = await this.agent
        .request({
          origin: this.origin,
          path: url.slice(this.origin.length),
          method,
          headers: {
            authorization: `Bearer ${this.options.token}`,
            accept: 'application/json, application/problem+json',
            'user-agent': this.options.userAgent ?? 'convx',
            ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
            ...extraHeaders,
          },
          signal: deadline.signal,
          ...(body !== undefined ? { body } : {}),
        })
        .finally(() => clearTimeout(timer));
      return { status: response.statusCode, headers: response.headers, text: await response.body.text() };
    } catch (error) {
      const code = errorCode(error);
      if (code && RETRYABLE_CODES.has(code)) throw new Retryable(describeFailure(error));
      throw new ApiError(`cannot reach the API at ${url}: ${describeFailure(error)}`);
    }
  }

  private async once(method: 'GET' | 'POST', url: string, body?: string, answers404 = false, extraHeaders: Record<string, string> = {}): Promise<unknown> {
    const { status, headers, text } = await this.exchange(method, url, body, extraHeaders);
    if ((status === 429 || status >= 500) && !isRetried(status, problemType(text))) {
      const type = problemType(text)!;
      const { what, hint } = NOT_RETRIED[type]!;
      throw new ApiError(`${what} (HTTP ${status} from ${url}): ${problemDetail(text) ?? type}`, hint);
    }
    if (status === 429 || status >= 500) {
      const wait = retryAfterMs(headers['retry-after']);
      const limit = this.options.maxRetryAfterMs ?? 60_000;
      if (wait !== undefined && wait > limit) {
        throw new ApiError(`the API at ${url} answered ${status} and asks to wait ${Math.round(wait / 1000)} s; giving up`);
      }
      throw new Retryable(`HTTP ${status}${problemDetail(text) ? `: ${problemDetail(text)}` : ''}`, wait);
    }
    if (status === 401 || status === 403) {
      throw new AuthError(
        `the API refused the request (${status}): ${problemDetail(text) ?? 'no reason given'}`,
        this.options.refusedHint ?? 'check the token with `convx auth status`, or log in again with `convx auth login`',
      );
    }
    if (status === 400) throw new UsageError(`the API rejected the request: ${problemDetail(text) ?? text.slice(0, 200)}`);
    // The data cannot answer (e.g. no FX rate for a day): the same message and exit code as local mode.
    if (status === 422) throw dataErrorOf(text, url);
    if (status === 413) throw new UsageError(`the API refused the request as too large: ${problemDetail(text) ?? text.slice(0, 200)}`);
    // A server of a validation-only dataset: a data error (exit 2), as local mode on that dataset, in the server's words.
    if (status === 404 && problemType(text) === NO_ORDERS_PROBLEM) {
      throw new NoOrdersError(problemDetail(text) ?? `the API's dataset holds no orders, so it has no conversions to report (${url})`);
    }
    if (status === 404 && answers404) return new NotFoundAnswer(problemDetail(text) ?? '', problemType(text));
    if (status === 409 && answers404 && problemType(text) === AMBIGUOUS_KEY_PROBLEM) {
      throw new AmbiguousKeyError(`the API says: ${problemDetail(text) ?? 'the key names several contacts'}`, ambiguousAs(text));
    }
    if (status === 404) {
      throw new ApiError(`the API has no ${url} (404)`, 'is --api the reporting base URL, for example https://host/v1?');
    }
    if (status === 412 && problemType(text) === DATA_VERSION_CHANGED_PROBLEM) {
      const current = headers['convx-data-version'];
      throw new DataVersionChangedError(problemDetail(text) ?? 'the data version asked for is no longer served', Array.isArray(current) ? current[0] : current);
    }
    if (status < 200 || status >= 300) {
      throw new ApiError(`the API answered ${status} to ${url}: ${problemDetail(text) ?? text.slice(0, 200)}`);
    }
    try {
      return JSON.parse(text);
    } catch {
      throw new ApiError(`the API's answer to ${url} is not JSON: ${JSON.stringify(text.slice(0, 80))}`);
    }
  }

  async close(): Promise<void> {
    await this.agent.close();
  }
}

/** A 422 problem as the DataError local mode raises for the same data, summary and details apart. */
function dataErrorOf(text: string, url: string): DataError {
  try {
    const body = JSON.parse(text) as ProblemDocument & { summary?: unknown; details?: unknown };
    if (typeof body.summary === 'string' && Array.isArray(body.details) && body.details.every((d) => typeof d === 'string')) {
      return new DataError(body.summary, body.details as string[]);
    }
  } catch {
    // not JSON: the generic message below
  }
  return new DataError(problemDetail(text) ?? `the API cannot answer ${url} from its data (422)`);
}

/** What an ambiguous-key problem says the key is of the contacts (an e-mail address unless it says a client contact id). */
function ambiguousAs(text: string): 'email' | 'clientContactId' {
  try {
    return (JSON.parse(text) as { matchedBy?: unknown }).matchedBy === 'clientContactId' ? 'clientContactId' : 'email';
  } catch {
    return 'email';
  }
}

function problemType(text: string): string | undefined {
  try {
    const type = (JSON.parse(text) as ProblemDocument).type;
    return typeof type === 'string' ? type : undefined;
  } catch {
    return undefined;
  }
}

function problemDetail(text: string): string | undefined {
  try {
    const problem = JSON.parse(text) as ProblemDocument;
    return problem.detail ?? problem.title;
  } catch {
    return undefined;
  }
}
