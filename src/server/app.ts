/**
 * The HTTP interface over a served dataset. Routes are thin: parse the query
 * into the model's types, call a plugin-scoped Backend, send what it returns.
 * Every answer that is not a 2xx is an RFC 9457 problem (see problem.ts), the
 * framework's and the HTTP parser's own included.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import swagger from '@fastify/swagger';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { ActivityTarget, Backend } from '../backend.js';
import { ConvxError, UsageError } from '../errors.js';
import { QueryTimeoutError, withQueryBudget } from '../local/db.js';
import { parseItemsQuery, parseNoQuery, parseReportQuery, type ItemsQuery, type RequestParams } from '../model/query.js';
import { ALIAS_QUERY, ITEMS_QUERY, NO_QUERY, REPORT_QUERY, requestHeadersFor, responsesFor, withConventionHeaders, type OperationKind } from '../model/schemas.js';
import { COMPONENT_SCHEMAS, DATA_VERSION_HEADER, ref } from '../model/shapes.js';
import { credentialParameters, redactUrl } from './accesslog.js';
import type { Verifier } from './auth.js';
import { ALLOWED_HEADERS, COMPRESSION_THRESHOLD_BYTES, compress, EXPOSED_HEADERS, isCompressible, negotiateEncoding, PREFLIGHT_MAX_AGE_SECONDS, requestIdFrom, varyWith } from './conventions.js';
import { entityTag, noneMatch } from './etag.js';
import { DEFAULT_LIMITS, MAX_URL_LENGTH, RETRY_AFTER_UNAVAILABLE_SECONDS, type ServerLimits } from './limits.js';
import { connectionProblem, problemFor } from './failures.js';
import { problem, PROBLEM_CONTENT_TYPE, ProblemError, rawProblemResponse, retryLater } from './problem.js';
import { RateLimiter, rateKey, type RateState } from './ratelimit.js';
import { defaultPluginConcurrency, defaultPluginQueue, FairGate } from './pool.js';
import type { ServedDataset } from './plugins.js';

export interface AppOptions {
  /** The dataset served now (it may be swapped by a reload). */
  dataset: () => ServedDataset;
  /** The dataset of a data version a request is pinned to (DatasetHolder.byVersion); default: the one served now, if it is that version. */
  datasetOf?: (dataVersion: string) => ServedDataset | undefined;
  verify: Verifier;
  /** One JSON object per line on stderr: the access log and failures. */
  log: (entry: Record<string, unknown>) => void;
  now?: () => Date;
  version: string;
  /** Limits; any left out take DEFAULT_LIMITS. */
  limits?: Partial<ServerLimits>;
  /** The rate limiter's clock in milliseconds (tests). */
  clock?: () => number;
  /** gzip or br for answers over 1 KiB, as Accept-Encoding asks (default on; off behind a proxy that compresses). */
  compression?: boolean;
  /** Origins (scheme://host[:port]) whose browser scripts may call the API (CORS); none by default. */
  corsOrigins?: readonly string[];
}

declare module 'fastify' {
  interface FastifyRequest {
    plugin: string;
  }
  interface FastifyInstance {
    /**
     * Begins the shutdown drain: every request from now on is refused with the 503 problem
     * (and Connection: close), on new and open connections alike; resolves once the requests
     * begun before have been answered. app.close() then closes the connections.
     */
    drain(): Promise<void>;
  }
}

/**
 * The query string as the shared parser takes it (model/query.ts validates it, once: the
 * routes' schemas only document it): text, or the values of a parameter given more than
 * once (a problem the parser names with the others). No prototype: `__proto__` is a name
 * like any other, and unknown.
 */
function requestParams(query: unknown): RequestParams {
  const raw: RequestParams = Object.create(null) as RequestParams;
  for (const [key, value] of Object.entries((query ?? {}) as Record<string, unknown>)) {
    if (Array.isArray(value)) raw[key] = value.map(String);
    else if (value !== undefined) raw[key] = String(value);
  }
  return raw;
}

function sendProblem(reply: FastifyReply, failure: ProblemError): FastifyReply {
  return reply.code(failure.problem.status).headers(failure.headers).type(PROBLEM_CONTENT_TYPE).send(failure.problem);
}

function hasSentHeaders(socket: Socket): boolean {
  const message: unknown = Reflect.get(socket, '_httpMessage');
  return typeof message === 'object' && message !== null && Reflect.get(message, 'headersSent') === true;
}

/** The request a connection is answering now (its ServerResponse's req), if any: a body timeout comes while one is under way. */
function requestUnderWay(socket: Socket): IncomingMessage | undefined {
  const message: unknown = Reflect.get(socket, '_httpMessage');
  const request: unknown = typeof message === 'object' && message !== null ? Reflect.get(message, 'req') : undefined;
  return typeof request === 'object' && request !== null ? (request as IncomingMessage) : undefined;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Who may run work on the data now (pool.ts FairGate): its stats are the tests' window on fairness. */
    gate: FairGate;
  }
}

/** The gate of a server's limits: per plugin, per token and pooled bounds, the defaults derived from the pool's size. */
export function gateFor(limits: ServerLimits, poolSize: number): FairGate {
  const perPlugin = limits.pluginConcurrency ?? defaultPluginConcurrency(poolSize);
  return new FairGate({
    poolSize,
    perPlugin,
    perClient: limits.tokenConcurrency ?? perPlugin,
    queuePerPlugin: limits.pluginQueue ?? defaultPluginQueue(poolSize),
  });
}


export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const now = options.now ?? (() => new Date());
  const limits: ServerLimits = { ...DEFAULT_LIMITS, ...options.limits };
  const limiter = limits.rateLimitPerMinute > 0 ? new RateLimiter(limits.rateLimitPerMinute, options.clock) : undefined;
  let draining = false;

  const logRequest = (method: string, url: string, status: number, begun?: bigint, plugin?: string, requestId?: string) =>
    options.log({
      time: now().toISOString(),
      msg: 'request',
      method,
      path: redactUrl(url),
      status,
      ms: begun === undefined ? null : Math.round(Number(process.hrtime.bigint() - begun) / 1e5) / 10,
      ...(plugin ? { plugin } : {}),
      ...(requestId ? { requestId } : {}),
    });

  /** The id each request was given (genReqId), for the answers made outside fastify (clientErrorHandler). */
  const requestIds = new WeakMap<IncomingMessage, string>();
  /** Connections already answered by clientErrorHandler: the parser's later errors on them (HPE_INVALID_EOF_STATE once ended) are no answer. */
  const answeredSockets = new WeakSet<Socket>();
  /** Set once the app is made: the headers every answer carries (see conventionHeaders below). */
  let conventionHeaders: (request: FastifyRequest, reply: FastifyReply) => void = () => undefined;

  const app = Fastify({
    logger: false,
    bodyLimit: limits.bodyLimit,
    // Node would answer a missing Host header with an empty 400; the onRequest hook answers it with a problem.
    // Headers and body must arrive within requestTimeout; a body that stops coming is a 408 problem
    // (clientErrorHandler). Node takes it only when the server is made, and checks it every
    // connectionsCheckingInterval ms (30 s unless told).
    http: {
      requireHostHeader: false,
      requestTimeout: limits.bodyTimeoutMs,
      // Headers within a minute at most, even with --body-timeout 0 (Node would then drop this bound too).
      headersTimeout: limits.bodyTimeoutMs > 0 ? Math.min(60_000, limits.bodyTimeoutMs) : 60_000,
      connectionsCheckingInterval: Math.min(1000, Math.max(50, Math.floor((limits.bodyTimeoutMs || 4000) / 4))),
    },
    requestTimeout: limits.bodyTimeoutMs,
    // Requests that reach a closing server get the shutting-down problem from the onRequest hook below.
    return503OnClosing: false,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 1024 },
    // X-Request-Id: the client's when sane (conventions.ts), else a new one; echoed and logged.
    genReqId: (request: IncomingMessage) => {
      const id = requestIdFrom(request.headers['x-request-id']);
      requestIds.set(request, id);
      return id;
    },
    // A __proto__ or constructor key of a JSON body is data, as JSON.parse (and so local mode) takes it:
    // an own property, which no code here merges into another object; the validation names it.
    onProtoPoisoning: 'ignore',
    onConstructorPoisoning: 'ignore',
    // These answers skip the hooks (onSend included): they get the headers every answer carries here.
    frameworkErrors: (error, request, reply) => {
      conventionHeaders(request, reply);
      sendProblem(reply, problemFor(error, limits.bodyLimit).failure);
      logRequest(request.method, request.url, reply.statusCode, undefined, undefined, request.id);
    },
    clientErrorHandler: (error, socket) => {
      if (error.code === 'ECONNRESET' || socket.destroyed || answeredSockets.has(socket)) return;
      answeredSockets.add(socket);
      const body = connectionProblem(error.code, error.rawPacket);
      // A body timeout comes while a request is under way: its answer and log line name that request.
      const underWay = requestUnderWay(socket);
      const requestId = (underWay && requestIds.get(underWay)) ?? requestIdFrom(underWay?.headers['x-request-id']);
      if (socket.writable && !hasSentHeaders(socket)) socket.end(rawProblemResponse(body, requestId));
      else socket.destroy();
      options.log({
        time: now().toISOString(),
        msg: 'request',
        method: underWay?.method ?? null,
        path: underWay?.url === undefined ? null : redactUrl(underWay.url),
        status: body.status,
        error: error.code,
        requestId,
      });
    },
  });
  // Made at the first request, when the dataset (and its pool's size) is there.
  let gate: FairGate | undefined;
  app.decorate('gate', { getter: () => (gate ??= gateFor(limits, options.dataset().poolStats.size)) });
  // Only JSON bodies: fastify would otherwise also take text/plain.
  app.removeContentTypeParser('text/plain');
  // An Expect header other than 100-continue: Node would answer an empty 417.
  app.server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) => {
    const body = JSON.stringify(problem('expectationFailed', `this server supports no expectation but 100-continue (got ${JSON.stringify(String(request.headers.expect ?? ''))})`));
    const requestId = requestIdFrom(request.headers['x-request-id']);
    response
      .writeHead(417, {
        date: new Date().toUTCString(),
        'x-request-id': requestId,
        'content-type': PROBLEM_CONTENT_TYPE,
        'content-length': Buffer.byteLength(body),
        connection: 'close',
      })
      .end(body);
    logRequest(request.method ?? '', request.url ?? '', 417, undefined, undefined, requestId);
  });

  const docs = new Map<string, OperationKind>();
  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'convx conversion reporting and delivery validation',
        version: options.version,
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

  // Known paths and their methods, so an unsupported method is a 405 rather than a 404.
  const routes: { pattern: RegExp; methods: string[] }[] = [];
  app.addHook('onRoute', (route) => {
    const segments = route.url.replace(/\/$/, '').split('/');
    const pattern = new RegExp(`^${segments.map((part) => (part.startsWith(':') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))).join('/')}/?$`);
    const methods = [route.method].flat();
    const known = routes.find((r) => r.pattern.source === pattern.source);
    if (known) known.methods.push(...methods);
    else routes.push({ pattern, methods: [...methods] });
  });

  app.decorateRequest('plugin', '');
  const started = new WeakMap<FastifyRequest, bigint>();
  /** Requests admitted (not refused by the drain) and not yet answered, and who waits for there to be none. */
  let admitted = 0;
  let drained: (() => void) | undefined;
  const settle = () => {
    if (draining && admitted === 0) drained?.();
  };
  /** The drain begins: requests still waiting for their turn are answered 503 shutting-down, not run. */
  const refuseWaiting = () => {
    draining = true;
    gate?.refuseWaiting(() => retryLater('shuttingDown', 'the server is shutting down; send the request again', RETRY_AFTER_UNAVAILABLE_SECONDS));
  };
  app.decorate('drain', () => {
    refuseWaiting();
    return new Promise<void>((resolve) => {
      drained = resolve;
      settle();
    });
  });
  app.addHook('preClose', async () => {
    refuseWaiting();
  });
  app.addHook('onRequest', async (request, reply) => {
    started.set(request, process.hrtime.bigint());
    if (draining) {
      throw retryLater('shuttingDown', 'the server is shutting down; send the request again', RETRY_AFTER_UNAVAILABLE_SECONDS);
    }
    admitted += 1;
    reply.raw.once('close', () => {
      admitted -= 1;
      settle();
    });
    if (request.headers.host === undefined && request.raw.httpVersion === '1.1') {
      throw new ProblemError(problem('badRequest', 'an HTTP/1.1 request needs a Host header'));
    }
    if (request.url.length > MAX_URL_LENGTH) {
      throw new ProblemError(problem('uriTooLong', `the URL is ${request.url.length} characters long; at most ${MAX_URL_LENGTH} are answered`));
    }
    const credentials = credentialParameters(request.url);
    if (credentials.length) {
      throw new ProblemError(
        problem(
          'credentialsInQuery',
          `tokens are accepted only in the Authorization: Bearer header, never in the query string (found ${credentials.join(', ')}); ` +
            'the request was not authenticated, and a token sent this way may have been recorded by proxies: replace it',
        ),
      );
    }
  });
  app.addHook('onResponse', async (request, reply) => {
    logRequest(request.method, request.url, reply.statusCode, started.get(request), request.plugin || undefined, request.id);
  });

  // CORS, for the origins of --cors-origin only: a preflight (OPTIONS with Access-Control-Request-Method)
  // from one of them to a path the server serves is answered 204 here, before authentication, with that
  // path's methods; a path it does not serve is the 404 problem; any other origin gets no CORS header.
  const corsOrigins = new Set(options.corsOrigins ?? []);
  const allowedOrigin = (request: FastifyRequest) => {
    const origin = request.headers.origin;
    return typeof origin === 'string' && corsOrigins.has(origin) ? origin : undefined;
  };
  if (corsOrigins.size) {
    app.addHook('onRequest', async (request, reply) => {
      const origin = allowedOrigin(request);
      if (!origin || request.method !== 'OPTIONS' || request.headers['access-control-request-method'] === undefined) return;
      const methods = routes.find((r) => r.pattern.test(request.url.split('?')[0]!))?.methods;
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

  /** The key of an authenticated request's token (ratelimit.ts rateKey): the gate's and the rate limiter's. */
  const clients = new WeakMap<FastifyRequest, string>();
  /** The rate-limit key and quota of an authenticated request (RateLimit-* headers), and whether it counted. */
  const rates = new WeakMap<FastifyRequest, { key: string; refused?: RateState }>();

  // What every answer carries, whatever answered it (a route, a problem, a 304, a preflight).
  const compression = options.compression ?? true;
  conventionHeaders = (request, reply) => {
    reply.header('date', new Date().toUTCString());
    reply.header('x-request-id', request.id);
    if (draining) reply.header('connection', 'close');
    const rate = rates.get(request);
    if (limiter && rate) {
      const state = rate.refused ?? limiter.state(rate.key);
      reply.header('ratelimit-limit', String(state.limit));
      reply.header('ratelimit-remaining', String(state.remaining));
      reply.header('ratelimit-reset', String(state.resetSeconds));
    }
    if (corsOrigins.size) {
      reply.header('vary', varyWith(reply.getHeader('vary'), 'Origin'));
      const origin = allowedOrigin(request);
      if (origin) {
        reply.header('access-control-allow-origin', origin);
        reply.header('access-control-expose-headers', EXPOSED_HEADERS.join(', '));
      }
    }
  };
  app.addHook('onSend', async (request, reply, payload) => {
    conventionHeaders(request, reply);
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
    // Another representation of the same answer: its tag is weak (see representationTag).
    const tag = reply.getHeader('etag');
    if (typeof tag === 'string' && !tag.startsWith('W/')) reply.header('etag', `W/${tag}`);
    return compressed;
  });
  // A request is validated once, by the parser the CLI uses too (model/query.ts): the routes'
  // query schemas document the parameters in /openapi.json, and the validate body is checked by
  // the validation, which answers with findings. Nothing is validated by schema here.
  app.setValidatorCompiler(() => () => true);

  /** Auth runs before parameter validation, so an anonymous caller learns nothing about parameters; then the token's rate. */
  const authenticate = async (request: FastifyRequest) => {
    const authorization = request.headers.authorization;
    const { plugin, subject } = await options.verify(authorization);
    if (!options.dataset().has(plugin)) {
      throw new ProblemError(problem('unknownPlugin', `the token's plugin "${plugin}" has no data on this server`));
    }
    request.plugin = plugin;
    // Whose turns the gate counts and whose rate the limiter takes: one key (the token's subject
    // within its plugin, else a digest of the token), never the token itself.
    const key = rateKey(plugin, subject, (authorization ?? '').replace(/^Bearer\s+/i, '').trim());
    clients.set(request, key);
    if (limiter) {
      const decision = limiter.take(key);
      rates.set(request, decision.allowed ? { key } : { key, refused: { limit: limiter.perMinute, remaining: 0, resetSeconds: decision.retryAfterSeconds } });
      if (!decision.allowed) {
        throw retryLater(
          'rateLimited',
          `over the limit of ${limiter.perMinute} requests a minute for this token; try again in ${decision.retryAfterSeconds} s`,
          decision.retryAfterSeconds,
        );
      }
    }
  };

  /** Runs work on a backend of the dataset (the one served now), on a pooled connection; one whose work failed is replaced. */
  async function withBackend<T>(
    request: FastifyRequest,
    work: (backend: Backend) => Promise<T>,
    dataset = options.dataset(),
    connection: { pooled?: boolean } = {},
  ): Promise<T> {
    // A reload between authentication and here may have swapped in data without this plugin.
    if (!dataset.has(request.plugin)) {
      throw new ProblemError(problem('unknownPlugin', `the token's plugin "${request.plugin}" has no data on this server`));
    }
    const backend = await dataset.backend(request.plugin, connection);
    try {
      return await work(backend);
    } catch (error) {
      // An answer such as a data or usage error leaves the connection as it was (and its prepared
      // statements with it); an interrupted or failed query may not: that connection is replaced.
      if (!(error instanceof ConvxError) || error instanceof QueryTimeoutError) dataset.discard(backend);
      throw error;
    } finally {
      await backend.close();
    }
  }

  /** Work on the data once the request's turn comes (bounded per plugin and token, round-robin between plugins), within its budget. */
  const withTurn = async <T>(request: FastifyRequest, connection: { pooled?: boolean }, work: () => Promise<T>): Promise<T> => {
    // A client that goes away while its request waits for a turn takes it out of the queue.
    const gone = new AbortController();
    const abandon = () => gone.abort();
    const socket = request.raw.socket;
    socket?.once('close', abandon);
    let ticket;
    try {
      ticket = await app.gate.enter({ plugin: request.plugin, client: clients.get(request) ?? request.plugin, pooled: connection.pooled ?? true }, gone.signal);
    } finally {
      socket?.removeListener('close', abandon);
    }
    try {
      return await work();
    } finally {
      ticket.leave();
    }
  };

  /** When the request arrived (onRequest), as performance.now(): its time budget runs from there. */
  const arrival = (request: FastifyRequest) => {
    const begun = started.get(request);
    return begun === undefined ? performance.now() : performance.now() - Number(process.hrtime.bigint() - begun) / 1e6;
  };

  /** Work on the data, interrupted when its queries run over the query time budget. */
  const query = <T>(request: FastifyRequest, work: (backend: Backend) => Promise<T>, connection: { pooled?: boolean } = {}) =>
    withQueryBudget(limits.queryTimeoutMs, () => withTurn(request, connection, () => withBackend(request, work, options.dataset(), connection)), arrival(request));

  /**
   * The data a report or items request is answered from: the version its Convx-Data-Version
   * header pins it to, while the server holds that version (the one served now, or the one a
   * reload replaced, within the grace period), else the one served now. A pinned version no
   * longer (or never) held is a 412 naming both versions.
   */
  const pinnedDataset = (request: FastifyRequest): ServedDataset => {
    const current = options.dataset();
    const header = request.headers[DATA_VERSION_HEADER.toLowerCase()];
    const asked = (Array.isArray(header) ? header.join(', ') : (header ?? '')).trim();
    if (asked === '') return current;
    const held = options.datasetOf ? options.datasetOf(asked) : current.version === asked ? current : undefined;
    if (held) return held;
    const named = JSON.stringify(asked.length > 64 ? `${asked.slice(0, 64)}…` : asked);
    throw new ProblemError(
      {
        ...problem(
          'dataVersionChanged',
          `the data changed: version ${named} (${DATA_VERSION_HEADER}) is no longer served, the data served now is version "${current.version}"; ` +
            'start paging again from the first page',
        ),
        requestedVersion: asked.slice(0, 64),
        currentVersion: current.version,
      },
      { [DATA_VERSION_HEADER]: current.version },
    );
  };

  /**
   * A report or items query (see query) whose answer carries an ETag of the data
   * version, the plugin and the request, and the version itself (Convx-Data-Version);
   * a matching If-None-Match is a 304, sent without querying. The tag and the answer
   * come from the same data even when a reload swaps it meanwhile.
   */
  const taggedQuery = async <T>(request: FastifyRequest, reply: FastifyReply, parsed: unknown, work: (backend: Backend) => Promise<T>) => {
    // The answer depends on the Convx-Data-Version the request sent (pinnedDataset): caches must know (304s too).
    reply.header('vary', varyWith(reply.getHeader('vary'), DATA_VERSION_HEADER));
    const dataset = pinnedDataset(request);
    reply.header(DATA_VERSION_HEADER, dataset.version);
    // The route (its pattern: the path's values are in the parsed query) and the parameters, not the URL as spelled.
    const tag = entityTag(dataset.version, request.plugin, request.routeOptions.url ?? '', requestParams(request.query), parsed);
    if (dataset.has(request.plugin) && noneMatch(request.headers['if-none-match'], tag)) {
      // A 304 costs no query: it does not count against the rate limit (the token taken is given back).
      const rate = rates.get(request);
      if (limiter && rate && !rate.refused) limiter.giveBack(rate.key);
      return reply.code(304).header('etag', representationTag(request, tag)).send();
    }
    // Held while the request waits for its turn, so that a reload (or the end of a pinned version's
    // grace) does not close this data before the request has its connection.
    const release = dataset.retain();
    let body: T;
    try {
      body = await withQueryBudget(limits.queryTimeoutMs, () => withTurn(request, {}, () => withBackend(request, work, dataset)), arrival(request));
    } finally {
      release();
    }
    reply.header('etag', representationTag(request, tag));
    return body;
  };

  /**
   * The tag of the representation a request gets: a compressed one is another sequence of bytes,
   * so it carries the weak form (RFC 9110 8.8.1); decided from Accept-Encoding alone, so that a
   * 304 carries the tag the 200 would have (If-None-Match compares weakly: both forms match).
   */
  const representationTag = (request: FastifyRequest, tag: string) =>
    compression && negotiateEncoding(request.headers['accept-encoding']) ? `W/${tag}` : tag;

  const secured = (schema: Record<string, unknown>) => ({ ...schema, security: [{ bearer: [] }] });

  docs.set('/v1/conversions', 'report');
  app.get(
    '/v1/conversions',
    {
      onRequest: authenticate,
      schema: secured({ operationId: 'getConversions', summary: 'One aggregate row per attributing source', querystring: REPORT_QUERY }),
    },
    async (request, reply) => {
      const parsed = parseReportQuery(requestParams(request.query), now());
      return taggedQuery(request, reply, parsed, async (b) => {
        const page = await b.report(parsed);
        return { conversions: page.rows, paging: page.paging };
      });
    },
  );

  /** The items, or a per-source alias: its path fixes the source; its query string may only narrow within it (sourceType, sourceId). */
  const itemsRoute = (
    url: string,
    operationId: string,
    summary: string,
    querystring: object,
    fixed?: (params: Record<string, string>) => Partial<ItemsQuery>,
  ) => {
    docs.set(url, 'items');
    app.get(url, { onRequest: authenticate, schema: secured({ operationId, summary, querystring }) }, async (request, reply) => {
      const query = parseItemsQuery(requestParams(request.query), { sourceFilters: fixed === undefined });
      const path = fixed?.(request.params as Record<string, string>) ?? {};
      // An empty path segment (/v1/campaigns//conversions) names no source.
      const empty = Object.entries(path).filter(([, value]) => value === '').map(([parameter]) => ({ parameter, message: 'is empty in the path' }));
      if (empty.length) throw new UsageError(`invalid parameters: ${empty.map((p) => `${p.parameter}: ${p.message}`).join('; ')}`, empty);
      const parsed = { ...query, ...path };
      return taggedQuery(request, reply, parsed, async (b) => {
        const page = await b.items(parsed);
        return { conversions: page.rows, paging: page.paging };
      });
    });
  };
  itemsRoute('/v1/conversions/items', 'listConversionItems', 'Individual conversion records', ITEMS_QUERY);
  itemsRoute('/v1/campaigns/:campaignId/conversions', 'listCampaignConversions', 'Conversions of a campaign or automation', ALIAS_QUERY, (p) => ({
    campaignId: p.campaignId,
  }));
  itemsRoute('/v1/deliveries/:smartflowId/conversions', 'listSmartflowConversions', 'Conversions of a smartflow', ALIAS_QUERY, (p) => ({
    smartflowId: p.smartflowId,
  }));
  itemsRoute(
    '/v1/deliveries/:smartflowId/:deliveryId/conversions',
    'listDeliveryConversions',
    'Conversions of one delivery of a smartflow',
    ALIAS_QUERY,
    (p) => ({ smartflowId: p.smartflowId, deliveryId: p.deliveryId }),
  );

  /** A look-up by id (issue 12): what the plugin's backend finds, else a 404 problem. */
  const lookupRoute = (
    url: string,
    kind: OperationKind,
    operationId: string,
    summary: string,
    find: (backend: Backend, params: Record<string, string>) => Promise<unknown> | undefined,
    missing: (params: Record<string, string>) => string,
  ) => {
    docs.set(url, kind);
    app.get(url, { onRequest: authenticate, schema: secured({ operationId, summary, querystring: NO_QUERY }) }, async (request) => {
      parseNoQuery(requestParams(request.query));
      const params = request.params as Record<string, string>;
      const found = await query(request, async (b) => find(b, params));
      if (found === undefined) throw new ProblemError(problem('notFound', missing(params)));
      return found;
    });
  };
  lookupRoute(
    '/v1/conversions/orders/:orderId',
    'order',
    'getOrderConversions',
    'An order by id over every date: its conversions (the order and its refunds), or why it is not one',
    (b, p) => b.findOrder(p.orderId!),
    (p) => `order ${p.orderId} is not in the dataset`,
  );
  lookupRoute(
    '/v1/contacts/:contact/conversions',
    'contact',
    'getContactConversions',
    "A contact (by contact id, e-mail or client contact id): its conversions, and each click with the orders it decided or why it decided none",
    (b, p) => b.contact(p.contact!),
    (p) => `no contact ${p.contact} (by contact id, e-mail or client contact id) in the dataset`,
  );
  const activity = (target: (p: Record<string, string>) => ActivityTarget) =>
    (b: Backend, p: Record<string, string>) => b.activity?.(target(p), p.contactId!);
  const noActivity = (p: Record<string, string>) => `contact ${p.contactId} has no touches of this source`;
  lookupRoute(
    '/v1/campaigns/:campaignId/recipients/:contactId/activity',
    'activity',
    'getCampaignRecipientActivity',
    "A contact's touches of a campaign or automation (a record's activityUrl)",
    activity((p) => ({ campaignId: p.campaignId! })),
    noActivity,
  );
  lookupRoute(
    '/v1/deliveries/:smartflowId/recipients/:contactId/activity',
    'activity',
    'getSmartflowRecipientActivity',
    "A contact's touches of a smartflow node without a delivery (a record's activityUrl)",
    activity((p) => ({ smartflowId: p.smartflowId! })),
    noActivity,
  );
  lookupRoute(
    '/v1/deliveries/:smartflowId/:deliveryId/recipients/:contactId/activity',
    'activity',
    'getDeliveryRecipientActivity',
    "A contact's touches of one delivery of a smartflow (a record's activityUrl)",
    activity((p) => ({ smartflowId: p.smartflowId!, deliveryId: p.deliveryId! })),
    noActivity,
  );

  docs.set('/v4/delivery/e-mail/validate', 'validate');
  app.post(
    '/v4/delivery/e-mail/validate',
    {
      onRequest: authenticate,
      schema: secured({
        operationId: 'validateEmailDelivery',
        summary: 'Dry run of an e-mail delivery: audience, suppression, languages, rendered samples and findings',
        description: 'Findings, including an invalid request body, are in render.errors and render.warnings of a 200 answer.',
      }),
      // A request without a JSON content type never reaches the handler (fastify answers 415 for other types).
      preValidation: async (request) => {
        if (!/^application\/json\s*(;|$)/i.test(request.headers['content-type'] ?? '')) {
          throw new ProblemError(problem('unsupportedMediaType', 'send the request body as application/json'));
        }
      },
    },
    // Its SQL (the audience) runs under the same time budget as a report; templates have their own limits.
    // A validation holds its connection while it waits for template renders (bounded, fair between
    // plugins): it gets a connection of its own, so it never keeps the pool from reports.
    async (request) => query(request, (b) => b.validateEmail(request.body), { pooled: false }),
  );

  docs.set('/healthz', 'health');
  app.get(
    '/healthz',
    { schema: { operationId: 'getHealth', summary: 'Liveness and the time the dataset was loaded', security: [] } },
    async () => ({ status: 'ok', loadedAt: options.dataset().loadedAt.toISOString() }),
  );

  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0]!;
    const allowed = routes.find((r) => r.pattern.test(path))?.methods;
    if (allowed?.length) {
      const allow = [...new Set(allowed)].sort().join(', ');
      return sendProblem(reply, new ProblemError(problem('methodNotAllowed', `${redactUrl(path)} answers ${allow}, not ${request.method}`), { allow }));
    }
    return sendProblem(reply, new ProblemError(problem('notFound', `no route for ${request.method} ${redactUrl(path)}`)));
  });

  app.setErrorHandler((error, request, reply) => {
    const { failure, report } = problemFor(error, limits.bodyLimit);
    if (report) {
      options.log({
        time: now().toISOString(),
        msg: report,
        method: request.method,
        path: redactUrl(request.url),
        error: error instanceof Error ? error.message : String(error),
        ...(report === 'unexpected error' && error instanceof Error ? { stack: error.stack } : {}),
      });
    }
    return sendProblem(reply, failure);
  });

  return app;
}
