/**
 * The fastify instance and the answers made before (or outside) its hooks: the HTTP server's
 * timeouts, the request id (X-Request-Id), the framework's own errors, the HTTP parser's
 * (clientErrorHandler, straight on the socket) and an Expect header other than 100-continue.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import Fastify, { type ConnectionError, type FastifyInstance } from 'fastify';
import { redactUrl } from '../accesslog.js';
import { requestIdFrom } from '../conventions.js';
import { connectionProblem, problemFor } from '../failures.js';
import { DEFAULT_MAX_CONNECTIONS, type ServerLimits } from '../limits.js';
import { problem, PROBLEM_CONTENT_TYPE, rawProblemResponse } from '../problem.js';
import type { AnswerHeaders } from './headers.js';
import { sendProblem } from './problems.js';
import { problemOf, type RequestLog } from './requestlog.js';

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

export interface FrameworkDeps {
  limits: ServerLimits;
  log: RequestLog;
  /** The headers every answer carries (headers.ts): the framework's own answers skip the hooks. */
  headers: AnswerHeaders;
}

/**
 * The HTTP parser's errors (a malformed request, a body that stops coming): a problem written
 * on the socket, once per connection, and a log line naming the request under way if any.
 */
function clientErrorAnswer(log: RequestLog, requestIds: WeakMap<IncomingMessage, string>) {
  /** Connections already answered: the parser's later errors on them (HPE_INVALID_EOF_STATE once ended) are no answer. */
  const answeredSockets = new WeakSet<Socket>();
  return (error: ConnectionError, socket: Socket) => {
    if (error.code === 'ECONNRESET' || socket.destroyed || answeredSockets.has(socket)) return;
    answeredSockets.add(socket);
    const body = connectionProblem(error.code, error.rawPacket);
    // A body timeout comes while a request is under way: its answer and log line name that request.
    const underWay = requestUnderWay(socket);
    const requestId = (underWay && requestIds.get(underWay)) ?? requestIdFrom(underWay?.headers['x-request-id']);
    if (socket.writable && !hasSentHeaders(socket)) socket.end(rawProblemResponse(body, requestId));
    else socket.destroy();
    log.write({
      time: log.now().toISOString(),
      msg: 'request',
      method: underWay?.method ?? null,
      path: underWay?.url === undefined ? null : redactUrl(underWay.url),
      status: body.status,
      error: error.code,
      requestId,
    });
  };
}

export function createFastify({ limits, log, headers }: FrameworkDeps): FastifyInstance {
  /** The id each request was given (genReqId), for the answers made outside fastify (clientErrorHandler). */
  const requestIds = new WeakMap<IncomingMessage, string>();
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
    // Requests that reach a closing server get the shutting-down problem from the drain's onRequest hook.
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
      headers(request, reply);
      sendProblem(reply, problemFor(error, limits.bodyLimit).failure);
      log.line(request.method, request.url, reply.statusCode, undefined, undefined, request.id, problemOf(reply));
    },
    clientErrorHandler: clientErrorAnswer(log, requestIds),
  });
  // CONNECT (a proxy's tunnel) never reaches fastify: Node closes the connection unanswered without this. A 405 problem, logged.
  app.server.on('connect', (request: IncomingMessage, socket: Socket) => {
    const requestId = requestIdFrom(request.headers['x-request-id']);
    const body = problem('methodNotAllowed', 'CONNECT is not a method of this server: it is no proxy');
    socket.on('error', () => undefined);
    socket.end(rawProblemResponse(body, requestId));
    log.line(request.method ?? 'CONNECT', request.url ?? '', body.status, undefined, undefined, requestId, 'method-not-allowed');
  });
  // Connections at once: one more is closed as it comes (idle clients would otherwise hold the process's file descriptors).
  const most = limits.maxConnections ?? DEFAULT_MAX_CONNECTIONS;
  if (most > 0) app.server.maxConnections = most;
  return app;
}

/** An Expect header other than 100-continue: Node would answer an empty 417. */
export function registerExpectation(app: FastifyInstance, log: RequestLog): void {
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
    log.line(request.method ?? '', request.url ?? '', 417, undefined, undefined, requestId);
  });
}
